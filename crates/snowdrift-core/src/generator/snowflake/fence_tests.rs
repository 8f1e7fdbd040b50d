//! A fenced generator: it issues only before the lease deadline and only within the durable
//! window, and says why when it refuses. Manual clock throughout.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::clock::ManualClock;
use crate::generator::{ClosedReason, Fence};

const T0: u64 = 1_700_000_000_000;

fn fenced(
    spec: &str,
    unit_ms: u64,
    lead_ms: u64,
) -> (SnowflakeGenerator<ManualClock>, Arc<Fence>, ManualClock) {
    let clock = ManualClock::new(T0);
    let fence = Arc::new(Fence::new());
    let layout = Layout::from_spec(spec, unit_ms, T0 - 10_000_000).unwrap();
    let g = SnowflakeGenerator::builder(layout)
        .node_id(3)
        .unwrap()
        .max_lead(Duration::from_millis(lead_ms))
        .fence(fence.clone())
        .build(clock.clone())
        .unwrap();
    (g, fence, clock)
}

fn ready<T: std::fmt::Debug>(a: Attempt<T>) -> T {
    match a {
        Attempt::Ready(v) => v,
        other => panic!("expected IDs, got {other:?}"),
    }
}

#[test]
fn a_new_fence_is_closed_and_says_why() {
    let (g, fence, _) = fenced("time:41,worker:10,seq:12", 1, 0);
    fence.extend_window(T0 + 5_000);
    let err = g.try_next().unwrap_err();
    assert_eq!(
        err,
        Error::NotIssuing {
            reason: ClosedReason::NotOpened
        }
    );
    assert!(
        err.to_string().contains("does not hold its worker ID"),
        "{err}"
    );
    fence.open_until(T0 + 1_000);
    let a = g.next().unwrap();
    fence.close(ClosedReason::LeaseLost);
    let err = g.next_block(10).unwrap_err();
    assert_eq!(
        err,
        Error::NotIssuing {
            reason: ClosedReason::LeaseLost
        }
    );
    assert!(err.to_string().contains("lease"), "{err}");
    assert_eq!(g.last_id(), Some(a), "a refused call reserves nothing");
}

#[test]
fn issuing_stops_at_the_lease_deadline() {
    let (g, fence, clock) = fenced("time:41,worker:10,seq:12", 1, 0);
    fence.extend_window(T0 + 10_000);
    fence.open_until(T0 + 100);
    clock.set(T0 + 99);
    let a = g.next().unwrap();
    clock.set(T0 + 100);
    let err = g.try_next().unwrap_err();
    assert_eq!(
        err,
        Error::LeaseExpired {
            deadline_ms: T0 + 100,
            now_ms: T0 + 100
        }
    );
    assert_eq!(g.last_id(), Some(a));
    // A renewal moves the deadline and issuing resumes.
    fence.open_until(T0 + 200);
    assert!(g.next().unwrap() > a);
}

#[test]
fn no_id_past_the_window_end() {
    let (g, fence, clock) = fenced("time:41,worker:10,seq:12", 1, 0);
    fence.open_until(T0 + 60_000);
    // Ticks T0, T0+1 and T0+2 end at or before T0+3.
    fence.extend_window(T0 + 3);
    clock.set(T0 + 2);
    let a = g.next().unwrap();
    assert_eq!(g.used_until_ms(), Some(T0 + 3));
    clock.set(T0 + 3);
    let err = g.try_next().unwrap_err();
    assert_eq!(
        err,
        Error::WindowNotExtended {
            window_end_ms: T0 + 3,
            now_ms: T0 + 3
        }
    );
    assert!(err.to_string().contains("high-water mark"), "{err}");
    assert_eq!(g.last_id(), Some(a));
    // The window never shrinks.
    fence.extend_window(T0 + 1);
    assert_eq!(fence.window_end(), T0 + 3);
    fence.extend_window(T0 + 4);
    let b = g.next().unwrap();
    assert!(b > a);
    assert_eq!(g.used_until_ms(), Some(T0 + 4));
}

