//! The coarse clock: its error never lets an ID out after its deadline, and the ticker runs
//! exactly while some cache needs it.

use std::time::Duration;

use proptest::prelude::*;

use super::*;

proptest! {
    /// The tick lags the real time by up to the allowance the deadline leaves for it: a
    /// check that passes never hands out an ID after the batch's real deadline, whether it
    /// trusted the tick or read the precise clock.
    #[test]
    fn a_lagging_tick_only_makes_the_check_stricter(
        fetched_us in 0u64..10_000_000_000,
        fetched_late_us in 0u64..2_000_000,
        max_age_ms in 0u64..20_000,
        age_us in 0u64..25_000_000,
        lag_share in 0.0f64..=1.0,
    ) {
        // Real times in microseconds. The batch was fetched at `fetched_us` and stamped
        // (rounded down) at or after it; it is handed out at `now_us`.
        let stamped_us = fetched_us + fetched_late_us;
        let d = Deadline::after(stamped_us / 1000, max_age_ms);
        let now_us = stamped_us + age_us;
        let precise_ceil = now_us.div_ceil(1000);
        // The tick: the precise clock (rounded up) read some time before now, at most the
        // allowance ago.
        let allowance_ms = if max_age_ms / 4 < MIN_LAG_MS { 0 } else { (max_age_ms / 4).min(MAX_LAG_MS) };
        let lag_us = (allowance_ms as f64 * 1000.0 * lag_share) as u64;
        let tick = (now_us - lag_us.min(now_us)).div_ceil(1000);
        if d.check_with(tick, precise_ceil) {
            prop_assert!(
                now_us <= (stamped_us / 1000 + max_age_ms) * 1000,
                "handed out {} us after a stamp of {} us with max_age {} ms (tick {}, lag {} us)",
                now_us - stamped_us, stamped_us, max_age_ms, tick, lag_us
            );
        }
        // And exact when the tick is as fresh as it gets: not dropped early.
        prop_assert_eq!(
            d.check_with(precise_ceil, precise_ceil),
            precise_ceil <= stamped_us / 1000 + max_age_ms
        );
    }
}

#[test]
fn ids_that_carry_no_time_never_expire_and_tiny_max_ages_never_trust_the_tick() {
    assert!(Deadline::NEVER.check_with(u64::MAX - 1, u64::MAX - 1));
    assert!(Deadline::NEVER.clearly_fresh());
    // 60 ms leaves 15 ms for the tick's lag: too little to trust it at all.
    let d = Deadline::after(1_000, 60);
    assert!(!d.check_with(0, 1_061), "a tick from long ago was trusted");
    assert!(d.check_with(0, 1_060));
    // 10 s leaves a second: a tick 1 s before the deadline is trusted, one after is not.
    let d = Deadline::after(1_000, 10_000);
    assert!(d.check_with(9_999, u64::MAX));
    assert!(!d.check_with(10_000, 11_001));
}

#[test]
fn the_precise_clock_rounds_each_way() {
    let floor = floor_ms();
    let ceil = refresh();
    assert!(ceil >= floor, "{ceil} < {floor}");
    assert!(tick_now() >= ceil, "refresh did not move the tick up");
}

/// Waits up to 10 s for `f`.
fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..1000 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{what} did not happen in 10 s");
}

#[test]
fn the_ticker_runs_while_a_cache_needs_it_and_stops_after() {
    // Caches come and go on several threads at once, as clients do.
    let churn: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                for _ in 0..200 {
                    let t = Ticking::start();
                    assert!(ticker_running(), "a cache got no ticker");
                    drop(t);
                }
            })
        })
        .collect();
    for t in churn {
        t.join().unwrap();
    }
    let held = Ticking::start();
    // The tick moves by itself (nothing here reads the precise clock meanwhile).
    let from = tick_now();
    eventually("the tick moving 20 ms", || tick_now() >= from + 20);
    drop(held);
    // (Unless another test of this process holds a cache of snowflake IDs.)
    eventually("the ticker stopping", || {
        !ticker_running() || ticker().users > 0
    });
    let again = Ticking::start();
    let from = tick_now();
    eventually("a restarted ticker moving the tick", || {
        tick_now() >= from + 20
    });
    drop(again);
}
