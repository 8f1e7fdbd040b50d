//! A block of IDs owned by one caller: single IDs with no shared memory touched, one chain
//! take per block.

use super::{IdRange, SegmentChain, Take};
use crate::error::{Error, Result};

/// How large the blocks a [`LocalSegment`] takes from its chain are.
///
/// The first block is `first_block` IDs; each later one is twice the one before, up to
/// `max_block`. A handle that serves a few IDs and is dropped skips at most a few; one that
/// lives long pays one chain take per `max_block` IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalConfig {
    /// IDs asked for in the first block (at least 1).
    pub first_block: u64,
    /// Largest block asked for (at least `first_block`). A take never reaches past the end
    /// of the chain's current segment, so a block is also at most what is left of it.
    pub max_block: u64,
}

impl Default for LocalConfig {
    /// Blocks of 8, 16, 32, then 64 IDs. At 64 one thread pays ~0.1 ns of compare-and-swap
    /// per ID and two threads no longer fight over the chain's word (see BENCHMARKS.md,
    /// "Segment mode"); a dropped handle skips at most 63 IDs.
    fn default() -> Self {
        Self {
            first_block: 8,
            max_block: 64,
        }
    }
}

impl LocalConfig {
    /// Checks the bounds above, with a message that says which one is broken.
    pub fn validate(&self) -> Result<()> {
        if self.first_block == 0 || self.first_block > self.max_block {
            return Err(Error::InvalidConfig(format!(
                "local segment: need 1 <= first_block <= max_block, got first_block {} and max_block {}",
                self.first_block, self.max_block
            )));
        }
        Ok(())
    }
}

/// The result of [`LocalSegment::next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum LocalTake {
    /// One ID. `refill` is the chain's signal from [`Take::Ready`]: when true, the block
    /// taken for this ID crossed a prefetch point, so wake the refiller.
    Ready {
        /// The ID.
        id: u64,
        /// Whether the refiller should be woken.
        refill: bool,
    },
    /// The handle's block is used up and the chain is empty: wake the refiller and wait
    /// for a push, as after [`Take::Empty`].
    Empty,
}

/// IDs served one at a time from a block that only this value owns, taking a new block
/// from a shared [`SegmentChain`] when it is used up.
///
/// [`SegmentChain::take`] is one compare-and-swap of a word every caller shares. On one
/// thread that costs ~6 ns; with two threads on one chain the word's cache line moves
/// between cores on every call, and two threads serve fewer IDs in total than one. A
/// `LocalSegment` per thread (or per task) takes a block of IDs with one such
/// compare-and-swap and serves the block from its own fields: no atomic, no lock, nothing
/// another thread writes. The chain is touched once per block, so threads scale.
///
/// What this costs, compared with calling [`SegmentChain::take`]`(1)` each time:
///
/// - **Skipped IDs.** IDs in the block when the value is dropped are never served by
///   anyone: they left the chain for good. No ID is ever served twice (invariant 1 holds),
///   but a restart or a dropped handle leaves gaps of up to a block. [`held`](Self::held)
///   says which IDs those are.
/// - **Order across threads.** Two handles hold two blocks at once, so their IDs
///   interleave: an ID served later on one thread can be smaller than one served earlier
///   on another. Within one handle, IDs come in the order the chain hands them out, which
///   is increasing for one store (a striped store interleaves its stores' ranges whatever
///   the caller does).
/// - **Prefetch timing.** The chain sees a block leave at once, so its prefetch point and
///   its count of IDs used move a block ahead of what was actually served: a little earlier
///   refill, never a later one.
///
/// ```
/// use snowdrift_core::segment::{
///     ChainConfig, IdRange, LocalConfig, LocalSegment, LocalTake, SegmentChain,
/// };
/// let chain = SegmentChain::new(ChainConfig::default())?;
/// chain.push(IdRange::new(1, 1001))?;
/// let mut a = LocalSegment::new(LocalConfig::default())?;
/// let mut b = LocalSegment::new(LocalConfig::default())?;
/// let id = |t: LocalTake| match t {
///     LocalTake::Ready { id, .. } => id,
///     LocalTake::Empty => unreachable!(),
/// };
/// assert_eq!(id(a.next(&chain)), 1); // `a` took 1..=8
/// assert_eq!(id(b.next(&chain)), 9); // `b` took 9..=16
/// assert_eq!(id(a.next(&chain)), 2); // served by `a` alone
/// assert_eq!(a.held(), IdRange::new(3, 9)); // skipped if `a` is dropped now
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LocalSegment {
    /// The next ID to serve (meaningful while `left > 0`).
    next: u64,
    /// IDs of the block not served yet.
    left: u64,
    stride: u64,
    /// Size asked for at the next take.
    block: u64,
    max_block: u64,
    /// IDs taken from the chain so far, served or held.
    taken: u64,
}

impl Default for LocalSegment {
    /// A handle with [`LocalConfig::default`]'s block sizes.
    fn default() -> Self {
        Self::unchecked(LocalConfig::default())
    }
}

