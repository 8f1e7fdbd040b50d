//! Database segments served from memory (Meituan Leaf's segment mode, with CosId's chain).
//!
//! A database hands out ranges of IDs (`max_id += step`); a [`SegmentChain`] serves them
//! from memory and says when to fetch the next one. It performs no I/O: the store layer
//! reads [`SegmentChain::wanted`], claims segments from the database, and
//! [`push`](SegmentChain::push)es them. Callers take IDs with one compare-and-swap and no
//! lock; when every segment is used up they get [`Take::Empty`] and wait for the refill
//! above this crate, with a bound.
//!
//! [`StepPolicy`] is Leaf's dynamic step: a segment used up quickly makes the next one
//! larger, a segment that lasts long makes it smaller.

mod chain;
mod step;

pub use chain::{ChainConfig, ChainStatus, SegmentChain, Take};
pub use step::{StepPolicy, StepTracker};

/// A half-open range of IDs `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRange {
    /// First ID.
    pub start: u64,
    /// One past the last ID.
    pub end: u64,
}

impl IdRange {
    /// The range `[start, end)`.
    pub const fn new(start: u64, end: u64) -> Self {
        Self { start, end }
    }
    /// Number of IDs.
    pub const fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }
    /// True when the range holds no ID.
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }
    /// The IDs in order.
    pub fn iter(&self) -> std::ops::Range<u64> {
        self.start..self.end
    }
}
