//! The simulated coordinator a run's nodes lease their worker IDs from, whichever registry
//! the run drives: what the checker asks it (who holds a worker ID by its own view), what
//! the fault driver does to it (its periodic expiry, a leader change), what the report
//! counts, and how a node's real registry is put on it.
//!
//! Each backend is a module of its own (its server's semantics) beside a client of its own
//! over [`network`](crate::network); this is the one place that tells them apart.

use std::sync::Arc;
use std::time::Duration;

use snowdrift_store::worker::WorkerRegistry;
use snowdrift_store::worker::etcd::EtcdRegistry;
use tokio::time::Instant;

use crate::clock::SimClock;
use crate::etcd::{Etcd, LESSOR_EVERY};
use crate::network::Link;
use crate::node::NAMESPACE;
use crate::world::World;

/// Which registry a run drives, and so which coordinator it simulates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The etcd registry on a simulated etcd.
    #[default]
    Etcd,
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 1] = [Backend::Etcd];

    /// Its name on the command line (`--registry NAME`) and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Etcd => "etcd",
        }
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
}

impl Coordinator {
    /// A fresh coordinator of `backend`.
    pub fn new(backend: Backend) -> Self {
        match backend {
            Backend::Etcd => Coordinator::Etcd(Etcd::new()),
        }
    }

    /// Its name in the checker's messages and the report.
    pub fn name(&self) -> &'static str {
        match self {
            Coordinator::Etcd(_) => "etcd",
        }
    }

    /// The etcd of an etcd run (the etcd client's requests run on it).
    ///
    /// # Panics
    /// In a run of another backend: the simulator built an etcd client there.
    pub fn etcd(&mut self) -> &mut Etcd {
        match self {
            Coordinator::Etcd(etcd) => etcd,
        }
    }

    /// Who holds worker ID `worker_id` at `now` by the coordinator's own view (the ground
    /// truth a node must agree with whenever it issues), if anyone.
    pub fn live_holder(&self, worker_id: u64, now: Instant) -> Option<String> {
        match self {
            Coordinator::Etcd(etcd) => etcd
                .live_holder(&worker_key(worker_id), now)
                .map(str::to_string),
        }
    }

    /// How often [`tick`](Self::tick) runs.
    pub fn tick_every(&self) -> Duration {
        match self {
            Coordinator::Etcd(_) => LESSOR_EVERY,
        }
    }

    /// Its periodic work at `now`: etcd's lessor revoking expired leases.
    pub fn tick(&mut self, now: Instant) {
        match self {
            Coordinator::Etcd(etcd) => etcd.expire(now),
        }
    }

    /// Its leader is lost at `now` and a new one elected after `outage`.
    pub fn elect(&mut self, now: Instant, outage: Duration) {
        match self {
            Coordinator::Etcd(etcd) => etcd.elect(now, outage),
        }
    }

    /// What it did so far.
    pub fn stats(&self) -> Stats {
        match self {
            Coordinator::Etcd(etcd) => etcd.stats,
        }
    }

    /// How many worker IDs are leased now.
    pub fn held(&self) -> usize {
        match self {
            Coordinator::Etcd(etcd) => etcd.keys_under(&worker_key_prefix()).len(),
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
    }
}

/// The etcd key of worker ID `worker_id`'s lease.
fn worker_key(worker_id: u64) -> String {
    format!("{}{worker_id}", worker_key_prefix())
}

fn worker_key_prefix() -> String {
    format!("/{NAMESPACE}/worker/")
}
