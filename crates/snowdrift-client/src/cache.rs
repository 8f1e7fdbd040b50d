//! One name's cache: the batch being served and the next one, fetched in the background once
//! the current one is used past a threshold, so a caller waits on the network only when the
//! cache is cold or has been drained faster than a fetch takes.
//!
//! Order: within one batch IDs come in the order the server issued them (increasing for
//! every 64-bit kind); a new batch may go back when it comes from another server (segment
//! ranges of different servers interleave). Uniqueness never depends on order.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use snowdrift_proto::grpc::IdBatch;

use crate::error::{Error, ErrorKind};

/// What a batch holds.
#[derive(Debug)]
enum Ids {
    /// `(next ID, IDs left, stride)`, used from the front.
    Runs(VecDeque<(u64, u64, u64)>),
    Text(VecDeque<String>),
}

/// One fetched batch.
#[derive(Debug)]
pub(crate) struct Batch {
    ids: Ids,
    len: u64,
    left: u64,
    fetched: Instant,
    /// Snowflake IDs carry their time, so they expire.
    expires: bool,
}

impl Batch {
    /// The IDs of a fetched message.
    pub(crate) fn from_message(batch: IdBatch) -> Self {
        let expires = batch.kind == "snowflake";
        let ids = if batch.runs.is_empty() && !batch.text.is_empty() {
            Ids::Text(batch.text.into())
        } else {
            Ids::Runs(
                batch
                    .runs
                    .iter()
                    .filter(|r| r.count > 0)
                    .map(|r| (r.first, r.count, r.stride))
                    .collect(),
            )
        };
        let len = match &ids {
            Ids::Runs(runs) => runs.iter().map(|r| r.1).sum(),
            Ids::Text(t) => t.len() as u64,
        };
        Self {
            ids,
            len,
            left: len,
            fetched: Instant::now(),
            expires,
        }
    }

    fn is_text(&self) -> bool {
        matches!(self.ids, Ids::Text(_))
    }
}

/// Counts an application can read ([`crate::Client::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// IDs handed out from the cache.
    pub served: u64,
    /// Batches fetched from a server.
    pub fetches: u64,
    /// Snowflake IDs fetched and dropped unused once older than `max_age`: skipped for
    /// good, never handed out late. (What is cached when the client is dropped is skipped
    /// too; [`cached`](Self::cached) says how much that would be.)
    pub wasted: u64,
    /// IDs cached now.
    pub cached: u64,
    /// The size of the next fetch, as adapted to the rate of use.
    pub batch: u64,
}

/// How a name's cache behaves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub(crate) prefetch_at: f64,
    pub(crate) hold: Duration,
    pub(crate) min_batch: u64,
    pub(crate) max_batch: u64,
    pub(crate) max_age: Duration,
}

#[derive(Debug)]
struct Buffers {
    current: Option<Batch>,
    next: Option<Batch>,
    /// Whether the name's IDs are text, once a batch has said so.
    text: Option<bool>,
    size: u64,
    last_fetch: Option<Instant>,
    taken_since_fetch: u64,
}

/// One name's cache.
#[derive(Debug)]
pub(crate) struct NameCache {
    buffers: Mutex<Buffers>,
    /// One fetch at a time for the name; a caller that finds the cache empty waits for the
    /// fetch in flight rather than start another.
    pub(crate) fetch: tokio::sync::Mutex<()>,
    pub(crate) prefetching: AtomicBool,
    served: AtomicU64,
    fetches: AtomicU64,
    wasted: AtomicU64,
    policy: Policy,
}

/// What a take got.
pub(crate) enum Taken {
    Numbers(Vec<u64>),
    Text(Vec<String>),
}

