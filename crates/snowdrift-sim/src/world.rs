//! Everything the simulated nodes share: the simulated coordinator, the one seeded RNG, each
//! node's faults (paused, cut off, its wall clock's offset), the checker and the counts.
//!
//! One thread runs a whole seed (a current-thread tokio runtime on paused time), so the
//! locks here are never contended; they only make the state `Send` for tokio's tasks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use snowdrift_store::process::Stopped;
use tokio::time::Instant;

use crate::capacity::Capacity;
use crate::checker::{Checker, Range};
use crate::coordinator::Coordinator;
use crate::issued::Run;
use crate::scenario::Scenario;

/// The wall clock's reading when a run starts (2027-01-15), ms since 1970.
pub const WALL_START_MS: u64 = 1_800_000_000_000;

/// One node's faults as they stand.
#[derive(Debug, Clone)]
pub struct NodeFaults {
    /// The process is stopped (GC, SIGSTOP) until then: it sends and handles nothing.
    pub paused_until: Instant,
    /// The network between it and the coordinator is cut until then.
    pub cut_until: Instant,
    /// Its wall clock minus true time, ms: what its next process anchors to.
    pub wall_offset_ms: i64,
    /// The next process to start crashes within half a window of issuing, and the one
    /// after it boots with its clock behind (a crash loop on a host whose clock is wrong).
    pub crash_after_start: bool,
    /// Which of the run's layouts its next process starts under (0 until a rolling
    /// restart that switches layouts moves it).
    pub layout: usize,
}

/// What happened in a run besides the IDs, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Processes started (first starts and restarts).
    pub starts: u64,
    /// Starts that failed, by the error's kind.
    pub refusals: BTreeMap<String, u64>,
    /// The first message of each kind of refusal, as a node logs it.
    pub refusal_examples: BTreeMap<String, String>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, u64>,
    /// Generator refusals while running, by kind (lease lost, deadline passed, ...).
    pub not_issuing: BTreeMap<String, u64>,
    /// Most nodes issuing at once, as seen by the ID requests.
    pub issuing_max: u64,
}

/// The shared state of one run.
#[derive(Debug)]
pub struct World {
    /// The coordinator.
    pub coordinator: Mutex<Coordinator>,
    rng: Mutex<StdRng>,
    /// When the run began.
    pub t0: Instant,
    nodes: Mutex<Vec<NodeFaults>>,
    /// The coordinator answers late until then, by up to this much.
    slow: Mutex<Option<(Instant, Duration)>>,
    /// The checker.
    pub checker: Mutex<Checker>,
    /// The counts.
    pub counts: Mutex<Counts>,
    /// The capacity figures.
    pub capacity: Mutex<Capacity>,
    /// What this run simulates.
    pub scenario: Scenario,
}

impl World {
    /// The world of `scenario`, at simulated time `now`.
    pub fn new(scenario: Scenario, checker: Checker, capacity: Capacity) -> Self {
        let mut rng = StdRng::seed_from_u64(scenario.settings.seed);
        let now = Instant::now();
        let skew = scenario.skew_max_ms;
        let nodes = (0..scenario.settings.nodes)
            .map(|_| NodeFaults {
                paused_until: now,
                cut_until: now,
                wall_offset_ms: rng.random_range(-skew..=skew),
                crash_after_start: false,
                layout: 0,
            })
            .collect();
        Self {
            coordinator: Mutex::new(Coordinator::new(&scenario, now)),
            rng: Mutex::new(rng),
            t0: now,
            nodes: Mutex::new(nodes),
            slow: Mutex::new(None),
            checker: Mutex::new(checker),
            counts: Mutex::new(Counts::default()),
            capacity: Mutex::new(capacity),
            scenario,
        }
    }

