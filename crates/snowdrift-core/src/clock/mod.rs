//! Where generators get the time from.
//!
//! Nothing in snowdrift reads the system time directly: a generator is handed a [`Clock`].
//! Production code uses [`MonotonicClock`] (a step of the system clock while the process runs
//! cannot move it back) or a [`CachedClock`] fed by a ticker above the core; tests use
//! [`ManualClock`] to step time forward and back at will; [`SystemClock`] shows every step
//! of the wall clock, which is what the clock-safety tests need.

mod cached;
mod manual;
mod monotonic;
mod offset;
mod system;

pub use cached::{CachedClock, ClockDriver};
pub use manual::ManualClock;
pub use monotonic::MonotonicClock;
pub use offset::OffsetClock;
pub use system::SystemClock;

use std::time::Duration;

/// A source of wall-clock time in milliseconds since 1970-01-01T00:00:00Z.
pub trait Clock: Send + Sync {
    /// The current time in milliseconds since 1970.
    fn now_ms(&self) -> u64;

    /// Blocks until [`now_ms`](Clock::now_ms) reaches `target_ms`.
    ///
    /// The default sleeps for all but the last millisecond and spins for the rest, because a
    /// sleep of one millisecond often oversleeps by a tenth of one, which would cost a
    /// generator at a 1 ms unit a tenth of its rate. [`ManualClock`] moves itself instead.
    fn wait_until_ms(&self, target_ms: u64) {
        loop {
            let now = self.now_ms();
            if now >= target_ms {
                return;
            }
            let left = target_ms - now;
            if left > 1 {
                std::thread::sleep(Duration::from_millis(left - 1));
            } else {
                std::hint::spin_loop();
                std::thread::yield_now();
            }
        }
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    #[inline]
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, target_ms: u64) {
        (**self).wait_until_ms(target_ms)
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, target_ms: u64) {
        (**self).wait_until_ms(target_ms)
    }
}

/// Wall time in ms since 1970; 0 if the system clock reads before 1970.
pub(crate) fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
