//! What one seed simulates: the fleet, the lease settings and the faults, all drawn from
//! the seed.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use snowdrift_store::worker::sim::Mistake;
use snowdrift_store::worker::{LeaseConfig, WorkerSource};

use crate::coordinator::Backend;
use crate::layouts::{self, Pick, Target};

/// The most node bits a simulated layout has (`time:41,worker:10,seq:12`).
pub const MAX_WORKER_BITS: u32 = 10;

/// Fleets above this many nodes run on a datacenter network with a 2 s lease (see
/// [`Scenario::draw`]).
pub const LARGE_FLEET: usize = 100;

/// What a run is asked to simulate; the rest is drawn from the seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The seed: the same settings and seed replay the same run exactly.
    pub seed: u64,
    /// Node processes (slots): more than the worker space makes some refuse to start.
    pub nodes: usize,
    /// Node bits of the layout (`2^worker_bits` worker IDs, at most 10); `None` draws a
    /// space of one to four times the nodes, so restarts often have to take an ID whose
    /// mark is ahead.
    pub worker_bits: Option<u32>,
    /// Simulated time of the run.
    pub duration: Duration,
    /// Faults on (pauses, kills, partitions, clock steps, slow answers, elections); off
    /// leaves only the rolling restart and the network's ordinary latency.
    pub faults: bool,
    /// A rolling restart of the whole fleet in the middle of the run.
    pub rolling_restart: bool,
    /// Mistakes planted in the keeper for this run.
    pub mistakes: Vec<Mistake>,
    /// The coordinator in another zone: 2 to 4 ms one way instead of the drawn latency.
    pub far: bool,
    /// The registry the nodes run, and so the coordinator simulated.
    pub registry: Backend,
    /// Redis's failovers are crashes of the primary's host, which lose the writes its
    /// asynchronous replica had not applied (acknowledged or not); otherwise they are
    /// planned (`FAILOVER`, which waits for the replica) and lose nothing.
    pub redis_crash_failover: bool,
    /// The rolling restart moves every node to another layout ([`layouts::targets`]).
    pub layout_switch: Option<Pick>,
    /// The lease's ttl, when not drawn (whole seconds, at least 2 on etcd).
    pub ttl: Option<Duration>,
    /// The high-water mark's window, when not drawn.
    pub window: Option<Duration>,
    /// The clock report interval, when not drawn.
    pub publish_every: Option<Duration>,
    /// Only these kinds of fault ([`crate::chaos::FAULT_KINDS`]); `None`: every kind.
    pub only_faults: Option<Vec<String>>,
    /// A pause stops the node's whole process, as SIGSTOP or a stop-the-world GC does: the
    /// store's tasks (the keeper, a tso term's renewals) make no step until it ends, and
    /// then find every timer that ran out meanwhile due at once. Off, a pause holds only
    /// the node's messages back, and its own timers run on.
    pub freeze_pauses: bool,
}

impl Settings {
    /// A run of `nodes` nodes for 5 simulated minutes, with faults and a rolling restart.
    pub fn new(seed: u64, nodes: usize) -> Self {
        Self {
            seed,
            nodes,
            worker_bits: None,
            duration: Duration::from_secs(300),
            faults: true,
            rolling_restart: true,
            mistakes: Vec::new(),
            far: false,
            registry: Backend::Etcd,
            redis_crash_failover: false,
            layout_switch: None,
            ttl: None,
            window: None,
            publish_every: None,
            only_faults: None,
            freeze_pauses: false,
        }
    }
}

/// The settings of one run as drawn from its seed.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// What was asked.
    pub settings: Settings,
    /// Node bits of the layout.
    pub worker_bits: u32,
    /// Each node claims worker ID `node % space` (a static ID, or a StatefulSet ordinal)
    /// instead of the lowest free one, so a restart takes the same ID back and waits out
    /// its own mark.
    pub static_ids: bool,
    /// The nodes' lease settings (a valid [`LeaseConfig`], drawn per seed).
    pub ttl: Duration,
    /// High-water mark window.
    pub window: Duration,
    /// Clock report interval.
    pub publish_every: Duration,
    /// How far apart the nodes' wall clocks start, at most (either way).
    pub skew_max_ms: i64,
    /// How far the nodes' clock rates are off, at most (either way), in parts per million.
    pub drift_max_ppm: i64,
    /// One-way network latency: usually between these, in µs.
    pub latency_us: (u64, u64),
    /// Chance of a latency spike on a message, and its largest size.
    pub spike: (f64, Duration),
    /// Chance that a request or an answer is lost.
    pub drop: f64,
    /// Mean time between faults of single nodes, across the fleet.
    pub fault_every: Duration,
    /// Mean time between faults of the coordinator or of many nodes at once.
    pub coordinator_fault_every: Duration,
    /// Mean time between a node's ID requests.
    pub issue_every: Duration,
    /// The layout the rolling restart moves the fleet to, with the product's verdict.
    pub switch_to: Option<Target>,
    /// Of the SQL database's statements that change rows, the share that answer an error
    /// all the same (the connection cut off after the commit).
    pub sql_error_after_commit: f64,
}

