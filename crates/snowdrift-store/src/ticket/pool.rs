//! Several ticket servers in round-robin, with health checks and backoff.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::config::{DEFAULT_NAME, DEFAULT_TIMEOUT, TicketConfig, validate_count};
use super::server::TicketServer;
use crate::backoff::Backoff;
use crate::error::{Error, Result};

/// Default wait before the first re-probe of a server that failed.
pub const DEFAULT_BACKOFF_INITIAL: Duration = Duration::from_millis(250);
/// Default longest wait between re-probes (the wait doubles after each failed probe).
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Several ticket servers taking turns (round-robin), none a single point of failure.
///
/// Every server has the same increment N and its own offset k in `1..=N`, so their IDs never
/// collide. Each call goes to the next server that is up; if that server fails or does not
/// answer within the timeout, it is marked down and the call moves on to the next one. A
/// call waits for a server's one connection at most one timeout (then moves on without
/// marking it down: busy is not down), and gives way at once if the call ahead of it failed;
/// each round trip then has one timeout of its own. A down server gets no
/// calls; a background task re-probes it ([`TicketServer::check`], or a first connect for a
/// server that was down from the start) after a backoff that starts at
/// [`DEFAULT_BACKOFF_INITIAL`] and doubles up to [`DEFAULT_BACKOFF_MAX`], and puts it back
/// in turn when the probe passes. When no server is up the call fails at once with
/// [`Error::TicketServersDown`], which names each server's last error.
///
/// IDs are unique across the pool, not ordered: servers advance at their own pace.
///
/// Cloning is cheap and shares the servers; the probe task ends with the last clone.
#[derive(Debug, Clone)]
pub struct TicketPool {
    inner: Arc<Inner>,
}

/// Builds a [`TicketPool`]: servers, then [`connect`](Self::connect).
#[derive(Debug, Clone)]
pub struct TicketPoolBuilder {
    servers: Vec<(String, Option<u32>)>,
    name: String,
    increment: Option<u32>,
    timeout: Duration,
    backoff_initial: Duration,
    backoff_max: Duration,
}

/// One server's state, for health endpoints and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStatus {
    /// URL without password, table or sequence, class.
    pub label: String,
    /// Its class k (IDs ≡ k mod N).
    pub offset: u32,
    /// True when it takes calls.
    pub up: bool,
    /// Failed calls and probes in a row (0 when up).
    pub failures: u32,
    /// Why it is down.
    pub last_error: Option<String>,
}

#[derive(Debug)]
struct Inner {
    slots: Vec<Slot>,
    cursor: AtomicUsize,
    backoff_initial: Duration,
    backoff_max: Duration,
    /// Wakes the probe task when a server goes down (and when the pool is dropped).
    wake: Arc<Notify>,
}

#[derive(Debug)]
struct Slot {
    url: String,
    config: TicketConfig,
    label: String,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// `None` until a first connect succeeds.
    server: Option<TicketServer>,
    down: Option<Down>,
}

#[derive(Debug)]
struct Down {
    failures: u32,
    retry_at: Instant,
    error: String,
    probing: bool,
}

impl TicketPool {
    /// A builder with no servers, name [`DEFAULT_NAME`], increment = number of servers,
    /// timeout [`DEFAULT_TIMEOUT`] and the default backoff.
    pub fn builder() -> TicketPoolBuilder {
        TicketPoolBuilder {
            servers: Vec::new(),
            name: DEFAULT_NAME.to_string(),
            increment: None,
            timeout: DEFAULT_TIMEOUT,
            backoff_initial: DEFAULT_BACKOFF_INITIAL,
            backoff_max: DEFAULT_BACKOFF_MAX,
        }
    }

    /// Takes `count` tickets (1 to [`MAX_TICKETS_PER_CALL`](super::MAX_TICKETS_PER_CALL))
    /// from the next server that is up; all of one call come from one server, each one
    /// positive and unique across the pool.
    pub async fn next(&self, count: usize) -> Result<Vec<u64>> {
        validate_count(count)?;
        let slots = &self.inner.slots;
        let start = self.inner.cursor.fetch_add(1, Ordering::Relaxed);
        let mut busy = HashSet::new();
        for i in 0..slots.len() {
            let index = (start + i) % slots.len();
            let slot = &slots[index];
            let Some(server) = slot.usable() else {
                continue;
            };
            match server.take(count).await {
                Ok(ids) => return Ok(ids),
                // Queued behind other callers for the whole timeout: slow, not failed.
                Err(f) if f.busy => {
                    busy.insert(index);
                }
                Err(f) => self.inner.mark_down(slot, &f.error),
            }
        }
        Err(self.inner.all_down(&busy))
    }

