//! A clock that never goes back: the wall time at start plus a monotonic elapsed time.

use std::time::Instant;

use super::{Clock, wall_ms};

/// The wall clock read once at creation, advanced by [`Instant`] from then on.
///
/// A step of the system clock while the process runs (NTP, an operator, a VM resume) does
/// not move this clock; it drifts with the monotonic clock instead. A restart re-anchors it,
/// which is why a restarted node also checks its durable high-water mark.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    anchor_ms: u64,
    start: Instant,
}

impl MonotonicClock {
    /// Anchors to the system's wall clock now.
    pub fn new() -> Self {
        Self::anchored_at(wall_ms(), Instant::now())
    }
    /// Anchors `wall_ms` (ms since 1970) to the instant `start`.
    pub fn anchored_at(wall_ms: u64, start: Instant) -> Self {
        Self {
            anchor_ms: wall_ms,
            start,
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.anchor_ms.saturating_add(elapsed)
    }
}