impl Scenario {
    /// Draws the scenario of `settings.seed` (with an RNG of its own, so the world's RNG
    /// starts the same whatever is drawn here).
    pub fn draw(settings: Settings) -> Self {
        let mut rng = StdRng::seed_from_u64(settings.seed ^ 0x5ce7_a410);
        let large = settings.nodes > LARGE_FLEET;
        let one_machine = settings.registry.one_machine();
        // Lost messages and latency spikes are faults too.
        let faults = if settings.faults { 1.0 } else { 0.0 };
        // `--only-faults` without `loss`: a network that loses and delays nothing more than
        // its ordinary latency (drawn all the same, so the other draws stay).
        let lossy = if settings
            .only_faults
            .as_ref()
            .is_none_or(|only| only.iter().any(|k| k == "loss"))
        {
            faults
        } else {
            0.0
        };
        // A large fleet runs on the shortest lease: each start lists every live lease (the
        // layout check against live peers) within one call timeout of ttl / 3, which one
        // time-to-live request after another did not fit at 1,000 leases
        // (docs/src/simulation.md).
        let ttl = Duration::from_secs(if large {
            2
        } else {
            *pick(&mut rng, &[2, 3, 5, 10])
        });
        // A window past the lease's deadline makes the fence, not the mark, what stops a
        // node that lost its lease.
        let window = Duration::from_millis(*pick(&mut rng, &[200, 500, 1000, 3000, 3000, 8000]));
        let publish_every = Duration::from_millis(*pick(&mut rng, &[500, 1000, 3000]));
        let nodes = settings.nodes.max(1) as u64;
        let fit = u64::BITS - (nodes - 1).leading_zeros();
        let worker_bits = settings
            .worker_bits
            .unwrap_or_else(|| fit + rng.random_range(0..=1))
            .clamp(1, MAX_WORKER_BITS);
        let static_ids = nodes <= 1 << worker_bits && rng.random_bool(0.5);
        // Drawn apart, so a run with a switch draws everything else as the one without.
        let switch_to = settings
            .layout_switch
            .as_ref()
            .filter(|_| settings.rolling_restart)
            .and_then(|pick| {
                let draw = StdRng::seed_from_u64(settings.seed ^ 0x1a40_0575).random::<u64>();
                let at = layouts::rollout_at_ms(rolling_restart_at(settings.duration));
                layouts::choose(&crate::run::layout(worker_bits), at, pick, draw)
            });
        // Drawn apart, so the other registries' runs draw what they drew.
        let sql_error_after_commit = *pick(
            &mut StdRng::seed_from_u64(settings.seed ^ 0x5a1e_aa0c),
            &[0.0, 0.01, 0.05],
        ) * faults;
        Self {
            sql_error_after_commit,
            switch_to,
            worker_bits,
            static_ids,
            // Drawn all the same, so the other draws stay.
            ttl: settings.ttl.unwrap_or(ttl),
            window: settings.window.unwrap_or(window),
            publish_every: settings.publish_every.unwrap_or(publish_every),
            // One machine has one clock (drawn all the same, so the other draws stay).
            skew_max_ms: *pick(&mut rng, &[50, 300, 800]) * i64::from(!one_machine),
            drift_max_ppm: *pick(&mut rng, &[100, 1000, 20_000]) * i64::from(!one_machine),
            // A large fleet's etcd is in its datacenter, unless it is far.
            // (Drawn either way, so a far run draws the rest as the near one does.)
            latency_us: {
                let drawn = (
                    100,
                    if large {
                        600
                    } else {
                        *pick(&mut rng, &[1_000, 5_000, 20_000])
                    },
                );
                if settings.far { (2_000, 4_000) } else { drawn }
            },
            spike: (
                if large {
                    0.0
                } else {
                    *pick(&mut rng, &[0.0, 0.01, 0.05]) * lossy
                },
                Duration::from_millis(*pick(&mut rng, &[200, 1000, 4000])),
            ),
            drop: *pick(&mut rng, &[0.0, 0.001, 0.01]) * lossy,
            // A fleet-wide rate: each node sees a fault every minute or few on average.
            fault_every: Duration::from_millis(
                (*pick(&mut rng, &[20_000u64, 60_000, 180_000]) / nodes).max(5),
            ),
            coordinator_fault_every: Duration::from_secs(*pick(&mut rng, &[20, 60, 180])),
            issue_every: Duration::from_millis(if large { 1000 } else { 100 }),
            settings,
        }
    }

    /// When the rolling restart of the whole fleet begins.
    pub fn rolling_restart_at(&self) -> Duration {
        rolling_restart_at(self.settings.duration)
    }

    /// The lease settings of node `n`'s process `incarnation`.
    pub fn lease_config(&self, n: usize, incarnation: u64) -> LeaseConfig {
        let source = if self.static_ids {
            WorkerSource::Static(n as u64 % (1 << self.worker_bits))
        } else {
            WorkerSource::Lowest
        };
        let mut c = LeaseConfig::new(
            format!("{}://simulated", self.settings.registry.name()),
            source,
        );
        c.namespace = "sim".into();
        c.ttl = self.ttl;
        c.window = self.window;
        c.publish_every = self.publish_every;
        c.holder = Some(format!("node-{n}/{incarnation}"));
        c.hostname = Some(format!("node-{n}"));
        c
    }
}

/// The rolling restart begins 40 % into the run.
fn rolling_restart_at(duration: Duration) -> Duration {
    duration.mul_f64(0.4)
}

/// One of `choices`, drawn from `rng`.
pub(crate) fn pick<'a, T>(rng: &mut StdRng, choices: &'a [T]) -> &'a T {
    &choices[rng.random_range(0..choices.len())]
}
