//! The clock the command-line tools generate with.

use anyhow::{Context, Result};
use snowdrift_core::clock::{MonotonicClock, OffsetClock};

/// Environment variable that shifts this process's clock, for tests that need nodes whose
/// clocks disagree (the server's timestamp oracles read it too). Test use only.
pub const TEST_OFFSET_VAR: &str = snowdrift_server::tso::TEST_CLOCK_OFFSET_VAR;

/// The process clock: monotonic, anchored to the wall clock at start, shifted by
/// `SNOWDRIFT_TEST_CLOCK_OFFSET_MS` when set.
pub fn process_clock() -> Result<OffsetClock<MonotonicClock>> {
    Ok(OffsetClock::new(MonotonicClock::new(), test_offset_ms()?))
}

/// `SNOWDRIFT_TEST_CLOCK_OFFSET_MS`, 0 when unset.
pub fn test_offset_ms() -> Result<i64> {
    match std::env::var(TEST_OFFSET_VAR) {
        Ok(v) => v.trim().parse::<i64>().with_context(|| {
            format!("{TEST_OFFSET_VAR}={v:?} is not a whole number of milliseconds")
        }),
        Err(_) => Ok(0),
    }
}
