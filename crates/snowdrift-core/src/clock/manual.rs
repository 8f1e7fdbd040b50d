//! A clock that moves only when told to, for tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Clock;

/// A clock set by hand. Clones share the same time, so a test keeps one handle and gives
/// another to the generator. Waiting on it moves it forward to the target at once, so code
/// that blocks on the clock runs instantly in tests.
///
/// ```
/// use snowdrift_core::clock::{Clock, ManualClock};
/// let clock = ManualClock::new(1_000);
/// clock.advance(5);
/// clock.step_back(2);
/// assert_eq!(clock.now_ms(), 1_003);
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock reading `ms` milliseconds since 1970.
    pub fn new(ms: u64) -> Self {
        Self(Arc::new(AtomicU64::new(ms)))
    }
    /// Sets the time.
    pub fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::SeqCst);
    }
    /// Moves the time forward.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
    /// Moves the time back, as an NTP step would.
    pub fn step_back(&self, ms: u64) {
        self.0.fetch_sub(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    fn wait_until_ms(&self, target_ms: u64) {
        self.0.fetch_max(target_ms, Ordering::SeqCst);
    }
}
