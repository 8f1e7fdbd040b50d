//! A fixed set of seeds, each five simulated minutes of faults and a rolling restart, must
//! pass: what `.ci/run` runs of the simulation (the rest is `scripts/simulate`).

use snowdrift_sim::{Backend, Settings};

use crate::run_clean;

fn passes(seed: u64, nodes: usize) {
    let outcome = run_clean(Settings::new(seed, nodes));
    // The run did what it is for: nodes issued, faults happened, restarts went through.
    assert!(
        outcome.ids > 0 && outcome.ranges > 100,
        "seed {seed}: {outcome:?}"
    );
    assert!(
        outcome.counts.faults.values().sum::<u64>() > 0,
        "seed {seed}"
    );
    assert!(outcome.counts.starts > nodes as u64, "seed {seed}");
}

#[test]
fn seeds_of_one_node_pass() {
    for seed in 1..=12 {
        passes(seed, 1);
    }
}

#[test]
fn seeds_of_two_nodes_pass() {
    for seed in 1..=12 {
        passes(seed, 2);
    }
}

#[test]
fn seeds_of_five_nodes_pass() {
    for seed in 1..=12 {
        passes(seed, 5);
    }
}

/// Kept from a failure: a regained worker ID's claim timed out after its transaction had
/// bound the key to its lease, the next claim found the key its own and kept that lease
/// alive, and the first attempt's revoke, still on its way, then deleted the key while the
/// node issued under it (`ISSUED WITHOUT THE LEASE` at 293.9 s). A claim now moves its own
/// key onto the lease it granted (`EtcdRegistry::claim`).
#[test]
fn seed_4_of_ten_nodes_a_late_revoke_of_an_earlier_claim() {
    passes(4, 10);
}

/// Pauses that stop the whole process (`--freeze-pauses`: the keeper's timers stop with
/// its messages, as under SIGSTOP), on every registry: the seeds pass, and pauses happened.
#[test]
fn seeds_pass_on_every_registry_when_pauses_stop_the_whole_process() {
    let mut pauses = 0;
    for registry in [
        Backend::Etcd,
        Backend::ZooKeeper,
        Backend::Redis,
        Backend::Sql,
        Backend::File,
    ] {
        for seed in 1..=2 {
            let mut s = Settings::new(seed, 2);
            s.registry = registry;
            s.freeze_pauses = true;
            s.duration = std::time::Duration::from_secs(150);
            let o = run_clean(s);
            assert!(o.ids > 0, "{registry:?} seed {seed}: {o:?}");
            pauses += o.counts.faults.get("pause").copied().unwrap_or(0);
        }
    }
    assert!(pauses > 0, "no pause in the runs");
}
