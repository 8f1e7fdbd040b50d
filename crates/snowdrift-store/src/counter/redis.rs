//! A counter in Redis, served in batches.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ::redis::aio::ConnectionManager;
use snowdrift_core::clock::{Clock, SystemClock};
use snowdrift_core::counter::{CounterTemplate, Period, TemplateAt};
use tokio::sync::Mutex;

use super::batch::{Batch, Fetched};
use crate::error::{Error, Result};

/// Key prefix unless [`RedisCounterBuilder::prefix`] sets another.
pub const DEFAULT_PREFIX: &str = "snowdrift:counter:";
/// Values fetched per `INCRBY` unless [`RedisCounterBuilder::batch`] sets another.
pub const DEFAULT_BATCH: u64 = 100;
/// Most values one call may ask for unless [`RedisCounterBuilder::max_per_call`] sets another.
pub const DEFAULT_MAX_PER_CALL: u64 = 10_000;
/// Largest batch and per-call limit: 2^31 - 1, as a segment's step.
pub const MAX_BATCH: u64 = i32::MAX as u64;
/// Longest counter name.
pub const MAX_NAME_LEN: usize = 128;
/// Longest key prefix, in bytes.
pub const MAX_PREFIX_LEN: usize = 128;

/// Slack on top of the periods a key must outlive, for clocks that disagree a little.
const TTL_MARGIN: Duration = Duration::from_secs(3_600);

/// A counter in Redis: `INCRBY` hands out values, a batch at a time, so one round trip serves
/// many IDs. With a [`CounterTemplate`] the counter starts again from 1 each period its
/// template names (`ORD{date:%Y%m%d}{seq:08}` each day) and its values are rendered as text.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use snowdrift_core::counter::CounterTemplate;
/// use snowdrift_store::counter::RedisCounter;
///
/// let orders = RedisCounter::builder("order")
///     .template(CounterTemplate::parse("ORD{date:%Y%m%d}{seq:08}")?)
///     .batch(50)
///     .connect("redis://127.0.0.1:6379")
///     .await?;
/// let ids = orders.next_rendered(3).await?; // ["ORD2026112200000001", ...]
///
/// let tickets = RedisCounter::builder("ticket").connect("redis://127.0.0.1:6379").await?;
/// let numbers: Vec<i64> = tickets.next(10).await?; // 10 consecutive values
/// # Ok(()) }
/// ```
///
/// **Keys.** A counter lives at `{prefix}{name}` when it never resets and at
/// `{prefix}{name}:{period_key}` when it does (`snowdrift:counter:order:20261122`). A key of
/// a period is given an expiry with every `INCRBY`, in the same `MULTI`/`EXEC` transaction, so
/// Redis forgets old periods: by default two of the longest periods plus an hour after its
/// last use, long after no clock still reads that period.
///
/// **Batches.** A call for `n` values is served from memory when the current batch of the
/// current period holds `n`; otherwise the rest of the batch is dropped and one
/// `INCRBY key max(batch, n)` fetches the next, so the `n` values of one call are always
/// consecutive. Values dropped (a period ended, a call wanted more than was left, the process
/// stopped) leave gaps and are never served again: two processes on one counter, or one that
/// restarts, never repeat a value. Calls on one instance are serialized by a lock held
/// across the fetch.
///
/// **Overflow.** A counter whose next value would not fit its template's `{seq:0N}` (or an
/// `i64`) fails with [`Error::CounterOverflow`] and keeps failing for the rest of the period;
/// nothing wraps and nothing is served twice.
///
/// **Durability** is Redis's: without an append-only file (`appendonly yes`), a Redis restart
/// can lose the last increments and values repeat. Time comes from the [`Clock`] given to the
/// builder (the system clock by default), read once per call: the values of one call and
/// the date they are rendered with belong to the same period. A clock stepped back into an
/// earlier period uses that period's key again, which is safe while the key lives; one stepped
/// back further than the key's expiry would start that period again from 1.
pub struct RedisCounter {
    conn: ConnectionManager,
    name: String,
    template: Option<CounterTemplate>,
    prefix: String,
    batch: u64,
    max_per_call: u64,
    /// Expiry of a period's key; `None` for a counter that never resets.
    ttl: Option<Duration>,
    clock: Arc<dyn Clock>,
    state: Mutex<Option<Batch>>,
    round_trips: AtomicU64,
    served: AtomicU64,
    dropped: AtomicU64,
}

