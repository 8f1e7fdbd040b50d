//! One seed's run: a current-thread tokio runtime on paused time, the fleet, the faults and
//! the checker; returns what happened.

use std::sync::Arc;
use std::time::Duration;

use snowdrift_core::layout::Layout;
use snowdrift_store::worker::sim::{Mistake, plant};

use crate::capacity::Capacity;
use crate::checker::{Checker, Failure};
use crate::coordinator::{Backend, Stats};
use crate::scenario::{Scenario, Settings};
use crate::world::{Counts, World, lock};
use crate::{chaos, node};

/// The layout's epoch (Twitter's).
const EPOCH_MS: u64 = 1_288_834_974_657;

/// What one run did and found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the seed drew.
    pub scenario: Scenario,
    /// Broken guarantees, in order; empty when the run passed.
    pub failures: Vec<Failure>,
    /// A hash of every range issued, in order: equal for two runs of the same settings.
    pub digest: u64,
    /// Ranges issued and checked.
    pub ranges: u64,
    /// IDs issued and checked.
    pub ids: u64,
    /// Starts, refusals and faults.
    pub counts: Counts,
    /// What the coordinator served.
    pub coordinator: Stats,
    /// Simulated time run (shorter than asked when a failure stopped it).
    pub simulated: Duration,
    /// Worker IDs leased at the end.
    pub held_at_end: usize,
    /// Ranges issued under each layout (the fleet's, then the one it switched to).
    pub ranges_by_layout: Vec<u64>,
    /// What the run tells an operator planning capacity.
    pub capacity: Capacity,
}

impl Outcome {
    /// Simulated node-hours: nodes times simulated time.
    pub fn node_hours(&self) -> f64 {
        self.scenario.settings.nodes as f64 * self.simulated.as_secs_f64() / 3600.0
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let s = &self.scenario.settings;
        let mut cmd = format!("scripts/simulate --seed {} --nodes {}", s.seed, s.nodes);
        // Only when it was asked: a worker space drawn from the seed is drawn again, and
        // naming it would skip that draw and so change every draw after it.
        if let Some(bits) = s.worker_bits {
            cmd.push_str(&format!(" --bits {bits}"));
        }
        cmd.push_str(&format!(" --duration {}s", s.duration.as_secs()));
        for (name, value) in [
            ("ttl", s.ttl),
            ("window", s.window),
            ("publish-every", s.publish_every),
        ] {
            if let Some(v) = value {
                cmd.push_str(&format!(" --{name} {}ms", v.as_millis()));
            }
        }
        if !s.faults {
            cmd.push_str(" --no-faults");
        }
        if let Some(only) = &s.only_faults {
            cmd.push_str(" --only-faults ");
            cmd.push_str(&only.join(","));
        }
        if !s.rolling_restart {
            cmd.push_str(" --no-rolling-restart");
        }
        if s.far {
            cmd.push_str(" --far");
        }
        if s.freeze_pauses {
            cmd.push_str(" --freeze-pauses");
        }
        if s.registry != Backend::default() {
            cmd.push_str(" --registry ");
            cmd.push_str(s.registry.name());
        }
        if s.redis_crash_failover {
            cmd.push_str(" --redis-crash-failover");
        }
        if let Some(t) = &self.scenario.switch_to {
            cmd.push_str(" --layout-switch ");
            cmd.push_str(t.name);
        }
        for m in &s.mistakes {
            cmd.push_str(" --mistake ");
            cmd.push_str(m.name());
        }
        cmd
    }
}

/// The layout of a run: a millisecond time field, `bits` worker bits, a 12-bit sequence.
pub fn layout(bits: u32) -> Layout {
    Layout::from_spec(&format!("time:41,worker:{bits},seq:12"), 1, EPOCH_MS)
        .unwrap_or_else(|e| panic!("the simulated layout with {bits} worker bits: {e}"))
}

/// Runs one seed to the end, or to its first failure, on this thread.
pub fn run(settings: Settings) -> Outcome {
    let scenario = Scenario::draw(settings);
    let mistakes = scenario.settings.mistakes.clone();
    on_this_thread(&mistakes, simulate(scenario))
}

/// Runs `run` to its end on this thread, a current-thread tokio runtime on paused time,
/// with `mistakes` planted meanwhile.
pub fn on_this_thread<T>(mistakes: &[Mistake], run: impl Future<Output = T>) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap_or_else(|e| panic!("a current-thread tokio runtime: {e}"));
    plant(mistakes);
    let outcome = runtime.block_on(run);
    plant(&[]);
    // Dropping the runtime ends every task the run left (nodes, messages in flight).
    drop(runtime);
    outcome
}

async fn simulate(scenario: Scenario) -> Outcome {
    let mut layouts = vec![layout(scenario.worker_bits)];
    layouts.extend(scenario.switch_to.as_ref().map(|t| t.layout.clone()));
    let layouts: Arc<[Layout]> = layouts.into();
    let duration = scenario.settings.duration;
    let (faults, rolling) = (scenario.settings.faults, scenario.settings.rolling_restart);
    let rollout_at = scenario.rolling_restart_at();
    let world = Arc::new(World::new(
        scenario,
        Checker::new(layouts.to_vec()),
        Capacity::new(layouts.to_vec()),
    ));
    tokio::spawn(chaos::coordinator_ticks(world.clone()));
    let mut commands = Vec::new();
    for n in 0..world.scenario.settings.nodes {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        commands.push(tx);
        tokio::spawn(node::slot(world.clone(), n, layouts.clone(), rx));
    }
    if faults {
        tokio::spawn(chaos::faults(world.clone(), commands.clone()));
        tokio::spawn(chaos::coordinator_faults(world.clone(), commands.clone()));
    }
    if rolling {
        tokio::spawn(chaos::rolling_restart(
            world.clone(),
            commands.clone(),
            rollout_at,
        ));
    }
    let step = Duration::from_secs(1);
    while world.elapsed() < duration && lock(&world.checker).failures.is_empty() {
        tokio::time::sleep(step.min(duration - world.elapsed())).await;
        let mut capacity = lock(&world.capacity);
        if capacity.half.is_none() && world.elapsed() >= duration / 2 {
            capacity.half = Some((world.elapsed(), lock(&world.coordinator).stats()));
        }
    }
    let checker = lock(&world.checker);
    let coordinator = lock(&world.coordinator);
    Outcome {
        scenario: world.scenario.clone(),
        failures: checker.failures.clone(),
        digest: checker.digest(),
        ranges: checker.ranges,
        ids: checker.ids,
        counts: lock(&world.counts).clone(),
        coordinator: coordinator.stats(),
        simulated: world.elapsed(),
        ranges_by_layout: checker.ranges_by_layout.clone(),
        held_at_end: coordinator.held(),
        capacity: lock(&world.capacity).clone(),
    }
}

/// The replay command of a simulation other than the worker leases' (`--tso`,
/// `--segments`), which take only the seed, the fleet, the duration, faults and mistakes.
pub(crate) fn replay_of(
    mode: &str,
    seed: u64,
    nodes: usize,
    duration: Duration,
    faults: bool,
    mistakes: &[Mistake],
) -> String {
    let mut cmd = format!(
        "scripts/simulate {mode} --seed {seed} --nodes {nodes} --duration {}s",
        duration.as_secs()
    );
    if !faults {
        cmd.push_str(" --no-faults");
    }
    for m in mistakes {
        cmd.push_str(" --mistake ");
        cmd.push_str(m.name());
    }
    cmd
}
