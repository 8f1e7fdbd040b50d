//! A seed replays exactly: the same IDs in the same order at the same simulated times (the
//! digest), the same faults and refusals; another seed does something else.

use snowdrift_sim::{Settings, run};

#[test]
fn a_seed_replays_exactly_and_another_differs() {
    let a = run(Settings::new(11, 5));
    let b = run(Settings::new(11, 5));
    assert_eq!(a.digest, b.digest);
    assert_eq!(a.ranges, b.ranges);
    assert_eq!(a.counts, b.counts);
    assert_eq!(a.coordinator, b.coordinator);
    assert_eq!(a.failures, b.failures);
    let c = run(Settings::new(12, 5));
    assert_ne!(a.digest, c.digest);
}
