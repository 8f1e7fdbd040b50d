//! Worker leases on ZooKeeper: an ephemeral znode per claimed worker ID, a persistent one for its high-water mark.

pub(crate) mod api;
mod client;

use std::sync::Arc;
use std::time::Duration;

use api::{Mode, MultiWriteError, WriteOp, ZkConnector, ZkError, ZkSession};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

use super::claim;
use super::mistakes::{Mistake, planted};
use super::sql::{ttl_millis, validate_holder, validate_namespace, validate_space};
use super::{PeerClocks, PeerTime};
use crate::error::{Error, Result};
use crate::zk_connection::{Target, terminal};

/// How many times an operation starts over after another write to the same znode came
/// first (a clock report racing a renew, two mark writes, nodes racing for free IDs).
const MAX_RACES: usize = 64;

/// How many znodes a listing reads at once (pipelined on the session).
const READ_IN_FLIGHT: usize = 64;

/// The session timeout of the reading session, and how long its client waits for a server
/// (as every other ZooKeeper store of this crate opens its session).
const READER_TIMEOUT: Duration = Duration::from_secs(10);
const READER_CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// What a lease znode holds (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Lease {
    holder: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time_ms: Option<u64>,
    /// The session timeout the lease lives by (older versions did not write it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
}

/// Worker leases on ZooKeeper.
///
/// Worker ID `N` is leased by the ephemeral znode `/{namespace}/lease/N`, holding
/// `{"holder": …, "time_ms": …}` (`time_ms` is the holder's latest clock report). A claim
/// creates it; ZooKeeper refuses a second create, so two nodes never both win one ID. The
/// lease lives as long as the registry's ZooKeeper session: when the session expires (the
/// node could not reach ZooKeeper for the session timeout), ZooKeeper deletes the znode,
/// the ID is free, and every operation on it reports [`Error::LeaseLost`]; the next claim
/// opens a new session. A renew is a write through the leader (a `multi` checking the
/// znode's version) that only succeeds while the session is alive and the znode is this
/// session's. The high-water mark of `N` is the persistent znode `/{namespace}/mark/N`,
/// written in one `multi` with a version check of the lease znode (only the holder writes)
/// and of the mark (a versioned compare-and-set that only raises it). The layout issued
/// under up to the mark is the persistent znode `/{namespace}/layout/N`, written the same
/// way.
///
/// The session timeout is the `ttl` of the first claim. ZooKeeper negotiates it into its
/// bounds (by default 2 to 20 ticks, 4 s to 40 s with a 2 s tick): a shorter `ttl` is
/// rounded up to the server's minimum (safe: the lease lasts longer than asked), and a
/// longer one than the server's maximum is refused with [`Error::InvalidInput`], as is a
/// later claim or renew asking for more than the session has. The client pings by itself,
/// so a lease may outlive the last renew while the network is up; it never ends earlier
/// than the session timeout after ZooKeeper last heard from the node. On an ensemble, a
/// follower passes session activity to the leader with its pings (every half tick), so
/// keep the fencing margin above one tick.
#[derive(Debug, Clone)]
pub struct ZkRegistry {
    // Reads and setup, reopened when it expires; holds no leases.
    reader: Reader,
    root: String,
    // The session whose ephemeral znodes are the leases; replaced only by a claim.
    leases: Arc<Mutex<Option<Arc<dyn ZkSession>>>>,
}

