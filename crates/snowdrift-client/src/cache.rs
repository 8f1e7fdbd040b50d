//! One name's cache: its 64-bit IDs ([`Runs`]) or text IDs ([`Texts`]), the one fetch at a
//! time that refills it, the batch size that follows the rate of use, and its counts.
//!
//! Order: within one batch IDs come in the order the server issued them (increasing for
//! every 64-bit kind); a new batch may go back when it comes from another server (segment
//! ranges of different servers interleave). Uniqueness never depends on order.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use snowdrift_proto::Kind;
use snowdrift_proto::grpc::IdBatch;

use crate::error::{Error, ErrorKind};
use crate::generate::Local;
use crate::guard::Guard;
use crate::local::Slot;
use crate::runs::Runs;
use crate::text::Texts;

/// What one fetch brought.
#[derive(Debug)]
pub(crate) enum Batch {
    /// `(first, count, stride)` runs of 64-bit IDs; `expires` for snowflake IDs; `ordered`
    /// for timestamp-oracle IDs, which are never cached (see [`NameCache::is_ordered`]).
    Runs {
        runs: Vec<(u64, u64, u64)>,
        expires: bool,
        ordered: bool,
    },
    /// Text IDs, and their kind when this build knows it.
    Text {
        ids: Vec<String>,
        kind: Option<Kind>,
    },
}

impl Batch {
    /// The IDs of one message (of `Next`, or the first of a `Stream`).
    pub(crate) fn from_message(message: IdBatch) -> Self {
        // The code when the server sent one, the name from servers before it.
        let kind = message.kind_value();
        if message.runs.is_empty() && !message.text.is_empty() {
            return Batch::Text {
                ids: message.text,
                kind,
            };
        }
        Batch::Runs {
            // Runs of 0 IDs are kept, so the check refuses such a broken answer.
            runs: message
                .runs
                .iter()
                .map(|r| (r.first, r.count, r.stride))
                .collect(),
            expires: kind.is_some_and(Kind::ids_expire),
            ordered: kind.is_some_and(Kind::never_cached),
        }
    }

    /// Adds a later message of the same stream.
    pub(crate) fn extend(&mut self, message: IdBatch) {
        match (self, Batch::from_message(message)) {
            (Batch::Runs { runs, .. }, Batch::Runs { runs: more, .. }) => runs.extend(more),
            (Batch::Text { ids, .. }, Batch::Text { ids: more, .. }) => ids.extend(more),
            // A name does not change kind within a stream.
            _ => {}
        }
    }

    /// How many IDs.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Batch::Runs { runs, .. } => runs.iter().fold(0, |n, r| n.saturating_add(r.1)),
            Batch::Text { ids, .. } => ids.len() as u64,
        }
    }
}

/// Counts an application can read ([`crate::Client::stats`]); the same are exported
/// through the `metrics` crate's recorder, if the application installed one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// IDs that left the cache: handed out, or held in a thread's block of at most 1,024
    /// (see [`crate::Ids`]) to be handed out next on that thread.
    pub served: u64,
    /// Batches fetched from a server.
    pub fetches: u64,
    /// IDs skipped for good: snowflake IDs dropped unused once older than `max_age` (never
    /// handed out late), IDs a `next_n` had taken when its fetch for the rest failed, and,
    /// once the client is dropped, what it still cached ([`cached`](Self::cached) says how
    /// much that would be now).
    pub wasted: u64,
    /// IDs cached now.
    pub cached: u64,
    /// The size of the next fetch, as adapted to the rate of use.
    pub batch: u64,
    /// Batches refused: IDs this client had already received for the name (a server that
    /// repeats IDs, runs or text IDs), a run that reaches 2^63 or wraps past 2^64 - 1, or
    /// another broken answer. Each one's endpoint was left out for its backoff and another
    /// asked instead.
    pub refused: u64,
}

/// How a name's cache behaves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Policy {
    pub(crate) prefetch_at: f64,
    pub(crate) hold: Duration,
    pub(crate) min_batch: u64,
    pub(crate) max_batch: u64,
    pub(crate) max_age: Duration,
    pub(crate) generate_locally: bool,
    /// The largest block a thread takes (see [`crate::local`]).
    pub(crate) thread_block: u64,
}

