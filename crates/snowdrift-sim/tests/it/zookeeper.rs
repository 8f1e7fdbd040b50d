//! The real ZooKeeper registry on the simulated ensemble: seeds pass under every fault
//! (partitions longer than a session, pauses, kills, leader changes), a seed replays
//! exactly, a fleet on the shortest session starts, and each planted mistake is caught by
//! a fixed seed (the first that caught it in a scan of seeds 1 to 100; the table is in
//! docs/src/simulation.md).

use std::time::Duration;

use snowdrift_sim::{Backend, Mistake, Outcome, Settings, run};

use crate::mistakes::caught_on;
use crate::run_clean;
use crate::scale::far_fleet_starts;

fn on_zookeeper(seed: u64, nodes: usize) -> Settings {
    let mut s = Settings::new(seed, nodes);
    s.registry = Backend::ZooKeeper;
    s
}

/// Runs seeds `1..=seeds` on `nodes` nodes, each of which must pass and do what it is for;
/// returns their outcomes.
fn pass(seeds: u64, nodes: usize) -> Vec<Outcome> {
    (1..=seeds)
        .map(|seed| {
            let o = run_clean(on_zookeeper(seed, nodes));
            assert!(o.ids > 0 && o.ranges > 100, "seed {seed}: {o:?}");
            assert!(o.counts.faults.values().sum::<u64>() > 0, "seed {seed}");
            assert!(o.counts.starts > nodes as u64, "seed {seed}");
            assert!(
                o.coordinator.keep_alives > 0,
                "seed {seed}: the clients ping"
            );
            o
        })
        .collect()
}

/// Across the seeds: sessions expired, the leader changed, nodes were cut off and paused.
fn faults_happened(outcomes: &[Outcome]) {
    let expired: u64 = outcomes.iter().map(|o| o.coordinator.expired).sum();
    assert!(expired > 0, "no session expired");
    for fault in ["leader election", "partition", "pause", "kill"] {
        let n: u64 = outcomes
            .iter()
            .map(|o| o.counts.faults.get(fault).copied().unwrap_or(0))
            .sum();
        assert!(n > 0, "no {fault} in the seeds");
    }
}

#[test]
fn seeds_of_one_node_pass_on_zookeeper() {
    faults_happened(&pass(8, 1));
}

#[test]
fn seeds_of_two_nodes_pass_on_zookeeper() {
    faults_happened(&pass(6, 2));
}

#[test]
fn seeds_of_five_nodes_pass_on_zookeeper() {
    faults_happened(&pass(4, 5));
}

#[test]
fn a_zookeeper_seed_replays_exactly_and_another_differs() {
    let a = run(on_zookeeper(11, 3));
    let b = run(on_zookeeper(11, 3));
    assert_eq!(a.digest, b.digest);
    assert_eq!(a.counts, b.counts);
    assert_eq!(a.coordinator, b.coordinator);
    assert_eq!(a.failures, b.failures);
    assert!(a.replay_command().contains("--registry zookeeper"));
    assert_ne!(a.digest, run(on_zookeeper(12, 3)).digest);
}

/// 200 nodes on a 2 s ttl with ZooKeeper in another zone (2 to 4 ms each way) all start:
/// each start reads every live lease (its peers' clocks, its layout check) within a third
/// of the ttl, which one read after another (about 200 x 6 ms) did not fit: 735 of 807
/// starts were refused.
#[test]
fn a_fleet_on_a_short_session_and_a_far_zookeeper_starts_every_node() {
    far_fleet_starts(Backend::ZooKeeper, Duration::from_secs(10));
}

/// [`caught_on`] ZooKeeper.
fn caught(mistake: Mistake, seed: u64, nodes: usize) -> String {
    caught_on(Backend::ZooKeeper, mistake, seed, nodes)
}

#[test]
fn renewing_by_the_clients_view_of_its_session_is_caught() {
    // A node cut off past its session: ZooKeeper expired it and deleted the lease znode,
    // and the client, which has not got through since, still counts it open.
    let what = caught(Mistake::RenewByClientSession, 2, 1);
    assert!(what.contains("ISSUED WITHOUT THE LEASE"), "{what}");
    assert!(
        what.contains("ZooKeeper says no live lease holds it"),
        "{what}"
    );
}

#[test]
fn skipping_the_marks_write_ahead_is_caught_on_zookeeper() {
    let what = caught(Mistake::SkipMarkWriteAhead, 32, 1);
    assert!(
        what.contains("went back") || what.contains("DUPLICATE"),
        "{what}"
    );
}

#[test]
fn a_renewal_that_ignores_a_lost_lease_is_caught_on_zookeeper() {
    // Rare on ZooKeeper (1 of seeds 1 to 300 on one node): a lost session fails every
    // call of the registry at once, so the clock report or the mark usually closes the
    // fence and regains before the mistaken renewal is used.
    let what = caught(Mistake::RenewWithoutFence, 180, 1);
    assert!(what.contains("ISSUED WITHOUT THE LEASE"), "{what}");
}

#[test]
fn forgetting_the_clock_check_on_restart_is_caught_on_zookeeper() {
    let what = caught(Mistake::ForgetClockBackOnRestart, 16, 1);
    assert!(
        what.contains("went back") || what.contains("DUPLICATE"),
        "{what}"
    );
}