impl ZkRegistry {
    /// Connects to `zookeeper://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]` and creates the
    /// znodes `/{namespace}`, `/{namespace}/lease` and `/{namespace}/mark` if they are
    /// missing. With a user, every session authenticates with it (digest) and every znode
    /// gets the ACL "this user writes, anyone reads"; those znodes (and the marks and
    /// leases in them) found writable by anyone get that ACL too.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let zk = client::ClientConnector::new(Target::parse(url)?);
        Self::set_up(Arc::new(zk), namespace).await
    }

    /// The registry under `/{namespace}` of any [`ZkConnector`]: the simulator's
    /// ensemble. Sets it up as [`connect`](Self::connect) does.
    #[cfg(feature = "sim")]
    pub async fn over(zk: Arc<dyn ZkConnector>, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        Self::set_up(zk, namespace).await
    }

    /// Creates and secures the registry's znodes under `/{namespace}`.
    async fn set_up(zk: Arc<dyn ZkConnector>, namespace: &str) -> Result<Self> {
        let registry = Self {
            reader: Reader::new(zk),
            root: format!("/{namespace}"),
            leases: Default::default(),
        };
        let client = registry.reader.client().await?;
        let mark_dir = format!("{}/mark", registry.root);
        let layout_dir = format!("{}/layout", registry.root);
        for path in [
            registry.root.clone(),
            registry.lease_dir(),
            mark_dir.clone(),
            layout_dir.clone(),
        ] {
            match client.create(&path, b"", Mode::Persistent).await {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(registry.reader.failed_on(&path, e).await),
            }
        }
        client.secure(&registry.root, false).await?;
        client.secure(&registry.lease_dir(), true).await?;
        client.secure(&mark_dir, true).await?;
        client.secure(&layout_dir, true).await?;
        Ok(registry)
    }

    /// Opens the registry as [`connect`](Self::connect) does, creating and securing
    /// nothing: `None` when `/{namespace}` does not exist (no node ever leased there, so
    /// there are no leases, marks or layouts). For previews that must leave ZooKeeper as it
    /// was.
    pub async fn open_existing(url: &str, namespace: &str) -> Result<Option<Self>> {
        validate_namespace(namespace)?;
        let registry = Self {
            reader: Reader::new(Arc::new(client::ClientConnector::new(Target::parse(url)?))),
            root: format!("/{namespace}"),
            leases: Default::default(),
        };
        let client = registry.reader.client().await?;
        match client.check_stat(&registry.root).await {
            Ok(Some(_)) => Ok(Some(registry)),
            Ok(None) => Ok(None),
            Err(e) => Err(registry.reader.failed_on(&registry.root, e).await),
        }
    }

    fn lease_dir(&self) -> String {
        format!("{}/lease", self.root)
    }

    fn lease_path(&self, worker_id: u64) -> String {
        format!("{}/lease/{worker_id}", self.root)
    }

    fn layout_path(&self, worker_id: u64) -> String {
        format!("{}/layout/{worker_id}", self.root)
    }

    fn mark_path(&self, worker_id: u64) -> String {
        format!("{}/mark/{worker_id}", self.root)
    }

    /// The lease session for a claim of `ttl`: the current one, or a new one if there is
    /// none or it expired.
    async fn claiming_session(&self, ttl: Duration) -> Result<Arc<dyn ZkSession>> {
        let timeout = Duration::from_millis(ttl_millis(ttl)? as u64);
        let mut slot = self.leases.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.is_terminated()) {
            check_timeout(client, ttl, "this registry's ZooKeeper session")?;
            return Ok(client.clone());
        }
        let client = self.reader.zk.connect(timeout, None).await?;
        check_timeout(&client, ttl, "the ZooKeeper server's maxSessionTimeout")?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// The lease session, if one is alive: leases live and die with it, so a renew never
    /// opens a new one.
    async fn holding_session(&self, worker_id: u64, holder: &str) -> Result<Arc<dyn ZkSession>> {
        let slot = self.leases.lock().await;
        match slot.as_ref() {
            Some(client) if !client.is_terminated() => Ok(client.clone()),
            Some(_) => Err(lost(
                worker_id,
                holder,
                "the ZooKeeper session expired (ZooKeeper deleted its leases); claim again".into(),
            )),
            None => Err(lost(
                worker_id,
                holder,
                "this registry holds no ZooKeeper session; claim first".into(),
            )),
        }
    }

    /// Turns an error of the lease session into ours: an expired session is a lost lease.
    async fn lease_failed(&self, worker_id: u64, holder: &str, e: ZkError) -> Error {
        if terminal(&e) {
            *self.leases.lock().await = None;
        }
        match e {
            ZkError::SessionExpired | ZkError::ClientClosed => lost(
                worker_id,
                holder,
                "the ZooKeeper session expired (ZooKeeper deleted its leases); claim again".into(),
            ),
            e => e.into(),
        }
    }

    /// Turns an error of a claim into ours: an expired session is dropped, so that the
    /// next claim opens a new one, and the claim may be retried.
    async fn claim_failed(&self, e: ZkError) -> Error {
        if terminal(&e) {
            *self.leases.lock().await = None;
        }
        e.into()
    }

    /// Reads the lease znode of `worker_id` and checks that `holder` holds it in `client`'s
    /// session: its data and version.
    async fn held(
        &self,
        client: &Arc<dyn ZkSession>,
        worker_id: u64,
        holder: &str,
    ) -> Result<(Lease, i32)> {
        match client.get_data(&self.lease_path(worker_id)).await {
            Ok((data, stat)) => {
                let lease = self.parse(worker_id, &data)?;
                if lease.holder != holder {
                    Err(lost(
                        worker_id,
                        holder,
                        format!("{:?} holds it now", lease.holder),
                    ))
                } else if stat.ephemeral_owner != client.session_id() {
                    Err(lost(
                        worker_id,
                        holder,
                        "another ZooKeeper session holds it under the same holder name".into(),
                    ))
                } else {
                    Ok((lease, stat.version))
                }
            }
            Err(ZkError::NoNode) => Err(lost(
                worker_id,
                holder,
                "no lease: its session expired or it was released (ZooKeeper deleted the znode)"
                    .into(),
            )),
            Err(e) => Err(self.lease_failed(worker_id, holder, e).await),
        }
    }

    fn parse(&self, worker_id: u64, data: &[u8]) -> Result<Lease> {
        serde_json::from_slice(data).map_err(|e| {
            Error::InvalidInput(format!(
                "znode {} does not hold a lease ({e}): it was edited by hand; delete it",
                self.lease_path(worker_id)
            ))
        })
    }

    /// Creates the lease znode: `Ok(None)` when claimed, `Ok(Some(holder))` when another
    /// holder has it.
    async fn create(
        &self,
        client: &Arc<dyn ZkSession>,
        worker_id: u64,
        holder: &str,
    ) -> Result<Option<String>> {
        let data = lease_data(&Lease {
            holder: holder.to_string(),
            time_ms: None,
            ttl_ms: Some(client.session_timeout().as_millis() as u64),
        })?;
        let path = self.lease_path(worker_id);
        for _ in 0..MAX_RACES {
            match client.create(&path, &data, Mode::Ephemeral).await {
                Ok(_) => return Ok(None),
                Err(ZkError::NodeExists) => {}
                Err(e @ ZkError::NoAuth) => return Err(self.reader.zk.refused(&path, e)),
                Err(e) => return Err(self.claim_failed(e).await),
            }
            match client.get_data(&path).await {
                Ok((data, stat)) => {
                    let lease = self.parse(worker_id, &data)?;
                    if lease.holder == holder && stat.ephemeral_owner == client.session_id() {
                        return Ok(None);
                    }
                    return Ok(Some(lease.holder));
                }
                // Its session ended between the create and the read: try again.
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(self.claim_failed(e).await),
            }
        }
        Err(Error::Unavailable(
            format!("znode {path} appeared and vanished under {MAX_RACES} claims in a row; retry")
                .into(),
        ))
    }

    /// Leases the lowest worker ID in `0..space` that no live lease holds to `holder`, for
    /// the session's timeout (at least `ttl`); [`Error::WorkersExhausted`] when every one
    /// is held.
    ///
    /// The held IDs are listed first, then the free ones are created from the lowest: an
    /// ID another node took in between is skipped, so nodes starting at the same instant
    /// all get distinct IDs.
    ///
    /// With `now_ms` (the claiming node's clock) it prefers a free ID whose high-water
    /// mark is at or before `now_ms`: the lowest such, else the one whose mark passes
    /// soonest. The marks are read all at once, pipelined.
    pub async fn claim_free(
        &self,
        space: u64,
        holder: &str,
        ttl: Duration,
        now_ms: Option<u64>,
    ) -> Result<u64> {
        validate_space(space)?;
        validate_holder(holder)?;
        let client = self.claiming_session(ttl).await?;
        claim::claim_free(
            &ZkClaim {
                registry: self,
                client,
                holder,
            },
            space,
            now_ms,
        )
        .await
    }

    /// Leases exactly `worker_id` to `holder`, for the session's timeout (at least `ttl`);
    /// a no-op when this registry's session holds it for `holder` already.
    /// [`Error::WorkerTaken`] when another live holder has it.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let client = self.claiming_session(ttl).await?;
        match self.create(&client, worker_id, holder).await? {
            None => Ok(()),
            Some(other) => Err(Error::WorkerTaken {
                worker_id,
                holder: other,
            }),
        }
    }

    /// Proves that `holder`'s lease on `worker_id` is alive: a write through the leader
    /// that succeeds only while the session is alive and the znode is this session's.
    /// ZooKeeper then keeps the session at least its timeout (≥ `ttl`) from when it handled
    /// the write. [`Error::LeaseLost`] when the session expired or the znode is gone or
    /// someone else's.
    pub async fn renew(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        ttl_millis(ttl)?;
        let client = self.holding_session(worker_id, holder).await?;
        check_timeout(&client, ttl, "this registry's ZooKeeper session")?;
        if planted(Mistake::RenewByClientSession) {
            return Ok(());
        }
        let path = self.lease_path(worker_id);
        for _ in 0..MAX_RACES {
            let (_, version) = self.held(&client, worker_id, holder).await?;
            let check = vec![WriteOp::Check {
                path: path.clone(),
                version,
            }];
            match client.multi(check).await {
                Ok(_) => return Ok(()),
                // A clock report changed the znode since the read: read again.
                Err(MultiWriteError::OperationFailed {
                    source: ZkError::BadVersion | ZkError::NoNode,
                    ..
                }) => {}
                Err(e) => return Err(self.lease_failed(worker_id, holder, e.into()).await),
            }
        }
        Err(race(&path))
    }

    /// Gives `worker_id` back at once by deleting its znode (its mark stays). Does nothing
    /// when `holder` does not hold it. Like on the other backends, the holder's name is
    /// what counts, so any registry can release a lease (say, a tool cleaning up after a
    /// node that will not come back).
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        validate_holder(holder)?;
        let client = self.reader.client().await?;
        let path = self.lease_path(worker_id);
        for _ in 0..MAX_RACES {
            let version = match client.get_data(&path).await {
                Ok((data, stat)) if self.parse(worker_id, &data)?.holder == holder => stat.version,
                Ok(_) | Err(ZkError::NoNode) => return Ok(()),
                Err(e) => return Err(self.reader.failed(e).await),
            };
            match client.delete(&path, Some(version)).await {
                Ok(()) | Err(ZkError::NoNode) => return Ok(()),
                // A clock report changed the znode since the read: read again.
                Err(ZkError::BadVersion) => {}
                Err(e) => return Err(self.reader.failed(e).await),
            }
        }
        Err(race(&path))
    }

    /// Reserves `worker_id` for `holder` for good (see
    /// [`WorkerRegistry::reserve`](super::WorkerRegistry::reserve)): a persistent lease
    /// znode where servers make ephemeral ones, so ZooKeeper never deletes it and a
    /// server's create finds it there, made with the layout in one `multi`.
    /// [`Error::WorkerTaken`] when someone else has the znode.
    pub async fn reserve(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let client = self.reader.client().await?;
        let (path, layout_path) = (self.lease_path(worker_id), self.layout_path(worker_id));
        let data = lease_data(&Lease {
            holder: holder.to_string(),
            time_ms: None,
            ttl_ms: None,
        })?;
        for _ in 0..MAX_RACES {
            let layout_version = match client.get_data(&layout_path).await {
                Ok((_, stat)) => Some(stat.version),
                Err(ZkError::NoNode) => None,
                Err(e) => return Err(self.reader.failed(e).await),
            };
            let write = vec![
                create(&path, &data, Mode::Persistent),
                match layout_version {
                    Some(v) => set_data(&layout_path, layout.as_bytes(), v),
                    None => create(&layout_path, layout.as_bytes(), Mode::Persistent),
                },
            ];
            match client.multi(write).await {
                Ok(_) => return Ok(()),
                Err(MultiWriteError::OperationFailed {
                    index: 0,
                    source: ZkError::NodeExists,
                }) => {
                    match client.get_data(&path).await {
                        Ok((data, stat)) => {
                            let lease = self.parse(worker_id, &data)?;
                            if lease.holder == holder && stat.ephemeral_owner == 0 {
                                return Ok(());
                            }
                            return Err(Error::WorkerTaken {
                                worker_id,
                                holder: lease.holder,
                            });
                        }
                        // Its session ended between the two: try again.
                        Err(ZkError::NoNode) => {}
                        Err(e) => return Err(self.reader.failed(e).await),
                    }
                }
                // The layout znode changed since it was read: read again.
                Err(MultiWriteError::OperationFailed {
                    source: ZkError::BadVersion | ZkError::NoNode | ZkError::NodeExists,
                    ..
                }) => {}
                Err(e) => return Err(self.reader.failed(e.into()).await),
            }
        }
        Err(race(&path))
    }

    /// Ends `holder`'s reservation of `worker_id`: raises its mark to `mark` and deletes
    /// the persistent lease znode in one `multi`, with version checks of both. `Ok(false)`
    /// when the znode is no longer that reservation.
    pub async fn unreserve(&self, worker_id: u64, holder: &str, mark: u64) -> Result<bool> {
        validate_holder(holder)?;
        let client = self.reader.client().await?;
        let (path, mark_path) = (self.lease_path(worker_id), self.mark_path(worker_id));
        for _ in 0..MAX_RACES {
            let version = match client.get_data(&path).await {
                Ok((data, stat))
                    if stat.ephemeral_owner == 0
                        && self.parse(worker_id, &data)?.holder == holder =>
                {
                    stat.version
                }
                Ok(_) | Err(ZkError::NoNode) => return Ok(false),
                Err(e) => return Err(self.reader.failed(e).await),
            };
            let current = match client.get_data(&mark_path).await {
                Ok((data, stat)) => Some((self.mark_of(worker_id, &data)?, stat.version)),
                Err(ZkError::NoNode) => None,
                Err(e) => return Err(self.reader.failed(e).await),
            };
            let text = mark.to_string();
            let write = vec![
                match current {
                    Some((m, v)) if m >= mark => WriteOp::Check {
                        path: mark_path.clone(),
                        version: v,
                    },
                    Some((_, v)) => set_data(&mark_path, text.as_bytes(), v),
                    None => create(&mark_path, text.as_bytes(), Mode::Persistent),
                },
                WriteOp::Delete {
                    path: path.clone(),
                    version: Some(version),
                },
            ];
            match client.multi(write).await {
                Ok(_) => return Ok(true),
                Err(MultiWriteError::OperationFailed {
                    source: ZkError::BadVersion | ZkError::NoNode | ZkError::NodeExists,
                    ..
                }) => {}
                Err(e) => return Err(self.reader.failed(e.into()).await),
            }
        }
        Err(race(&path))
    }

    /// The live leases and their data, by worker ID.
    async fn leases(&self) -> Result<Vec<(u64, Lease)>> {
        let client = self.reader.client().await?;
        let names = match client.list_children(&self.lease_dir()).await {
            Ok(names) => names,
            Err(e) => return Err(self.reader.failed(e).await),
        };
        let mut ids: Vec<u64> = names.iter().filter_map(|n| n.parse().ok()).collect();
        ids.sort_unstable();
        let paths: Vec<String> = ids.iter().map(|id| self.lease_path(*id)).collect();
        let reads = read_all(&client, &paths).await;
        let mut leases = Vec::with_capacity(ids.len());
        for (id, read) in ids.into_iter().zip(reads) {
            match read {
                Ok((data, _)) => leases.push((id, self.parse(id, &data)?)),
                // Expired or released between the listing and the read.
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(self.reader.failed(e).await),
            }
        }
        Ok(leases)
    }

    /// The live leases, by worker ID.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        Ok(self
            .leases()
            .await?
            .into_iter()
            .map(|(id, lease)| (id, lease.holder))
            .collect())
    }

    /// The high-water mark of `worker_id` (ms since the Unix epoch), `None` if none was
    /// ever written. A `sync` first makes the server catch up with the leader, so the
    /// latest mark written anywhere is seen.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        let client = self.reader.client().await?;
        let path = self.mark_path(worker_id);
        if let Err(e) = client.sync(&path).await {
            return Err(self.reader.failed(e).await);
        }
        match client.get_data(&path).await {
            Ok((data, _)) => Ok(Some(self.mark_of(worker_id, &data)?)),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(self.reader.failed(e).await),
        }
    }

    fn mark_of(&self, worker_id: u64, data: &[u8]) -> Result<u64> {
        let text = String::from_utf8_lossy(data);
        text.parse().map_err(|_| {
            Error::InvalidInput(format!(
                "znode {} holds {text:?}, not a high-water mark: it was edited by hand; set it to the last time used (ms) or delete it",
                self.mark_path(worker_id)
            ))
        })
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (a lower value leaves it as
    /// it is). [`Error::LeaseLost`] unless `holder` holds the lease: the write is one
    /// `multi` with a version check of the lease znode.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let client = self.holding_session(worker_id, holder).await?;
        let (lease_path, mark_path) = (self.lease_path(worker_id), self.mark_path(worker_id));
        let data = mark_ms.to_string();
        for _ in 0..MAX_RACES {
            let (_, lease_version) = self.held(&client, worker_id, holder).await?;
            let current = match client.get_data(&mark_path).await {
                Ok((data, stat)) => Some((self.mark_of(worker_id, &data)?, stat.version)),
                Err(ZkError::NoNode) => None,
                Err(e) => return Err(self.lease_failed(worker_id, holder, e).await),
            };
            let write = vec![
                WriteOp::Check {
                    path: lease_path.clone(),
                    version: lease_version,
                },
                match current {
                    Some((mark, _)) if mark >= mark_ms => return Ok(()),
                    Some((_, version)) => set_data(&mark_path, data.as_bytes(), version),
                    None => create(&mark_path, data.as_bytes(), Mode::Persistent),
                },
            ];
            match client.multi(write).await {
                Ok(_) => return Ok(()),
                // The lease znode or the mark changed since the reads: read again (a lost
                // lease shows there).
                Err(MultiWriteError::OperationFailed {
                    source: ZkError::BadVersion | ZkError::NoNode | ZkError::NodeExists,
                    ..
                }) => {}
                Err(e) => return Err(self.lease_failed(worker_id, holder, e.into()).await),
            }
        }
        Err(race(&mark_path))
    }

    /// Records `holder`'s clock reading `now_ms` in its lease znode. [`Error::LeaseLost`]
    /// unless `holder` holds the lease.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, now_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let client = self.holding_session(worker_id, holder).await?;
        let path = self.lease_path(worker_id);
        for _ in 0..MAX_RACES {
            let (mut lease, version) = self.held(&client, worker_id, holder).await?;
            lease.time_ms = Some(now_ms);
            match client
                .set_data(&path, &lease_data(&lease)?, Some(version))
                .await
            {
                Ok(_) => return Ok(()),
                Err(ZkError::BadVersion | ZkError::NoNode) => {}
                Err(e) => return Err(self.lease_failed(worker_id, holder, e).await),
            }
        }
        Err(race(&path))
    }

    /// The layout recorded beside `worker_id`'s mark, if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        let client = self.reader.client().await?;
        let path = self.layout_path(worker_id);
        if let Err(e) = client.sync(&path).await {
            return Err(self.reader.failed(e).await);
        }
        match client.get_data(&path).await {
            Ok((data, _)) => Ok(Some(String::from_utf8_lossy(&data).into_owned())),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(self.reader.failed(e).await),
        }
    }

    /// Records the layout `holder` issues under; [`Error::LeaseLost`] unless it holds the
    /// lease: one `multi` with a version check of the lease znode.
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let client = self.holding_session(worker_id, holder).await?;
        let (lease_path, path) = (self.lease_path(worker_id), self.layout_path(worker_id));
        for _ in 0..MAX_RACES {
            let (_, lease_version) = self.held(&client, worker_id, holder).await?;
            let current = match client.get_data(&path).await {
                Ok((_, stat)) => Some(stat.version),
                Err(ZkError::NoNode) => None,
                Err(e) => return Err(self.lease_failed(worker_id, holder, e).await),
            };
            let write = vec![
                WriteOp::Check {
                    path: lease_path.clone(),
                    version: lease_version,
                },
                match current {
                    Some(version) => set_data(&path, layout.as_bytes(), version),
                    None => create(&path, layout.as_bytes(), Mode::Persistent),
                },
            ];
            match client.multi(write).await {
                Ok(_) => return Ok(()),
                Err(MultiWriteError::OperationFailed {
                    source: ZkError::BadVersion | ZkError::NoNode | ZkError::NodeExists,
                    ..
                }) => {}
                Err(e) => return Err(self.lease_failed(worker_id, holder, e.into()).await),
            }
        }
        Err(race(&path))
    }

    /// Every lease znode with its creation time (ZooKeeper's clock), mark and layout. A
    /// lease lives as long as its holder's session, which other clients cannot see: its
    /// holder writes a clock report into it every few seconds, so one that has not for
    /// longer than that is expiring, and its time left is at most the session timeout less
    /// the time since that write (counted on this machine's clock).
    ///
    /// A persistent lease znode (made by hand) is listed as
    /// [`never_expires`](super::WorkerEntry::never_expires); one that does not hold a
    /// lease, or whose mark is not a number, is flagged; a child of the lease znode
    /// without a worker ID is listed as unreadable.
    pub async fn list(&self) -> Result<super::WorkerList> {
        let client = self.reader.client().await?;
        let names = match client.list_children(&self.lease_dir()).await {
            Ok(names) => names,
            Err(e) => return Err(self.reader.failed(e).await),
        };
        let mut out = super::WorkerList::default();
        let mut ids = Vec::new();
        for name in names {
            // Parsed as the server's claims parse it.
            match name.parse::<u64>() {
                Ok(id) => ids.push(id),
                Err(_) => out.unreadable.push(super::UnreadableEntry::new(
                    format!("{}/{name}", self.lease_dir()),
                    "a znode under lease/ without a worker ID for a name: snowdrift did not make it, and servers ignore it; delete it",
                )),
            }
        }
        ids.sort_unstable();
        let now = self.reader.zk.now_ms() as i64;
        let report_every = super::DEFAULT_PUBLISH_EVERY.as_millis() as i64;
        let paths = |of: fn(&Self, u64) -> String| -> Vec<String> {
            ids.iter().map(|id| of(self, *id)).collect()
        };
        let (lease_paths, mark_paths, layout_paths) = (
            paths(Self::lease_path),
            paths(Self::mark_path),
            paths(Self::layout_path),
        );
        let leases = read_all(&client, &lease_paths).await;
        let marks = read_all(&client, &mark_paths).await;
        let layouts = read_all(&client, &layout_paths).await;
        for (((id, path), lease), (mark, layout)) in ids
            .iter()
            .copied()
            .zip(&lease_paths)
            .zip(leases)
            .zip(marks.into_iter().zip(layouts))
        {
            let (data, stat) = match lease {
                Ok(found) => found,
                Err(ZkError::NoNode) => continue,
                Err(e) => return Err(self.reader.failed(e).await),
            };
            let lease = self.parse(id, &data);
            let mut entry = super::WorkerEntry::new(
                id,
                lease.as_ref().map_or("?".into(), |l| l.holder.clone()),
            );
            entry.since_ms = u64::try_from(stat.ctime).ok();
            if let Err(e) = &lease {
                entry.flag(format!(
                    "{e}; a server skips this ID while it is there (its claim finds the znode)"
                ));
            }
            if stat.ephemeral_owner == 0 {
                entry.stuck_or_reserved(format!(
                    "a persistent znode, not a session's ephemeral one: ZooKeeper never deletes it, a server skips this ID (its claim finds the znode there), and no server can hold it (a renew needs its own session's znode); delete the znode {path} to free it"
                ));
            } else if let Ok(lease) = &lease {
                let silent = (now - stat.mtime).max(0);
                entry.lease_ttl_ms = lease.ttl_ms;
                entry.lease_left_ms = lease.ttl_ms.map(|ttl| (ttl as i64 - silent).max(0) as u64);
                // A second of slack over the report interval for a busy holder.
                entry.expiring = silent > report_every + 1000;
            }
            match mark {
                Ok((data, _)) => match self.mark_of(id, &data) {
                    Ok(mark) => entry.mark = Some(mark),
                    Err(e) => entry.flag(e.to_string()),
                },
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(self.reader.failed(e).await),
            }
            entry.layout = match layout {
                Ok((data, _)) => Some(String::from_utf8_lossy(&data).into_owned()),
                Err(ZkError::NoNode) => None,
                Err(e) => return Err(self.reader.failed(e).await),
            };
            out.entries.push(entry);
        }
        Ok(out)
    }

    /// The latest clock reading of every live holder that published one, by worker ID.
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        Ok(self
            .leases()
            .await?
            .into_iter()
            .filter_map(|(worker_id, lease)| {
                Some(PeerTime {
                    worker_id,
                    time_ms: lease.time_ms?,
                    holder: lease.holder,
                })
            })
            .collect())
    }

    /// The highest and lowest clock reports of the others. ZooKeeper keeps no order of
    /// values, so this reads every lease ([`peer_times`](Self::peer_times)) and picks.
    pub async fn peer_clocks(&self, holder: &str) -> Result<PeerClocks> {
        Ok(PeerClocks::among(self.peer_times().await?, holder))
    }
}

