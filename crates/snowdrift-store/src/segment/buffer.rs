//! One tag served from memory: a [`SegmentChain`] kept full by a background refill task.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowdrift_core::segment::{ChainConfig, IdRange, SegmentChain, StepPolicy, StepTracker, Take};
use tokio::sync::Notify;

use super::SegmentStore;
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
        let store = store.into();
        let chain = Arc::new(
            SegmentChain::new(config.chain).map_err(|e| Error::InvalidInput(e.to_string()))?,
        );
        let first = within(config.claim_timeout, store.claim(tag, None)).await?;
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
        let task = tokio::spawn(refiller.run());
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
    pub async fn next(&self, n: u64) -> Result<IdRange> {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            // Register for the refill signal before looking, so a push between the look
            // and the wait is not missed.
            let refilled = self.refilled.notified();
            match self.chain.take(n) {
                Take::Ready { ids, refill } => {
                    if refill {
                        self.wake.notify_one();
                    }
                    return Ok(ids);
                }
                Take::Empty => {
                    self.wake.notify_one();
                    if tokio::time::timeout_at(deadline, refilled).await.is_err() {
                        let cause = self
                            .last_error
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone();
                        return Err(Error::Exhausted {
                            tag: self.tag.clone(),
                            waited: self.wait,
                            cause: cause
                                .unwrap_or_else(|| "the refill is slower than the demand".into()),
                        });
                    }
                }
            }
        }
    }

    /// What the chain holds now.
    pub fn status(&self) -> snowdrift_core::segment::ChainStatus {
        self.chain.status()
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

/// The background side: claims segments while the chain wants them.
struct Refiller {
    store: SegmentStore,
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

impl Refiller {
    async fn run(mut self) {
        let mut backoff = Duration::from_millis(50);
        loop {
            while self.chain.wanted() > 0 {
                match self.claim_one().await {
                    Ok(()) => {
                        backoff = Duration::from_millis(50);
                        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = None;
                        self.refilled.notify_waiters();
                    }
                    Err(e) => {
                        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(e.to_string());
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
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
        let claim = within(self.claim_timeout, self.store.claim(&self.tag, Some(step))).await?;
        self.stored_step = claim.stored_step;
        self.pushed += claim.ids.len();
        push(&self.chain, claim.ids)
    }
}
