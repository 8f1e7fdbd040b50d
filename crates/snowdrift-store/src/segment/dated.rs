//! One tag with a template served from memory: a [`DatedChain`] kept full by a background
//! refill task that claims for the period its clock reads.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowdrift_core::clock::Clock;
use snowdrift_core::counter::{CounterTemplate, PeriodSpan};
use snowdrift_core::segment::{DatedChain, DatedIds, DatedStatus, DatedTake, StepTracker, Wanted};
use tokio::sync::Notify;

use super::{BufferConfig, SegmentStore};
use crate::backoff::Backoff;
use crate::error::{Error, Result};

/// The longest the refill sleeps before it looks at the clock again while it waits for a
/// period: a clock stepped meanwhile is noticed within it.
const LOOK_AGAIN: Duration = Duration::from_secs(1);

/// Serves the numbers of one tag with a template (`ORD{date:%Y%m%d}{seq:06}`): sequence
/// numbers that start again from 1 each period, rendered with the date they were taken at.
///
/// Every segment is claimed for the period this node's clock reads
/// ([`SegmentStore::claim_dated`]), and served only while the clock is still in that
/// period: at its end the rest is dropped, and the refill claims for the new period (ahead
/// of the first request: it wakes at the boundary). The row in the store is what every node
/// agrees on: the first claim of a new period moves it there and restarts its count at 1 in
/// one transaction, and once it has moved no node claims in the old period again. A node
/// whose claim is refused that way ([`Error::PeriodAhead`]: its clock is behind another
/// node's) stops serving its buffered numbers of the old period at once and serves again
/// when its clock reaches the new one; meanwhile callers wait up to `wait` and get
/// [`Error::Exhausted`] naming the cause.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use snowdrift_core::clock::SystemClock;
/// use snowdrift_core::counter::CounterTemplate;
/// use snowdrift_store::segment::{BufferConfig, DatedBuffer, NewTag, SegmentStore};
/// let store = SegmentStore::connect("sqlite://snowdrift.db", "leaf_alloc").await?;
/// let template: CounterTemplate = "ORD{date:%Y%m%d}{seq:06}".parse()?;
/// let new = NewTag { tag: "order".into(), step: 100, description: None, template: Some(template.clone()) };
/// store.create_tag(&new).await?;
/// let orders = DatedBuffer::start(store, "order", template, BufferConfig::default(), Arc::new(SystemClock)).await?;
/// let numbers = orders.next_rendered(2).await?; // ["ORD20261122000001", "ORD20261122000002"]
/// # Ok(()) }
/// ```
pub struct DatedBuffer {
    tag: String,
    chain: Arc<DatedChain>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    refilled: Arc<Notify>,
    last_error: Arc<Mutex<Option<String>>>,
    wait: Duration,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for DatedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatedBuffer")
            .field("tag", &self.tag)
            .field("template", &self.chain.template().as_str())
            .field("status", &self.chain.status())
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl DatedBuffer {
    /// Starts serving `tag` (which has `template` in the store): claims its first segment
    /// for the period `clock` reads before returning, then refills in a task.
    pub async fn start(
        store: impl Into<SegmentStore>,
        tag: &str,
        template: CounterTemplate,
        config: BufferConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self> {
        let store = store.into();
        let chain = Arc::new(
            DatedChain::new(config.chain, template)
                .map_err(|e| Error::InvalidInput(e.to_string()))?,
        );
        let span = period_at(&chain, tag, clock.now_ms())?;
        let first = within(config.claim_timeout, store.claim_dated(tag, None, span.key)).await?;
        push(&chain, span, first.claim.ids)?;
        let wake = Arc::new(Notify::new());
        let refilled = Arc::new(Notify::new());
        let last_error = Arc::new(Mutex::new(None));
        let refiller = Refiller {
            store,
            tag: tag.to_string(),
            chain: chain.clone(),
            clock: clock.clone(),
            wake: wake.clone(),
            refilled: refilled.clone(),
            last_error: last_error.clone(),
            steps: StepTracker::new(config.step, first.claim.step as u64, Duration::ZERO),
            stored_step: first.claim.stored_step,
            period: span.key,
            pushed: first.claim.ids.len(),
            used_before: 0,
            started: Instant::now(),
            claim_timeout: config.claim_timeout,
        };
        let task = crate::task::spawn(refiller.run());
        wake.notify_one();
        Ok(Self {
            tag: tag.to_string(),
            chain,
            clock,
            wake,
            refilled,
            last_error,
            wait: config.wait,
            task,
        })
    }

    /// Up to `n` sequence numbers (at least one) of one segment of the clock's period, with
    /// the instant to render them at.
    ///
    /// Returns without waiting while the buffer holds numbers of the current period;
    /// otherwise waits up to the configured `wait` for the refill (a new period's first
    /// claim, a refill, a clock that is behind the store's period), then fails with
    /// [`Error::Exhausted`].
    pub async fn next(&self, n: u64) -> Result<DatedIds> {
        if let Some(ids) = self.attempt(n) {
            return Ok(ids);
        }
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            self.wake.notify_one();
            // Registered before looking again, so a push between the look and the wait is
            // not missed.
            let refilled = self.refilled.notified();
            if let Some(ids) = self.attempt(n) {
                return Ok(ids);
            }
            if tokio::time::timeout_at(deadline, refilled).await.is_err() {
                if let Some(ids) = self.attempt(n) {
                    return Ok(ids);
                }
                let cause = self.refill_error();
                return Err(Error::Exhausted {
                    tag: self.tag.clone(),
                    waited: self.wait,
                    cause: cause.unwrap_or_else(|| "the refill is slower than the demand".into()),
                });
            }
        }
    }

    /// Up to `n` numbers (at least one) rendered through the tag's template.
    pub async fn next_rendered(&self, n: u64) -> Result<Vec<String>> {
        let ids = self.next(n).await?;
        ids.render(self.chain.template())
            .map_err(|source| Error::CounterTemplate {
                counter: self.tag.clone(),
                source,
            })
    }

    #[inline]
    fn attempt(&self, n: u64) -> Option<DatedIds> {
        match self.chain.take(n, &self.clock) {
            DatedTake::Ready { ids, refill } => {
                if refill {
                    self.wake.notify_one();
                }
                Some(ids)
            }
            DatedTake::Empty => None,
        }
    }

    /// The tag's template.
    pub fn template(&self) -> &CounterTemplate {
        self.chain.template()
    }

    /// The period held and what its segments hold now.
    pub fn status(&self) -> DatedStatus {
        self.chain.status()
    }

    /// What the chain holds that it may serve now: nothing while the clock is outside the
    /// held period or the store has moved past it.
    pub fn servable(&self) -> snowdrift_core::segment::ChainStatus {
        let status = self.chain.status();
        let mut chain = status.chain;
        let now = self.clock.now_ms();
        if status.closed || !status.span.is_some_and(|s| s.contains(now)) {
            chain.current_left = 0;
            chain.segments_ahead = 0;
            chain.ids_ahead = 0;
        }
        chain
    }

    /// Why the latest refill failed, while no refill has succeeded since.
    pub fn refill_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for DatedBuffer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The period `now_ms` is in, as the template names it.
fn period_at(chain: &DatedChain, tag: &str, now_ms: u64) -> Result<PeriodSpan> {
    chain
        .template()
        .period_span(now_ms)
        .map_err(|source| Error::CounterTemplate {
            counter: tag.to_string(),
            source,
        })
}

async fn within<T>(bound: Duration, call: impl Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(bound, call).await.unwrap_or_else(|_| {
        Err(Error::Unavailable(
            format!("the store did not answer within {bound:?}").into(),
        ))
    })
}

fn push(chain: &DatedChain, span: PeriodSpan, ids: snowdrift_core::segment::IdRange) -> Result<()> {
    chain
        .push(span, ids)
        .map_err(|e| Error::InvalidInput(e.to_string()))
}

/// How long from `now_ms` until `until_ms`, at most [`LOOK_AGAIN`].
fn until(now_ms: u64, until_ms: u64) -> Duration {
    Duration::from_millis(until_ms.saturating_sub(now_ms)).min(LOOK_AGAIN)
}

/// The background side: claims for the clock's period while the chain wants segments.
struct Refiller {
    store: SegmentStore,
    tag: String,
    chain: Arc<DatedChain>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    refilled: Arc<Notify>,
    last_error: Arc<Mutex<Option<String>>>,
    steps: StepTracker,
    stored_step: i64,
    /// The period of the segments pushed last.
    period: i64,
    /// Numbers pushed in that period.
    pushed: u64,
    /// Numbers pushed in earlier periods: used or dropped, for the dynamic step.
    used_before: u64,
    started: Instant,
    claim_timeout: Duration,
}

impl Refiller {
    async fn run(mut self) {
        // 50 ms after a failed claim, doubling up to 5 s while claims keep failing.
        let backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(5));
        let mut failures = 0u32;
        loop {
            let now = self.clock.now_ms();
            let wanted = match self.chain.wanted(now) {
                Ok(w) => w,
                Err(e) => {
                    self.failed(e.to_string());
                    failures = failures.saturating_add(1);
                    tokio::time::sleep(backoff.after(failures)).await;
                    continue;
                }
            };
            match wanted {
                Wanted::Nothing => {
                    // Woken by a take, or at the period's end, so the new period's first
                    // segment is claimed before its first request.
                    let end = self.chain.status().span.map_or(u64::MAX, |s| s.end_ms);
                    let _ = tokio::time::timeout(until(now, end), self.wake.notified()).await;
                }
                // Woken early by a take too: a clock set meanwhile is seen at once.
                Wanted::WaitUntil(at) => {
                    let _ = tokio::time::timeout(until(now, at), self.wake.notified()).await;
                }
                Wanted::Claim(span) => match self.claim_one(span).await {
                    Ok(()) => {
                        failures = 0;
                        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = None;
                        self.refilled.notify_waiters();
                    }
                    Err(e @ Error::PeriodAhead { .. }) => {
                        // Another node's clock moved the tag on: nothing more of this
                        // period is served here; claim again when this clock moves on.
                        self.chain.close(span.key);
                        self.failed(e.to_string());
                        let wait = until(self.clock.now_ms(), span.end_ms);
                        let _ = tokio::time::timeout(wait, self.wake.notified()).await;
                    }
                    Err(e) => {
                        self.failed(e.to_string());
                        failures = failures.saturating_add(1);
                        tokio::time::sleep(backoff.after(failures)).await;
                    }
                },
            }
        }
    }

    fn failed(&self, error: String) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }

    async fn claim_one(&mut self, span: PeriodSpan) -> Result<()> {
        let held = self.chain.status();
        let held_now = match held.span {
            Some(s) if s.key == self.period => held.chain.current_left + held.chain.ids_ahead,
            _ => 0,
        };
        let used = self.used_before + self.pushed - held_now.min(self.pushed);
        let step = self
            .steps
            .next_step(used, self.stored_step as u64, self.started.elapsed());
        let step = i64::try_from(step).unwrap_or(i64::MAX);
        // Boxed, as the plain refill's: a claim future is kilobytes.
        let claim = within(
            self.claim_timeout,
            Box::pin(self.store.claim_dated(&self.tag, Some(step), span.key)),
        )
        .await?;
        self.stored_step = claim.claim.stored_step;
        push(&self.chain, span, claim.claim.ids)?;
        if span.key != self.period {
            self.used_before += self.pushed;
            self.pushed = 0;
            self.period = span.key;
        }
        self.pushed += claim.claim.ids.len();
        Ok(())
    }
}
