//! One type over every coordinator backend, chosen by the URL's scheme.

use std::time::Duration;

use super::file::FileRegistry;
use super::{PeerClocks, PeerTime};
use crate::error::{Error, Result};

/// A worker-ID coordinator: the lease, high-water mark and clock-report operations of the
/// module docs, on whichever backend the URL names.
///
/// | URL | backend |
/// |---|---|
/// | `file://DIR` | [`FileRegistry`]: lock files on this machine |
/// | `etcd://HOST:2379`, `http://HOST:2379` | etcd (cargo feature `etcd`) |
/// | `zookeeper://HOST:2181`, `zk://HOST:2181` | ZooKeeper (feature `zookeeper`) |
/// | `sqlite://FILE`, `postgres://...`, `mysql://...`, `mariadb://...` | a SQL table |
/// | `redis://HOST:6379` | Redis keys (feature `redis`) |
#[derive(Debug)]
#[non_exhaustive]
pub enum WorkerRegistry {
    /// Lock files on this machine.
    File(FileRegistry),
    /// A `worker_node` table on SQLite, PostgreSQL or MySQL/MariaDB.
    Sql(super::sql::SqlRegistry),
    /// Redis keys.
    #[cfg(feature = "redis")]
    Redis(super::redis::RedisRegistry),
    /// etcd keys under leases.
    #[cfg(feature = "etcd")]
    Etcd(super::etcd::EtcdRegistry),
    /// ZooKeeper ephemeral znodes.
    #[cfg(feature = "zookeeper")]
    Zk(super::zookeeper::ZkRegistry),
}

/// Calls the same method on whichever backend `self` is.
macro_rules! dispatch {
    ($self:ident, $r:ident => $call:expr) => {
        match $self {
            WorkerRegistry::File($r) => $call,
            WorkerRegistry::Sql($r) => $call,
            #[cfg(feature = "redis")]
            WorkerRegistry::Redis($r) => $call,
            #[cfg(feature = "etcd")]
            WorkerRegistry::Etcd($r) => $call,
            #[cfg(feature = "zookeeper")]
            WorkerRegistry::Zk($r) => $call,
        }
    };
}

/// The URL schemes [`WorkerRegistry::connect`] knows (some may be left out of this build by
/// its cargo features; connecting then says which).
pub const REGISTRY_SCHEMES: &[&str] = &[
    "file",
    "etcd",
    "http",
    "https",
    "zookeeper",
    "zk",
    "sqlite",
    "postgres",
    "postgresql",
    "mysql",
    "mariadb",
    "redis",
    "rediss",
];

