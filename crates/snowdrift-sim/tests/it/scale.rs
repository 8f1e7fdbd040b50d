//! The fleet at scale: a thousand nodes on one coordinator with a 10-bit worker space
//! through a rolling restart of every node; twice as many nodes as worker IDs, of which
//! those without an ID refuse clearly and none shares one.

use std::time::Duration;

use snowdrift_sim::{Backend, Settings};

use crate::run_clean;

#[test]
#[ignore = "minutes in a debug build; scripts/simulate --scale runs it in release"]
fn a_thousand_nodes_on_1024_worker_ids_through_a_rolling_restart() {
    let mut s = Settings::new(1, 1000);
    s.worker_bits = Some(10);
    s.duration = Duration::from_secs(SCALE_SECONDS);
    s.faults = false;
    let o = run_clean(s);
    assert_eq!(
        o.counts.faults.get("rolling restart wave"),
        Some(&10),
        "{:?}",
        o.counts
    );
    // Every node started, and started again in the rolling restart.
    assert!(o.counts.starts >= 2000, "{:?}", o.counts);
    assert!(
        o.held_at_end >= 990,
        "{} worker IDs held at the end",
        o.held_at_end
    );
    assert!(o.ranges > 1000);
}

#[test]
#[ignore = "minutes in a debug build; scripts/simulate --scale runs it in release"]
fn two_thousand_nodes_compete_for_1024_worker_ids() {
    let mut s = Settings::new(2, 2000);
    s.worker_bits = Some(10);
    s.duration = Duration::from_secs(60);
    s.faults = false;
    s.rolling_restart = false;
    let o = run_clean(s);
    assert_eq!(o.held_at_end, 1024, "every worker ID held, none twice");
    let exhausted = o
        .counts
        .refusals
        .get("WorkersExhausted")
        .copied()
        .unwrap_or(0);
    assert!(
        exhausted >= 976,
        "the nodes without an ID refuse: {:?}",
        o.counts.refusals
    );
}

/// 200 nodes on a 2 s lease with etcd in another zone (2 to 4 ms each way) all start: each
/// start's layout check lists every live lease within a third of the ttl, which one
/// time-to-live request after another (about 200 x 6 ms) did not fit.
#[test]
fn a_fleet_on_a_short_lease_and_a_far_coordinator_starts_every_node() {
    far_fleet_starts(Backend::Etcd, Duration::from_secs(15));
}

/// 200 nodes on a 2 s lease, `registry`'s coordinator 2 to 4 ms away, run for `duration`
/// without faults: every node starts and holds its ID at the end.
pub(crate) fn far_fleet_starts(registry: Backend, duration: Duration) {
    let mut s = Settings::new(3, 200);
    s.registry = registry;
    s.worker_bits = Some(8);
    s.duration = duration;
    s.faults = false;
    s.rolling_restart = false;
    s.far = true;
    let o = run_clean(s);
    assert_eq!(o.scenario.ttl, Duration::from_secs(2));
    assert!(o.counts.refusals.is_empty(), "{:?}", o.counts.refusals);
    assert_eq!(o.held_at_end, 200, "{:?}", o.counts);
}

/// Long enough for the rolling restart (10 waves from 40 % of the run on, each a window
/// and a second apart).
const SCALE_SECONDS: u64 = 180;