impl NameCache {
    pub(crate) fn new(policy: Policy) -> Self {
        Self {
            buffers: Mutex::new(Buffers {
                current: None,
                next: None,
                text: None,
                size: policy.min_batch,
                last_fetch: None,
                taken_since_fetch: 0,
            }),
            fetch: tokio::sync::Mutex::new(()),
            prefetching: AtomicBool::new(false),
            served: AtomicU64::new(0),
            fetches: AtomicU64::new(0),
            wasted: AtomicU64::new(0),
            policy,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Buffers> {
        // The buffers are plain data, whole after every assignment.
        self.buffers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Up to `n` IDs into `out` (numbers when `text` is false), and whether the next batch
    /// should be fetched now. Expired snowflake batches are dropped first.
    pub(crate) fn take(&self, n: usize, text: bool, out: &mut Taken) -> Result<bool, Error> {
        let mut b = self.lock();
        if let Some(is_text) = b.text
            && is_text != text
        {
            return Err(wrong_kind(is_text));
        }
        let mut got = 0usize;
        let have = |out: &Taken| match out {
            Taken::Numbers(v) => v.len(),
            Taken::Text(v) => v.len(),
        };
        while have(out) < n {
            self.expire(&mut b);
            if b.current.as_ref().is_none_or(|c| c.left == 0) {
                match b.next.take() {
                    Some(next) => b.current = Some(next),
                    None => break,
                }
                continue;
            }
            let Some(current) = b.current.as_mut() else {
                break;
            };
            let want = (n - have(out)) as u64;
            match (&mut current.ids, &mut *out) {
                (Ids::Runs(runs), Taken::Numbers(v)) => {
                    let mut left = want;
                    while left > 0 {
                        let Some(run) = runs.front_mut() else { break };
                        let k = run.1.min(left);
                        v.extend((0..k).map(|i| run.0 + i * run.2));
                        run.0 += k * run.2;
                        run.1 -= k;
                        left -= k;
                        current.left -= k;
                        got += k as usize;
                        if run.1 == 0 {
                            runs.pop_front();
                        }
                    }
                }
                (Ids::Text(t), Taken::Text(v)) => {
                    let k = (want as usize).min(t.len());
                    v.extend(t.drain(..k));
                    current.left -= k as u64;
                    got += k;
                }
                _ => return Err(wrong_kind(current.is_text())),
            }
        }
        b.taken_since_fetch += got as u64;
        self.served.fetch_add(got as u64, Ordering::Relaxed);
        let low = b
            .current
            .as_ref()
            .is_none_or(|c| (c.len - c.left) as f64 >= c.len as f64 * self.policy.prefetch_at);
        Ok(low && b.next.is_none())
    }

    /// Drops the current and next batches once their snowflake IDs are older than
    /// `max_age`, counting them as wasted.
    fn expire(&self, b: &mut Buffers) {
        for slot in [&mut b.current, &mut b.next] {
            if let Some(batch) = slot
                && batch.expires
                && batch.fetched.elapsed() > self.policy.max_age
            {
                self.wasted.fetch_add(batch.left, Ordering::Relaxed);
                *slot = None;
            }
        }
    }

    /// Whether a take could be served without a fetch.
    pub(crate) fn has_ids(&self) -> bool {
        let mut b = self.lock();
        self.expire(&mut b);
        b.current.as_ref().is_some_and(|c| c.left > 0) || b.next.is_some()
    }

    /// How many IDs the next fetch asks for, for a caller that wants at least `demand`:
    /// about `hold` worth at the rate seen since the last fetch, within the bounds.
    pub(crate) fn next_size(&self, demand: u64) -> u64 {
        let mut b = self.lock();
        if let Some(at) = b.last_fetch {
            let secs = at.elapsed().as_secs_f64().max(0.001);
            let rate = b.taken_since_fetch as f64 / secs;
            let want = (rate * self.policy.hold.as_secs_f64()) as u64;
            b.size = want.clamp(self.policy.min_batch, self.policy.max_batch);
        }
        b.size.max(demand).min(self.policy.max_batch)
    }

    /// Puts a fetched batch in: as the current one if that is used up, else as the next.
    pub(crate) fn install(&self, batch: Batch) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let mut b = self.lock();
        b.text = Some(batch.is_text());
        b.last_fetch = Some(Instant::now());
        b.taken_since_fetch = 0;
        if b.current.as_ref().is_none_or(|c| c.left == 0) {
            b.current = Some(batch);
        } else if b.next.is_none() {
            b.next = Some(batch);
        } else {
            // Both slots full (two fetches raced): the newest waits behind, never dropped.
            let current = b.current.take();
            let next = b.next.take();
            b.current = current;
            b.next = merge(next, batch);
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let b = self.lock();
        let cached =
            b.current.as_ref().map_or(0, |c| c.left) + b.next.as_ref().map_or(0, |c| c.left);
        Stats {
            served: self.served.load(Ordering::Relaxed),
            fetches: self.fetches.load(Ordering::Relaxed),
            wasted: self.wasted.load(Ordering::Relaxed),
            cached,
            batch: b.size,
        }
    }
}

impl Drop for NameCache {
    fn drop(&mut self) {
        let left = self.stats().cached;
        if left > 0 {
            tracing::debug!(
                ids = left,
                "snowdrift client dropped cached IDs; they are skipped, never reused"
            );
        }
    }
}

/// `a` followed by `b`, as one batch (same kind; the older one's time decides expiry).
fn merge(a: Option<Batch>, b: Batch) -> Option<Batch> {
    let Some(mut a) = a else { return Some(b) };
    match (&mut a.ids, b.ids) {
        (Ids::Runs(x), Ids::Runs(y)) => x.extend(y),
        (Ids::Text(x), Ids::Text(y)) => x.extend(y),
        // A name does not change kind; keep the older batch rather than mix.
        _ => return Some(a),
    }
    a.len += b.len;
    a.left += b.left;
    Some(a)
}

fn wrong_kind(is_text: bool) -> Error {
    if is_text {
        Error::new(
            ErrorKind::WrongKind,
            "this name issues text IDs (UUID, ULID, ObjectId, templated counter): use next_text",
        )
    } else {
        Error::new(
            ErrorKind::WrongKind,
            "this name issues 64-bit IDs: use next or next_n",
        )
    }
}
