//! Database segments served from memory (Meituan Leaf's segment mode, with CosId's chain).
//!
//! A database hands out ranges of IDs (`max_id += step`); a [`SegmentChain`] serves them
//! from memory and says when to fetch the next one. It performs no I/O: the store layer
//! reads [`SegmentChain::wanted`], claims segments from the database, and
//! [`push`](SegmentChain::push)es them. Callers take IDs with one compare-and-swap and no
//! lock; when every segment is used up they get [`Take::Empty`] and wait for the refill
//! above this crate, with a bound.
//!
//! Several threads that each want single IDs should not all call [`SegmentChain::take`]`(1)`:
//! they would fight over the chain's one word. A [`LocalSegment`] per thread takes a block
//! of IDs at a time and serves it alone, at the price of skipped IDs when it is dropped and
//! IDs that interleave across threads.
//!
//! [`StepPolicy`] is Leaf's dynamic step: a segment used up quickly makes the next one
//! larger, a segment that lasts long makes it smaller.
//!
//! A tag with a template (`ORD{date:%Y%m%d}{seq:06}`) counts again from 1 each period; its
//! segments are bound to the period they were claimed in, and a [`DatedChain`] serves them
//! only while the clock is inside that period.

mod chain;
mod dated;
mod local;
mod step;

pub use chain::{ChainConfig, ChainStatus, MAX_SEGMENT_LEN, SegmentChain, SegmentView, Take};
pub use dated::{DatedChain, DatedIds, DatedStatus, DatedTake, Wanted};
pub use local::{LocalConfig, LocalSegment, LocalTake};
pub use step::{StepPolicy, StepTracker};

/// The IDs `start, start + stride, start + 2 * stride, ...` below `end`.
///
/// The stride is 1 except for striped segments (Tinyid's delta/remainder), where several
/// databases hand out the same numbers and each keeps only its own residue class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRange {
    /// First ID.
    pub start: u64,
    /// Bound: every ID is below it.
    pub end: u64,
    /// Distance between consecutive IDs (at least 1).
    pub stride: u64,
}

impl IdRange {
    /// The consecutive range `[start, end)`.
    pub const fn new(start: u64, end: u64) -> Self {
        Self {
            start,
            end,
            stride: 1,
        }
    }

    /// The IDs of `[start, end)` that are `≡ remainder (mod delta)`, as a strided range.
    /// `delta` 0 counts as 1.
    ///
    /// ```
    /// use snowdrift_core::segment::IdRange;
    /// let r = IdRange::residues(1, 11, 3, 2); // 2, 5, 8 (11 is past the end)
    /// assert_eq!(r.iter().collect::<Vec<_>>(), [2, 5, 8]);
    /// assert_eq!(r.len(), 3);
    /// ```
    pub const fn residues(start: u64, end: u64, delta: u64, remainder: u64) -> Self {
        let delta = if delta == 0 { 1 } else { delta };
        let shift = (remainder % delta + delta - start % delta) % delta;
        let first = start.saturating_add(shift);
        Self {
            start: first,
            end: if first > end { first } else { end },
            stride: delta,
        }
    }

    /// Number of IDs.
    pub const fn len(&self) -> u64 {
        if self.end <= self.start {
            0
        } else {
            (self.end - self.start - 1) / self.stride() + 1
        }
    }

    /// True when the range holds no ID.
    pub const fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// The `i`-th ID (no bound check; `i < len()` for an ID of the range).
    pub const fn nth(&self, i: u64) -> u64 {
        self.start + i * self.stride()
    }

    /// The IDs from the `from`-th up to (not including) the `to`-th.
    pub const fn slice(&self, from: u64, to: u64) -> Self {
        Self {
            start: self.nth(from),
            end: if to > from {
                self.nth(to - 1) + 1
            } else {
                self.nth(from)
            },
            stride: self.stride,
        }
    }

    /// The IDs in order.
    pub fn iter(&self) -> std::iter::StepBy<std::ops::Range<u64>> {
        (self.start..self.end).step_by(self.stride() as usize)
    }

    const fn stride(&self) -> u64 {
        if self.stride == 0 { 1 } else { self.stride }
    }
}

#[cfg(all(test, not(loom)))]
mod range_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn residues_are_exactly_the_class(start in 0u64..10_000, len in 0u64..500, delta in 1u64..9, rem in 0u64..9) {
            let r = IdRange::residues(start, start + len, delta, rem);
            let expect: Vec<u64> = (start..start + len).filter(|x| x % delta == rem % delta).collect();
            prop_assert_eq!(r.iter().collect::<Vec<_>>(), expect.clone());
            prop_assert_eq!(r.len(), expect.len() as u64);
            for (i, id) in expect.iter().enumerate() {
                prop_assert_eq!(r.nth(i as u64), *id);
            }
        }

        #[test]
        fn slices_take_what_they_say(start in 0u64..10_000, len in 1u64..300, delta in 1u64..5, a in 0u64..300, b in 0u64..300) {
            let r = IdRange::residues(start, start + len, delta, 0);
            let (a, b) = (a.min(r.len()), b.min(r.len()));
            let (a, b) = (a.min(b), a.max(b));
            let want: Vec<u64> = r.iter().skip(a as usize).take((b - a) as usize).collect();
            prop_assert_eq!(r.slice(a, b).iter().collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn a_chain_serves_a_striped_segment_in_its_class() {
        let chain = SegmentChain::new(ChainConfig::default()).unwrap();
        chain.push(IdRange::residues(1, 101, 3, 2)).unwrap();
        let mut got = Vec::new();
        while let Take::Ready { ids, .. } = chain.take(7) {
            got.extend(ids.iter());
        }
        let want: Vec<u64> = (1..101).filter(|x| x % 3 == 2).collect();
        assert_eq!(got, want);
    }
}
