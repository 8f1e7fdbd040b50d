//! The simulated coordinator a run's nodes lease their worker IDs from, whichever registry
//! the run drives: what the checker asks it (who holds a worker ID by its own view), what
//! the fault driver does to it (its periodic expiry, a leader change), what the report
//! counts, and how a node's real registry is put on it.
//!
//! Each backend is a module of its own (its server's semantics) beside a client of its own
//! over [`network`](crate::network) (or, for the file registry, the machine's disk); this
//! is the one place that tells them apart.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use snowdrift_store::worker::etcd::EtcdRegistry;
use snowdrift_store::worker::redis::RedisRegistry;
use snowdrift_store::worker::sql::SqlRegistry;
use snowdrift_store::worker::zookeeper::ZkRegistry;
use snowdrift_store::worker::{FileRegistry, WorkerRegistry};
use tokio::time::Instant;

use crate::clock::SimClock;
use crate::disk::Disk;
use crate::etcd::{Etcd, LESSOR_EVERY};
use crate::fs::SimFs;
use crate::network::Link;
use crate::node::NAMESPACE;
use crate::redis::{EXPIRE_EVERY, Redis};
use crate::redis_link::RedisLink;
use crate::scenario::Scenario;
use crate::sql::SqlDatabase;
use crate::sql_link::SqlLink;
use crate::world::World;
use crate::zk_client::SimConnector;
use crate::zookeeper::ZooKeeper;

/// The file registry's directory on the simulated machine.
pub const WORKER_DIR: &str = "/var/lib/snowdrift/workers";

/// Which registry a run drives, and so which coordinator it simulates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The etcd registry on a simulated etcd.
    #[default]
    Etcd,
    /// The Redis registry on a simulated Redis (a primary and an asynchronous replica).
    Redis,
    /// The file registry on the simulated disk of the one machine every node runs on.
    File,
    /// The ZooKeeper registry on a simulated ZooKeeper ensemble.
    ZooKeeper,
    /// The SQL registry on a real in-process SQLite behind a simulated network, on the
    /// database host's simulated clock.
    Sql,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 5] = [
        Backend::Etcd,
        Backend::Redis,
        Backend::File,
        Backend::ZooKeeper,
        Backend::Sql,
    ];

    /// Its name on the command line (`--registry NAME`) and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Etcd => "etcd",
            Backend::Redis => "redis",
            Backend::File => "file",
            Backend::ZooKeeper => "zookeeper",
            Backend::Sql => "sql",
        }
    }

    /// Every node runs on one machine (the file registry's case): one wall clock, one
    /// disk, no network between a node and its registry.
    pub fn one_machine(self) -> bool {
        self == Backend::File
    }

    /// The backend named `text`, or an error listing the names.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "no registry {text:?}; the registries are {}",
                    names.join(", ")
                )
            })
    }
}

/// What the coordinator did, for the capacity figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests answered (any kind).
    pub requests: u64,
    /// Requests that wrote through consensus (and expiries, which write too).
    pub writes: u64,
    /// Lease keep-alives or session pings (handled without consensus).
    pub keep_alives: u64,
    /// Keys (or znodes) returned by reads.
    pub keys_read: u64,
    /// Leases or sessions that expired (the holder stopped renewing them).
    pub expired: u64,
}

/// The simulated coordinator of a run.
#[derive(Debug)]
#[non_exhaustive]
pub enum Coordinator {
    /// A simulated etcd.
    Etcd(Etcd),
    /// A simulated Redis; its failovers lose what the replica had not applied when
    /// `crash_failover` (the primary's host dies), nothing otherwise (`FAILOVER`).
    Redis {
        /// The primary and its replica.
        redis: Redis,
        /// Failovers are crashes of the primary's host.
        crash_failover: bool,
    },
    /// The disk of the machine every node runs on.
    File(Arc<Disk>),
    /// A simulated ZooKeeper ensemble.
    ZooKeeper(ZooKeeper),
    /// A SQLite database on a simulated host.
    Sql(SqlDatabase),
}

impl Coordinator {
    /// A fresh coordinator for `scenario`, in a run that began at `t0`.
    pub fn new(scenario: &Scenario, t0: Instant) -> Self {
        match scenario.settings.registry {
            Backend::Etcd => Coordinator::Etcd(Etcd::new()),
            Backend::Redis => {
                // Drawn apart from the world's RNG, so the other backends' runs stay as
                // they were.
                let mut rng = StdRng::seed_from_u64(scenario.settings.seed ^ 0x4ed1_5000);
                let crash_failover = scenario.settings.redis_crash_failover;
                // A replica in the same zone trails by a millisecond or so; a busy one, or
                // one in another zone, by far more.
                let lag_ms = if crash_failover {
                    *[1u64, 20, 200, 1000]
                        .get(rng.random_range(0..4))
                        .unwrap_or(&1)
                } else {
                    1
                };
                // Hosts kept right by NTP, tens of milliseconds apart at most.
                let offsets = (rng.random_range(-30..=30), rng.random_range(-30..=30));
                Coordinator::Redis {
                    redis: Redis::new(t0, Duration::from_millis(lag_ms), offsets),
                    crash_failover,
                }
            }
            Backend::File => Coordinator::File(Arc::new(Disk::new(t0))),
            Backend::ZooKeeper => {
                // Drawn apart from the world's RNG too.
                let mut rng = StdRng::seed_from_u64(scenario.settings.seed ^ 0x200c_ee9e);
                let tick = ZK_TICKS_MS[rng.random_range(0..ZK_TICKS_MS.len())];
                Coordinator::ZooKeeper(ZooKeeper::new(Duration::from_millis(tick), t0))
            }
            Backend::Sql => {
                // Drawn apart too. A database host kept right by NTP.
                let mut rng = StdRng::seed_from_u64(scenario.settings.seed ^ 0x5a1d_b000);
                Coordinator::Sql(SqlDatabase::new(t0, rng.random_range(-50..=50)))
            }
        }
    }

