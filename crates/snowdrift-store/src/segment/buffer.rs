//! One tag served from memory: a [`SegmentChain`] kept full by a background refill task.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snowdrift_core::segment::{
    ChainConfig, IdRange, LocalConfig, LocalSegment, LocalTake, SegmentChain, StepPolicy,
    StepTracker, Take,
};
use tokio::sync::Notify;
// The runtime's clock (the system's monotonic clock, or a simulated one under the
// simulator's paused time): how long a segment lasted sizes the next step.
use tokio::time::Instant;

use super::{Claim, SegmentStore};
use crate::backoff::Backoff;
use crate::error::{Error, Result};

/// How a [`SegmentBuffer`] prefetches and waits.
#[derive(Debug, Clone, Copy)]
pub struct BufferConfig {
    /// The chain's prefetch and safe-distance settings.
    pub chain: ChainConfig,
    /// Leaf's dynamic step.
    pub step: StepPolicy,
    /// How long a caller waits for a refill when every segment is used up.
    pub wait: Duration,
    /// How long one claim may take before the refill gives up on it and retries, so a
    /// store that stopped answering (a black-holed connection) cannot stall the refill.
    pub claim_timeout: Duration,
}

impl Default for BufferConfig {
    fn default() -> Self {
        Self {
            chain: ChainConfig::default(),
            step: StepPolicy::default(),
            wait: Duration::from_secs(1),
            claim_timeout: Duration::from_secs(5),
        }
    }
}

/// Serves one tag's IDs from memory and refills from the store in the background.
///
/// Callers never wait on the database while IDs are buffered: a take is one CAS on the
/// chain. When a take crosses the prefetch point (or finds the chain empty) the refill task
/// is woken; it claims segments until the chain has what it wants, sizing each with the
/// dynamic step. If the store is down, callers keep getting buffered IDs; once those run out
/// they wait up to `wait` and then get [`Error::Exhausted`], and the buffer recovers by
/// itself when the store is back.
///
/// # One ID at a time from several threads: use a handle
///
/// Every [`next`](Self::next) is a compare-and-swap of one word that all callers share.
/// From one thread that is cheap, but when two threads call `next(1)` in a tight loop the
/// word's cache line moves between their cores on every call, and together they serve
/// *fewer* IDs per second than one thread alone (see BENCHMARKS.md, "Segment mode").
/// Two ways out:
///
/// - ask for many IDs per call, `next(n)`, when the caller can use a batch;
/// - give each thread or task that wants single IDs its own [`SegmentHandle`]
///   ([`handle`](Self::handle)): it takes a block of IDs from the buffer (8, then 16, 32,
///   up to 64 by default) and serves single IDs from it without touching shared memory.
///
/// A handle costs two things. IDs it holds when dropped are never served (not by it, not
/// by anyone: no duplicate, but a gap of up to a block). And IDs from two handles
/// interleave: an ID served later on one thread may be smaller than one served earlier on
/// another; within one handle they increase (for one store). Keep a handle for as long as
/// its thread or task serves IDs, not one per request: a handle made per request wastes up
/// to a block per request. For IDs in strict call order across threads, or no gaps
/// beyond restarts, call `next` instead.
///
/// ```no_run
/// # async fn f(buffer: &snowdrift_store::segment::SegmentBuffer) -> snowdrift_store::Result<()> {
/// let mut ids = buffer.handle();
/// for _ in 0..1000 {
///     let id: u64 = ids.next().await?; // a field read, except once per block
///     # let _ = id;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SegmentBuffer {
    tag: String,
    chain: Arc<SegmentChain>,
    wake: Arc<Notify>,
    refilled: Arc<Notify>,
    last_error: Arc<Mutex<Option<String>>>,
    wait: Duration,
    task: tokio::task::JoinHandle<()>,
}

impl SegmentBuffer {
    /// Starts serving `tag`: checks it exists and claims its first segment before
    /// returning (so the first ID does not wait for the database), then refills in a task.
    pub async fn start(
        store: impl Into<SegmentStore>,
        tag: &str,
        config: BufferConfig,
    ) -> Result<Self> {
        Self::start_with(store.into(), tag, config).await
    }

    /// As [`start`](Self::start), claiming from `store` instead of a [`SegmentStore`]: how
    /// the simulator gives each node's buffer its simulated database.
    #[cfg(feature = "sim")]
    pub async fn start_on(
        store: impl SegmentClaims,
        tag: &str,
        config: BufferConfig,
    ) -> Result<Self> {
        Self::start_with(store, tag, config).await
    }