impl WorkerRegistry {
    /// Connects to the coordinator `url` (see the table above); `namespace` names the
    /// table, key prefix, root znode or file prefix, so several clusters can share one
    /// coordinator.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self> {
        let scheme = url.split("://").next().unwrap_or_default();
        #[allow(unused)]
        let not_built = |feature: &str| Error::InvalidUrl {
            url: format!("{scheme}://…"),
            reason: format!(
                "this build of snowdrift has no {feature} worker registry (cargo feature {feature:?})"
            ),
        };
        match scheme {
            "file" => Ok(Self::File(FileRegistry::connect(url, namespace)?)),
            "sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb" => Ok(Self::Sql(
                super::sql::SqlRegistry::connect(url, namespace).await?,
            )),
            #[cfg(feature = "redis")]
            "redis" | "rediss" => Ok(Self::Redis(
                super::redis::RedisRegistry::connect(url, namespace).await?,
            )),
            #[cfg(feature = "etcd")]
            "etcd" | "http" | "https" => Ok(Self::Etcd(
                super::etcd::EtcdRegistry::connect(url, namespace).await?,
            )),
            #[cfg(feature = "zookeeper")]
            "zookeeper" | "zk" => Ok(Self::Zk(
                super::zookeeper::ZkRegistry::connect(
                    &url.replacen("zk://", "zookeeper://", 1),
                    namespace,
                )
                .await?,
            )),
            #[cfg(not(feature = "redis"))]
            "redis" | "rediss" => Err(not_built("redis")),
            #[cfg(not(feature = "etcd"))]
            "etcd" | "http" | "https" => Err(not_built("etcd")),
            #[cfg(not(feature = "zookeeper"))]
            "zookeeper" | "zk" => Err(not_built("zookeeper")),
            _ => Err(Error::InvalidUrl {
                url: format!("{scheme}://…"),
                reason: "use file://DIR, etcd://HOST:2379, zookeeper://HOST:2181, sqlite://FILE, postgres://..., mysql://... or redis://HOST:6379".into(),
            }),
        }
    }

    /// Opens the registry at `url` as [`connect`](Self::connect) does, creating nothing:
    /// `None` when nothing was ever leased there (no table, no `/{namespace}` znode, no
    /// directory), so every worker ID is free and has no mark. etcd and Redis create nothing
    /// on connect and are always opened. For previews that must leave the registry as it
    /// was (see [`preview_marks_at`](Self::preview_marks_at)).
    pub async fn open_existing(url: &str, namespace: &str) -> Result<Option<Self>> {
        let scheme = url.split("://").next().unwrap_or_default();
        match scheme {
            "file" => {
                let dir = FileRegistry::dir_of(url)?;
                if !dir.exists() {
                    super::sql::validate_namespace(namespace)?;
                    return Ok(None);
                }
                Ok(Some(Self::File(FileRegistry::connect(url, namespace)?)))
            }
            "sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb" => {
                Ok(super::sql::SqlRegistry::open_existing(url, namespace)
                    .await?
                    .map(Self::Sql))
            }
            #[cfg(feature = "zookeeper")]
            "zookeeper" | "zk" => Ok(super::zookeeper::ZkRegistry::open_existing(
                &url.replacen("zk://", "zookeeper://", 1),
                namespace,
            )
            .await?
            .map(Self::Zk)),
            _ => Self::connect(url, namespace).await.map(Some),
        }
    }

    /// The backend's name, for status pages: `file`, `etcd`, `zookeeper`, `sqlite`,
    /// `postgres`, `mysql` or `redis`.
    pub fn backend(&self) -> &'static str {
        match self {
            WorkerRegistry::File(_) => "file",
            WorkerRegistry::Sql(r) => r.backend(),
            #[cfg(feature = "redis")]
            WorkerRegistry::Redis(_) => "redis",
            #[cfg(feature = "etcd")]
            WorkerRegistry::Etcd(_) => "etcd",
            #[cfg(feature = "zookeeper")]
            WorkerRegistry::Zk(_) => "zookeeper",
        }
    }

    /// How often the lease must be renewed at least, when the backend needs it more often
    /// than a third of the TTL: a file registry proves its lock files every
    /// [`CHECK_EVERY`](super::file::CHECK_EVERY).
    pub fn check_every(&self) -> Option<Duration> {
        match self {
            WorkerRegistry::File(r) => Some(r.check_every()),
            _ => None,
        }
    }

    /// How long after a renewal was sent the holder may issue, when the backend sets it
    /// instead of `ttl - margin`: a file registry's proof is valid for
    /// [`PROOF_VALID`](super::file::PROOF_VALID).
    pub fn proof_valid(&self) -> Option<Duration> {
        match self {
            WorkerRegistry::File(r) => Some(r.proof_valid()),
            _ => None,
        }
    }

    /// Whether the claim of `worker_id` created its lock file (see
    /// [`FileRegistry::created_lock`]); always false for coordinators, whose marks cannot
    /// vanish under a live holder.
    pub fn created_lock(&self, worker_id: u64) -> bool {
        match self {
            WorkerRegistry::File(r) => r.created_lock(worker_id),
            _ => false,
        }
    }

    /// Leases the lowest free worker ID in `0..space`; [`Error::WorkersExhausted`] when
    /// none is free.
    pub async fn claim_lowest(&self, space: u64, holder: &str, ttl: Duration) -> Result<u64> {
        dispatch!(self, r => r.claim_free(space, holder, ttl, None).await)
    }

    /// Leases a free worker ID in `0..space`, preferring one whose high-water mark is at
    /// or before `now_ms` (the claiming node's clock), so a node can issue at once: the
    /// lowest such ID, else the one whose mark passes soonest (see each backend's
    /// `claim_free`). [`Error::WorkersExhausted`] when none is free. The caller still
    /// reads the claimed ID's mark and waits it out: the marks read to choose may be stale.
    pub async fn claim_ready(
        &self,
        space: u64,
        holder: &str,
        ttl: Duration,
        now_ms: u64,
    ) -> Result<u64> {
        dispatch!(self, r => r.claim_free(space, holder, ttl, Some(now_ms)).await)
    }

    /// Leases exactly `worker_id`; [`Error::WorkerTaken`] when another live node holds it.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        dispatch!(self, r => r.claim(worker_id, holder, ttl).await)
    }

    /// Extends the lease; [`Error::LeaseLost`] when it is gone.
    pub async fn renew(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        dispatch!(self, r => r.renew(worker_id, holder, ttl).await)
    }

    /// Gives the worker ID back (a no-op when `holder` no longer holds it).
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        dispatch!(self, r => r.release(worker_id, holder).await)
    }

    /// Reserves `worker_id` for `holder`, which is no server (a database's ID functions,
    /// `snowdrift sql install --registry`), for good: an entry no server's claim takes and
    /// that never expires (a SQL row whose lease ends at the largest `BIGINT`, an etcd
    /// worker key without a lease, a Redis key without a TTL, a persistent znode, a
    /// reservation file beside the lock file), listed as
    /// [`never_expires`](WorkerEntry::never_expires). `layout` is recorded beside the mark,
    /// which stays. [`Error::WorkerTaken`] when someone else holds the ID; a no-op when
    /// `holder` has reserved it already. Only [`unreserve`](Self::unreserve) ends it.
    pub async fn reserve(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        dispatch!(self, r => r.reserve(worker_id, holder, layout).await)
    }

    /// Ends `holder`'s reservation of `worker_id`, raising its high-water mark to `mark`
    /// (stored form, [`Mark::stored`](super::Mark::stored)) first or in the same step, so
    /// the next server to claim it starts above every ID issued under the reservation.
    /// `Ok(false)` when the registry no longer shows that reservation (edited by hand):
    /// nothing was written.
    pub async fn unreserve(&self, worker_id: u64, holder: &str, mark: u64) -> Result<bool> {
        dispatch!(self, r => r.unreserve(worker_id, holder, mark).await)
    }

    /// The live leases: worker ID and holder.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        dispatch!(self, r => r.holders().await)
    }

    /// The worker ID's durable high-water mark (ms since 1970), if any.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        dispatch!(self, r => r.read_mark(worker_id).await)
    }

    /// Raises the high-water mark durably; [`Error::LeaseLost`] unless `holder` holds the ID.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        dispatch!(self, r => r.write_mark(worker_id, holder, mark_ms).await)
    }

    /// Publishes this node's clock reading.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, now_ms: u64) -> Result<()> {
        dispatch!(self, r => r.publish_time(worker_id, holder, now_ms).await)
    }

    /// Every live node's latest clock reading.
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        dispatch!(self, r => r.peer_times().await)
    }

    /// The highest and lowest clock reports of the live nodes other than `holder`.
    pub async fn peer_clocks(&self, holder: &str) -> Result<PeerClocks> {
        dispatch!(self, r => r.peer_clocks(holder).await)
    }

    /// The layout recorded beside the worker ID's mark ([`record`] of the layout its last
    /// holder issued under), if any.
    ///
    /// [`record`]: snowdrift_core::layout::migrate::record
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        dispatch!(self, r => r.read_layout(worker_id).await)
    }

    /// Records the layout `holder` issues under; [`Error::LeaseLost`] unless it holds the ID.
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        dispatch!(self, r => r.write_layout(worker_id, holder, layout).await)
    }

    /// Every worker ID held now (a lease not yet expired, renewed or not), by worker ID:
    /// what an operator sees with `snowdrift workers list`.
    ///
    /// One bad entry does not fail the listing: an entry read only in part (a mark that is
    /// not a number, a lease that is not a lease, a key no server can use) is listed with
    /// its [`problem`](WorkerEntry::problem), and a lease whose worker ID cannot be read
    /// lands in [`WorkerList::unreadable`]. Only a registry that cannot be read at all is
    /// an error. The server's own reads ([`read_mark`](Self::read_mark) and the others)
    /// still refuse what does not parse.
    pub async fn list(&self) -> Result<WorkerList> {
        Ok(sorted(dispatch!(self, r => r.list().await)?))
    }

    /// [`list`](Self::list), maybe without the leases' times left
    /// ([`WorkerEntry::lease_left_ms`] and `expiring`): etcd asks for those one request
    /// per lease, which a starting node's layout check does not need (a fleet of 1,000
    /// starting at once made a million requests). The other registries read everything in
    /// one go and list it all.
    pub async fn list_brief(&self) -> Result<WorkerList> {
        #[cfg(feature = "etcd")]
        if let WorkerRegistry::Etcd(r) = self {
            return Ok(sorted(r.list_brief().await?));
        }
        self.list().await
    }
}

