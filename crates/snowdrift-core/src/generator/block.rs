//! A block of IDs reserved by one call.

use super::packing::Packing;

/// Consecutive IDs of one generator, reserved together by a single atomic operation.
///
/// A block is a range of the generator's internal state, so it costs a few words whatever
/// its length; the IDs are computed as they are read. They are strictly increasing, and a
/// block may span several ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdBlock {
    start: u64,
    len: u64,
    packing: Packing,
}

impl IdBlock {
    pub(crate) fn new(start: u64, len: u64, packing: Packing) -> Self {
        Self {
            start,
            len,
            packing,
        }
    }
    /// Number of IDs in the block (at least 1).
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Always false: a generator never hands out an empty block.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The smallest ID.
    pub fn first(&self) -> u64 {
        self.packing.id(self.start)
    }
    /// The largest ID.
    pub fn last(&self) -> u64 {
        self.packing.id(self.start + self.len - 1)
    }
    /// The `i`-th ID, if `i < len()`.
    pub fn get(&self, i: u64) -> Option<u64> {
        (i < self.len).then(|| self.packing.id(self.start + i))
    }
    /// The IDs in increasing order.
    pub fn iter(&self) -> IdBlockIter {
        IdBlockIter {
            runs: self.runs(),
            id: 0,
            left: 0,
            stride: 0,
        }
    }
    /// Runs of IDs that differ by a constant stride, as `(first, count, stride)`: one per
    /// tick the block touches. This is how a block travels compactly over the wire.
    pub fn runs(&self) -> Runs {
        Runs {
            at: self.start,
            end: self.start + self.len,
            packing: self.packing,
        }
    }
}

/// Iterator over the runs of an [`IdBlock`]: `(first ID, count, stride)`.
#[derive(Debug, Clone)]
pub struct Runs {
    at: u64,
    end: u64,
    packing: Packing,
}

impl Iterator for Runs {
    type Item = (u64, u64, u64);
    #[inline]
    fn next(&mut self) -> Option<(u64, u64, u64)> {
        if self.at >= self.end {
            return None;
        }
        let p = &self.packing;
        // Within a tick consecutive states differ only in the sequence field, so their IDs
        // differ by one sequence step; the next tick starts a new run.
        let tick_end = ((self.at >> p.seq_bits) + 1) << p.seq_bits;
        let run_end = tick_end.min(self.end);
        let run = (p.id(self.at), run_end - self.at, 1u64 << p.seq_shift);
        self.at = run_end;
        Some(run)
    }
}

impl IntoIterator for IdBlock {
    type Item = u64;
    type IntoIter = IdBlockIter;
    fn into_iter(self) -> IdBlockIter {
        self.iter()
    }
}

impl IntoIterator for &IdBlock {
    type Item = u64;
    type IntoIter = IdBlockIter;
    fn into_iter(self) -> IdBlockIter {
        self.iter()
    }
}

/// Iterator over the IDs of an [`IdBlock`]: one addition per ID within a tick.
#[derive(Debug, Clone)]
pub struct IdBlockIter {
    runs: Runs,
    id: u64,
    left: u64,
    stride: u64,
}

impl Iterator for IdBlockIter {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            (self.id, self.left, self.stride) = self.runs.next()?;
        }
        let id = self.id;
        self.id += self.stride;
        self.left -= 1;
        Some(id)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.left + (self.runs.end - self.runs.at);
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for IdBlockIter {}
