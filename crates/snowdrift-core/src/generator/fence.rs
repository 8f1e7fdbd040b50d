//! The gate between a worker-ID lease keeper and the generators that issue under its ID.
//!
//! A keeper outside the core (the store's lease keeper) holds the worker ID's lease and its
//! durable high-water mark; the generator reads the [`Fence`] on every issue and refuses
//! when the lease deadline has passed or when an ID's time would pass the durable window.
//! Both limits are plain numbers on the generator's own clock, so the check is two atomic
//! loads and two comparisons, and the generator never waits on the keeper.

use crate::sync::{AtomicU64, Ordering};

/// Why a [`Fence`] is closed. Read only on the error path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClosedReason {
    /// The keeper has not opened it yet: it is still claiming a worker ID or waiting for
    /// the clock to pass the ID's high-water mark.
    NotOpened,
    /// The lease on the worker ID was lost (expired, or taken by another node).
    LeaseLost,
    /// This node's clock was found behind its peers' by more than the allowed bound.
    ClockBehind,
    /// The node is shutting down and gave its worker ID back.
    ShutDown,
}

impl ClosedReason {
    fn code(self) -> u64 {
        match self {
            ClosedReason::NotOpened => 0,
            ClosedReason::LeaseLost => 1,
            ClosedReason::ClockBehind => 2,
            ClosedReason::ShutDown => 3,
        }
    }
    fn from_code(code: u64) -> Self {
        match code {
            1 => ClosedReason::LeaseLost,
            2 => ClosedReason::ClockBehind,
            3 => ClosedReason::ShutDown,
            _ => ClosedReason::NotOpened,
        }
    }
}

impl std::fmt::Display for ClosedReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClosedReason::NotOpened => {
                "the node does not hold its worker ID yet (claiming it, or waiting for the clock to pass its high-water mark)"
            }
            ClosedReason::LeaseLost => {
                "the lease on the worker ID was lost; the node is trying to regain one"
            }
            ClosedReason::ClockBehind => {
                "this node's clock is behind its peers' by more than the allowed bound; fix the clock (NTP)"
            }
            ClosedReason::ShutDown => "the node shut down and released its worker ID",
        })
    }
}

/// The lease deadline and the durable time window a fenced generator issues within.
///
/// The keeper that owns the worker ID's lease:
/// - calls [`open_until`](Self::open_until) with `renewal sent + TTL - margin` (on the
///   generator's clock) after each successful renewal, and [`close`](Self::close) when it
///   loses the lease;
/// - calls [`extend_window`](Self::extend_window) only after the high-water mark for the
///   new end is durably written.
///
/// A generator built with [`Builder::fence`](super::Builder::fence) issues an ID only
/// while `clock < issue_until`, and only if the ID's tick ends at or before the window end,
/// so a restart that waits until its clock passes the durable mark can never repeat an ID.
///
/// ```
/// use std::sync::Arc;
/// use snowdrift_core::{clock::ManualClock, generator::{Fence, SnowflakeGenerator}, layout::Layout, Error};
/// let clock = ManualClock::new(1_700_000_000_000);
/// let fence = Arc::new(Fence::new());
/// let generator = SnowflakeGenerator::builder(Layout::preset("twitter")?)
///     .fence(fence.clone())
///     .build(clock.clone())?;
/// assert!(matches!(generator.next(), Err(Error::NotIssuing { .. })));
/// fence.extend_window(1_700_000_003_000); // after writing the mark durably
/// fence.open_until(1_700_000_008_000); // after renewing the lease
/// assert!(generator.next().is_ok());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Fence {
    /// Clock time (ms since 1970) from which issuing stops; 0 = closed.
    issue_until: AtomicU64,
    /// High-water mark (ms since 1970): no issued ID's tick may end after it.
    window_end: AtomicU64,
    /// A [`ClosedReason`] code, meaningful while `issue_until` is 0.
    reason: AtomicU64,
}

impl Fence {
    /// A closed fence with an empty window.
    pub fn new() -> Self {
        Self {
            issue_until: AtomicU64::new(0),
            window_end: AtomicU64::new(0),
            reason: AtomicU64::new(ClosedReason::NotOpened.code()),
        }
    }

    /// Lets generators issue until the clock reads `deadline_ms` (exclusive). A deadline of
    /// 0 closes the fence.
    pub fn open_until(&self, deadline_ms: u64) {
        self.issue_until.store(deadline_ms, Ordering::Release);
    }

    /// Stops issuing at once, saying why.
    pub fn close(&self, reason: ClosedReason) {
        // The reason first: a reader that sees the fence closed finds this reason or a
        // later one.
        self.reason.store(reason.code(), Ordering::Release);
        self.issue_until.store(0, Ordering::Release);
    }

    /// Raises the window end to `end_ms` (never lowers it). Call only after the
    /// high-water mark `end_ms` is durable.
    pub fn extend_window(&self, end_ms: u64) {
        self.window_end.fetch_max(end_ms, Ordering::AcqRel);
    }

    /// The lease deadline in ms since 1970 on the generator's clock; 0 when closed.
    pub fn issue_until(&self) -> u64 {
        self.issue_until.load(Ordering::Acquire)
    }

    /// The durable window end (high-water mark) in ms since 1970.
    pub fn window_end(&self) -> u64 {
        self.window_end.load(Ordering::Acquire)
    }

    /// Why the fence is closed (meaningful only while [`issue_until`](Self::issue_until)
    /// is 0).
    pub fn closed_reason(&self) -> ClosedReason {
        ClosedReason::from_code(self.reason.load(Ordering::Acquire))
    }

    /// Both limits in one read, for the generator's hot path.
    #[inline]
    pub(crate) fn limits(&self) -> (u64, u64) {
        (
            self.issue_until.load(Ordering::Acquire),
            self.window_end.load(Ordering::Acquire),
        )
    }
}

impl Default for Fence {
    fn default() -> Self {
        Self::new()
    }
}
