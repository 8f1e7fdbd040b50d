//! Snowflake IDs from a generator fenced by this node's worker-ID lease.

use std::sync::{Arc, RwLock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::{Attempt, MastodonTail};
use snowdrift_core::layout::Layout;
use snowdrift_store::worker::{WorkerNode, WorkerStatus};

use serde_json::Value;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::obfuscate::Obfuscator;

use super::SnowflakeOptions;
use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{Consecutive, IdRun, IdSource, Ids};

/// A snowflake generator under a worker lease. It issues only while the lease holds and
/// the clock is inside the durable high-water mark; otherwise a request gets 503 with the
/// reason. A request for more IDs than the current tick holds waits for the next tick
/// without blocking a runtime thread.
///
/// A layout's ticks hold a fixed number of IDs (4,096 a millisecond for Twitter's), and
/// requests share them: while several requests wait, each takes at most its share of a
/// tick (`ids_per_tick / waiting`) before giving the others a turn. Without shares, the
/// first request polled at each tick took all of it, and single-ID requests beside 1,024
/// bulk gRPC streams got 10 answers a second (BENCHMARKS.md, "Slow and hostile clients").
#[derive(Debug)]
pub struct SnowflakeSource {
    /// `None` once shut down. Read-locked per request; written only at shutdown.
    node: RwLock<Option<WorkerNode<MonotonicClock>>>,
    layout: Layout,
    layout_name: String,
    options: SnowflakeOptions,
    unverified: bool,
    /// IDs in one tick of the layout.
    ids_per_tick: u64,
    /// Requests in [`IdSource::next`] now.
    waiting: AtomicU64,
    /// `layout = "mastodon"`: the keyed hash added to each ID's sequence bits.
    tail: Option<Arc<MastodonTail>>,
}

/// One request counted in [`SnowflakeSource::waiting`] while it lives.
struct Waiting<'a>(&'a AtomicU64);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicU64) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl SnowflakeSource {
    /// Serves IDs of `node`'s generators, built with `options`; the layout is called
    /// `layout_name` in status output. `unverified`: the worker ID is leased only on this
    /// machine while the server listens beyond loopback (shown in status and metrics).
    pub fn new(
        node: WorkerNode<MonotonicClock>,
        layout: Layout,
        layout_name: String,
        options: SnowflakeOptions,
        unverified: bool,
    ) -> Self {
        let ids_per_tick = 1u64
            .checked_shl(u32::from(layout.sequence_bits()))
            .unwrap_or(u64::MAX);
        Self {
            node: RwLock::new(Some(node)),
            layout,
            layout_name,
            options,
            unverified,
            ids_per_tick,
            waiting: AtomicU64::new(0),
            tail: None,
        }
    }

    /// Issues every ID with `tail`'s keyed hash added to its sequence bits (`layout =
    /// "mastodon"`); `None` issues them plain.
    pub fn with_tail(mut self, tail: Option<Arc<MastodonTail>>) -> Self {
        self.tail = tail;
        self
    }

    /// The keyed hash on the sequence bits, for `layout = "mastodon"`.
    pub fn tail(&self) -> Option<&MastodonTail> {
        self.tail.as_deref()
    }

    /// The bit layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The layout's name (a preset, or `custom`).
    pub fn layout_name(&self) -> &str {
        &self.layout_name
    }

    /// The clock and sequence policies it was built with.
    pub fn options(&self) -> &SnowflakeOptions {
        &self.options
    }

    /// True when the worker ID is leased only on this machine while the server listens
    /// beyond loopback.
    pub fn unverified(&self) -> bool {
        self.unverified
    }

    /// The extension value IDs are issued under now, or `None` after shutdown.
    pub fn extension(&self) -> Option<u64> {
        self.read().as_ref().map(|node| node.epoch().extension())
    }

    /// The lease's state, or `None` after shutdown.
    pub fn worker(&self) -> Option<WorkerStatus> {
        self.read().as_ref().map(WorkerNode::status)
    }

    /// How far the generator runs ahead of its clock by borrowing future ticks.
    pub fn lead(&self) -> Option<Duration> {
        self.read()
            .as_ref()
            .map(|node| node.epoch().generator().lead())
    }

    /// Stops issuing, writes the final high-water mark and releases the worker ID.
    pub async fn shutdown(&self) -> Result<(), snowdrift_store::Error> {
        match self.take() {
            Some(node) => node.shutdown().await,
            None => Ok(()),
        }
    }

