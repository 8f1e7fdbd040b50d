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
            next: self.start,
            end: self.start + self.len,
            packing: self.packing,
        }
    }
    /// Runs of IDs that differ by a constant stride, as `(first, count, stride)`: one per
    /// tick the block touches. This is how a block travels compactly over the wire.
    pub fn runs(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        let p = self.packing;
        let stride = 1u64 << p.seq_shift;
        let end = self.start + self.len;
        let mut at = self.start;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let tick_end = ((at >> p.seq_bits) + 1) << p.seq_bits;
            let run_end = tick_end.min(end);
            let run = (p.id(at), run_end - at, stride);
            at = run_end;
            Some(run)
        })
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

/// Iterator over the IDs of an [`IdBlock`].
#[derive(Debug, Clone)]
pub struct IdBlockIter {
    next: u64,
    end: u64,
    packing: Packing,
}

impl Iterator for IdBlockIter {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        (self.next < self.end).then(|| {
            let id = self.packing.id(self.next);
            self.next += 1;
            id
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.end - self.next).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

impl ExactSizeIterator for IdBlockIter {}
