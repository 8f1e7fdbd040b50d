//! Everything the simulated segment nodes share: the database, the one seeded RNG, each
//! node's faults (paused, cut off), the checker and the counts. One thread runs a seed, so
//! the locks are never contended; they only make the state `Send` for tokio's tasks.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::checker::Checker;
use super::db::Db;
use super::scenario::Scenario;
use crate::world::lock;

/// The one tag every node serves.
pub const TAG: &str = "order";

/// One node's faults as they stand.
#[derive(Debug, Clone, Copy)]
pub struct NodeFaults {
    /// The process is stopped (GC, SIGSTOP) until then: it sends and handles nothing.
    pub paused_until: Instant,
    /// The network between it and the database is cut until then: messages wait (TCP
    /// retransmits) until it heals.
    pub cut_until: Instant,
}

/// What happened in a run besides the IDs, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Processes started (first starts and restarts).
    pub starts: u64,
    /// Buffer starts that failed, by the error's kind.
    pub refusals: BTreeMap<String, u64>,
    /// Requests for IDs that failed, by the error's kind (`Exhausted` when the buffer ran
    /// dry and the refill did not come within the wait).
    pub failed_requests: BTreeMap<String, u64>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
}

/// The shared state of one run.
#[derive(Debug)]
pub struct World {
    /// The database.
    pub db: Mutex<Db>,
    /// Woken whenever a row lock is released, for the statements waiting on one.
    pub released: Notify,
    rng: Mutex<StdRng>,
    /// When the run began.
    pub t0: Instant,
    nodes: Mutex<Vec<NodeFaults>>,
    /// The database answers late until then, by up to this much (a slow disk).
    slow: Mutex<Option<(Instant, Duration)>>,
    /// The checker.
    pub checker: Mutex<Checker>,
    /// The counts.
    pub counts: Mutex<Counts>,
    /// What this run simulates.
    pub scenario: Scenario,
}

impl World {
    /// The world of `scenario`.
    pub fn new(scenario: Scenario) -> Self {
        let now = Instant::now();
        let faults = NodeFaults {
            paused_until: now,
            cut_until: now,
        };
        Self {
            db: Mutex::new(Db::new(TAG, scenario.step, scenario.idle_in_transaction)),
            released: Notify::new(),
            rng: Mutex::new(StdRng::seed_from_u64(scenario.settings.seed)),
            t0: now,
            nodes: Mutex::new(vec![faults; scenario.settings.nodes]),
            slow: Mutex::new(None),
            checker: Mutex::new(Checker::default()),
            counts: Mutex::new(Counts::default()),
            scenario,
        }
    }

    /// The RNG: every random choice of the run, in the (deterministic) order tasks run.
    pub fn rng(&self) -> MutexGuard<'_, StdRng> {
        lock(&self.rng)
    }

    /// Simulated time since the run began.
    pub fn elapsed(&self) -> Duration {
        self.t0.elapsed()
    }

    /// Node `n`'s faults.
    pub fn node(&self, n: usize) -> NodeFaults {
        lock(&self.nodes)[n]
    }

    /// Changes node `n`'s faults.
    pub fn with_node(&self, n: usize, f: impl FnOnce(&mut NodeFaults)) {
        f(&mut lock(&self.nodes)[n]);
    }

    /// Whether node `n`'s process is paused now.
    pub fn paused(&self, n: usize) -> bool {
        Instant::now() < self.node(n).paused_until
    }

    /// Waits until node `n`'s process runs.
    pub async fn awake(&self, n: usize) {
        loop {
            let until = self.node(n).paused_until;
            if Instant::now() >= until {
                return;
            }
            tokio::time::sleep_until(until).await;
        }
    }

    /// Slows every answer of the database for `length`, by up to `by` each.
    pub fn slow_down(&self, length: Duration, by: Duration) {
        *lock(&self.slow) = Some((Instant::now() + length, by));
    }

    /// How long the database takes to answer a statement now.
    pub fn answer_delay(&self) -> Duration {
        let slow = *lock(&self.slow);
        match slow {
            Some((until, by)) if Instant::now() < until => {
                let by = u64::try_from(by.as_micros()).unwrap_or(u64::MAX).max(1);
                Duration::from_micros(self.rng().random_range(0..by))
            }
            _ => Duration::ZERO,
        }
    }

    /// One message's trip between node `n` and the database, sent now: when it arrives
    /// (after the cut between them heals, if there is one), or `None` when its connection
    /// is reset on the way.
    pub fn trip(&self, n: usize) -> Option<Instant> {
        let s = &self.scenario;
        let mut rng = self.rng();
        if s.reset > 0.0 && rng.random_bool(s.reset) {
            return None;
        }
        let (lo, hi) = s.latency_us;
        let mut delay = Duration::from_micros(rng.random_range(lo..=hi));
        if s.spike.0 > 0.0 && rng.random_bool(s.spike.0) {
            let max = u64::try_from(s.spike.1.as_micros())
                .unwrap_or(u64::MAX)
                .max(1);
            delay += Duration::from_micros(rng.random_range(0..max));
        }
        drop(rng);
        Some(Instant::now().max(self.node(n).cut_until) + delay)
    }

    /// Counts something that happened.
    pub fn count(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut lock(&self.counts));
    }
}