/// Consecutive values of one counter, from one period: what [`RedisCounter::next_block`]
/// returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterBlock {
    /// The period the values belong to (`""` for a counter that never resets).
    pub period_key: String,
    /// The clock reading the period was taken from, ms since 1970; render with it.
    pub at_ms: u64,
    /// The first value.
    pub first: i64,
    /// How many values (at least 1).
    pub count: u64,
}

impl CounterBlock {
    /// The values in order.
    pub fn values(&self) -> impl Iterator<Item = i64> + use<> {
        let first = self.first;
        // `first + count - 1` is a value the counter served, so it fits an i64.
        (0..self.count).map(move |k| first + k as i64)
    }
}

/// What a [`RedisCounter`] has done since it was built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterStats {
    /// Requests sent to Redis (`INCRBY`, with its expiry when the counter resets).
    pub round_trips: u64,
    /// Values handed to callers.
    pub served: u64,
    /// Values fetched but dropped unserved (period ended, a call wanted more than was left).
    pub dropped: u64,
}

/// Settings for a [`RedisCounter`]; made by [`RedisCounter::builder`].
pub struct RedisCounterBuilder {
    name: String,
    template: Option<CounterTemplate>,
    prefix: String,
    batch: u64,
    max_per_call: u64,
    ttl: Option<Duration>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RedisCounterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCounterBuilder")
            .field("name", &self.name)
            .field("template", &self.template.as_ref().map(|t| t.as_str()))
            .field("prefix", &self.prefix)
            .field("batch", &self.batch)
            .field("max_per_call", &self.max_per_call)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisCounterBuilder {
    /// Renders values through `template` and resets the counter each period it names.
    pub fn template(mut self, template: CounterTemplate) -> Self {
        self.template = Some(template);
        self
    }

    /// The start of every key ([`DEFAULT_PREFIX`] unless set; at most 128 bytes).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Values fetched per `INCRBY` (1 to 2^31 - 1; [`DEFAULT_BATCH`] unless set). Larger
    /// batches mean fewer round trips and larger gaps when a process stops.
    pub fn batch(mut self, batch: u64) -> Self {
        self.batch = batch;
        self
    }

    /// Most values one call may ask for (1 to 2^31 - 1; [`DEFAULT_MAX_PER_CALL`] unless set).
    pub fn max_per_call(mut self, max: u64) -> Self {
        self.max_per_call = max;
        self
    }

    /// How long a period's key lives after its last `INCRBY`. Only for counters whose
    /// template resets; at least the longest period plus an hour, since a key that expired
    /// while its period is still current would start again from 1. Default: two of the
    /// longest periods plus an hour.
    pub fn key_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Where the time comes from (the system clock unless set).
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Checks the settings, then connects to `redis://HOST[:PORT][/DB]`. The connection
    /// reconnects by itself; each command gives up after 5 s.
    pub async fn connect(self, url: &str) -> Result<RedisCounter> {
        self.validate()?;
        let conn = crate::redis_connection::connect(url).await?;
        self.build(conn)
    }

    /// Checks the settings and builds the counter on an existing connection (one
    /// connection can serve many counters).
    pub fn build(self, conn: ConnectionManager) -> Result<RedisCounter> {
        let ttl = self.validate()?;
        Ok(RedisCounter {
            conn,
            name: self.name,
            template: self.template,
            prefix: self.prefix,
            batch: self.batch,
            max_per_call: self.max_per_call,
            ttl,
            clock: self.clock,
            state: Mutex::new(None),
            round_trips: AtomicU64::new(0),
            served: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        })
    }

    /// Checks every setting as [`connect`](Self::connect) would, without connecting.
    pub fn check(&self) -> Result<()> {
        self.validate().map(|_| ())
    }

    /// Checks every setting; returns the expiry of period keys.
    fn validate(&self) -> Result<Option<Duration>> {
        validate_name(&self.name)?;
        if self.prefix.len() > MAX_PREFIX_LEN {
            return Err(Error::InvalidInput(format!(
                "key prefix is {} bytes long; at most {MAX_PREFIX_LEN} are allowed",
                self.prefix.len()
            )));
        }
        for (what, value) in [("batch", self.batch), ("max_per_call", self.max_per_call)] {
            if !(1..=MAX_BATCH).contains(&value) {
                return Err(Error::InvalidInput(format!(
                    "{what} {value} is not valid: use 1 to {MAX_BATCH}"
                )));
            }
        }
        let period = self.template.as_ref().map_or(Period::None, |t| t.period());
        let Some(longest) = period.longest() else {
            return match self.ttl {
                None => Ok(None),
                Some(_) => Err(Error::InvalidInput(format!(
                    "counter {:?} never resets, so its key must not expire (it would start again from 1); remove key_ttl",
                    self.name
                ))),
            };
        };
        let least = longest + TTL_MARGIN;
        // Ten years: far beyond any period, and still an i64 of milliseconds.
        let most = Duration::from_secs(10 * 366 * 86_400);
        match self.ttl {
            None => Ok(Some(2 * longest + TTL_MARGIN)),
            Some(ttl) if ttl >= least && ttl <= most => Ok(Some(ttl)),
            Some(ttl) => Err(Error::InvalidInput(format!(
                "key_ttl {ttl:?} is not valid for a counter that resets each {period}: use {least:?} (the longest {period} plus an hour) to {most:?}"
            ))),
        }
    }
}

/// Checks a counter name: 1 to 128 characters from `A-Z a-z 0-9 _ - .`. No `:`, which
/// separates the name from the period in a key (`order:2026` could be the counter
/// `order:2026` or the 2026 period of `order`).
fn validate_name(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "_-.".contains(c);
    let dots = name == "." || name == "..";
    if name.is_empty() || name.len() > MAX_NAME_LEN || !name.chars().all(ok_char) || dots {
        let shown: String = name.chars().take(40).collect();
        return Err(Error::InvalidInput(format!(
            "counter name {shown:?} is not valid: use 1 to {MAX_NAME_LEN} characters from A-Z, a-z, 0-9, '_', '-', '.' (not \".\" or \"..\")"
        )));
    }
    Ok(())
}

impl std::fmt::Debug for RedisCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCounter")
            .field("name", &self.name)
            .field("template", &self.template.as_ref().map(|t| t.as_str()))
            .field("prefix", &self.prefix)
            .field("batch", &self.batch)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisCounter {
    /// Starts the settings of the counter `name`: 1 to 128 characters from
    /// `A-Z a-z 0-9 _ - .`.
    pub fn builder(name: impl Into<String>) -> RedisCounterBuilder {
        RedisCounterBuilder {
            name: name.into(),
            template: None,
            prefix: DEFAULT_PREFIX.to_string(),
            batch: DEFAULT_BATCH,
            max_per_call: DEFAULT_MAX_PER_CALL,
            ttl: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// The counter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The counter's template, if it has one.
    pub fn template(&self) -> Option<&CounterTemplate> {
        self.template.as_ref()
    }

    /// How long a period's key lives after its last use; `None` when the counter never
    /// resets (its key never expires).
    pub fn key_ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// The Redis key holding the counter at time `ms` (since 1970).
    pub fn key_at(&self, ms: u64) -> Result<String> {
        let at = self.evaluate(ms)?;
        Ok(self.key(at.as_ref().map_or("", TemplateAt::period_key)))
    }

    /// What the counter has done so far.
    pub fn stats(&self) -> CounterStats {
        CounterStats {
            round_trips: self.round_trips.load(Ordering::Relaxed),
            served: self.served.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    /// `n` consecutive values of a counter that never resets (no template, or one without a
    /// date). A counter that resets repeats its values each period, so it refuses this:
    /// use [`next_rendered`](Self::next_rendered) or [`next_block`](Self::next_block).
    pub async fn next(&self, n: u64) -> Result<Vec<i64>> {
        if let Some(t) = &self.template
            && t.period() != Period::None
        {
            return Err(Error::InvalidInput(format!(
                "counter {:?} starts again each {}, so its bare values repeat; use next_rendered, or next_block, which names the period",
                self.name,
                t.period()
            )));
        }
        Ok(self.next_block(n).await?.values().collect())
    }

    /// `n` consecutive values rendered through the counter's template (in decimal when it
    /// has none), all in one period.
    pub async fn next_rendered(&self, n: u64) -> Result<Vec<String>> {
        let block = self.next_block(n).await?;
        let Some(at) = self.evaluate(block.at_ms)? else {
            return Ok(block.values().map(|v| v.to_string()).collect());
        };
        block
            .values()
            // Values are at least 1 (checked when fetched).
            .map(|v| {
                at.render(v.unsigned_abs())
                    .map_err(|e| self.template_error(e))
            })
            .collect()
    }

    /// `n` consecutive values of the current period, with the period's key and the time
    /// read. Fails with [`Error::InvalidInput`] when `n` is 0 or over the per-call limit
    /// (nothing is written then), [`Error::CounterOverflow`] when the values do not fit.
    pub async fn next_block(&self, n: u64) -> Result<CounterBlock> {
        if !(1..=self.max_per_call).contains(&n) {
            return Err(Error::InvalidInput(format!(
                "count {n} is not valid for counter {:?}: use 1 to {}",
                self.name, self.max_per_call
            )));
        }
        let mut state = self.state.lock().await;
        // Read under the lock, so one instance never goes back to a period it has left
        // while a call that read a later time is still fetching.
        let now = self.clock.now_ms();
        let at = self.evaluate(now)?;
        let period_key = at.as_ref().map_or("", TemplateAt::period_key);
        let first = match state.as_mut().and_then(|b| b.take(period_key, n)) {
            Some(first) => first,
            None => {
                if let Some(old) = state.take() {
                    self.dropped.fetch_add(old.remaining, Ordering::Relaxed);
                }
                let key = self.key(period_key);
                let batch = state.insert(self.fetch(&key, period_key, n).await?);
                match batch.take(period_key, n) {
                    Some(first) => first,
                    None => return Err(self.overflow(key)),
                }
            }
        };
        self.served.fetch_add(n, Ordering::Relaxed);
        Ok(CounterBlock {
            period_key: period_key.to_string(),
            at_ms: now,
            first,
            count: n,
        })
    }

    fn key(&self, period_key: &str) -> String {
        if period_key.is_empty() {
            format!("{}{}", self.prefix, self.name)
        } else {
            format!("{}{}:{period_key}", self.prefix, self.name)
        }
    }

    fn evaluate(&self, ms: u64) -> Result<Option<TemplateAt<'_>>> {
        self.template
            .as_ref()
            .map(|t| t.at(ms))
            .transpose()
            .map_err(|e| self.template_error(e))
    }

    fn template_error(&self, source: snowdrift_core::Error) -> Error {
        Error::CounterTemplate {
            counter: self.name.clone(),
            source,
        }
    }

    /// The largest value the counter may serve.
    fn max(&self) -> u64 {
        self.template
            .as_ref()
            .map_or(i64::MAX.unsigned_abs(), CounterTemplate::max_seq)
    }

    fn overflow(&self, key: String) -> Error {
        let field = match self.template.as_ref().and_then(|t| t.seq_width()) {
            Some(w) => format!("{{seq:0{w}}} field"),
            None => "i64".to_string(),
        };
        Error::CounterOverflow {
            counter: self.name.clone(),
            key,
            max: self.max(),
            field,
        }
    }

    /// Fetches a batch of at least `n` values of `period_key` with one `INCRBY` (two when
    /// the counter is within a batch of `i64::MAX`).
    async fn fetch(&self, key: &str, period_key: &str, n: u64) -> Result<Batch> {
        let want = self.batch.max(n);
        let mut added = want;
        let mut result = self.incr(key, want).await;
        if want > n && result.as_ref().is_err_and(would_overflow) {
            // Redis refused the whole batch and changed nothing; the last values may still
            // hold the n asked for.
            added = n;
            result = self.incr(key, n).await;
        }
        let end = match result {
            Ok(end) => end,
            Err(e) if would_overflow(&e) => return Err(self.overflow(key.to_string())),
            Err(e) => return Err(e.into()),
        };
        match Batch::fetched(period_key, end, added, self.max()) {
            Fetched::Batch(batch) => Ok(batch),
            Fetched::Corrupt { before } => Err(Error::CounterCorrupt {
                key: key.to_string(),
                value: before,
            }),
        }
    }

    /// `INCRBY key by`, with the key's expiry in the same transaction when it has one.
    async fn incr(&self, key: &str, by: u64) -> ::redis::RedisResult<i64> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.conn.clone();
        match self.ttl {
            Some(ttl) => {
                // MULTI/EXEC rather than a Lua script: Lua numbers are doubles, which cannot
                // hold counter values near i64::MAX exactly.
                // Both validated: a batch is at most 2^31 - 1, an expiry at most ten years.
                let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
                let (end,): (i64,) = ::redis::pipe()
                    .atomic()
                    .cmd("INCRBY")
                    .arg(key)
                    .arg(by)
                    .cmd("PEXPIRE")
                    .arg(key)
                    .arg(ms)
                    .ignore()
                    .query_async(&mut conn)
                    .await?;
                Ok(end)
            }
            None => {
                ::redis::cmd("INCRBY")
                    .arg(key)
                    .arg(by)
                    .query_async(&mut conn)
                    .await
            }
        }
    }
}

/// Redis's answer to an `INCRBY` past `i64::MAX` (it changes nothing then).
fn would_overflow(e: &::redis::RedisError) -> bool {
    e.to_string()
        .contains("increment or decrement would overflow")
}
