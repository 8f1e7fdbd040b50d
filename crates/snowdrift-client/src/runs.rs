//! A name's cached 64-bit IDs: the runs of fetched batches in a lock-free
//! [`SegmentChain`] (one compare-and-swap per take, as on the server), with when each run
//! was fetched, so cached snowflake IDs past `max_age` are dropped rather than handed out.
//! The age is checked against the coarse clock ([`crate::clock`]), which errs on the strict
//! side.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use snowdrift_core::segment::{ChainConfig, IdRange, MAX_SEGMENT_LEN, SegmentChain, Take};

use crate::clock::{self, Deadline};

/// Segments the chain holds at once. A batch is one run per server segment (segment kinds)
/// or per millisecond (snowflake); runs that do not fit wait in `pending`.
const CAPACITY: u32 = 128;
/// The low bits of a stamp hold the segment's number, so a stamp left by an older segment
/// in the same slot is never taken for this one's.
const NUMBER_BITS: u32 = 24;
const NUMBER_MASK: u64 = (1 << NUMBER_BITS) - 1;

/// What a take got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Got {
    /// The IDs, one run of a batch; fewer than asked when the run ended.
    pub(crate) ids: IdRange,
    /// This take crossed the prefetch point of the newest batch's run: fetch the next
    /// batch (one caller sees each crossing).
    pub(crate) prefetch: bool,
    /// Until when the IDs may be handed out (snowflake IDs; others never expire).
    pub(crate) deadline: Deadline,
}

/// One name's 64-bit IDs.
#[derive(Debug)]
pub(crate) struct Runs {
    chain: SegmentChain,
    /// Per slot: when the segment in it was fetched (a [`clock::floor_ms`] reading) above
    /// [`NUMBER_BITS`], its number below.
    stamps: Box<[AtomicU64]>,
    /// Whether the IDs carry their time (snowflake) and so expire after `max_age`.
    expires: AtomicBool,
    max_age_ms: u64,
    /// The number of the first segment of the newest batch: a crossing in it or later
    /// means the cache holds no further batch.
    newest: AtomicU64,
    /// The serialized push side.
    pusher: Mutex<Pusher>,
    /// Whether runs wait in `pusher.pending` (set and cleared under its lock), so a take
    /// that finds the chain empty knows without the lock whether to move them in.
    waiting: AtomicBool,
    wasted: AtomicU64,
}

#[derive(Debug, Default)]
struct Pusher {
    /// Segments pushed so far: the next one's number.
    segments: u64,
    /// IDs pushed so far.
    ids: u64,
    /// Runs that did not fit in the chain yet, with their stamps' times.
    pending: VecDeque<(IdRange, u64)>,
}

impl Runs {
    pub(crate) fn new(prefetch_at: f64, max_age: Duration) -> Self {
        let config = ChainConfig {
            capacity: CAPACITY,
            // 0.0..=1.0 was checked by the builder.
            prefetch_percent: (prefetch_at * 100.0).round() as u8,
            min_ahead: 1,
            max_ahead: CAPACITY - 1,
            relax_after: 8,
        };
        let chain = match SegmentChain::new(config) {
            Ok(chain) => chain,
            // The configuration above is within every bound the chain checks.
            Err(e) => unreachable!("client segment chain: {e}"),
        };
        Self {
            chain,
            stamps: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
            expires: AtomicBool::new(false),
            max_age_ms: max_age.as_millis().min(u128::from(u64::MAX >> NUMBER_BITS)) as u64,
            newest: AtomicU64::new(0),
            pusher: Mutex::new(Pusher::default()),
            waiting: AtomicBool::new(false),
            wasted: AtomicU64::new(0),
        }
    }

    /// Up to `n` (>= 1) IDs, or `None` when nothing is cached. Never waits for a fetch.
    /// Snowflake IDs fetched more than `max_age` ago are dropped (counted as wasted) on the
    /// way.
    ///
    /// Runs inside the thread's table of blocks (`local::with_local`), as does
    /// [`waste`](Self::waste): neither may log, record metrics, run callbacks or drop a
    /// cache, or the table could be entered twice.
    #[inline]
    pub(crate) fn take(&self, n: u64) -> Option<Got> {
        loop {
            let (taken, segment) = self.chain.take_numbered(n);
            let Take::Ready { ids, refill } = taken else {
                // A batch of more runs than the chain holds (snowflake IDs come one run per
                // millisecond) keeps the rest waiting: move them in here rather than make
                // the caller wait for the fetch in flight, which moves them otherwise.
                if self.waiting.load(Ordering::Acquire) && self.flush() {
                    continue;
                }
                return None;
            };
            let deadline = if self.expires.load(Ordering::Relaxed) {
                match self.deadline(segment) {
                    Some(d) if d.check() => d,
                    _ => {
                        // The rest of the segment goes the same way, `n` at a time: once
                        // per `max_age` at most, so not worth a cleverer drain.
                        self.wasted.fetch_add(ids.len(), Ordering::Relaxed);
                        continue;
                    }
                }
            } else {
                Deadline::NEVER
            };
            let prefetch = refill && segment >= self.newest.load(Ordering::Acquire);
            return Some(Got {
                ids,
                prefetch,
                deadline,
            });
        }
    }

