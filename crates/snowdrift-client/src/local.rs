//! Per-thread blocks of a name's 64-bit IDs, so that threads sharing one client do not all
//! hit the cache's one shared word on every `next()`: each thread takes a block of up to
//! [`MAX_BLOCK`] IDs with one compare-and-swap and serves it from memory no other thread
//! touches (as snowdrift-core's `LocalSegment` does on the server's worker threads).
//!
//! Each name's cache owns a [`Slot`]: an index into every thread's table of blocks, and a
//! tag no other cache ever gets. A handle ([`crate::Ids`]) copies both, so its warm `next()`
//! is an index into the calling thread's table and a compare of the tag: no name lookup, no
//! hashing. When a cache is dropped its index is reused by a later cache, with a new tag; a
//! thread that still holds a block at that index finds the tag differs and drops the block
//! (its IDs are skipped, never served) before it takes one from the new cache. So a stale
//! block never serves IDs of another name or client.
//!
//! The price: IDs a thread holds when it ends, or when its block's cache goes, are skipped,
//! and IDs of different threads interleave. Snowflake IDs carry the deadline of their batch
//! ([`Deadline`]), checked per ID against the coarse clock.
//!
//! `next(name)` finds the cache through a short per-thread list of the names it used last
//! ([`MOST`]), compared by client and name: a pointer shortcut would be wrong, as a freed
//! name's memory can come back holding another name of the same length.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::cache::NameCache;
use crate::clock::Deadline;

/// Names (of all clients) a thread remembers for `next(name)`; the oldest is dropped
/// beyond this.
const MOST: usize = 8;
/// A thread's first block of a name; each later one is twice the one before, up to
/// [`MAX_BLOCK`], so a thread that takes a few IDs and ends skips at most a few.
const FIRST_BLOCK: u64 = 8;
/// The largest block by default (`ClientBuilder::thread_block`). A block take (one
/// compare-and-swap on a word threads share, and a call) costs tens of nanoseconds: over 64
/// IDs that was a fifth of a warm `next()`, and blocks of 1,024 served 1.35x as many IDs per
/// second on one thread in the same run (BENCHMARKS.md, "The clients"). A thread that ends
/// skips at most 1,023 IDs, and at most 8 more than it took.
pub(crate) const MAX_BLOCK: u64 = 1024;
/// The largest block the builder accepts.
pub(crate) const MOST_BLOCK: u64 = 1 << 16;

/// A cache's place in every thread's table of blocks.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) index: usize,
    /// Never given to another slot, so a block left at `index` by a dropped cache is told
    /// apart from this one's.
    pub(crate) tag: u64,
}

struct Pool {
    /// Indices of dropped caches, reused most recent first.
    free: Vec<usize>,
    /// Indices handed out so far: the next new one.
    made: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    free: Vec::new(),
    made: 0,
});
/// Tag 0 marks an empty block.
static TAGS: AtomicU64 = AtomicU64::new(1);

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // A list and a count, whole after every step.
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slot {
    pub(crate) fn new() -> Self {
        let index = {
            let mut p = pool();
            p.free.pop().unwrap_or_else(|| {
                p.made += 1;
                p.made - 1
            })
        };
        Slot {
            index,
            tag: TAGS.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        pool().free.push(self.index);
    }
}

/// One thread's block of one cache's IDs: `next` up to `end` (exclusive) by `stride`.
/// Aligned to a cache line so that two threads' tables never share one.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Block {
    /// The tag of the slot whose IDs these are (0: none).
    tag: u64,
    next: u64,
    /// `next` once the block is used up. Computed with wrapping arithmetic: a block's last
    /// ID is at most `u64::MAX - 1` (the cache splits runs so), so `end` may wrap to 0 but
    /// `next` meets it only after the last ID.
    end: u64,
    stride: u64,
    deadline: Deadline,
    /// IDs asked for at the next block take.
    size: u64,
}

impl Block {
    const EMPTY: Block = Block {
        tag: 0,
        next: 0,
        end: 0,
        stride: 1,
        deadline: Deadline::NEVER,
        size: FIRST_BLOCK,
    };

    /// IDs held.
    fn left(&self) -> u64 {
        self.end.wrapping_sub(self.next) / self.stride
    }

    /// The next ID if this block is `tag`'s, holds one, and is clearly within its deadline.
    #[inline(always)]
    fn take(&mut self, tag: u64) -> Option<u64> {
        if self.tag == tag && self.next != self.end && self.deadline.clearly_fresh() {
            let id = self.next;
            self.next = id.wrapping_add(self.stride);
            return Some(id);
        }
        None
    }