    async fn start_with(
        store: impl SegmentClaims,
        tag: &str,
        config: BufferConfig,
    ) -> Result<Self> {
        let chain = Arc::new(
            SegmentChain::new(config.chain).map_err(|e| Error::InvalidInput(e.to_string()))?,
        );
        // Boxed, as the refill's claims are: inline, a store's claim future nests deep
        // enough in a server's request futures (a tag's buffer starts on its first
        // request) to pass the compiler's query depth limit when it lays them out.
        let first = within(config.claim_timeout, Box::pin(store.claim(tag, None))).await?;
        push(&chain, first.ids)?;
        let wake = Arc::new(Notify::new());
        let refilled = Arc::new(Notify::new());
        let last_error = Arc::new(Mutex::new(None));
        let refiller = Refiller {
            store,
            tag: tag.to_string(),
            chain: chain.clone(),
            wake: wake.clone(),
            refilled: refilled.clone(),
            last_error: last_error.clone(),
            steps: StepTracker::new(config.step, first.step as u64, Duration::ZERO),
            stored_step: first.stored_step,
            pushed: first.ids.len(),
            started: Instant::now(),
            claim_timeout: config.claim_timeout,
        };
        let task = crate::task::spawn(refiller.run());
        wake.notify_one();
        Ok(Self {
            tag: tag.to_string(),
            chain,
            wake,
            refilled,
            last_error,
            wait: config.wait,
            task,
        })
    }

    /// Up to `n` IDs (at least one), from one segment.
    ///
    /// Returns without waiting while the buffer holds IDs; when it holds none, waits up to
    /// the configured `wait` for the refill, then fails with [`Error::Exhausted`].
    pub async fn next(&self, n: u64) -> Result<IdRange> {
        self.serve(|chain| match chain.take(n) {
            Take::Ready { ids, refill } => Some((ids, refill)),
            Take::Empty => None,
        })
        .await
    }

    /// A handle that serves single IDs from a block of its own, for one thread or task:
    /// blocks of 8, 16, 32, then 64 IDs ([`LocalConfig::default`]). See "One ID at a time
    /// from several threads" above for when to use one and what it costs.
    pub fn handle(&self) -> SegmentHandle<'_> {
        SegmentHandle {
            buffer: self,
            local: LocalSegment::default(),
        }
    }

    /// As [`handle`](Self::handle), with the block sizes of `config`: larger blocks touch
    /// the shared chain less often and leave larger gaps when a handle is dropped.
    pub fn handle_with(&self, config: LocalConfig) -> Result<SegmentHandle<'_>> {
        let local = LocalSegment::new(config).map_err(|e| Error::InvalidInput(e.to_string()))?;
        Ok(SegmentHandle {
            buffer: self,
            local,
        })
    }

    /// Runs `attempt` on the chain until it yields, waking the refill task when asked or
    /// when the chain is empty, and waiting for refills up to `wait` in total.
    async fn serve<T>(
        &self,
        mut attempt: impl FnMut(&SegmentChain) -> Option<(T, bool)>,
    ) -> Result<T> {
        // The hot path: no clock read, no waiter registered.
        if let Some(got) = self.attempt(&mut attempt) {
            return Ok(got);
        }
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            self.wake.notify_one();
            // Register for the refill signal before looking again, so a push between the
            // look and the wait is not missed (`notify_waiters` reaches every `Notified`
            // created before it, polled or not).
            let refilled = self.refilled.notified();
            if let Some(got) = self.attempt(&mut attempt) {
                return Ok(got);
            }
            if tokio::time::timeout_at(deadline, refilled).await.is_err() {
                // One last look: a refill may have landed just as the wait ran out.
                if let Some(got) = self.attempt(&mut attempt) {
                    return Ok(got);
                }
                let cause = self
                    .last_error
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                return Err(Error::Exhausted {
                    tag: self.tag.clone(),
                    waited: self.wait,
                    cause: cause.unwrap_or_else(|| "the refill is slower than the demand".into()),
                });
            }
        }
    }

    #[inline]
    fn attempt<T>(
        &self,
        attempt: &mut impl FnMut(&SegmentChain) -> Option<(T, bool)>,
    ) -> Option<T> {
        let (got, refill) = attempt(&self.chain)?;
        if refill {
            self.wake.notify_one();
        }
        Some(got)
    }

    /// What the chain holds now.
    pub fn status(&self) -> snowdrift_core::segment::ChainStatus {
        self.chain.status()
    }

    /// Why the latest refill failed, while no refill has succeeded since: a request that
    /// finds the buffer empty meanwhile fails with this cause.
    pub fn refill_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Single IDs for one thread or task, served from a block of IDs only this handle owns;