#[test]
fn borrowed_time_stays_inside_the_window() {
    // 4 IDs per tick and up to 10 ms of lead, but the window ends 2 ticks ahead.
    let (g, fence, clock) = fenced("time:41,worker:10,seq:2", 1, 10);
    fence.open_until(T0 + 60_000);
    fence.extend_window(T0 + 2);
    let block = ready(g.try_next_block(100).unwrap());
    assert_eq!(block.len(), 8, "ticks T0 and T0+1 only");
    assert_eq!(g.used_until_ms(), Some(T0 + 2));
    // Out of window while the clock is still inside it: wait for the clock (the keeper
    // may extend meanwhile), never borrow past the mark.
    assert_eq!(
        g.try_next().unwrap(),
        Attempt::RetryAfter(Duration::from_millis(1))
    );
    clock.advance(1);
    assert!(matches!(g.try_next(), Ok(Attempt::RetryAfter(_))));
    clock.advance(1);
    assert!(matches!(g.try_next(), Err(Error::WindowNotExtended { .. })));
    assert_eq!(g.used_until_ms(), Some(T0 + 2));
    fence.extend_window(T0 + 100);
    let b = ready(g.try_next_block(1000).unwrap());
    assert!(g.used_until_ms().unwrap() <= T0 + 100);
    assert!(b.len() > 8);
}

#[test]
fn a_coarse_unit_uses_only_ticks_that_end_inside_the_window() {
    // 10 ms ticks; the window end falls inside a tick, which therefore may not be used.
    let (g, fence, clock) = fenced("time:41,worker:10,seq:12", 10, 0);
    fence.open_until(T0 + 60_000);
    fence.extend_window(T0 + 25);
    clock.set(T0 + 19);
    g.next().unwrap();
    assert_eq!(g.used_until_ms(), Some(T0 + 20));
    clock.set(T0 + 21);
    assert!(matches!(g.try_next(), Err(Error::WindowNotExtended { .. })));
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    StepBack(u64),
    Block(u64),
    Extend(u64),
    Renew(u64),
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..4).prop_map(Op::Advance),
        (0u64..10).prop_map(Op::StepBack),
        (1u64..20).prop_map(Op::Block),
        (1u64..20).prop_map(Op::Block),
        (0u64..8).prop_map(Op::Extend),
        (0u64..8).prop_map(Op::Renew),
        Just(Op::Close),
    ]
}

proptest! {
    /// Whatever the clock and the keeper do, every ID is issued before the deadline in
    /// force and its tick ends inside the window in force; IDs still strictly increase.
    #[test]
    fn fenced_ids_stay_inside_deadline_and_window(
        ops in prop::collection::vec(op(), 1..200),
        lead in 0u64..4,
        unit in prop_oneof![Just(1u64), Just(3u64)],
    ) {
        let (g, fence, clock) = fenced("time:30,worker:3,seq:2", unit, lead);
        let mut last = None;
        for op in ops {
            match op {
                Op::Advance(ms) => clock.advance(ms),
                Op::StepBack(ms) => clock.step_back(ms),
                Op::Extend(ahead) => fence.extend_window(clock.now_ms() + ahead),
                Op::Renew(ttl) => fence.open_until(clock.now_ms() + ttl),
                Op::Close => fence.close(ClosedReason::LeaseLost),
                Op::Block(n) => {
                    let (until, end, now) = (fence.issue_until(), fence.window_end(), clock.now_ms());
                    match g.try_next_block(n) {
                        Ok(Attempt::Ready(b)) => {
                            prop_assert!(now < until, "issued at {now}, deadline {until}");
                            for id in b.iter() {
                                prop_assert!(last.is_none_or(|l| id > l));
                                last = Some(id);
                            }
                            prop_assert!(g.used_until_ms().unwrap() <= end);
                        }
                        Ok(Attempt::RetryAfter(_)) => {}
                        Err(Error::NotIssuing { .. }) => prop_assert_eq!(until, 0),
                        Err(Error::LeaseExpired { .. }) => prop_assert!(now >= until && until > 0),
                        Err(Error::WindowNotExtended { .. }) | Err(Error::ClockBehind { .. }) => {}
                        Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
                    }
                }
            }
        }
    }
}
