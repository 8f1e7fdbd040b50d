//! Every ID handed out in a run, as runs of integers (`first, first + stride, ...`), and
//! whether a new run shares an ID with any run before it: the fleet-wide "never twice",
//! checked on the integers themselves, whatever layout or store made them.
//!
//! A snowflake block is one run per tick it touches (its `runs()`), with stride 1 when the
//! sequence field is the lowest and a power of two when node bits sit below it; a segment
//! is one run of stride 1. Two runs of different layouts can share integers though their
//! fields decode to different worker IDs, so nothing here decodes an ID.

use std::collections::BTreeMap;

/// One run: `count` IDs from `first`, `stride` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The smallest ID.
    pub first: u64,
    /// How many IDs (at least 1).
    pub count: u64,
    /// The distance between consecutive IDs (at least 1).
    pub stride: u64,
}

impl Run {
    /// The largest ID.
    pub fn last(&self) -> u64 {
        self.first
            .saturating_add((self.count - 1).saturating_mul(self.stride))
    }

    /// Whether `id` is one of the run's IDs.
    fn holds(&self, id: u64) -> bool {
        id >= self.first && id <= self.last() && (id - self.first).is_multiple_of(self.stride)
    }

    /// The smallest ID both runs hold, if any.
    pub fn shared_with(&self, other: &Run) -> Option<u64> {
        let (lo, hi) = (self.first.max(other.first), self.last().min(other.last()));
        if lo > hi {
            return None;
        }
        let (wide, narrow) = if self.stride >= other.stride {
            (self, other)
        } else {
            (other, self)
        };
        if wide.stride.is_multiple_of(narrow.stride) {
            // Every common ID is `≡ wide.first (mod wide.stride)`, and such an ID is in the
            // narrow run too exactly when the two starts agree modulo the narrow stride.
            if (wide.first % narrow.stride) != (narrow.first % narrow.stride) {
                return None;
            }
            let x = lo + (wide.first % wide.stride + wide.stride - lo % wide.stride) % wide.stride;
            return (x <= hi).then_some(x);
        }
        // Strides that do not divide each other (no generator makes them): one by one over
        // the shorter run's IDs in the common interval.
        let start = narrow.first
            + (lo.saturating_sub(narrow.first)).div_ceil(narrow.stride) * narrow.stride;
        (start..=hi)
            .step_by(usize::try_from(narrow.stride).unwrap_or(usize::MAX))
            .find(|id| wide.holds(*id))
    }
}

/// The runs handed out so far, each with the index of what it came from (a range the
/// caller keeps).
#[derive(Debug, Default)]
pub struct Issued {
    /// By first ID; several runs may start at the same ID only if they overlap, which is
    /// reported, so the first one is kept and later ones beside it.
    runs: BTreeMap<(u64, usize), Run>,
    /// The widest span (`last - first`) of any run held: every run that can meet
    /// `[a, b]` starts in `[a - widest, b]`.
    widest: u64,
}

impl Issued {
    /// Records `run`, handed out as part of `owner`; returns the smallest shared ID and
    /// the owner of the earlier run that holds it, if any run before it shares an ID.
    pub fn record(&mut self, run: Run, owner: usize) -> Option<(u64, usize)> {
        let last = run.last();
        let from = run.first.saturating_sub(self.widest);
        let shared = self
            .runs
            .range((from, 0)..=(last, usize::MAX))
            .filter_map(|((_, o), r)| run.shared_with(r).map(|id| (id, *o)))
            .min();
        self.widest = self.widest.max(last - run.first);
        self.runs.insert((run.first, owner), run);
        shared
    }

    /// How many runs are held.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(first: u64, count: u64, stride: u64) -> Run {
        Run {
            first,
            count,
            stride,
        }
    }

    /// The brute force the index is held to.
    fn shared_by_hand(a: &Run, b: &Run) -> Option<u64> {
        (0..a.count)
            .map(|i| a.first + i * a.stride)
            .filter(|id| b.holds(*id))
            .min()
    }

    #[test]
    fn shared_ids_agree_with_every_id_of_small_runs() {
        for (s1, s2) in [(1, 1), (1, 4), (4, 2), (8, 8), (3, 2), (6, 4)] {
            for f1 in 0..20 {
                for f2 in 0..20 {
                    for (c1, c2) in [(1, 1), (3, 5), (7, 2), (10, 10)] {
                        let (a, b) = (run(f1, c1, s1), run(f2, c2, s2));
                        assert_eq!(a.shared_with(&b), shared_by_hand(&a, &b), "{a:?} {b:?}");
                        assert_eq!(b.shared_with(&a), shared_by_hand(&a, &b), "{a:?} {b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn interleaved_runs_share_nothing_and_a_repeat_is_found_behind_a_wide_run() {
        let mut issued = Issued::default();
        // Two worker IDs below the sequence (stride 4): the same integers' span, no ID shared.
        assert_eq!(issued.record(run(1000, 100, 4), 0), None);
        assert_eq!(issued.record(run(1001, 100, 4), 1), None);
        // A short run well inside the first wide one, starting after both.
        assert_eq!(issued.record(run(1200, 3, 1), 2), Some((1200, 0)));
        assert_eq!(issued.record(run(1398, 1, 1), 3), None);
        assert_eq!(issued.record(run(1397, 1, 1), 4), Some((1397, 1)));
        assert_eq!(issued.len(), 5);
    }
}
