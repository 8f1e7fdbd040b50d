//! A lock-free chain of segments: callers take IDs, a refiller pushes new segments.

use super::IdRange;
use crate::error::{Error, Result};
use crate::sync::{AtomicU64, Mutex, Ordering};

/// How a [`SegmentChain`] prefetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainConfig {
    /// Most segments held at once, the current one included.
    pub capacity: u32,
    /// Share of the current segment, in percent, used before the next segment is wanted
    /// (Leaf's default: 10).
    pub prefetch_percent: u8,
    /// Fewest segments kept ready beyond the current one: 1 is Leaf's double buffer.
    pub min_ahead: u32,
    /// Most segments kept ready beyond the current one when callers keep starving.
    pub max_ahead: u32,
    /// Refills without a starved caller before the chain keeps one segment fewer ahead.
    pub relax_after: u32,
}

impl Default for ChainConfig {
    fn default() -> Self {
        Self {
            capacity: 16,
            prefetch_percent: 10,
            min_ahead: 1,
            max_ahead: 8,
            relax_after: 8,
        }
    }
}

/// The result of [`SegmentChain::take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Take {
    /// IDs reserved for the caller: between 1 and the count asked for, all from one
    /// segment. When `refill` is true this call crossed the prefetch point: tell the
    /// refiller (exactly one caller sees each crossing).
    Ready {
        /// The IDs.
        ids: IdRange,
        /// Whether the refiller should be woken.
        refill: bool,
    },
    /// Every segment held is used up: wake the refiller and wait for a
    /// [`push`](SegmentChain::push). Nothing was reserved.
    Empty,
}

/// What a chain holds, for status pages and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainStatus {
    /// IDs left in the current segment.
    pub current_left: u64,
    /// Size of the current segment.
    pub current_len: u64,
    /// Segments ready after the current one.
    pub segments_ahead: u64,
    /// IDs in those segments.
    pub ids_ahead: u64,
    /// Segments the chain tries to keep ahead now (its "safe distance").
    pub target_ahead: u64,
    /// Calls that found the chain empty, since it was created.
    pub starved: u64,
    /// Segments pushed since the chain was created.
    pub pushed: u64,
    /// The number of the current segment since the chain was created (0 first).
    pub segment: u64,
    /// The current segment, if one is held.
    pub current: Option<SegmentView>,
    /// The first segment ready after the current one, if any.
    pub next: Option<SegmentView>,
}

/// One segment as Leaf's monitor page shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentView {
    /// The next ID it gives (its end once used up).
    pub value: u64,
    /// Its end: every ID it gives is below it.
    pub max: u64,
    /// How many IDs it holds.
    pub step: u64,
}

/// Segments served from memory, CosId's `SegmentChainId` done without locks on the hot path.
///
/// The chain is a ring of `capacity` slots. Its state is one `AtomicU64`: the number of the
/// current segment (32 bits) and the offset in it (32 bits). A caller reserves IDs with one
/// compare-and-swap of that word; moving to the next segment is another CAS of the same
/// word. A slot is rewritten only after the state has moved past it, so a caller that read a
/// slot while it changed always fails its CAS and tries again: what it returns is always
/// consistent.
///
/// The chain keeps `target_ahead` segments ready beyond the current one. It starts at
/// `min_ahead`, grows by one each time a refill finds that callers starved (up to
/// `max_ahead`), and shrinks by one after `relax_after` refills without starvation.
///
/// ```
/// use snowdrift_core::segment::{ChainConfig, IdRange, SegmentChain, Take};
/// let chain = SegmentChain::new(ChainConfig::default())?;
/// assert_eq!(chain.take(1), Take::Empty);
/// assert_eq!(chain.wanted(), 1);
/// chain.push(IdRange::new(1, 1001))?; // max_id went from 0 to 1000
/// let Take::Ready { ids, .. } = chain.take(10) else { unreachable!() };
/// assert_eq!(ids, IdRange::new(1, 11));
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct SegmentChain {
    state: AtomicU64,
    published: AtomicU64,
    slots: Box<[Slot]>,
    target_ahead: AtomicU64,
    starved: AtomicU64,
    pusher: Mutex<Pusher>,
    config: ChainConfig,
}

#[derive(Debug)]
struct Slot {
    start: AtomicU64,
    len: AtomicU64,
    stride: AtomicU64,
}

/// Bookkeeping of the (single, serialized) refill side.
#[derive(Debug, Default)]
struct Pusher {
    starved_seen: u64,
    calm_refills: u32,
}