const UNKNOWN: u8 = 0;
const NUMBERS: u8 = 1;
const TEXT: u8 = 2;
/// Timestamp-oracle IDs: strictly increasing across every client only if each is handed out
/// as it comes from the server, so none is cached.
const ORDERED: u8 = 3;

#[derive(Debug)]
struct Sizing {
    size: u64,
    last_fetch: Option<Instant>,
    served_then: u64,
}

/// One name's cache.
#[derive(Debug)]
pub(crate) struct NameCache {
    /// Where threads keep their blocks of this cache's IDs (see [`crate::local`]).
    pub(crate) slot: Slot,
    pub(crate) runs: Runs,
    /// Checks every fetched batch and remembers the IDs received (see [`crate::guard`]).
    pub(crate) guard: Guard,
    pub(crate) texts: Texts,
    /// Once a fetch showed the name's kind needs no coordination (and the builder allows
    /// it): where its IDs are made from then on.
    pub(crate) local: OnceLock<Local>,
    kind: AtomicU8,
    /// One fetch at a time for the name; a caller that finds the cache empty waits for the
    /// fetch in flight rather than start another.
    pub(crate) fetch: tokio::sync::Mutex<()>,
    pub(crate) prefetching: AtomicBool,
    /// The calls of an ordered name waiting for its next fetch.
    pub(crate) merge: crate::merge::Merge,
    fetches: AtomicU64,
    /// IDs a caller had taken when its fetch failed: never handed out.
    lost: AtomicU64,
    /// IDs of an ordered kind, fetched for and handed to one caller each.
    direct: AtomicU64,
    /// IDs left in the cache when the client was dropped: skipped for good.
    abandoned: AtomicU64,
    closed: AtomicBool,
    sizing: Mutex<Sizing>,
    pub(crate) policy: Policy,
}

impl NameCache {
    pub(crate) fn new(policy: Policy) -> Self {
        Self {
            slot: Slot::new(),
            runs: Runs::new(policy.prefetch_at, policy.max_age),
            guard: Guard::default(),
            texts: Texts::new(policy.prefetch_at),
            local: OnceLock::new(),
            kind: AtomicU8::new(UNKNOWN),
            fetch: tokio::sync::Mutex::new(()),
            prefetching: AtomicBool::new(false),
            merge: crate::merge::Merge::default(),
            fetches: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            direct: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            sizing: Mutex::new(Sizing {
                size: policy.min_batch,
                last_fetch: None,
                served_then: 0,
            }),
            policy,
        }
    }

    /// An error if the name is known to issue the other kind of ID than `text` says.
    pub(crate) fn check_kind(&self, text: bool) -> Result<(), Error> {
        match self.kind.load(Ordering::Relaxed) {
            NUMBERS | ORDERED if text => Err(wrong_kind(false)),
            TEXT if !text => Err(wrong_kind(true)),
            _ => Ok(()),
        }
    }

    /// True once a fetch showed the name issues timestamp-oracle IDs (`kind = "tso"`): they
    /// promise that an ID handed out after another was handed out is larger, on any client,
    /// which a cache would break (a cached ID is older than the one another client fetched
    /// meanwhile). Every take of such a name is its own fetch of exactly what it asks for;
    /// the server merges concurrent fetches into one allocation.
    pub(crate) fn is_ordered(&self) -> bool {
        self.kind.load(Ordering::Relaxed) == ORDERED
    }

    /// Counts `n` IDs of an ordered name fetched in `fetches` fetches for the callers
    /// waiting on them.
    pub(crate) fn served_direct(&self, name: &str, n: u64, fetches: u64) {
        self.fetches.fetch_add(fetches, Ordering::Relaxed);
        self.direct.fetch_add(n, Ordering::Relaxed);
        self.export(name);
    }

    /// Whether a take of the kind `text` says could be served without a fetch.
    pub(crate) fn has_ids(&self, text: bool) -> bool {
        if text {
            self.texts.cached() > 0
        } else {
            self.runs.flush();
            self.runs.cached() > 0
        }
    }

