//! A `zk-version` generator's keys and plan: its ZooKeeper and znode.

use snowdrift_store::zk_version::ZkVersion;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::kinds::{KindPlan, PlanError, Reached, StartContext};

use super::ZkVersionSource;

/// A `zk-version` generator.
#[derive(Debug, Clone)]
pub struct ZkVersionPlan {
    /// The ZooKeeper URL.
    pub url: String,
    /// The znode.
    pub znode: String,
}

impl KindPlan for ZkVersionPlan {
    type Source = ZkVersionSource;
    const KINDS: &'static [Kind] = &[Kind::ZkVersion];
    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["url", "znode", "obfuscate_key", "obfuscate_bits"]
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let Some(url) = g.url.clone() else {
            return Err(PlanError::Whole(
                "kind zk-version needs url = \"zookeeper://HOST:2181\": the ZooKeeper whose \
                 znode version is the ID"
                    .into(),
            ));
        };
        if !url.starts_with("zookeeper://") {
            return Err(PlanError::Whole(format!(
                "url {} is not a ZooKeeper URL; a zk-version generator writes a znode: url \
                 = \"zookeeper://[USER:PASSWORD@]HOST:2181[,HOST:2181...]\"",
                crate::error::quoted(&crate::config::mask_url(&url))
            )));
        }
        let znode = g
            .znode
            .clone()
            .unwrap_or_else(|| format!("/snowdrift/versions/{}", g.name));
        snowdrift_store::zk_version::check_path(&znode)
            .map_err(|e| PlanError::Key("znode", e.to_string()))?;
        Ok(ZkVersionPlan { url, znode })
    }

    fn kind(&self) -> Kind {
        Kind::ZkVersion
    }

    async fn start(
        &self,
        _name: &str,
        _cx: &StartContext,
    ) -> Result<ZkVersionSource, snowdrift_store::Error> {
        Ok(ZkVersionSource::new(
            ZkVersion::connect(&self.url, &self.znode).await?,
        ))
    }

    async fn reach(&self, name: &str, _seen: &mut Vec<String>) -> Vec<Reached> {
        let answer = Reached::bounded(ZkVersion::connect(&self.url, &self.znode)).await;
        vec![Reached::new(
            format!("ZooKeeper of zk-version generator {name:?}"),
            &self.url,
            answer,
        )]
    }
}