    /// Each server's state, in the order they were added.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.inner
            .slots
            .iter()
            .map(|slot| {
                let state = slot.lock();
                ServerStatus {
                    label: slot.label.clone(),
                    offset: slot.config.offset,
                    up: state.down.is_none(),
                    failures: state.down.as_ref().map_or(0, |d| d.failures),
                    last_error: state.down.as_ref().map(|d| d.error.clone()),
                }
            })
            .collect()
    }

    /// Closes every server's connection (a later call opens them again).
    pub async fn close(&self) {
        for slot in &self.inner.slots {
            let server = slot.lock().server.clone();
            if let Some(server) = server {
                server.close().await;
            }
        }
    }
}

impl TicketPoolBuilder {
    /// Adds a server; its offset is its position, counting from 1.
    pub fn server(mut self, url: impl Into<String>) -> Self {
        self.servers.push((url.into(), None));
        self
    }

    /// Adds a server with an explicit offset (1 to the increment), e.g. to keep a server's
    /// class when the list changes.
    pub fn server_with_offset(mut self, url: impl Into<String>, offset: u32) -> Self {
        self.servers.push((url.into(), Some(offset)));
        self
    }

    /// The table (MySQL/MariaDB) or sequence (PostgreSQL) on every server.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// N, the same on every server. Default: the number of servers. A larger N leaves room
    /// to add servers later without changing the others' classes.
    pub fn increment(mut self, increment: u32) -> Self {
        self.increment = Some(increment);
        self
    }

    /// Bound on one call to one server, including (re)connecting.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// First wait before re-probing a failed server, and the longest wait (it doubles).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max;
        self
    }

    /// Connects to each server in turn as [`connect`](Self::connect) would (creating a
    /// missing table or sequence, checking its class) and says, per URL, whether that
    /// worked; keeps nothing. What `--check-config=connect` reports for ticket servers.
    pub async fn reach(&self) -> Result<Vec<(String, Result<()>)>> {
        let mut reached = Vec::new();
        for slot in self.plan()? {
            let answer = TicketServer::connect(&slot.url, slot.config.clone()).await;
            reached.push((slot.url, answer.map(|_| ())));
        }
        Ok(reached)
    }

    /// Checks the configuration, connects to every server at once (each bounded by the
    /// timeout) and starts the probe task.
    ///
    /// Servers that cannot be reached start down and are probed in the background; if none
    /// can be reached this fails with [`Error::TicketServersDown`]. A server whose table or
    /// sequence belongs to another class fails the whole connect
    /// ([`Error::TicketServerRefused`]): that is a configuration to fix, not an outage.
    pub async fn connect(self) -> Result<TicketPool> {
        let slots = self.plan()?;
        let mut connects = JoinSet::new();
        for (index, slot) in slots.iter().enumerate() {
            let (url, config) = (slot.url.clone(), slot.config.clone());
            connects.spawn(async move { (index, TicketServer::connect(&url, config).await) });
        }
        let now = Instant::now();
        while let Some(joined) = connects.join_next().await {
            let (index, result) = joined.map_err(|e| Error::Unavailable(Box::new(e)))?;
            let mut state = slots[index].lock();
            match result {
                Ok(server) => state.server = Some(server),
                Err(e @ (Error::TicketServerRefused { .. } | Error::InvalidInput(_))) => {
                    return Err(e);
                }
                Err(e) => {
                    state.down = Some(Down {
                        failures: 1,
                        retry_at: now + self.backoff_initial,
                        error: e.to_string(),
                        probing: false,
                    });
                }
            }
        }
        let inner = Arc::new(Inner {
            slots,
            cursor: AtomicUsize::new(0),
            backoff_initial: self.backoff_initial,
            backoff_max: self.backoff_max,
            wake: Arc::new(Notify::new()),
        });
        if inner.slots.iter().all(|s| s.lock().down.is_some()) {
            return Err(inner.all_down(&HashSet::new()));
        }
        tokio::spawn(probe_loop(Arc::downgrade(&inner), inner.wake.clone()));
        Ok(TicketPool { inner })
    }

    /// Checks the configuration as [`connect`](Self::connect) would, without connecting:
    /// the servers' URLs, classes and table or sequence name.
    pub fn check(&self) -> Result<()> {
        self.plan().map(|_| ())
    }

    /// Validates everything before any connection is made.
    fn plan(&self) -> Result<Vec<Slot>> {
        if self.servers.is_empty() {
            return Err(Error::InvalidInput(
                "a ticket pool needs at least one server".into(),
            ));
        }
        if self.backoff_initial.is_zero() || self.backoff_max < self.backoff_initial {
            return Err(Error::InvalidInput(format!(
                "ticket backoff {:?} to {:?} is not valid: the first wait must be above zero and at most the longest",
                self.backoff_initial, self.backoff_max
            )));
        }
        let increment = match self.increment {
            Some(n) => n,
            None => u32::try_from(self.servers.len()).unwrap_or(u32::MAX),
        };
        let mut slots: Vec<Slot> = Vec::with_capacity(self.servers.len());
        for (position, (url, offset)) in self.servers.iter().enumerate() {
            let offset = match offset {
                Some(k) => *k,
                None => u32::try_from(position + 1).unwrap_or(u32::MAX),
            };
            let mut config = TicketConfig::new(increment, offset);
            config.name = self.name.clone();
            config.timeout = self.timeout;
            // Validates the configuration and the URL without connecting.
            let label = TicketServer::lazy(url, config.clone())?.label().to_string();
            if let Some(other) = slots.iter().find(|s| s.config.offset == offset) {
                return Err(Error::InvalidInput(format!(
                    "ticket servers {} and {label} both have offset {offset}: their IDs would collide; give each its own offset in 1..={increment}",
                    other.label
                )));
            }
            slots.push(Slot {
                url: url.clone(),
                config,
                label,
                state: Mutex::new(State {
                    server: None,
                    down: None,
                }),
            });
        }
        Ok(slots)
    }
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is plain data, consistent after every assignment: a panic elsewhere
        // while holding the lock leaves nothing half-done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn usable(&self) -> Option<TicketServer> {
        let state = self.lock();
        if state.down.is_some() {
            return None;
        }
        state.server.clone()
    }
}