    /// The next ID after [`Block::take`] found none: from this block if it is `tag`'s and
    /// the precise clock allows, otherwise from a new block taken from `cache`; with
    /// whether that take crossed the prefetch point. `None` when `cache` is empty.
    #[cold]
    #[inline(never)]
    fn refill(&mut self, tag: u64, cache: &NameCache) -> Option<(u64, bool)> {
        if self.tag != tag {
            // A dropped cache's block, or none yet: its IDs are skipped.
            *self = Block {
                tag,
                ..Block::EMPTY
            };
        } else if self.next != self.end {
            if self.deadline.check() {
                let id = self.next;
                self.next = id.wrapping_add(self.stride);
                return Some((id, false));
            }
            cache.runs.waste(self.left());
            self.next = self.end;
        }
        let most = cache.policy.thread_block;
        let got = cache.runs.take(self.size.min(most))?;
        self.size = self.size.saturating_mul(2).min(most);
        self.stride = got.ids.stride.max(1);
        self.next = got.ids.start.wrapping_add(self.stride);
        self.end = got
            .ids
            .start
            .wrapping_add(got.ids.len().wrapping_mul(self.stride));
        self.deadline = got.deadline;
        Some((got.ids.start, got.prefetch))
    }

    /// Moves up to `n` held IDs into `out` (for `next_n`, so a thread's IDs stay in order).
    fn drain(&mut self, tag: u64, cache: &NameCache, n: usize, out: &mut Vec<u64>) {
        if self.tag != tag || self.next == self.end {
            return;
        }
        if !self.deadline.check() {
            cache.runs.waste(self.left());
            self.next = self.end;
            return;
        }
        let k = self.left().min(n as u64);
        out.extend((0..k).map(|i| self.next.wrapping_add(i * self.stride)));
        self.next = self.next.wrapping_add(k * self.stride);
    }
}

/// A name this thread used through `next(name)`.
struct Named {
    client: u64,
    name: Box<str>,
    index: usize,
    tag: u64,
    cache: Arc<NameCache>,
}

struct Local {
    /// Indexed by [`Slot::index`].
    blocks: Vec<Block>,
    named: Vec<Named>,
}

fn block(blocks: &mut Vec<Block>, index: usize) -> &mut Block {
    if index >= blocks.len() {
        blocks.resize(index + 1, Block::EMPTY);
    }
    &mut blocks[index]
}

thread_local! {
    static LOCAL: UnsafeCell<Local> = const {
        UnsafeCell::new(Local {
            blocks: Vec::new(),
            named: Vec::new(),
        })
    };
}