fn sorted(mut list: WorkerList) -> WorkerList {
    list.entries.sort_by_key(|e| e.worker_id);
    list.unreadable.sort_by(|a, b| a.key.cmp(&b.key));
    list
}

/// What [`WorkerRegistry::list`] found on a registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerList {
    /// Every worker ID held, by worker ID, including the ones no server can use (see
    /// [`WorkerEntry::never_expires`]): a server's claim skips every one of them.
    pub entries: Vec<WorkerEntry>,
    /// Leases whose worker ID cannot be read (a key `worker/abc`, a row with
    /// `worker_id = -1`), by key.
    pub unreadable: Vec<UnreadableEntry>,
}

/// One held worker ID as [`WorkerRegistry::list`] reports it.
///
/// Every text in it is as the registry holds it, control characters included: escape it
/// before printing it on a terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerEntry {
    /// The worker ID.
    pub worker_id: u64,
    /// Who holds it (host/pid/nonce for a server); `?` when it cannot be read (the
    /// [`problem`](Self::problem) says why).
    pub holder: String,
    /// When its holder claimed it (ms since 1970, by the coordinator's clock where it has
    /// one, else the claiming node's); `None` when the claim did not record it (a node of an
    /// older version).
    pub since_ms: Option<u64>,
    /// How long the lease lasts without a renewal; `None` for a file lock (it lasts as long
    /// as its process) and for a lease that [never expires](Self::never_expires).
    pub lease_left_ms: Option<u64>,
    /// The lease's length, as claimed; `None` when unknown.
    pub lease_ttl_ms: Option<u64>,
    /// Its holder has missed its renewals (or clock reports): the lease runs out unless it
    /// comes back, and the ID is free then.
    pub expiring: bool,
    /// Nothing ends this lease by itself, and no server can hold it as it stands (an etcd
    /// key without a lease, a Redis key without a TTL, a persistent znode, a lock file
    /// snowdrift did not make): a server's claim skips the ID, or stops at it, until
    /// someone deletes the entry. The [`problem`](Self::problem) says how.
    pub never_expires: bool,
    /// The stored high-water mark (see [`Mark::from_stored`](super::Mark::from_stored));
    /// `None` when there is none or it cannot be read (then the
    /// [`problem`](Self::problem) says so).
    pub mark: Option<u64>,
    /// The layout recorded beside the mark.
    pub layout: Option<String>,
    /// What is wrong with this entry and what to do about it, when something is: a part
    /// that cannot be read (the other fields hold what could be), or a lease a server
    /// cannot use. Several problems are joined by `; `.
    pub problem: Option<String>,
}