/// One [`ZkRegistry::claim_free`] in progress: every try creates its znode in the one
/// lease session.
struct ZkClaim<'a> {
    registry: &'a ZkRegistry,
    client: Arc<dyn ZkSession>,
    holder: &'a str,
}

impl claim::Backend for ZkClaim<'_> {
    const ROUNDS: usize = MAX_RACES;
    const TRIES_PER_ROUND: usize = MAX_RACES;

    async fn survey(&self, space: u64, marks: bool) -> Result<claim::Survey> {
        let registry = self.registry;
        let held = match self.client.list_children(&registry.lease_dir()).await {
            Ok(names) => names.iter().filter_map(|n| n.parse().ok()).collect(),
            Err(e) => return Err(registry.claim_failed(e).await),
        };
        let mut survey = claim::Survey {
            held,
            marks: Default::default(),
        };
        if !marks {
            return Ok(survey);
        }
        let mark_dir = format!("{}/mark", registry.root);
        let ids: Vec<u64> = match self.client.list_children(&mark_dir).await {
            Ok(names) => names
                .iter()
                .filter_map(|n| n.parse().ok())
                .filter(|id| *id < space && !survey.held.contains(id))
                .collect(),
            Err(e) => return Err(registry.claim_failed(e).await),
        };
        // One round trip for all of them: the client pipelines the reads.
        let paths: Vec<String> = ids.iter().map(|id| registry.mark_path(*id)).collect();
        let reads = paths.iter().map(|path| self.client.get_data(path));
        for (id, read) in ids.iter().zip(futures_util::future::join_all(reads).await) {
            match read {
                Ok((data, _)) => {
                    survey
                        .marks
                        .insert(*id, String::from_utf8_lossy(&data).trim().parse().ok());
                }
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(registry.claim_failed(e).await),
            }
        }
        Ok(survey)
    }

    async fn try_claim(&self, id: u64) -> Result<claim::Claim> {
        Ok(
            match self.registry.create(&self.client, id, self.holder).await? {
                None => claim::Claim::Claimed,
                Some(_) => claim::Claim::Taken,
            },
        )
    }

    async fn live_holders(&self) -> Result<Vec<(u64, String)>> {
        self.registry.holders().await
    }

    fn place(&self) -> String {
        format!("under {}", self.registry.root)
    }
}

