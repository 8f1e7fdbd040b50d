//! The simulator's own tests: a fixed set of seeds passes (on etcd, Redis, the file
//! registry, ZooKeeper and SQL), a seed replays exactly, every planted mistake is caught, the
//! simulated Redis and disk keep their real semantics, the segment buffers' claims never
//! hand out an ID twice, the timestamp oracle's cluster stays linearizable through leader
//! kills and partitions, the fleet moves to another layout in a rolling restart when
//! `snowdrift layout migrate` calls it safe, and the fleet scales to a thousand nodes (and
//! twice as many as there are worker IDs).

mod capacity;
mod disk;
mod layout_switch;
mod mistakes;
mod process;
mod redis_semantics;
mod registries;
mod replay;
mod scale;
mod seeds;
mod segments;
mod sql;
mod tso;
mod zookeeper;

use snowdrift_sim::{Failure, Outcome, Settings, run};

/// Runs `settings` and fails the test, with the command that replays it, unless the
/// checker found nothing wrong.
fn run_clean(settings: Settings) -> Outcome {
    let what = format!("seed {} on {} nodes", settings.seed, settings.nodes);
    let outcome = run(settings);
    assert_clean(&what, &outcome.failures, &outcome.replay_command());
    outcome
}

/// Fails the test, naming `what` and the command that replays it, unless `failures` is
/// empty.
fn assert_clean(what: &str, failures: &[Failure], replay: &str) {
    assert!(
        failures.is_empty(),
        "{what} failed: {:?}\nreplay: {replay}",
        failures.first(),
    );
}
