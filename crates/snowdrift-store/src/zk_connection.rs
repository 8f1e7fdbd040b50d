//! The one way this crate opens ZooKeeper: the cluster from a `zookeeper://` URL, and a
//! session that is opened again once ZooKeeper expired it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use zookeeper_client as zk;

use crate::error::{Error, Result};

/// The `HOST:PORT[,HOST:PORT...]` of `zookeeper://HOST:PORT[,HOST:PORT...]`.
pub(crate) fn cluster(url: &str) -> Result<String> {
    url.split_once("://")
        .filter(|(scheme, _)| *scheme == "zookeeper")
        .map(|(_, rest)| rest.trim_end_matches('/'))
        .filter(|c| !c.is_empty() && !c.contains('/') && !c.split(',').any(str::is_empty))
        .map(str::to_string)
        .ok_or_else(|| Error::InvalidUrl {
            url: url.to_string(),
            reason: "use zookeeper://HOST:PORT[,HOST:PORT...]".into(),
        })
}

/// A session for reads and writes that hold nothing (no ephemeral znodes), so replacing it
/// loses nothing: an expired client stays dead, and the next call opens a new one.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    cluster: String,
    client: Arc<Mutex<Option<zk::Client>>>,
}

impl Session {
    /// A session to `cluster`, opened on first use.
    pub(crate) fn new(cluster: String) -> Self {
        Self {
            cluster,
            client: Arc::default(),
        }
    }

    /// The cluster's `HOST:PORT[,HOST:PORT...]`.
    pub(crate) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The live client, or a new one if there is none or it expired.
    pub(crate) async fn client(&self) -> Result<zk::Client> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.state().is_terminated()) {
            return Ok(client.clone());
        }
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_connection_timeout(Duration::from_secs(5))
            .connect(&self.cluster)
            .await?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Turns a ZooKeeper error into ours, dropping the session if it cannot recover.
    pub(crate) async fn failed(&self, e: zk::Error) -> Error {
        if terminal(&e) {
            *self.client.lock().await = None;
        }
        e.into()
    }
}

/// Whether the session is gone for good (the client then fails every request).
pub(crate) fn terminal(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::NoHosts
            | zk::Error::SessionExpired
            | zk::Error::AuthFailed
            | zk::Error::ClientClosed
    )
}

/// Options for a persistent znode anyone may read and write (access is the network's job).
pub(crate) fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}
