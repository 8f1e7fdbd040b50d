//! A clock shifted by a fixed offset, to simulate a node whose clock is wrong.

use super::Clock;

/// Another clock plus a signed offset in milliseconds.
///
/// Tests use it to run a process "in the past" or "in the future" relative to its peers
/// (the binary reads the offset from `SNOWDRIFT_TEST_CLOCK_OFFSET_MS`, test use only).
#[derive(Debug, Clone, Copy)]
pub struct OffsetClock<C> {
    inner: C,
    offset_ms: i64,
}

impl<C: Clock> OffsetClock<C> {
    /// `inner` shifted by `offset_ms` (negative: behind).
    pub fn new(inner: C, offset_ms: i64) -> Self {
        Self { inner, offset_ms }
    }
}

impl<C: Clock> Clock for OffsetClock<C> {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.inner.now_ms().saturating_add_signed(self.offset_ms)
    }
    fn wait_until_ms(&self, target_ms: u64) {
        self.inner
            .wait_until_ms(target_ms.saturating_add_signed(self.offset_ms.saturating_neg()))
    }
}
