//! IDs from a ZooKeeper znode's data version: one quorum write per ID.

use snowdrift_store::zk_version::ZkVersion;

use super::{IdSource, Ids};
use crate::config::Kind;
use crate::error::Error;

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
}