impl WorkerEntry {
    /// An entry with no times, mark or layout known yet.
    pub fn new(worker_id: u64, holder: String) -> Self {
        Self {
            worker_id,
            holder,
            since_ms: None,
            lease_left_ms: None,
            lease_ttl_ms: None,
            expiring: false,
            never_expires: false,
            mark: None,
            layout: None,
            problem: None,
        }
    }

    /// Adds `problem` to the entry's problems.
    pub fn flag(&mut self, problem: impl Into<String>) {
        let problem = problem.into();
        self.problem = Some(match self.problem.take() {
            Some(before) => format!("{before}; {problem}"),
            None => problem,
        });
    }

    /// A lease that ends at no time and that no server can use: `never_expires`, no time
    /// left, not expiring, and `problem`.
    pub(super) fn stuck(&mut self, problem: impl Into<String>) {
        self.never_expires = true;
        self.lease_left_ms = None;
        self.expiring = false;
        self.flag(problem);
    }

    /// [`stuck`](Self::stuck) with `problem`, or, when the holder is a database's
    /// (`snowdrift sql install`, [`RESERVATION_PREFIX`]), with what frees that reservation
    /// safely.
    ///
    /// [`RESERVATION_PREFIX`]: crate::sql_functions::RESERVATION_PREFIX
    pub(super) fn stuck_or_reserved(&mut self, problem: impl Into<String>) {
        match self
            .holder
            .strip_prefix(crate::sql_functions::RESERVATION_PREFIX)
        {
            Some(db) => {
                let problem = format!(
                    "reserved for the ID functions of database {db} (snowdrift sql install --registry): no server takes it; free it only with snowdrift sql uninstall --registry, which writes the database's last high-water mark first (deleting it by hand lets a server repeat the database's IDs)"
                );
                self.stuck(problem)
            }
            None => self.stuck(problem),
        }
    }