impl LocalSegment {
    /// A handle holding no IDs yet; its first [`next`](Self::next) takes a block.
    pub fn new(config: LocalConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self::unchecked(config))
    }

    fn unchecked(config: LocalConfig) -> Self {
        Self {
            next: 0,
            left: 0,
            stride: 1,
            block: config.first_block,
            max_block: config.max_block,
            taken: 0,
        }
    }

    /// The next ID: from the block this handle holds, or, when that is used up, from a
    /// new block taken from `chain` (one compare-and-swap). Never blocks.
    #[inline]
    pub fn next(&mut self, chain: &SegmentChain) -> LocalTake {
        self.next_with(|n| chain.take(n))
    }

    /// As [`next`](Self::next), with the block taken by `take(n)` instead of
    /// `chain.take(n)`: for a caller that wraps its chain (to wake its refiller, count,
    /// or wait). `take` runs only when the block is used up, and must return what
    /// [`SegmentChain::take`] would: at most `n` IDs, never an ID it returned before.
    #[inline]
    pub fn next_with(&mut self, take: impl FnOnce(u64) -> Take) -> LocalTake {
        if self.left > 0 {
            let id = self.next;
            self.left -= 1;
            // Past the block's last ID this may wrap; that value is never served.
            self.next = id.wrapping_add(self.stride);
            return LocalTake::Ready { id, refill: false };
        }
        self.refill(take(self.block))
    }

    /// Installs a new block and serves its first ID; out of line so that `next` stays
    /// small enough to inline into the caller's loop.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, taken: Take) -> LocalTake {
        let Take::Ready { ids, refill } = taken else {
            return LocalTake::Empty;
        };
        let len = ids.len();
        if len == 0 {
            // A source that broke the contract of `take`: nothing to serve.
            return LocalTake::Empty;
        }
        self.taken += len;
        self.block = self.block.saturating_mul(2).min(self.max_block);
        self.stride = ids.stride.max(1);
        self.next = ids.start.wrapping_add(self.stride);
        self.left = len - 1;
        LocalTake::Ready {
            id: ids.start,
            refill,
        }
    }

    /// The IDs this handle took but has not served, in order: the ones that are skipped
    /// if it is dropped now.
    pub fn held(&self) -> IdRange {
        if self.left == 0 {
            return IdRange::new(self.next, self.next);
        }
        IdRange {
            start: self.next,
            end: self.next + (self.left - 1) * self.stride + 1,
            stride: self.stride,
        }
    }

    /// IDs taken from the chain so far, served or held.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// IDs served so far.
    pub fn served(&self) -> u64 {
        self.taken - self.left
    }

    /// How many IDs the next block take asks for.
    pub fn block(&self) -> u64 {
        self.block
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::segment::ChainConfig;

    fn id(t: LocalTake) -> u64 {
        match t {
            LocalTake::Ready { id, .. } => id,
            LocalTake::Empty => panic!("expected an ID"),
        }
    }

    #[test]
    fn blocks_double_up_to_the_cap() {
        let chain = SegmentChain::new(ChainConfig::default()).unwrap();
        chain.push(IdRange::new(0, 10_000)).unwrap();
        let mut l = LocalSegment::new(LocalConfig {
            first_block: 2,
            max_block: 8,
        })
        .unwrap();
        let mut sizes = Vec::new();
        for want in 0..40 {
            let before = l.taken();
            assert_eq!(id(l.next(&chain)), want);
            if l.taken() != before {
                sizes.push(l.taken() - before);
            }
        }
        assert_eq!(sizes, [2, 4, 8, 8, 8, 8, 8]);
        // The last block, 38..46, has served two IDs.
        assert_eq!((l.taken(), l.served()), (46, 40));
        assert_eq!(l.held(), IdRange::new(40, 46));
    }

    #[test]
    fn a_block_stops_at_the_segment_end_and_keeps_the_stride() {
        let chain = SegmentChain::new(ChainConfig::default()).unwrap();
        chain.push(IdRange::residues(0, 12, 3, 1)).unwrap(); // 1, 4, 7, 10
        chain.push(IdRange::new(100, 200)).unwrap();
        let mut l = LocalSegment::new(LocalConfig {
            first_block: 3,
            max_block: 64,
        })
        .unwrap();
        assert_eq!(id(l.next(&chain)), 1);
        assert_eq!(l.held(), IdRange::residues(4, 8, 3, 1));
        assert_eq!(l.held().iter().collect::<Vec<_>>(), [4, 7]);
        let rest: Vec<u64> = (0..4).map(|_| id(l.next(&chain))).collect();
        // The second take asks for 6 but the segment has one ID left: 10, then 100...
        assert_eq!(rest, [4, 7, 10, 100]);
        assert_eq!(l.held(), IdRange::new(101, 112));
    }

    #[test]
    fn empty_chain_then_refill_signal_passes_through() {
        let chain = SegmentChain::new(ChainConfig::default()).unwrap();
        let mut l = LocalSegment::new(LocalConfig::default()).unwrap();
        assert_eq!(l.next(&chain), LocalTake::Empty);
        chain.push(IdRange::new(0, 100)).unwrap();
        // Blocks 0..8 and 8..24: the second crosses the 10% point (ID 10), so the first ID
        // served from it carries the chain's signal, once.
        let mut refills = 0;
        for want in 0..100 {
            match l.next(&chain) {
                LocalTake::Ready { id, refill } => {
                    assert_eq!(id, want);
                    refills += u32::from(refill);
                    assert_eq!(refill, want == 8, "ID {want}");
                }
                LocalTake::Empty => panic!("chain holds IDs"),
            }
        }
        assert_eq!(refills, 1);
        assert_eq!(l.next(&chain), LocalTake::Empty);
    }

    #[test]
    fn bad_configs_are_refused_with_the_reason() {
        for (bad, says) in [
            ((0, 64), "first_block"),
            ((65, 64), "first_block"),
            ((1, 0), "first_block"),
        ] {
            let err = LocalSegment::new(LocalConfig {
                first_block: bad.0,
                max_block: bad.1,
            })
            .unwrap_err()
            .to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