    /// The RNG: every random choice of the run, in the (deterministic) order the tasks run.
    pub fn rng(&self) -> MutexGuard<'_, StdRng> {
        lock(&self.rng)
    }

    /// Simulated time since the run began.
    pub fn elapsed(&self) -> Duration {
        self.t0.elapsed()
    }

    /// True wall time now, ms since 1970.
    pub fn true_wall_ms(&self) -> u64 {
        WALL_START_MS + u64::try_from(self.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Node `n`'s faults.
    pub fn node(&self, n: usize) -> NodeFaults {
        lock(&self.nodes)[n].clone()
    }

    /// Changes node `n`'s faults. On one machine (the file registry's nodes) a change of
    /// the wall clock is every node's.
    pub fn with_node(&self, n: usize, f: impl FnOnce(&mut NodeFaults)) {
        let mut nodes = lock(&self.nodes);
        f(&mut nodes[n]);
        if self.scenario.settings.registry.one_machine() {
            let offset = nodes[n].wall_offset_ms;
            for m in nodes.iter_mut() {
                m.wall_offset_ms = offset;
            }
        }
    }

    /// How long a write and its fsyncs take on the machine's disk now: a fraction of a
    /// millisecond to a few, and up to the coordinator's slowness more while it is slow (a
    /// busy disk).
    pub fn disk_delay(&self) -> Duration {
        let base = Duration::from_micros(self.rng().random_range(200..3_000));
        base + self.answer_delay()
    }

    /// Node `n`'s wall clock now, ms since 1970.
    pub fn wall_ms_of(&self, n: usize) -> u64 {
        self.true_wall_ms()
            .saturating_add_signed(self.node(n).wall_offset_ms)
    }

    /// Whether node `n`'s process is paused now.
    pub fn paused(&self, n: usize) -> bool {
        Instant::now() < self.node(n).paused_until
    }

    /// Waits until node `n`'s process runs (returns at once when it is not paused).
    pub async fn awake(&self, n: usize) {
        loop {
            let until = self.node(n).paused_until;
            if Instant::now() >= until {
                return;
            }
            tokio::time::sleep_until(until).await;
        }
    }

    /// Node `n`'s process as the store's tasks see it: stopped while the node is paused,
    /// when the run freezes pauses ([`Settings::freeze_pauses`](crate::Settings)); never
    /// otherwise (only its messages wait).
    pub fn process(self: &Arc<Self>, n: usize) -> Stopped {
        if !self.scenario.settings.freeze_pauses {
            // Asked on every poll of the node's tasks: not even a look at the world.
            return Arc::new(|| None);
        }
        let world = Arc::downgrade(self);
        Arc::new(move || {
            let until = world.upgrade()?.node(n).paused_until;
            (Instant::now() < until).then_some(until)
        })
    }

    /// Whether the network between node `n` and the coordinator is cut now.
    pub fn cut(&self, n: usize) -> bool {
        Instant::now() < self.node(n).cut_until
    }

    /// Slows every answer of the coordinator for `length`, by up to `by` each.
    pub fn slow_down(&self, length: Duration, by: Duration) {
        *lock(&self.slow) = Some((Instant::now() + length, by));
    }

    /// How long the coordinator takes to answer a request now.
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

    /// One message's trip over the network: its delay, or `None` when it is lost.
    pub fn trip(&self) -> Option<Duration> {
        let s = &self.scenario;
        let mut rng = self.rng();
        if s.drop > 0.0 && rng.random_bool(s.drop) {
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
        Some(delay)
    }

    /// Checks and records a range issued by `holder`: against the coordinator first (the
    /// node must hold the worker ID under a lease that has not run out: invariant 2), then
    /// against every range before it.
    pub fn record(&self, range: Range, runs: &[Run], holder: &str) {
        let (name, live) = {
            let coordinator = lock(&self.coordinator);
            let live = coordinator.live_holder(range.worker_id, Instant::now());
            (coordinator.name(), live)
        };
        let mut checker = lock(&self.checker);
        if live.as_deref() != Some(holder) {
            let failure = crate::checker::Failure {
                at: range.at,
                what: format!(
                    "ISSUED WITHOUT THE LEASE: {range} while {name} says {}",
                    live.map_or("no live lease holds it".into(), |h| format!(
                        "{h:?} holds it"
                    ))
                ),
            };
            checker.failures.push(failure);
        }
        checker.record(range, runs);
        lock(&self.capacity).range(&range);
    }

    /// Counts something that happened.
    pub fn count(&self, f: impl FnOnce(&mut Counts)) {
        f(&mut lock(&self.counts));
    }
}

/// Locks a mutex whose holder cannot have panicked halfway (a panic ends the run).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