    /// Flags a lease that lasts longer than it was claimed for (set by hand: every claim
    /// and renew sets it to its ttl): it holds the ID until it ends, however far that is.
    /// `free` says how to free it.
    pub(super) fn flag_long_lease(&mut self, free: &str) {
        // A ttl older nodes did not record is at most the longest one a claim accepts.
        let ttl = self.lease_ttl_ms.unwrap_or(i32::MAX as u64);
        if let Some(left) = self.lease_left_ms
            && left > ttl.saturating_add(1000)
        {
            self.flag(format!(
                "its lease ends in {}, far beyond the {} it was claimed for: it was set by hand. A server skips this worker ID until then; {free}",
                duration_text(left),
                self.lease_ttl_ms
                    .map_or("ttl (not recorded)".into(), duration_text)
            ));
        }
    }
}

/// A lease on a registry whose worker ID cannot be read, as [`WorkerRegistry::list`]
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnreadableEntry {
    /// The key, znode, file or row as the registry names it (`/ns/worker/abc`,
    /// `worker_id = -1`), as it is: escape it before printing it on a terminal.
    pub key: String,
    /// What is wrong, what a server does about it, and what to do.
    pub problem: String,
}

impl UnreadableEntry {
    pub(super) fn new(key: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            problem: problem.into(),
        }
    }
}

/// A duration for people: `4.2 s`, `3 min 20 s`, `5 h 2 min`, `12 days 3 h`, `292471208
/// years`.
pub fn duration_text(ms: u64) -> String {
    const MIN: u64 = 60_000;
    const HOUR: u64 = 60 * MIN;
    const DAY: u64 = 24 * HOUR;
    // A Julian year, 365.25 days.
    const YEAR: u64 = 36_525 * DAY / 100;
    match ms {
        ms if ms < MIN => format!("{:.1} s", ms as f64 / 1000.0),
        ms if ms < HOUR => two(ms / MIN, "min", ms % MIN / 1000, "s"),
        ms if ms < DAY => two(ms / HOUR, "h", ms % HOUR / MIN, "min"),
        ms if ms < YEAR => two(ms / DAY, "days", ms % DAY / HOUR, "h"),
        ms => format!("{} years", ms / YEAR),
    }
}

/// `3 min 20 s`, or `3 min` when the smaller unit is 0.
fn two(big: u64, big_unit: &str, small: u64, small_unit: &str) -> String {
    match small {
        0 => format!("{big} {big_unit}"),
        _ => format!("{big} {big_unit} {small} {small_unit}"),
    }
}
