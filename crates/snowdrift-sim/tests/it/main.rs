//! The simulator's own tests: a fixed set of seeds passes (on etcd, Redis, the file
//! registry and ZooKeeper), a seed replays exactly, every planted mistake is caught, the
//! simulated Redis and disk keep their real semantics, the segment buffers' claims never
//! hand out an ID twice, the fleet moves to another layout in a rolling restart when
//! `snowdrift layout migrate` calls it safe, and the fleet scales to a thousand nodes (and
//! twice as many as there are worker IDs).

mod disk;
mod layout_switch;
mod mistakes;
mod redis_semantics;
mod registries;
mod replay;
mod scale;
mod seeds;
mod segments;
mod zookeeper;

use snowdrift_sim::{Outcome, Settings, run};

/// Runs `settings` and fails the test, with the command that replays it, unless the
/// checker found nothing wrong.
fn run_clean(settings: Settings) -> Outcome {
    let what = format!("seed {} on {} nodes", settings.seed, settings.nodes);
    let outcome = run(settings);
    assert!(
        outcome.failures.is_empty(),
        "{what} failed: {:?}\nreplay: {}",
        outcome.failures.first(),
        outcome.replay_command()
    );
    outcome
}