    /// Counts IDs taken from here but dropped for age unserved (a thread's block).
    pub(crate) fn waste(&self, n: u64) {
        self.wasted.fetch_add(n, Ordering::Relaxed);
    }

    /// The deadline of `segment`'s IDs; `None` when its stamp is gone.
    fn deadline(&self, segment: u64) -> Option<Deadline> {
        let stamp = self.stamps[(segment % u64::from(CAPACITY)) as usize].load(Ordering::Acquire);
        if stamp & NUMBER_MASK != segment & NUMBER_MASK {
            // The slot was reused: this segment is at least CAPACITY segments old.
            return None;
        }
        Some(Deadline::after(stamp >> NUMBER_BITS, self.max_age_ms))
    }

    /// Adds a fetched batch's runs `(first, count, stride)`. `expires` is true for snowflake
    /// IDs. Runs the chain cannot hold yet wait and go in on a later [`Self::flush`].
    pub(crate) fn push(&self, runs: impl IntoIterator<Item = (u64, u64, u64)>, expires: bool) {
        if expires {
            self.expires.store(true, Ordering::Relaxed);
        }
        let now = clock::floor_ms();
        let mut p = self.lock();
        let mut first_of_batch = true;
        for (first, count, stride) in runs {
            for ids in split(first, count, stride, &self.wasted) {
                p.ids += ids.len();
                if first_of_batch {
                    // Set before the batch is visible, so no crossing in it is missed.
                    self.newest
                        .store(p.segments + p.pending.len() as u64, Ordering::Release);
                    first_of_batch = false;
                }
                p.pending.push_back((ids, now));
            }
        }
        self.flush_locked(&mut p);
    }

    /// Moves waiting runs into the chain as far as it has room; whether it moved any.
    pub(crate) fn flush(&self) -> bool {
        let mut p = self.lock();
        self.flush_locked(&mut p)
    }

    fn flush_locked(&self, p: &mut Pusher) -> bool {
        let before = p.pending.len();
        while let Some(&(ids, at)) = p.pending.front() {
            let number = p.segments;
            let stamp = (at << NUMBER_BITS) | (number & NUMBER_MASK);
            // The slot's old segment is used up: the chain refuses a push over it.
            self.stamps[(number % u64::from(CAPACITY)) as usize].store(stamp, Ordering::Release);
            if self.chain.push(ids).is_err() {
                break;
            }
            p.segments += 1;
            p.pending.pop_front();
        }
        self.waiting.store(!p.pending.is_empty(), Ordering::Release);
        p.pending.len() < before
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pusher> {
        // Counters and a queue, whole after every step.
        self.pusher.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// IDs cached now (in the chain and waiting).
    pub(crate) fn cached(&self) -> u64 {
        let status = self.chain.status();
        let waiting: u64 = self.lock().pending.iter().map(|(r, _)| r.len()).sum();
        status.current_left + status.ids_ahead + waiting
    }

    /// Whether runs wait for room in the chain.
    #[cfg(test)]
    pub(crate) fn has_pending(&self) -> bool {
        !self.lock().pending.is_empty()
    }

    /// IDs pushed since the cache was made.
    pub(crate) fn pushed_ids(&self) -> u64 {
        self.lock().ids
    }

    /// Snowflake IDs dropped for age.
    pub(crate) fn wasted(&self) -> u64 {
        self.wasted.load(Ordering::Relaxed)
    }
}

/// A run as ranges the chain accepts: at most [`MAX_SEGMENT_LEN`] IDs each, ending below
/// `u64::MAX` (a range's end is exclusive); an ID that cannot be represented is counted as
/// wasted, never handed out.
fn split(first: u64, count: u64, stride: u64, wasted: &AtomicU64) -> Vec<IdRange> {
    let stride = stride.max(1);
    let mut out = Vec::new();
    let (mut first, mut left) = (first, count);
    while left > 0 {
        let k = left.min(MAX_SEGMENT_LEN);
        let last = (k - 1)
            .checked_mul(stride)
            .and_then(|span| first.checked_add(span));
        let Some(end) = last.and_then(|l| l.checked_add(1)) else {
            // The run reaches u64::MAX: keep what fits, drop the rest.
            let fits = if first == u64::MAX {
                0
            } else {
                (u64::MAX - 1 - first) / stride + 1
            };
            if fits > 0 {
                out.push(IdRange {
                    start: first,
                    end: first + (fits - 1) * stride + 1,
                    stride,
                });
            }
            wasted.fetch_add(left - fits.min(left), Ordering::Relaxed);
            break;
        };
        out.push(IdRange {
            start: first,
            end,
            stride,
        });
        left -= k;
        match k
            .checked_mul(stride)
            .and_then(|span| first.checked_add(span))
        {
            Some(next) => first = next,
            None => {
                wasted.fetch_add(left, Ordering::Relaxed);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