    /// Its name in the checker's messages and the report.
    pub fn name(&self) -> &'static str {
        match self {
            Coordinator::Etcd(_) => "etcd",
            Coordinator::Redis { .. } => "Redis",
            Coordinator::File(_) => "the machine's file locks",
            Coordinator::ZooKeeper(_) => "ZooKeeper",
            Coordinator::Sql(_) => "the SQL database",
        }
    }

    /// The etcd of an etcd run (the etcd client's requests run on it).
    ///
    /// # Panics
    /// In a run of another backend: the simulator built an etcd client there.
    pub fn etcd(&mut self) -> &mut Etcd {
        match self {
            Coordinator::Etcd(etcd) => etcd,
            other => panic!("an etcd request in a run on {}", other.name()),
        }
    }

    /// The Redis of a Redis run (the Redis connections' requests run on it).
    ///
    /// # Panics
    /// In a run of another backend: the simulator built a Redis client there.
    pub fn redis(&mut self) -> &mut Redis {
        match self {
            Coordinator::Redis { redis, .. } => redis,
            other => panic!("a Redis request in a run on {}", other.name()),
        }
    }

    /// The ensemble of a ZooKeeper run (the ZooKeeper client's requests run on it).
    ///
    /// # Panics
    /// In a run of another backend: the simulator built a ZooKeeper client there.
    pub fn zookeeper(&mut self) -> &mut ZooKeeper {
        match self {
            Coordinator::ZooKeeper(zk) => zk,
            other => panic!("a ZooKeeper request in a run on {}", other.name()),
        }
    }

    /// The database of a SQL run (the SQL connections' statements run on it).
    ///
    /// # Panics
    /// In a run of another backend: the simulator built a SQL connection there.
    pub fn sql(&mut self) -> &mut SqlDatabase {
        match self {
            Coordinator::Sql(db) => db,
            other => panic!("a SQL statement in a run on {}", other.name()),
        }
    }

    /// The disk of a file-registry run.
    pub fn disk(&self) -> Option<&Arc<Disk>> {
        match self {
            Coordinator::File(disk) => Some(disk),
            _ => None,
        }
    }

    /// Who holds worker ID `worker_id` at `now` by the coordinator's own view (the ground
    /// truth a node must agree with whenever it issues), if anyone: for Redis, the
    /// primary's lease key (which a promoted replica's data becomes); for files, the
    /// process holding the `flock` of the lock file of that name; for ZooKeeper, the
    /// holder in the lease znode, an ephemeral one whose session the ensemble counts alive;
    /// for SQL, the worker ID's row, whose lease has not ended by the database's clock.
    pub fn live_holder(&self, worker_id: u64, now: Instant) -> Option<String> {
        match self {
            Coordinator::Etcd(etcd) => etcd
                .live_holder(&worker_key(worker_id), now)
                .map(str::to_string),
            Coordinator::Redis { redis, .. } => {
                redis.live_value(&format!("{NAMESPACE}:worker:{worker_id}"), now)
            }
            Coordinator::File(disk) => disk.lock_holder(
                Path::new(WORKER_DIR),
                &format!("{NAMESPACE}-{worker_id}.lock"),
            ),
            Coordinator::ZooKeeper(zk) => {
                let data = zk.live_owner_data(&format!("{}/{worker_id}", lease_dir()), now)?;
                let lease: serde_json::Value = serde_json::from_slice(data).ok()?;
                Some(lease.get("holder")?.as_str()?.to_string())
            }
            Coordinator::Sql(db) => db.live_holder(NAMESPACE, worker_id),
        }
    }

    /// How often [`tick`](Self::tick) runs.
    pub fn tick_every(&self) -> Duration {
        match self {
            Coordinator::Etcd(_) => LESSOR_EVERY,
            Coordinator::Redis { .. } => EXPIRE_EVERY,
            // A disk has no work of its own.
            Coordinator::File(_) => Duration::from_secs(3600),
            // The leader's session tracker expires sessions each tick.
            Coordinator::ZooKeeper(zk) => zk.tick(),
            // Leases end by the database's clock as rows are read: nothing to do.
            Coordinator::Sql(_) => Duration::from_secs(3600),
        }
    }

    /// Its periodic work at `now`: etcd's lessor revoking expired leases; Redis's active
    /// expiry and its replica applying what it received; ZooKeeper's session tracker.
    pub fn tick(&mut self, now: Instant) {
        match self {
            Coordinator::Etcd(etcd) => etcd.expire(now),
            Coordinator::Redis { redis, .. } => {
                redis.expire(now);
                redis.replicate(now);
            }
            Coordinator::File(_) | Coordinator::Sql(_) => {}
            Coordinator::ZooKeeper(zk) => zk.expire(now),
        }
    }

    /// Its leader is lost at `now` and a new one elected after `outage`: etcd's election,
    /// Redis's failover to its replica, the SQL database's restart; the fault's name. (The file registry's machine
    /// crashes instead: [`crate::machine`].)
    pub fn elect(&mut self, now: Instant, outage: Duration) -> &'static str {
        match self {
            Coordinator::Etcd(etcd) => {
                etcd.elect(now, outage);
                "leader election"
            }
            Coordinator::Redis {
                redis,
                crash_failover,
            } => {
                redis.failover(now, outage, !*crash_failover);
                if *crash_failover {
                    "Redis failover (the primary crashed)"
                } else {
                    "Redis failover (planned)"
                }
            }
            Coordinator::File(_) => "nothing (one machine)",
            Coordinator::ZooKeeper(zk) => {
                zk.elect(now, outage);
                "leader election"
            }
            Coordinator::Sql(db) => {
                db.restart(now, outage);
                "database restart"
            }
        }
    }

    /// What it did so far (for the file registry: its file system calls, and its fsyncs as
    /// the writes).
    pub fn stats(&self) -> Stats {
        match self {
            Coordinator::Etcd(etcd) => etcd.stats,
            Coordinator::Redis { redis, .. } => Stats {
                requests: redis.stats.requests,
                writes: redis.stats.writes,
                keep_alives: 0,
                keys_read: redis.stats.keys_read,
                expired: redis.stats.expired,
            },
            Coordinator::File(disk) => {
                let d = disk.stats();
                Stats {
                    requests: d.calls,
                    writes: d.fsyncs,
                    ..Stats::default()
                }
            }
            Coordinator::ZooKeeper(zk) => zk.stats,
            Coordinator::Sql(db) => db.stats,
        }
    }

    /// How many worker IDs are leased now.
    pub fn held(&self) -> usize {
        match self {
            Coordinator::Etcd(etcd) => etcd.keys_under(&worker_key_prefix()).len(),
            Coordinator::Redis { redis, .. } => {
                redis.live_keys(&format!("{NAMESPACE}:worker:"), Instant::now())
            }
            Coordinator::File(disk) => disk.locked_in(Path::new(WORKER_DIR), ".lock"),
            Coordinator::ZooKeeper(zk) => zk.count_children(&lease_dir()),
            Coordinator::Sql(db) => db.held(NAMESPACE),
        }
    }
}