const OFFSET_BITS: u32 = 32;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Longest segment: the offset has 32 bits.
pub const MAX_SEGMENT_LEN: u64 = OFFSET_MASK;

fn pack(segment: u64, offset: u64) -> u64 {
    (segment << OFFSET_BITS) | offset
}

impl SegmentChain {
    /// An empty chain.
    pub fn new(config: ChainConfig) -> Result<Self> {
        let bad = |m: &str| Err(Error::InvalidConfig(format!("segment chain: {m}")));
        if config.capacity < 2 {
            return bad("capacity must be at least 2 (the current segment and one ahead)");
        }
        if config.prefetch_percent > 100 {
            return bad("prefetch_percent must be between 0 and 100");
        }
        if config.min_ahead == 0 || config.min_ahead > config.max_ahead {
            return bad("need 1 <= min_ahead <= max_ahead");
        }
        if config.max_ahead >= config.capacity {
            return bad("max_ahead must be below capacity (the current segment needs a slot)");
        }
        let slots = (0..config.capacity)
            .map(|_| Slot {
                start: AtomicU64::new(0),
                len: AtomicU64::new(0),
                stride: AtomicU64::new(1),
            })
            .collect();
        Ok(Self {
            state: AtomicU64::new(0),
            published: AtomicU64::new(0),
            slots,
            target_ahead: AtomicU64::new(u64::from(config.min_ahead)),
            starved: AtomicU64::new(0),
            pusher: Mutex::new(Pusher::default()),
            config,
        })
    }

    fn slot(&self, segment: u64) -> &Slot {
        &self.slots[(segment % u64::from(self.config.capacity)) as usize]
    }

    fn prefetch_point(&self, len: u64) -> u64 {
        len * u64::from(self.config.prefetch_percent) / 100
    }

    /// Reserves up to `n` IDs (`n` >= 1) from the current segment, moving on to the next
    /// segment when it is used up. Never blocks and never takes a lock.
    #[inline]
    pub fn take(&self, n: u64) -> Take {
        self.take_numbered(n).0
    }

