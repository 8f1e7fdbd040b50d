//! The segment simulation: many nodes, each running the real
//! [`SegmentBuffer`](snowdrift_store::segment::SegmentBuffer) of one tag (its chain,
//! refill task, dynamic step, claim timeout, handles), claiming segments with the SQL
//! store's own claim ([`snowdrift_store::segment::sim::claim`]) from a simulated database
//! with Leaf's table, row locks and transactions ([`db`]), over connections that are
//! delayed, cut, reset and paused ([`conn`]), while the database fails over, slows down,
//! ends idle sessions and answers some commits with an error after they took effect; the
//! checker sees every ID a buffer hands to a caller. `scripts/simulate --segments` runs it.

pub mod chaos;
pub mod checker;
pub mod conn;
pub mod db;
pub mod node;
pub mod scenario;
pub mod world;

use std::sync::Arc;
use std::time::Duration;

use self::db::DbStats;
pub use self::scenario::{Scenario, Settings};
use self::world::{Counts, TAG, World};
use crate::checker::Failure;
use crate::world::lock;

/// How long a run goes on after its first failure, so the failure's consequences (the
/// repeat another node makes of a range handed out wrongly) show too.
const AFTER_FAILURE: Duration = Duration::from_secs(10);

/// What one run did and found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the seed drew.
    pub scenario: Scenario,
    /// Broken guarantees, in order; empty when the run passed.
    pub failures: Vec<Failure>,
    /// A hash of every handout, in order: equal for two runs of the same settings.
    pub digest: u64,
    /// Handouts checked.
    pub handed_out: u64,
    /// IDs handed out and checked.
    pub ids: u64,
    /// IDs in claims the database committed: those not handed out were skipped (lost
    /// with a process's buffer, or taken by a claim whose answer was lost).
    pub claimed_ids: u64,
    /// Starts, refusals, failed requests and faults.
    pub counts: Counts,
    /// What the database served.
    pub db: DbStats,
    /// The tag's `max_id` at the end.
    pub max_id_at_end: i64,
    /// Simulated time run.
    pub simulated: Duration,
}

impl Outcome {
    /// Simulated node-hours: nodes times simulated time.
    pub fn node_hours(&self) -> f64 {
        self.scenario.settings.nodes as f64 * self.simulated.as_secs_f64() / 3600.0
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let s = &self.scenario.settings;
        crate::run::replay_of(
            "--segments",
            s.seed,
            s.nodes,
            s.duration,
            s.faults,
            &s.mistakes,
        )
    }

    /// What the run did, in one line.
    pub fn describe(&self) -> String {
        let s = &self.scenario;
        format!(
            "{} nodes on tag {TAG:?} (step {}, claim timeout {:?}, wait {:?}, prefetch {}%, {}-{} segments ahead); database: lock wait {}, idle-in-transaction {:?}, {:.0}% of commits answer an error after committing; {:.1} node-hours in {:?} simulated; {} starts (refused {:?}); {} handouts, {} IDs handed out of {} claimed ({} skipped); failed requests {:?}; faults {:?}; database {:?}; max_id {} at the end",
            s.settings.nodes,
            s.step,
            s.buffer.claim_timeout,
            s.buffer.wait,
            s.buffer.chain.prefetch_percent,
            s.buffer.chain.min_ahead,
            s.buffer.chain.max_ahead,
            s.lock_wait.map_or("for ever".into(), |w| format!("{w:?}")),
            s.idle_in_transaction,
            s.commit_error * 100.0,
            self.node_hours(),
            self.simulated,
            self.counts.starts,
            self.counts.refusals,
            self.handed_out,
            self.ids,
            self.claimed_ids,
            self.claimed_ids.saturating_sub(self.ids),
            self.counts.failed_requests,
            self.counts.faults,
            self.db,
            self.max_id_at_end,
        )
    }
}

/// Runs one seed to the end (or a little past its first failure), on this thread.
pub fn run(settings: Settings) -> Outcome {
    let scenario = Scenario::draw(settings);
    let mistakes = scenario.settings.mistakes.clone();
    crate::run::on_this_thread(&mistakes, simulate(scenario))
}

async fn simulate(scenario: Scenario) -> Outcome {
    let duration = scenario.settings.duration;
    let faults = scenario.settings.faults;
    let world = Arc::new(World::new(scenario));
    tokio::spawn(chaos::idle_sessions(world.clone()));
    let mut commands = Vec::new();
    for n in 0..world.scenario.settings.nodes {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        commands.push(tx);
        tokio::spawn(node::slot(world.clone(), n, rx));
    }
    if faults {
        tokio::spawn(chaos::node_faults(world.clone(), commands.clone()));
        tokio::spawn(chaos::database_faults(world.clone(), commands.len()));
    }
    let step = Duration::from_secs(1);
    let mut end = duration;
    while world.elapsed() < end {
        tokio::time::sleep(step.min(end - world.elapsed())).await;
        if let Some(first) = lock(&world.checker).failures.first() {
            end = end.min(first.at + AFTER_FAILURE);
        }
    }
    let checker = lock(&world.checker);
    let db = lock(&world.db);
    Outcome {
        scenario: world.scenario.clone(),
        failures: checker.failures.clone(),
        digest: checker.digest(),
        handed_out: checker.handed_out,
        ids: checker.ids,
        claimed_ids: checker.claimed_ids,
        counts: lock(&world.counts).clone(),
        db: db.stats,
        max_id_at_end: db.max_id(TAG).unwrap_or(0),
        simulated: world.elapsed(),
    }
}