/// Node `n`'s registry on the run's coordinator, for a process whose clock is `clock`.
pub async fn registry(
    world: &Arc<World>,
    n: usize,
    clock: SimClock,
) -> snowdrift_store::Result<WorkerRegistry> {
    match world.scenario.settings.registry {
        Backend::Etcd => {
            EtcdRegistry::over(Arc::new(Link::new(world.clone(), n, clock)), NAMESPACE)
                .map(WorkerRegistry::Etcd)
        }
        Backend::Redis => {
            RedisRegistry::over(Arc::new(RedisLink::new(world.clone(), n)), NAMESPACE)
                .map(WorkerRegistry::Redis)
        }
        Backend::File => {
            let disk = crate::world::lock(&world.coordinator).disk().cloned();
            let disk = disk.ok_or_else(|| {
                snowdrift_store::Error::InvalidInput("a file registry without a disk".into())
            })?;
            let fs = Arc::new(SimFs::new(world.clone(), n, disk));
            FileRegistry::connect_on(fs, &format!("file://{WORKER_DIR}"), NAMESPACE)
                .map(WorkerRegistry::File)
        }
        Backend::ZooKeeper => {
            let zk = Arc::new(SimConnector::new(world.clone(), n, clock));
            ZkRegistry::over(zk, NAMESPACE)
                .await
                .map(WorkerRegistry::Zk)
        }
        Backend::Sql => {
            let db = Arc::new(SqlLink::new(world.clone(), n));
            SqlRegistry::over(db, NAMESPACE)
                .await
                .map(WorkerRegistry::Sql)
        }
    }
}

/// The etcd key of worker ID `worker_id`'s lease.
fn worker_key(worker_id: u64) -> String {
    format!("{}{worker_id}", worker_key_prefix())
}

fn worker_key_prefix() -> String {
    format!("/{NAMESPACE}/worker/")
}

/// The znode under which the ZooKeeper registry's lease znodes are.
fn lease_dir() -> String {
    format!("/{NAMESPACE}/lease")
}

/// The `tickTime`s a ZooKeeper run draws from: its default (2 s, sessions of 4 s to 40 s)
/// and the shorter ones deployments set for faster failover (a 2 s lease then gets a
/// session of its own length).
const ZK_TICKS_MS: [u64; 3] = [500, 1000, 2000];
