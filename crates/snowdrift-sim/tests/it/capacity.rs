//! The capacity figures (docs/src/operations/capacity.md): lease settings given instead
//! of drawn, the coordinator's load over the second half, what a change of holder skips,
//! and how long a node cut off past its lease takes to issue again.

use std::time::Duration;

use snowdrift_sim::Settings;

use crate::run_clean;

fn given(seed: u64, nodes: usize) -> Settings {
    let mut s = Settings::new(seed, nodes);
    s.ttl = Some(Duration::from_secs(10));
    s.window = Some(Duration::from_secs(3));
    s.publish_every = Some(Duration::from_secs(3));
    s
}

/// Lease settings given are the ones the nodes run, the replay command names them, and
/// every other draw stays as without them (so a figure by lease settings compares runs
/// that differ in nothing else).
#[test]
fn lease_settings_given_replace_only_the_drawn_ones() {
    let s = given(3, 5);
    let o = run_clean(s.clone());
    assert_eq!(o.scenario.ttl, Duration::from_secs(10));
    assert_eq!(o.scenario.window, Duration::from_secs(3));
    assert_eq!(o.scenario.publish_every, Duration::from_secs(3));
    let cmd = o.replay_command();
    for part in ["--ttl 10000ms", "--window 3000ms", "--publish-every 3000ms"] {
        assert!(cmd.contains(part), "{cmd}");
    }
    let drawn = snowdrift_sim::Scenario::draw(Settings::new(3, 5));
    assert_eq!(o.scenario.worker_bits, drawn.worker_bits);
    assert_eq!(o.scenario.static_ids, drawn.static_ids);
    assert_eq!(o.scenario.latency_us, drawn.latency_us);
    assert_eq!(o.scenario.fault_every, drawn.fault_every);
}

/// A run under faults counts the coordinator's second half, every change of a worker
/// ID's holder, and each partition past the lease until the node issued again.
#[test]
fn a_run_under_faults_reports_its_capacity_figures() {
    let o = run_clean(given(1, 10));
    let c = &o.capacity;
    let (secs, half) = c
        .second_half(o.simulated, o.coordinator)
        .expect("the middle of the run was reached");
    assert_eq!(secs, o.simulated - c.half.expect("counted").0);
    assert!(half.requests > 0 && half.requests < o.coordinator.requests);
    assert!(half.writes > 0 && half.writes < o.coordinator.writes);
    // The rolling restart alone changes every node's process once.
    assert!(c.handovers.len() >= 10, "{:?}", c.handovers);
    assert!(c.handovers.iter().any(|h| h.same_node));
    assert!(!c.after_partition.is_empty(), "{:?}", o.counts.faults);
    let lines = c.lines(o.simulated, o.coordinator);
    for what in [
        "over the second half",
        "changes of a worker ID's holder",
        "partitions of a ttl or more",
    ] {
        assert!(lines.iter().any(|l| l.contains(what)), "{what}: {lines:#?}");
    }
}

/// `--only-faults` injects only the kinds named (the capacity page measures one kind of
/// fault at a time); the replay command names them.
#[test]
fn only_the_faults_named_are_injected() {
    let mut s = given(1, 10);
    s.rolling_restart = false;
    s.only_faults = Some(vec!["partition".into(), "kill".into()]);
    let o = run_clean(s);
    let kinds: Vec<&str> = o.counts.faults.keys().copied().collect();
    assert_eq!(kinds, ["kill", "partition"], "{:?}", o.counts.faults);
    assert!(
        o.replay_command().contains("--only-faults partition,kill"),
        "{}",
        o.replay_command()
    );
    // Without `loss`, the network loses nothing.
    assert_eq!(o.scenario.drop, 0.0);
    assert_eq!(o.scenario.spike.0, 0.0);
}
