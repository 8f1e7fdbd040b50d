//! A node's clock in the simulation: what `MonotonicClock` is in a server (the wall clock
//! read once at the process's start, then advanced by the monotonic clock), with the
//! node's own skew and drift, over tokio's paused time.

use snowdrift_core::clock::Clock;
use tokio::time::Instant;

/// The wall clock of a node's process: `anchor_ms` at `start`, then simulated time at the
/// node's rate. A step of the node's wall clock while the process runs does not move it
/// (as with `MonotonicClock`); the next process anchors to the stepped wall clock.
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    anchor_ms: u64,
    start: Instant,
    /// Rate error in parts per million: +1000 runs 0.1 % fast.
    drift_ppm: i64,
}

impl SimClock {
    /// A clock reading `anchor_ms` now, running at `1 + drift_ppm / 10^6` of simulated time.
    pub fn new(anchor_ms: u64, drift_ppm: i64) -> Self {
        Self {
            anchor_ms,
            start: Instant::now(),
            drift_ppm,
        }
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> u64 {
        let elapsed = i128::try_from(self.start.elapsed().as_micros()).unwrap_or(i128::MAX);
        let scaled = elapsed * (1_000_000 + i128::from(self.drift_ppm)) / 1_000_000_000;
        self.anchor_ms
            .saturating_add(u64::try_from(scaled.max(0)).unwrap_or(u64::MAX))
    }

    /// Returns at once: the simulated nodes issue only through the generator's `try_`
    /// calls, which never wait, and wait in simulated time themselves. A blocking wait here
    /// would stop the whole simulation (simulated time moves only when every task waits).
    fn wait_until_ms(&self, _target_ms: u64) {}
}
