//! The clock the command-line tools generate with, and the ticker behind a cached clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use snowdrift_core::clock::{CachedClock, Clock, MonotonicClock, OffsetClock};

/// Environment variable that shifts this process's clock, for tests that need nodes whose
/// clocks disagree (the server's timestamp oracles read it too). Test use only.
pub const TEST_OFFSET_VAR: &str = snowdrift_server::tso::TEST_CLOCK_OFFSET_VAR;

/// The process clock: monotonic, anchored to the wall clock at start, shifted by
/// `SNOWDRIFT_TEST_CLOCK_OFFSET_MS` when set.
pub fn process_clock() -> Result<OffsetClock<MonotonicClock>> {
    let offset = match std::env::var(TEST_OFFSET_VAR) {
        Ok(v) => v.trim().parse::<i64>().with_context(|| {
            format!("{TEST_OFFSET_VAR}={v:?} is not a whole number of milliseconds")
        })?,
        Err(_) => 0,
    };
    Ok(OffsetClock::new(MonotonicClock::new(), offset))
}

/// A thread that keeps a [`CachedClock`] current; stops when dropped.
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A clock costing one atomic load per read, refreshed every `period` by a ticker thread.
pub fn cached_clock<C: Clock + 'static>(source: C, period: Duration) -> (CachedClock, Ticker) {
    let (clock, driver) = CachedClock::new(source);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("snowdrift-clock".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                driver.tick();
                std::thread::sleep(period);
            }
        })
        .ok();
    (clock, Ticker { stop, thread })
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