/// Refuses a session whose negotiated timeout is shorter than `ttl`: its leases could end
/// before the node's fence.
fn check_timeout(client: &Arc<dyn ZkSession>, ttl: Duration, limit: &str) -> Result<()> {
    let timeout = client.session_timeout();
    if timeout < ttl {
        return Err(Error::InvalidInput(format!(
            "a lease of {ttl:?} needs a ZooKeeper session timeout at least that long, and {limit} allows {timeout:?}: use a ttl of at most {timeout:?} (or raise maxSessionTimeout on the server); one registry keeps one session, so use one ttl per registry"
        )));
    }
    Ok(())
}

/// Reads every znode of `paths`, [`READ_IN_FLIGHT`] at a time on the session: one after
/// another, a start's reads of every live lease (its peers' clocks, its layout check) took
/// a simulated node about 1.2 s at 200 leases with ZooKeeper 2 to 4 ms away, past the third
/// of a 2 s ttl each call may take.
async fn read_all(
    client: &Arc<dyn ZkSession>,
    paths: &[String],
) -> Vec<std::result::Result<(Vec<u8>, api::Stat), ZkError>> {
    let mut reads = Vec::with_capacity(paths.len());
    for chunk in paths.chunks(READ_IN_FLIGHT) {
        reads
            .extend(futures_util::future::join_all(chunk.iter().map(|p| client.get_data(p))).await);
    }
    reads
}