    /// The node, taken: nothing is issued after this.
    fn take(&self) -> Option<WorkerNode<MonotonicClock>> {
        self.node.write().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Option<WorkerNode<MonotonicClock>>> {
        self.node.read().unwrap_or_else(|e| e.into_inner())
    }

    /// One step: IDs, or how long to wait.
    fn attempt(&self, n: u64) -> Result<Attempt<snowdrift_core::generator::IdBlock>, Error> {
        let guard = self.read();
        let Some(node) = guard.as_ref() else {
            return Err(Error::unavailable("the server is shutting down"));
        };
        let epoch = node.epoch();
        match epoch.generator().try_next_block(n) {
            Err(snowdrift_core::Error::NotIssuing { .. })
                if node.epoch().number() != epoch.number() =>
            {
                // The lease was regained in a new epoch meanwhile: issue from that one.
                Ok(node.epoch().generator().try_next_block(n)?)
            }
            other => Ok(other?),
        }
    }
}

impl IdSource for SnowflakeSource {
    fn kind(&self) -> Kind {
        Kind::Snowflake
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        let mut runs = Vec::new();
        let mut left = count;
        let _waiting = Waiting::enter(&self.waiting);
        while left > 0 {
            let share = (self.ids_per_tick / self.waiting.load(Ordering::Relaxed).max(1)).max(1);
            match self.attempt(left.min(share))? {
                Attempt::Ready(block) => {
                    left -= block.len();
                    let run = |(first, count, stride)| IdRun {
                        first,
                        count,
                        stride,
                    };
                    match &self.tail {
                        None => runs.extend(block.runs().map(run)),
                        Some(tail) => runs.extend(tail.runs(&block).map(run)),
                    }
                    if left > 0 && share < self.ids_per_tick {
                        // A share taken: the others' turn.
                        tokio::task::yield_now().await;
                    }
                }
                // The tick is used up. Tokio's timer cannot sleep less than a millisecond,
                // so short waits yield instead; a sleep there would cap a busy generator
                // well below its layout's rate.
                Attempt::RetryAfter(wait) if wait <= Duration::from_millis(1) => {
                    tokio::task::yield_now().await;
                }
                Attempt::RetryAfter(wait) => tokio::time::sleep(wait).await,
            }
        }
        if self.options.bit_reversed {
            let layout = &self.layout;
            return Ok(Ids::from_values(
                runs.iter()
                    .flat_map(IdRun::iter)
                    .map(|id| layout.reverse_bits(id)),
            ));
        }
        Ok(Ids::Runs(runs))
    }

    fn numeric(&self) -> bool {
        true
    }

    fn layout(&self) -> Option<&Layout> {
        Some(&self.layout)
    }

    fn friendly_layout(&self, name: &str) -> Result<&Layout, Error> {
        if self.options.bit_reversed {
            return Err(Error::unsupported(format!(
                "generator {name:?} issues bit-reversed IDs (output = \"bit-reversed\"), whose \
                 bits are not time-node-sequence in order, so it has no format=friendly; decode \
                 an ID to see its fields"
            )));
        }
        Ok(&self.layout)
    }

    fn wide(&self) -> bool {
        i64::try_from(self.layout.max_id()).is_err()
    }

    fn decode(
        &self,
        name: &str,
        text: &str,
        format: Option<IdFormat>,
        obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        super::decode::decode(self, name, text, format, obfuscator)
    }

    fn describe(&self, out: &mut Value) {
        super::status::describe(self, out);
    }

    async fn readiness(&self) -> Result<(), String> {
        super::status::readiness(self)
    }

    fn gauges(&self, name: &str) {
        super::status::gauges(name, self);
    }

    async fn shutdown(&self, name: &str, keepers: &tokio::runtime::Handle) {
        let Some(node) = self.take() else {
            return;
        };
        // On the keepers' runtime, where the lease's coordinator connection lives.
        let stopped = keepers.spawn(node.shutdown()).await;
        let error = match stopped {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        tracing::warn!(
            generator = name,
            error,
            "releasing the worker lease failed; it expires by itself after its ttl"
        );
    }

    async fn consecutive(&self, _name: &str, _n: u64) -> Result<Consecutive, Error> {
        Ok(Consecutive::Never(
            "a batch of snowflake IDs may span clock ticks, so it is not one run".into(),
        ))
    }
}