impl Inner {
    fn backoff(&self, failures: u32) -> Duration {
        Backoff::new(self.backoff_initial, self.backoff_max).after(failures)
    }

    /// A call failed: out of turn until a probe passes.
    fn mark_down(&self, slot: &Slot, error: &Error) {
        let mut state = slot.lock();
        match &mut state.down {
            // Another caller failed on it at the same time: one failure, not two.
            Some(down) => down.error = error.to_string(),
            None => {
                state.down = Some(Down {
                    failures: 1,
                    retry_at: Instant::now() + self.backoff(1),
                    error: error.to_string(),
                    probing: false,
                });
            }
        }
        drop(state);
        self.wake.notify_one();
    }

    fn all_down(&self, busy: &HashSet<usize>) -> Error {
        let now = Instant::now();
        let servers = self
            .slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                let state = slot.lock();
                match &state.down {
                    Some(down) => format!(
                        "{}: {} (failed {} time(s); next probe in {:?})",
                        slot.label,
                        down.error,
                        down.failures,
                        down.retry_at.saturating_duration_since(now)
                    ),
                    None if busy.contains(&index) => format!(
                        "{}: busy (every call queued longer than the timeout)",
                        slot.label
                    ),
                    None => format!("{}: back up since this call began", slot.label),
                }
            })
            .collect();
        Error::TicketServersDown { servers }
    }

    /// Probes every down server whose backoff is over; returns when the next one is due.
    async fn probe_due(self: &Arc<Self>) -> Option<Instant> {
        let now = Instant::now();
        let mut probes = JoinSet::new();
        for index in 0..self.slots.len() {
            let mut state = self.slots[index].lock();
            if let Some(down) = &mut state.down
                && down.retry_at <= now
                && !down.probing
            {
                down.probing = true;
                let inner = Arc::clone(self);
                probes.spawn(async move { inner.probe(index).await });
            }
        }
        while probes.join_next().await.is_some() {}
        self.slots
            .iter()
            .filter_map(|slot| {
                let state = slot.lock();
                // A probe still running (only if one panicked) must not make the loop spin.
                state
                    .down
                    .as_ref()
                    .filter(|d| !d.probing)
                    .map(|d| d.retry_at)
            })
            .min()
    }

    async fn probe(&self, index: usize) {
        let slot = &self.slots[index];
        let server = slot.lock().server.clone();
        let result = match server {
            Some(server) => server.check().await.map(|()| server),
            None => TicketServer::connect(&slot.url, slot.config.clone()).await,
        };
        let mut state = slot.lock();
        match result {
            Ok(server) => {
                state.server = Some(server);
                state.down = None;
            }
            Err(e) => {
                let failures = state.down.as_ref().map_or(0, |d| d.failures) + 1;
                state.down = Some(Down {
                    failures,
                    retry_at: Instant::now() + self.backoff(failures),
                    error: e.to_string(),
                    probing: false,
                });
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Lets the probe task see that the pool is gone and end.
        self.wake.notify_one();
    }
}

/// The background health checker. Holds the pool only while probing, so dropping the last
/// [`TicketPool`] ends it.
async fn probe_loop(pool: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let next_due = {
            let Some(inner) = pool.upgrade() else {
                return;
            };
            inner.probe_due().await
        };
        match next_due {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
