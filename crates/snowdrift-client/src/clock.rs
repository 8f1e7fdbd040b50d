//! The clock cached snowflake IDs are checked against: a coarse tick (one atomic load) while
//! it is clearly inside `max_age`, the precise clock near the edge.
//!
//! A snowflake ID may be handed out only until `max_age` after its batch was fetched. Reading
//! the precise clock for every ID costs more than the rest of a warm `next()` (~45 ns in a
//! KVM guest, against ~2 ns), so the check reads a tick instead: milliseconds since a
//! process-wide epoch, stored by a ticker thread every millisecond (while some cache holds
//! snowflake IDs) and by every thread that reads the precise clock anyway (at each block
//! take), whichever is later.
//!
//! Which way the tick's error goes: it is a reading from the past, so it lags the real time,
//! and a lagging "now" makes an ID look younger than it is: on its own it would make the
//! check laxer. So every error is turned the other way:
//!
//! - a batch's fetch time is the precise clock rounded down (the batch is at least that old),
//!   and its deadline is that plus `max_age`;
//! - the tick is the precise clock rounded up;
//! - the tick is trusted only up to the deadline minus an allowance for its lag: a quarter
//!   of `max_age`, at most a second; for a `max_age` under 80 ms (an allowance under 20 ms,
//!   which a loaded machine's scheduler can exceed) it is not trusted at all. Past that
//!   point each ID reads the precise clock, so a block near its deadline is served exactly,
//!   not dropped early.
//!
//! With that, the tick says "fresh" only if `tick < deadline - lag`; since the real time is
//! at most `tick + lag` while the tick is less than `lag` old, no ID is handed out after its
//! deadline. The tick can be older only if the ticker thread was not run for `lag` (a
//! second at the default `max_age`) while no thread took a block of a snowflake name, i.e.
//! the whole process was stopped (SIGSTOP, a frozen VM) or starved for that long: then a
//! thread could hand out what is left of the block it holds (at most 1,023 IDs) before its next
//! block take reads the precise clock. Nothing short of reading the precise clock per ID
//! closes that, and it is the cost this module exists to avoid.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How often the ticker stores the time.
const TICK: Duration = Duration::from_millis(1);
/// The most the tick is allowed to lag before the check stops trusting it.
const MAX_LAG_MS: u64 = 1_000;
/// Below this allowance the tick is not trusted at all.
const MIN_LAG_MS: u64 = 20;

/// Milliseconds since [`epoch`], rounded up, as last read by the ticker or any thread that
/// read the precise clock. `u64::MAX` once the ticker could not be started: every check then
/// reads the precise clock.
static TICKED: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The precise clock in ms since the epoch, rounded down: a batch stamped with it is at
/// least as old as the stamp says.
pub(crate) fn floor_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// The precise clock in ms since the epoch, rounded up: never behind the real time.
fn ceil_ms() -> u64 {
    let d = epoch().elapsed();
    d.as_millis() as u64 + u64::from(!d.subsec_nanos().is_multiple_of(1_000_000))
}

/// Reads the precise clock, moves the tick up to it, and returns it (rounded up).
pub(crate) fn refresh() -> u64 {
    let now = ceil_ms();
    TICKED.fetch_max(now, Ordering::Relaxed);
    now
}

/// The tick (see [`TICKED`]).
#[inline]
fn ticked() -> u64 {
    TICKED.load(Ordering::Relaxed)
}

/// Until when IDs may be handed out, in ms since the epoch: `at` by the precise clock, and
/// `coarse`: a tick below it alone says they may (0: the tick is never trusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline {
    at: u64,
    coarse: u64,
}

impl Deadline {
    /// IDs that carry no time (segment kinds) never expire.
    pub(crate) const NEVER: Deadline = Deadline {
        at: u64::MAX,
        coarse: u64::MAX,
    };

    /// `max_age_ms` after `fetched_ms` (a [`floor_ms`] reading).
    pub(crate) fn after(fetched_ms: u64, max_age_ms: u64) -> Self {
        let at = fetched_ms.saturating_add(max_age_ms);
        let lag = max_age_ms / 4;
        let coarse = if lag < MIN_LAG_MS {
            0
        } else {
            // `at` >= `max_age_ms` > `lag`.
            at - lag.min(MAX_LAG_MS)
        };
        Deadline { at, coarse }
    }

    /// Whether these IDs never expire.
    #[inline]
    pub(crate) fn is_never(&self) -> bool {
        self.coarse == u64::MAX
    }

    /// True when the tick alone shows the deadline is not near (one atomic load, none for
    /// IDs that never expire); false means "ask [`Deadline::check`]", not "expired".
    #[inline]
    pub(crate) fn clearly_fresh(&self) -> bool {
        self.is_never() || ticked() < self.coarse
    }

    /// Whether the IDs may still be handed out: the tick when it is clearly so, otherwise
    /// the precise clock (which also moves the tick up).
    pub(crate) fn check(&self) -> bool {
        self.clearly_fresh() || refresh() <= self.at
    }

    /// [`Deadline::check`] with given readings, for tests of the arithmetic.
    #[cfg(test)]
    pub(crate) fn check_with(&self, tick: u64, precise_ceil: u64) -> bool {
        self.is_never() || tick < self.coarse || precise_ceil <= self.at
    }
}

/// The ticker's bookkeeping: it runs while some cache holds snowflake IDs.
struct Ticker {
    users: usize,
    running: bool,
}

static TICKER: Mutex<Ticker> = Mutex::new(Ticker {
    users: 0,
    running: false,
});

fn ticker() -> std::sync::MutexGuard<'static, Ticker> {
    // Two plain fields, whole after every step.
    TICKER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps the ticker running while it lives: held by each cache that has taken snowflake IDs.
#[derive(Debug)]
pub(crate) struct Ticking(());

impl Ticking {
    /// Starts the ticker unless it runs, after moving the tick to now: a check made after
    /// this returns never sees a tick from before it.
    pub(crate) fn start() -> Self {
        let mut t = ticker();
        t.users += 1;
        refresh();
        if !t.running {
            match std::thread::Builder::new()
                .name("snowdrift-clock".into())
                .spawn(tick)
            {
                Ok(_) => t.running = true,
                Err(e) => {
                    // Without a ticker the tick would stand still: make every check read
                    // the precise clock instead (correct, slower), for good.
                    TICKED.store(u64::MAX, Ordering::Relaxed);
                    tracing::warn!(
                        error = %e,
                        "snowdrift client: cannot start the clock thread; snowflake IDs are \
                         checked against the precise clock"
                    );
                }
            }
        }
        Ticking(())
    }
}

impl Drop for Ticking {
    fn drop(&mut self) {
        ticker().users -= 1;
    }
}

/// The ticker thread: stores the time every [`TICK`] until no cache needs it. The decision
/// to stop is made under the lock [`Ticking::start`] takes, so a cache that starts using the
/// ticker either sees it running (and it will tick again) or starts a new one.
fn tick() {
    loop {
        {
            let mut t = ticker();
            if t.users == 0 {
                t.running = false;
                return;
            }
        }
        refresh();
        std::thread::sleep(TICK);
    }
}

/// Whether a ticker thread is running, for tests.
#[cfg(test)]
pub(crate) fn ticker_running() -> bool {
    ticker().running
}

/// The tick, for tests.
#[cfg(test)]
pub(crate) fn tick_now() -> u64 {
    ticked()
}

#[cfg(test)]
mod tests;
