//! The system's wall clock, read on every call.

use super::{Clock, wall_ms};

/// Reads the system's wall clock on every call, so it shows every step the clock takes,
/// backwards included. Generators refuse or wait on such steps; prefer [`MonotonicClock`](super::MonotonicClock)
/// (super::MonotonicClock) in production.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        wall_ms()
    }
}