    /// [`take`](Self::take), and the number of the segment the IDs came from: how many
    /// segments were pushed before it (0 for the first). A caller that keeps its own facts
    /// about each pushed segment (when it was fetched, from where) finds them by it. The
    /// number is meaningful only with [`Take::Ready`].
    ///
    /// Callers run it inside per-thread state they hold exclusively (snowdrift-client's
    /// table of blocks), so it neither logs nor calls out: keep it that way.
    #[inline]
    pub fn take_numbered(&self, n: u64) -> (Take, u64) {
        let n = n.max(1);
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let (segment, offset) = (s >> OFFSET_BITS, s & OFFSET_MASK);
            let published = self.published.load(Ordering::Acquire);
            if segment >= published {
                return (self.starve(), segment);
            }
            let slot = self.slot(segment);
            let start = slot.start.load(Ordering::Acquire);
            let len = slot.len.load(Ordering::Acquire);
            let stride = slot.stride.load(Ordering::Acquire);
            let next = if offset < len {
                let end = offset + n.min(len - offset);
                pack(segment, end)
            } else if segment + 1 < published {
                pack(segment + 1, 0)
            } else {
                // Only trust "all used up" if nobody moved the state meanwhile.
                let now = self.state.load(Ordering::Acquire);
                if now == s {
                    return (self.starve(), segment);
                }
                s = now;
                continue;
            };
            match self
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if next >> OFFSET_BITS == segment => {
                    let end = next & OFFSET_MASK;
                    let point = self.prefetch_point(len);
                    // `slice` counts from `start` by `stride` alone, so this bound only has
                    // to be a bound: a segment's last ID may sit a stride below 2^64, where
                    // `start + len * stride` would overflow.
                    let ids = IdRange {
                        start,
                        end: start.wrapping_add(len.wrapping_mul(stride)),
                        stride,
                    }
                    .slice(offset, end);
                    let refill = offset <= point && point < end;
                    return (Take::Ready { ids, refill }, segment);
                }
                // Moved to the next segment: take from it on the next turn.
                Ok(_) => s = next,
                Err(actual) => s = actual,
            }
        }
    }

    #[cold]
    fn starve(&self) -> Take {
        self.starved.fetch_add(1, Ordering::Relaxed);
        Take::Empty
    }

    /// How many segments the refiller should fetch now.
    pub fn wanted(&self) -> u64 {
        let s = self.state.load(Ordering::Acquire);
        let (segment, offset) = (s >> OFFSET_BITS, s & OFFSET_MASK);
        let published = self.published.load(Ordering::Acquire);
        let target = self.target_ahead.load(Ordering::Relaxed);
        let capacity = u64::from(self.config.capacity);
        if segment >= published {
            // Nothing to serve from: the current segment plus `target - 1` ahead, as after
            // a refill below the prefetch point.
            return target.min(capacity);
        }
        let held = published - segment;
        let ahead = held - 1;
        let len = self.slot(segment).len.load(Ordering::Acquire);
        // Before the prefetch point of the current segment one segment fewer is enough:
        // with target 1 that is exactly Leaf's double buffer.
        let want_ahead = if offset >= self.prefetch_point(len) {
            target
        } else {
            target - 1
        };
        want_ahead.saturating_sub(ahead).min(capacity - held)
    }

    /// Adds a segment claimed from the store. Refills are serialized internally; the
    /// segment must be non-empty, at most [`MAX_SEGMENT_LEN`] long, and fit in the chain.
    pub fn push(&self, ids: IdRange) -> Result<()> {
        if ids.is_empty() || ids.len() > MAX_SEGMENT_LEN {
            return Err(Error::InvalidCount {
                count: ids.len(),
                allowed: format!("a segment holds 1 to {MAX_SEGMENT_LEN} IDs"),
            });
        }
        // The guarded state is two counters, valid whatever a panicking holder did.
        let mut pusher = self.pusher.lock().unwrap_or_else(|e| e.into_inner());
        let published = self.published.load(Ordering::Acquire);
        let segment = self.state.load(Ordering::Acquire) >> OFFSET_BITS;
        let held = published.saturating_sub(segment);
        if held >= u64::from(self.config.capacity) {
            return Err(Error::InvalidCount {
                count: held + 1,
                allowed: format!("at most {} segments held", self.config.capacity),
            });
        }
        if published >= OFFSET_MASK {
            return Err(Error::InvalidConfig(
                "segment chain has served 2^32 segments; rebuild it".into(),
            ));
        }
        let slot = self.slot(published);
        slot.start.store(ids.start, Ordering::Release);
        slot.len.store(ids.len(), Ordering::Release);
        slot.stride.store(ids.stride.max(1), Ordering::Release);
        self.published.store(published + 1, Ordering::Release);
        self.adapt(&mut pusher);
        Ok(())
    }

    /// Grows the safe distance after starvation, shrinks it after calm refills.
    fn adapt(&self, pusher: &mut Pusher) {
        let starved = self.starved.load(Ordering::Relaxed);
        let target = self.target_ahead.load(Ordering::Relaxed);
        let next = if starved != pusher.starved_seen {
            pusher.calm_refills = 0;
            (target + 1).min(u64::from(self.config.max_ahead))
        } else {
            pusher.calm_refills += 1;
            if pusher.calm_refills >= self.config.relax_after {
                pusher.calm_refills = 0;
                target
                    .saturating_sub(1)
                    .max(u64::from(self.config.min_ahead))
            } else {
                target
            }
        };
        pusher.starved_seen = starved;
        self.target_ahead.store(next, Ordering::Relaxed);
    }

    /// A snapshot of what the chain holds (not atomic across fields).
    pub fn status(&self) -> ChainStatus {
        let s = self.state.load(Ordering::Acquire);
        let (segment, offset) = (s >> OFFSET_BITS, s & OFFSET_MASK);
        let published = self.published.load(Ordering::Acquire);
        let len_of = |seg: u64| self.slot(seg).len.load(Ordering::Acquire);
        let (current_len, current_left) = if segment < published {
            let len = len_of(segment);
            (len, len.saturating_sub(offset))
        } else {
            (0, 0)
        };
        let ahead = (segment + 1..published).map(len_of).collect::<Vec<_>>();
        let view = |seg: u64, used: u64| {
            let slot = self.slot(seg);
            let start = slot.start.load(Ordering::Acquire);
            let stride = slot.stride.load(Ordering::Acquire);
            let len = slot.len.load(Ordering::Acquire);
            SegmentView {
                value: start.saturating_add(used.min(len).saturating_mul(stride)),
                max: start.saturating_add(len.saturating_mul(stride)),
                step: len,
            }
        };
        ChainStatus {
            current_left,
            current_len,
            segments_ahead: ahead.len() as u64,
            ids_ahead: ahead.iter().sum(),
            target_ahead: self.target_ahead.load(Ordering::Relaxed),
            starved: self.starved.load(Ordering::Relaxed),
            pushed: published,
            segment,
            current: (segment < published).then(|| view(segment, offset)),
            next: (segment + 1 < published).then(|| view(segment + 1, 0)),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
