//! What a tso run's nodes share: the simulated etcd, network and faults of the worker
//! simulation ([`World`]), the processes that run now, and what the clients saw.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::TsoConfig;

use super::process::Process;
use crate::world::{World, lock};

/// One answered request, as its client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    /// The node the client asked.
    pub node: usize,
    /// When it asked and when the answer came, ns since the run began.
    pub invoke_ns: u64,
    /// See `invoke_ns`.
    pub complete_ns: u64,
    /// The IDs.
    pub range: IdRange,
    /// The term that issued them.
    pub term: i64,
}

/// What the clients saw and what happened, for the checks and the report.
#[derive(Debug, Default)]
pub struct Log {
    /// Every answered request, in order of completion.
    pub answered: Vec<Answered>,
    /// Requests that got no IDs.
    pub failed: u64,
    /// Faults and other events, by kind.
    pub counts: BTreeMap<&'static str, u64>,
    /// Processes started.
    pub starts: u64,
    /// Terms led (a term begins when a node wins a campaign), by the processes that ended.
    pub terms_ended: u64,
}

/// The shared state of one tso run.
#[derive(Debug)]
pub struct TsoWorld {
    /// The etcd, the network, the nodes' faults and the RNG.
    pub world: Arc<World>,
    processes: Mutex<Vec<Option<Arc<Process>>>>,
    /// The leader lease.
    pub ttl: Duration,
    /// The oracle's options.
    pub tso: TsoConfig,
    /// How long a follower waits for the leader's answer (the server's: twice the lease).
    pub forward_timeout: Duration,
    /// Chance that a follower's call is answered with the leader's previous answer again.
    pub duplicate: f64,
    /// What happened.
    pub log: Mutex<Log>,
}

impl TsoWorld {
    /// A run's state with no process started.
    pub fn new(world: Arc<World>, ttl: Duration, tso: TsoConfig, duplicate: f64) -> Self {
        let nodes = world.scenario.settings.nodes;
        Self {
            world,
            processes: Mutex::new(vec![None; nodes]),
            ttl,
            tso,
            forward_timeout: ttl * 2,
            duplicate,
            log: Mutex::new(Log::default()),
        }
    }

    /// Node `n`'s process, if one runs.
    pub fn process(&self, n: usize) -> Option<Arc<Process>> {
        lock(&self.processes)[n].clone()
    }

    /// Nodes whose process leads now.
    pub fn leaders(&self) -> Vec<usize> {
        lock(&self.processes)
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                p.as_ref().is_some_and(|p| {
                    matches!(p.node.role(), snowdrift_store::tso::Role::Leader { .. })
                })
            })
            .map(|(n, _)| n)
            .collect()
    }

    /// Starts a process on node `n` (none must run there).
    pub fn start(&self, n: usize) {
        match Process::start(&self.world, n, self.ttl, self.tso) {
            Ok(p) => {
                lock(&self.processes)[n] = Some(Arc::new(p));
                lock(&self.log).starts += 1;
            }
            Err(e) => panic!("starting the oracle node {n}: {e}"),
        }
    }

    /// Takes node `n`'s process out of the fleet: no request reaches it any more.
    pub fn take(&self, n: usize) -> Option<Arc<Process>> {
        let p = lock(&self.processes)[n].take();
        if let Some(p) = &p {
            lock(&self.log).terms_ended += p.node.report().terms;
        }
        p
    }

    /// Terms led by every process so far.
    pub fn terms(&self) -> u64 {
        let running: u64 = lock(&self.processes)
            .iter()
            .flatten()
            .map(|p| p.node.report().terms)
            .sum();
        lock(&self.log).terms_ended + running
    }

    /// Counts an event.
    pub fn count(&self, what: &'static str) {
        *lock(&self.log).counts.entry(what).or_default() += 1;
    }
}