#[cfg(debug_assertions)]
thread_local! {
    static INSIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` on this thread's table; `None` once the thread is ending (its table is gone).
///
/// `f` must not reach this module again on this thread, directly or through code it runs:
/// it only reads and writes the table, takes from a cache's lock-free chain, counts, reads
/// the clock and grows a `Vec`. So it calls no user code (no prefetch, which spawns on the
/// application's runtime, no drop of a cache, no logging): callers do those after `f`
/// returns. That is what makes the one `&mut` below unique. (A `RefCell` would check it
/// per ID, a third of the warm path's cost.) Debug builds assert it.
#[inline(always)]
fn with_local<R>(f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    LOCAL
        .try_with(|l| {
            #[cfg(debug_assertions)]
            let _inside = Inside::enter();
            // SAFETY: `l` is this thread's alone, and no other reference to it is live:
            // every access goes through this function, and no `f` re-enters it (above).
            f(unsafe { &mut *l.get() })
        })
        .ok()
}

/// Marks this thread as inside [`with_local`] (debug builds), to catch a re-entry.
#[cfg(debug_assertions)]
struct Inside;

#[cfg(debug_assertions)]
impl Inside {
    fn enter() -> Self {
        // `try_with`: once the thread's flag is gone (thread exit), there is nothing to check.
        assert!(
            !INSIDE.try_with(|i| i.replace(true)).unwrap_or(false),
            "snowdrift-client: the thread's table of blocks was re-entered"
        );
        Inside
    }
}

#[cfg(debug_assertions)]
impl Drop for Inside {
    fn drop(&mut self) {
        let _ = INSIDE.try_with(|i| i.set(false));
    }
}

/// The next ID of the cache with this slot from the thread's block, if it holds one that
/// is clearly fresh: the warm path of a handle.
#[inline]
pub(crate) fn next(index: usize, tag: u64) -> Option<u64> {
    with_local(|l| l.blocks.get_mut(index)?.take(tag)).flatten()
}

/// The next ID of `cache` after [`next`] found none, with whether to prefetch: from a new
/// block, or from the shared cache when the thread's table is gone (the thread is
/// ending). `None` when the cache is empty.
#[cold]
#[inline(never)]
pub(crate) fn refill(cache: &NameCache) -> Option<(u64, bool)> {
    let (index, tag) = (cache.slot.index, cache.slot.tag);
    match with_local(|l| block(&mut l.blocks, index).refill(tag, cache)) {
        Some(got) => got,
        None => cache.runs.take(1).map(|g| (g.ids.start, g.prefetch)),
    }
}

/// Moves up to `n` IDs of `cache` that this thread's block holds into `out`.
pub(crate) fn drain(cache: &NameCache, n: usize, out: &mut Vec<u64>) {
    let (index, tag) = (cache.slot.index, cache.slot.tag);
    with_local(|l| {
        if let Some(b) = l.blocks.get_mut(index) {
            b.drain(tag, cache, n, out);
        }
    });
}

/// The next ID of `name` on `client` through the thread's list of names: `None` when the
/// name is not on it or its cache is empty. `prefetch` runs when a block take crossed the
/// cache's prefetch point.
#[inline]
pub(crate) fn next_named(
    client: u64,
    name: &str,
    prefetch: impl FnOnce(&Arc<NameCache>),
) -> Option<u64> {
    let (id, cross) = with_local(|l| {
        let Local { blocks, named } = l;
        let e = named
            .iter()
            .find(|e| e.client == client && same(&e.name, name))?;
        if let Some(id) = blocks.get_mut(e.index).and_then(|b| b.take(e.tag)) {
            return Some((id, None));
        }
        refill_named(blocks, e)
    })??;
    if let Some(cache) = cross {
        prefetch(&cache);
    }
    Some(id)
}

/// [`next_named`] when the block had nothing; the cache (a reference counted once per
/// batch) when the take crossed the prefetch point.
#[cold]
#[inline(never)]
fn refill_named(blocks: &mut Vec<Block>, e: &Named) -> Option<(u64, Option<Arc<NameCache>>)> {
    let (id, cross) = block(blocks, e.index).refill(e.tag, &e.cache)?;
    Some((id, cross.then(|| e.cache.clone())))
}

/// Whether two names are the same text: for names of up to 16 bytes two overlapping word
/// compares inline (a call to `memcmp` costs as much as the rest of `next(name)`).
#[inline(always)]
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    // The words at the start and at the end overlap when `n` is below twice their size,
    // and together cover every byte.
    fn words<const W: usize>(a: &[u8], b: &[u8]) -> bool {
        let n = a.len();
        let at = |s: &[u8], i: usize| -> [u8; W] {
            let mut w = [0; W];
            w.copy_from_slice(&s[i..i + W]);
            w
        };
        at(a, 0) == at(b, 0) && at(a, n - W) == at(b, n - W)
    }
    match n {
        0 => true,
        1..4 => a.iter().zip(b).all(|(x, y)| x == y),
        4..8 => words::<4>(a, b),
        8..=16 => words::<8>(a, b),
        _ => a == b,
    }
}

/// Puts `name` of `client` on the thread's list of names, unless it is there.
#[cold]
pub(crate) fn remember(client: u64, name: &str, cache: &Arc<NameCache>) {
    // Dropped after the table is let go of (a cache's drop is not for inside it).
    let mut gone = Vec::new();
    with_local(|l| {
        if l.named
            .iter()
            .any(|e| e.client == client && same(&e.name, name))
        {
            return;
        }
        // Entries of dropped clients are never matched again (client ids are not reused):
        // let go of their caches. `gone`, outside, owns every entry from the start, so no
        // cache is ever dropped inside the table, not even while unwinding.
        gone = std::mem::take(&mut l.named);
        l.named
            .extend(gone.extract_if(.., |e| !e.cache.is_closed()));
        if l.named.len() >= MOST {
            gone.push(l.named.remove(0));
        }
        l.named.push(Named {
            client,
            name: name.into(),
            index: cache.slot.index,
            tag: cache.slot.tag,
            cache: cache.clone(),
        });
    });
    drop(gone);
}

#[cfg(test)]
mod tests;
