//! The clock cached snowflake IDs are checked against: a coarse clock (the kernel's tick)
//! while the deadline is clearly ahead, the precise clock near it.
//!
//! A snowflake ID may be handed out only until `max_age` after its batch was fetched. Reading
//! the precise clock for every ID costs more than the rest of a warm `next()` (~45 ns in a
//! KVM guest, against ~2 ns), so the check reads a coarse clock instead: on Linux
//! `CLOCK_MONOTONIC_COARSE`, the monotonic time as of the kernel's last timer tick, read from
//! the vDSO without a system call (~6 ns there); elsewhere the precise clock. Not a tick kept
//! by a thread of this process: such a ticker stops with the process (SIGSTOP, a frozen
//! container), and after it resumes a thread could run before the ticker does and hand out
//! IDs of a block against a tick from before the stop. The kernel's tick goes on meanwhile.
//!
//! Which way the coarse clock's error goes: it is the time of the last tick, so it lags the
//! real time, and a lagging "now" makes an ID look younger than it is: on its own it would
//! make the check laxer. So every error is turned the other way:
//!
//! - a batch's fetch time is the precise clock rounded down (the batch is at least that old),
//!   and its deadline is that plus `max_age`;
//! - the coarse clock is trusted only up to the deadline minus an allowance for its lag: a
//!   quarter of `max_age`, at most a second; for a `max_age` under 80 ms (an allowance under
//!   20 ms, five ticks at the usual 250 Hz) it is not trusted at all. Past that point each ID
//!   reads the precise clock (rounded up), so a block near its deadline is served exactly,
//!   not dropped early.
//!
//! With that, the coarse clock says "fresh" only if `coarse < deadline - allowance`; the real
//! time is at most `coarse + lag`, so no ID is handed out after its deadline as long as the
//! kernel's tick lags by less than the allowance (a tick is 1 to 10 ms; the kernel catches up
//! a stalled one within a few).

/// The most the coarse clock is allowed to lag before the check stops trusting it.
const MAX_LAG_MS: u64 = 1_000;
/// Below this allowance the coarse clock is not trusted at all.
const MIN_LAG_MS: u64 = 20;

/// The monotonic clock `clock` as whole milliseconds and the nanoseconds past them, or
/// `None` if it cannot be read. In `u64` arithmetic: `Duration::as_millis` divides a `u128`,
/// which costs more than the clock read on the per-ID path.
#[cfg(target_os = "linux")]
#[inline]
fn read(clock: libc::clockid_t) -> Option<(u64, u32)> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u32::try_from(ts.tv_nsec).ok()?;
    Some((
        secs.saturating_mul(1000)
            .saturating_add(u64::from(nanos / 1_000_000)),
        nanos % 1_000_000,
    ))
}

/// The precise monotonic clock (the one `Instant` reads on Linux) in whole ms and the
/// nanoseconds past them; `None` if it cannot be read (it cannot fail on Linux).
#[cfg(target_os = "linux")]
fn precise() -> Option<(u64, u32)> {
    read(libc::CLOCK_MONOTONIC)
}

#[cfg(not(target_os = "linux"))]
fn precise() -> Option<(u64, u32)> {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let d = EPOCH.get_or_init(std::time::Instant::now).elapsed();
    Some((
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
        d.subsec_nanos() % 1_000_000,
    ))
}

/// The precise clock in ms, rounded down: a batch stamped with it is at least as old as the
/// stamp says. (Unreadable: 0, the oldest stamp, so the batch counts as expired.)
pub(crate) fn floor_ms() -> u64 {
    precise().map_or(0, |(ms, _)| ms)
}

/// The precise clock in ms, rounded up: never behind the real time. (Unreadable: the end
/// of time, which every deadline is before.)
pub(crate) fn ceil_ms() -> u64 {
    precise().map_or(u64::MAX, |(ms, nanos)| {
        ms.saturating_add(u64::from(nanos != 0))
    })
}

/// The coarse clock in ms (at most the precise clock; behind it by up to a kernel tick).
#[cfg(target_os = "linux")]
#[inline]
fn coarse_ms() -> u64 {
    // Unreadable: u64::MAX, which no deadline trusts, so the precise clock is asked.
    read(libc::CLOCK_MONOTONIC_COARSE).map_or(u64::MAX, |(ms, _)| ms)
}

#[cfg(not(target_os = "linux"))]
#[inline]
fn coarse_ms() -> u64 {
    ceil_ms()
}

/// Until when IDs may be handed out, in ms of the monotonic clock: `at` by the precise
/// clock, and `coarse`: a coarse reading below it alone says they may (0: never trusted).
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

    /// True when the coarse clock alone shows the deadline is not near (no clock read for
    /// IDs that never expire); false means "ask [`Deadline::check`]", not "expired".
    #[inline]
    pub(crate) fn clearly_fresh(&self) -> bool {
        self.is_never() || coarse_ms() < self.coarse
    }

    /// Whether the IDs may still be handed out: the coarse clock when it is clearly so,
    /// otherwise the precise clock.
    pub(crate) fn check(&self) -> bool {
        self.clearly_fresh() || ceil_ms() <= self.at
    }

    /// [`Deadline::check`] with given readings, for tests of the arithmetic.
    #[cfg(test)]
    pub(crate) fn check_with(&self, coarse: u64, precise_ceil: u64) -> bool {
        self.is_never() || coarse < self.coarse || precise_ceil <= self.at
    }
}

/// The coarse clock, for tests.
#[cfg(test)]
pub(crate) fn coarse_now() -> u64 {
    coarse_ms()
}

#[cfg(test)]
mod tests;
