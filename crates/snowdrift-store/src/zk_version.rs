//! ZooKeeper's data version as an ID, the way the design's seed shows it: every call is one
//! unconditional `setData` on a znode, and the ID is the version ZooKeeper answers with.
//!
//! ZooKeeper orders every write through its leader, so two writes never answer the same
//! version and a later write always answers a larger one: IDs are unique and increasing
//! across every client of the cluster, with no state in the client at all. The price is a
//! quorum write per ID (BENCHMARKS.md measures it against the segment store on the same
//! ZooKeeper, which writes once per segment). The version is a signed 32-bit number: a
//! znode gives 2,147,483,647 IDs, then [`ZkVersion`] refuses rather than let it wrap.

use zookeeper_client as zk;

use crate::error::{Error, Result};
use crate::zk_connection::{Session, Target};

/// Most writes one call keeps in flight: ZooKeeper pipelines them on the session.
const IN_FLIGHT: usize = 64;

/// IDs from one znode's data version.
#[derive(Debug, Clone)]
pub struct ZkVersion {
    session: Session,
    path: String,
}

/// Refuses a znode path that is not absolute or holds characters snowdrift does not write:
/// what [`ZkVersion::connect`] checks first, for a config check before start.
pub fn check_path(path: &str) -> Result<()> {
    let ok = path.starts_with('/')
        && path.len() > 1
        && !path.ends_with('/')
        && !path.contains("//")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_-.:".contains(c));
    if ok {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "znode {path:?} is not valid: an absolute path such as /snowdrift/versions/orders, of \
         letters, digits and _-.: only"
    )))
}

impl ZkVersion {
    /// Connects to `zookeeper://HOST:PORT[,HOST:PORT...]` and creates `path` (and its
    /// parents) if missing. `path` is absolute (`/snowdrift/versions/orders`).
    pub async fn connect(url: &str, path: &str) -> Result<Self> {
        check_path(path)?;
        let this = Self {
            session: Session::new(Target::parse(url)?),
            path: path.to_string(),
        };
        let client = this.session.client().await?;
        let target = this.session.target();
        // Whoever may delete the znode may create it again at version 0, and IDs repeat:
        // its parent must keep unauthenticated clients out too.
        let parent = &path[..path.rfind('/').unwrap_or(0)];
        if parent.is_empty() {
            this.refuse_under_open_root(&client).await?;
        }
        let mut at = String::new();
        for part in path.split('/').skip(1) {
            at.push('/');
            at.push_str(part);
            match client.create(&at, b"", &target.persistent()).await {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(this.session.failed_on(&at, e).await),
            }
        }
        if !parent.is_empty() {
            target.secure(&client, parent).await?;
        }
        target.secure(&client, path).await?;
        Ok(this)
    }

    /// With a user, refuses a znode right under `/` when anyone may delete `/`'s children.
    async fn refuse_under_open_root(&self, client: &zk::Client) -> Result<()> {
        if !self.session.target().has_user() {
            return Ok(());
        }
        let (acls, _) = client.get_acl("/").await.map_err(Error::from)?;
        let deletable = acls.iter().any(|a| {
            a.scheme() == "world"
                && a.id() == "anyone"
                && a.permission().has(zk::Permission::DELETE)
        });
        if deletable {
            return Err(Error::InvalidInput(format!(
                "znode {} sits right under /, which lets any client delete it and create it again at version 0, so IDs would repeat; put it one level down (e.g. /snowdrift{}), where snowdrift keeps the parent to its user",
                self.path, self.path
            )));
        }
        Ok(())
    }

    /// The znode.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `count` new IDs (at least 1), in increasing order: one `setData` each, up to 64 in
    /// flight. Fails with [`Error::VersionOverflow`] once the version would pass 2^31 - 1.
    pub async fn next(&self, count: u64) -> Result<Vec<u64>> {
        let client = self.session.client().await?;
        let mut ids = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        let mut left = count;
        while left > 0 {
            let n = left.min(IN_FLIGHT as u64);
            let writes = (0..n).map(|_| client.set_data(&self.path, b"", None));
            for answer in futures_util::future::join_all(writes).await {
                match answer {
                    Ok(stat) if stat.version >= 0 && stat.version < i32::MAX => {
                        ids.push(stat.version as u64);
                    }
                    Ok(_) => {
                        return Err(Error::VersionOverflow {
                            path: self.path.clone(),
                        });
                    }
                    Err(e) => return Err(self.session.failed_on(&self.path, e).await),
                }
            }
            left -= n;
        }
        ids.sort_unstable();
        Ok(ids)
    }
}
