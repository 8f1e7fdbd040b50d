//! IDs from a ZooKeeper znode's data version: one quorum write per ID.

use snowdrift_store::zk_version::ZkVersion;

use serde_json::Value;

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{Consecutive, IdSource, Ids};

/// A znode whose version ZooKeeper raises with every write.
#[derive(Debug)]
pub struct ZkVersionSource {
    znode: ZkVersion,
}

impl ZkVersionSource {
    /// Serves the versions of `znode`.
    pub fn new(znode: ZkVersion) -> Self {
        Self { znode }
    }

    /// The znode's path, for status.
    pub fn path(&self) -> &str {
        self.znode.path()
    }
}

impl IdSource for ZkVersionSource {
    fn kind(&self) -> Kind {
        Kind::ZkVersion
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ok(Ids::from_values(self.znode.next(count).await?))
    }

    fn numeric(&self) -> bool {
        true
    }

    fn describe(&self, out: &mut Value) {
        out["znode"] = self.path().into();
    }

    async fn consecutive(&self, _name: &str, _n: u64) -> Result<Consecutive, Error> {
        Ok(Consecutive::Never(
            "each ID is one write of its znode, and other nodes' writes to it interleave, so \
             a batch is not one run"
                .into(),
        ))
    }
}
