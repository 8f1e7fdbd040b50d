//! A clock read from an atomic that a driver keeps current.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Clock;

/// A clock that costs one atomic load to read.
///
/// A system clock read costs about 20 ns even through the vDSO, which is most of the cost of
/// a snowflake ID. `CachedClock` reads an atomic instead; its [`ClockDriver`] copies a source
/// clock into it and must be called often (every 100 µs or so) by something outside the
/// core, such as a ticker thread in the server. The cached time never goes back: the driver
/// stores the maximum of what it has seen.
#[derive(Debug, Clone)]
pub struct CachedClock(Arc<AtomicU64>);

/// Updates a [`CachedClock`] from a source clock.
#[derive(Debug, Clone)]
pub struct ClockDriver<C> {
    cell: Arc<AtomicU64>,
    source: C,
}

impl CachedClock {
    /// A cached clock and the driver that feeds it from `source`. The cache starts at the
    /// source's current time.
    pub fn new<C: Clock>(source: C) -> (Self, ClockDriver<C>) {
        let cell = Arc::new(AtomicU64::new(source.now_ms()));
        (Self(cell.clone()), ClockDriver { cell, source })
    }
}

impl<C: Clock> ClockDriver<C> {
    /// Reads the source and publishes its time; returns the published time.
    pub fn tick(&self) -> u64 {
        let now = self.source.now_ms();
        self.cell.fetch_max(now, Ordering::Release).max(now)
    }
}

impl Clock for CachedClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}
