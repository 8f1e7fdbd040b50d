//! The coarse clock: its error never lets an ID out after its deadline, and it follows the
//! precise clock from behind.

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
        // The coarse clock: the time of a tick at most the allowance ago, as the kernel's
        // (rounded down, as read).
        let allowance_ms = if max_age_ms / 4 < MIN_LAG_MS { 0 } else { (max_age_ms / 4).min(MAX_LAG_MS) };
        let lag_us = (allowance_ms as f64 * 1000.0 * lag_share) as u64;
        let tick = (now_us - lag_us.min(now_us)) / 1000;
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
fn the_coarse_clock_follows_the_precise_one_from_behind() {
    for _ in 0..20 {
        let floor = floor_ms();
        let coarse = coarse_now();
        let ceil = ceil_ms();
        assert!(floor <= ceil, "{floor} > {ceil}");
        // Behind the precise clock, by about a kernel tick (1 to 10 ms; a second is far).
        assert!(coarse <= ceil, "coarse {coarse} ahead of precise {ceil}");
        assert!(
            coarse + 1_000 >= floor,
            "coarse {coarse} far behind {floor}"
        );
        std::thread::sleep(Duration::from_millis(3));
    }
    // And it moves while this thread sleeps: nothing in the process has to tick it.
    let from = coarse_now();
    std::thread::sleep(Duration::from_millis(50));
    assert!(coarse_now() >= from + 30, "{from} -> {}", coarse_now());
}