/// made by [`SegmentBuffer::handle`].
///
/// Serving an ID from the block reads and writes the handle's own fields: no atomic, no
/// lock, no cache line shared with another thread. When the block is used up the handle
/// takes the next one from the buffer (one compare-and-swap on the shared chain, block
/// sizes doubling from `first_block` to `max_block`) and, if the buffer is empty, waits
/// for the refill as [`SegmentBuffer::next`] does.
///
/// IDs the handle holds when it is dropped are skipped for good, and IDs of different
/// handles interleave; [`held`](Self::held) shows what would be skipped.
#[derive(Debug)]
pub struct SegmentHandle<'a> {
    buffer: &'a SegmentBuffer,
    local: LocalSegment,
}

impl SegmentHandle<'_> {
    /// The next ID. Returns at once while the handle's block or the buffer holds IDs;
    /// otherwise waits up to the buffer's `wait` for the refill, then fails with
    /// [`Error::Exhausted`].
    #[inline]
    pub async fn next(&mut self) -> Result<u64> {
        // Served from the block (or a new block off a non-empty chain) without entering
        // the buffer's waiting path.
        if let LocalTake::Ready { id, refill } = self.local.next(&self.buffer.chain) {
            if refill {
                self.buffer.wake.notify_one();
            }
            return Ok(id);
        }
        let local = &mut self.local;
        self.buffer
            .serve(|chain| match local.next(chain) {
                LocalTake::Ready { id, refill } => Some((id, refill)),
                LocalTake::Empty => None,
            })
            .await
    }

    /// The IDs taken from the buffer and not served yet: skipped if the handle is dropped.
    pub fn held(&self) -> IdRange {
        self.local.held()
    }

    /// IDs served through this handle so far.
    pub fn served(&self) -> u64 {
        self.local.served()
    }
}

impl Drop for SegmentBuffer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs a store call with a time bound. A claim cut off here may still commit in the
/// store; its range is then skipped, never served twice.
async fn within<T>(bound: Duration, call: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(bound, call).await.unwrap_or_else(|_| {
        Err(Error::Unavailable(
            format!("the store did not answer within {bound:?}").into(),
        ))
    })
}

fn push(chain: &SegmentChain, ids: IdRange) -> Result<()> {
    chain
        .push(ids)
        .map_err(|e| Error::InvalidInput(e.to_string()))
}

/// Where a buffer claims its segments: a [`SegmentStore`], or the simulator's database.
pub trait SegmentClaims: Send + Sync + 'static {
    /// Claims the next segment of `tag` (its stored step, or `step`), durably: as
    /// [`SegmentStore::claim`].
    fn claim(&self, tag: &str, step: Option<i64>) -> impl Future<Output = Result<Claim>> + Send;
}

impl SegmentClaims for SegmentStore {
    fn claim(&self, tag: &str, step: Option<i64>) -> impl Future<Output = Result<Claim>> + Send {
        SegmentStore::claim(self, tag, step)
    }
}

/// The background side: claims segments while the chain wants them.
struct Refiller<S> {
    store: S,
    tag: String,
    chain: Arc<SegmentChain>,
    wake: Arc<Notify>,
    refilled: Arc<Notify>,
    last_error: Arc<Mutex<Option<String>>>,
    steps: StepTracker,
    stored_step: i64,
    /// IDs pushed into the chain so far; minus what it holds, the IDs used.
    pushed: u64,
    started: Instant,
    claim_timeout: Duration,
}

impl<S: SegmentClaims> Refiller<S> {
    async fn run(mut self) {
        // 50 ms after a failed claim, doubling up to 5 s while claims keep failing.
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
        let mut failures = 0u32;
        loop {
            while self.chain.wanted() > 0 {
                match self.claim_one().await {
                    Ok(()) => {
                        failures = 0;
                        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = None;
                        self.refilled.notify_waiters();
                    }
                    Err(e) => {
                        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(e.to_string());
                        failures = failures.saturating_add(1);
                        tokio::time::sleep(backoff.after(failures)).await;
                    }
                }
            }
            self.wake.notified().await;
        }
    }

    async fn claim_one(&mut self) -> Result<()> {
        let held = self.chain.status();
        let used = self.pushed - (held.current_left + held.ids_ahead).min(self.pushed);
        let step = self
            .steps
            .next_step(used, self.stored_step as u64, self.started.elapsed());
        let step = i64::try_from(step).unwrap_or(i64::MAX);
        // Boxed: a store's claim future is kilobytes, and an unboxed one would make every
        // tag's idle refill task that large (about 7 KB per tag measured on PostgreSQL).
        let claim = within(
            self.claim_timeout,
            Box::pin(self.store.claim(&self.tag, Some(step))),
        )
        .await?;
        self.stored_step = claim.stored_step;
        self.pushed += claim.ids.len();
        push(&self.chain, claim.ids)
    }
}