/// A `multi`'s create of `path`.
fn create(path: &str, data: &[u8], mode: Mode) -> WriteOp {
    WriteOp::Create {
        path: path.to_string(),
        data: data.to_vec(),
        mode,
    }
}

/// A `multi`'s set of `path`'s data, at `version`.
fn set_data(path: &str, data: &[u8], version: i32) -> WriteOp {
    WriteOp::SetData {
        path: path.to_string(),
        data: data.to_vec(),
        version: Some(version),
    }
}

/// A session for reads and setup that holds nothing (no ephemeral znodes), so replacing it
/// loses nothing: an ended session stays dead, and the next call opens a new one.
#[derive(Debug, Clone)]
struct Reader {
    zk: Arc<dyn ZkConnector>,
    session: Arc<Mutex<Option<Arc<dyn ZkSession>>>>,
}

impl Reader {
    fn new(zk: Arc<dyn ZkConnector>) -> Self {
        Self {
            zk,
            session: Arc::default(),
        }
    }

    /// The live session, or a new one if there is none or it ended.
    async fn client(&self) -> Result<Arc<dyn ZkSession>> {
        let mut slot = self.session.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.is_terminated()) {
            return Ok(client.clone());
        }
        let client = self
            .zk
            .connect(READER_TIMEOUT, Some(READER_CONNECTION_TIMEOUT))
            .await?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Turns a ZooKeeper error into ours, dropping the session if it cannot recover.
    async fn failed(&self, e: ZkError) -> Error {
        if terminal(&e) {
            *self.session.lock().await = None;
        }
        e.into()
    }

    /// [`failed`](Self::failed) for a request on `path`: a refusal names the user and path.
    async fn failed_on(&self, path: &str, e: ZkError) -> Error {
        match e {
            ZkError::NoAuth => self.zk.refused(path, e),
            e => self.failed(e).await,
        }
    }
}

fn lease_data(lease: &Lease) -> Result<Vec<u8>> {
    serde_json::to_vec(lease).map_err(|e| Error::InvalidInput(e.to_string()))
}

fn lost(worker_id: u64, holder: &str, reason: String) -> Error {
    Error::LeaseLost {
        worker_id,
        holder: holder.to_string(),
        reason,
    }
}

fn race(path: &str) -> Error {
    Error::Unavailable(
        format!("znode {path} changed under each of {MAX_RACES} writes in a row; retry").into(),
    )
}