    /// How many IDs the next fetch asks for, for a caller that wants at least `demand`:
    /// about `hold` worth at the rate seen since the last fetch, within the bounds.
    pub(crate) fn next_size(&self, demand: u64) -> u64 {
        let served = self.served();
        let policy = self.policy;
        let mut s = self.sizing();
        if let Some(at) = s.last_fetch {
            let secs = at.elapsed().as_secs_f64().max(0.001);
            let rate = served.saturating_sub(s.served_then) as f64 / secs;
            let want = (rate * policy.hold.as_secs_f64()) as u64;
            s.size = want.clamp(policy.min_batch, policy.max_batch);
        }
        s.size.max(demand).min(policy.max_batch)
    }

    fn sizing(&self) -> std::sync::MutexGuard<'_, Sizing> {
        // Plain numbers, whole after every assignment.
        self.sizing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts a fetched batch in.
    pub(crate) fn install(&self, name: &str, batch: Batch) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        match batch {
            Batch::Runs { runs, ordered, .. } if ordered => {
                // The batch that showed the kind: handing its IDs out later would break
                // the order, so they are skipped.
                self.kind.store(ORDERED, Ordering::Relaxed);
                let n: u64 = runs.iter().map(|r| r.1).sum();
                self.abandoned.fetch_add(n, Ordering::Relaxed);
            }
            Batch::Runs { runs, expires, .. } => {
                self.kind.store(NUMBERS, Ordering::Relaxed);
                self.runs.push(runs, expires);
            }
            Batch::Text { ids, kind } => {
                self.kind.store(TEXT, Ordering::Relaxed);
                if self.policy.generate_locally
                    && let Some(local) = kind.and_then(|kind| Local::for_batch(kind, &ids))
                {
                    let _ = self.local.set(local);
                }
                self.texts.push(ids);
            }
        }
        let served = self.served();
        {
            let mut s = self.sizing();
            s.last_fetch = Some(Instant::now());
            s.served_then = served;
        }
        self.export(name);
    }

    /// Counts IDs a caller had taken but could not return (its fetch for the rest failed).
    pub(crate) fn lose(&self, n: u64) {
        self.lost.fetch_add(n, Ordering::Relaxed);
    }

    fn served(&self) -> u64 {
        let numbers = self
            .runs
            .pushed_ids()
            .saturating_sub(self.runs.cached() + self.runs.wasted());
        (numbers + self.texts.taken() + self.direct.load(Ordering::Relaxed))
            .saturating_sub(self.lost.load(Ordering::Relaxed))
    }

    pub(crate) fn stats(&self) -> Stats {
        Stats {
            served: self.served(),
            fetches: self.fetches.load(Ordering::Relaxed),
            wasted: self.runs.wasted()
                + self.lost.load(Ordering::Relaxed)
                + self.abandoned.load(Ordering::Relaxed),
            cached: self.runs.cached() + self.texts.cached(),
            batch: self.sizing().size,
            refused: self.guard.refused(),
        }
    }

    /// The client is gone: what is cached is skipped for good (never handed to anyone). It
    /// is counted as wasted and exported; threads that remembered the name for
    /// `next(name)` let go of the cache when they next add a name (see [`crate::local`]).
    pub(crate) fn close(&self, name: &str) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let left = self.runs.cached() + self.texts.cached();
        self.abandoned.fetch_add(left, Ordering::Relaxed);
        self.export(name);
        if left > 0 {
            tracing::debug!(
                name,
                ids = left,
                "snowdrift client dropped cached IDs; they are skipped, never reused"
            );
        }
    }

    /// Whether the client this cache belongs to is gone.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// The counts, through the `metrics` crate (a no-op without a recorder). Called at
    /// each fetch rather than per ID, so the hot path stays one compare-and-swap.
    pub(crate) fn export(&self, name: &str) {
        let s = self.stats();
        let labels = [("name", name.to_string())];
        metrics::counter!("snowdrift_client_served_total", &labels).absolute(s.served);
        metrics::counter!("snowdrift_client_fetches_total", &labels).absolute(s.fetches);
        metrics::counter!("snowdrift_client_wasted_total", &labels).absolute(s.wasted);
        metrics::gauge!("snowdrift_client_cached", &labels).set(s.cached as f64);
        metrics::gauge!("snowdrift_client_batch", &labels).set(s.batch as f64);
        // `snowdrift_client_refused_total` is counted at each refusal, by endpoint.
    }
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

#[cfg(test)]
mod tests;
