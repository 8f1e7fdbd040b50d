//! What one seed of the segment simulation runs: the fleet, the buffers' settings, the
//! database's timeouts and the faults, all drawn from the seed.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use snowdrift_core::segment::{ChainConfig, StepPolicy};
use snowdrift_store::segment::BufferConfig;
use snowdrift_store::worker::sim::Mistake;

use crate::scenario::pick;

/// What a run is asked to simulate; the rest is drawn from the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The seed: the same settings and seed replay the same run exactly.
    pub seed: u64,
    /// Nodes, each with a buffer of the one tag.
    pub nodes: usize,
    /// Simulated time of the run.
    pub duration: Duration,
    /// Faults on (pauses, kills, partitions, lost answers, failovers, commits that fail
    /// after taking effect, a slow database); off leaves the network's ordinary latency.
    pub faults: bool,
    /// Mistakes planted in the SQL store's claim for this run.
    pub mistakes: Vec<Mistake>,
}

impl Settings {
    /// A run of `nodes` nodes for 5 simulated minutes, with faults.
    pub fn new(seed: u64, nodes: usize) -> Self {
        Self {
            seed,
            nodes,
            duration: Duration::from_secs(300),
            faults: true,
            mistakes: Vec::new(),
        }
    }
}

/// The settings of one run as drawn from its seed.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// What was asked.
    pub settings: Settings,
    /// The tag's stored step (its row's `step`).
    pub step: i64,
    /// Every node's buffer settings (a valid chain, the dynamic step, waits).
    pub buffer: BufferConfig,
    /// How long a statement waits for a row lock before it fails (MySQL's
    /// `innodb_lock_wait_timeout`, PostgreSQL's `lock_timeout`); `None`: for ever, as
    /// PostgreSQL by default.
    pub lock_wait: Option<Duration>,
    /// How long the database keeps a session that is idle in a transaction before it ends
    /// it and rolls it back (PostgreSQL's `idle_in_transaction_session_timeout`, or TCP
    /// keepalive finding the client gone).
    pub idle_in_transaction: Duration,
    /// Chance that a `COMMIT` takes effect and its answer is an error all the same (a
    /// synchronous standby's wait cancelled: "the transaction has already committed
    /// locally").
    pub commit_error: f64,
    /// One-way network latency: usually between these, in µs.
    pub latency_us: (u64, u64),
    /// Chance of a latency spike on a message, and its largest size.
    pub spike: (f64, Duration),
    /// Chance that a message's connection is reset (the message is lost; both ends see
    /// the connection close).
    pub reset: f64,
    /// Mean time between faults of single nodes, across the fleet.
    pub fault_every: Duration,
    /// Mean time between faults of the database or of many nodes at once.
    pub database_fault_every: Duration,
    /// Mean time between a node's requests for IDs.
    pub request_every: Duration,
}

impl Scenario {
    /// Draws the scenario of `settings.seed`.
    pub fn draw(settings: Settings) -> Self {
        let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x5e9_0e47);
        let faults = if settings.faults { 1.0 } else { 0.0 };
        let nodes = settings.nodes.max(1) as u64;
        let max_ahead = *pick(&mut rng, &[1u32, 2, 4, 8]);
        let grow_below = Duration::from_millis(*pick(&mut rng, &[100, 1_000, 900_000]));
        let buffer = BufferConfig {
            chain: ChainConfig {
                prefetch_percent: *pick(&mut rng, &[10, 50, 90]),
                min_ahead: rng.random_range(1..=max_ahead),
                max_ahead,
                ..ChainConfig::default()
            },
            step: StepPolicy {
                grow_below,
                shrink_above: grow_below * 2,
                max_step: *pick(&mut rng, &[1_000, 100_000, 1_000_000]),
            },
            wait: Duration::from_millis(*pick(&mut rng, &[50, 200, 1_000])),
            claim_timeout: Duration::from_millis(*pick(&mut rng, &[300, 1_000, 5_000])),
        };
        Self {
            step: *pick(&mut rng, &[1, 10, 100, 1_000]),
            buffer,
            lock_wait: *pick(
                &mut rng,
                &[
                    Some(Duration::from_secs(2)),
                    Some(Duration::from_secs(10)),
                    Some(Duration::from_secs(50)),
                    None,
                ],
            ),
            idle_in_transaction: Duration::from_secs(*pick(&mut rng, &[5, 30, 120])),
            commit_error: *pick(&mut rng, &[0.0, 0.02, 0.1]) * faults,
            latency_us: (100, *pick(&mut rng, &[500, 2_000, 10_000])),
            spike: (
                *pick(&mut rng, &[0.0, 0.01, 0.05]) * faults,
                Duration::from_millis(*pick(&mut rng, &[200, 1_000, 4_000])),
            ),
            reset: *pick(&mut rng, &[0.0, 0.002, 0.02]) * faults,
            fault_every: Duration::from_millis(
                (*pick(&mut rng, &[10_000u64, 30_000, 90_000]) / nodes).max(5),
            ),
            database_fault_every: Duration::from_secs(*pick(&mut rng, &[20, 60, 180])),
            request_every: Duration::from_millis(*pick(&mut rng, &[50, 100, 300])),
            settings,
        }
    }
}
