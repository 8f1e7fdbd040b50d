//! A node's part in one timestamp oracle: the handle of its leader task (`leader.rs`), what
//! it is (its [`Role`]), its counters, and the way a request reaches the task while this
//! node leads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snowdrift_core::clock::Clock;
use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::{TimestampOracle, TsoConfig, TsoStatus};
use tokio::sync::{mpsc, oneshot, watch};
// The runtime's clock: a server's is the monotonic clock, the simulator's its paused time.
use tokio::time::Instant;

use super::leader::Task;
use super::{EtcdTso, KeyFault, Leadership, OracleConfig, OracleError};
use crate::error::{Error, Result};

/// Requests waiting for the leader's task; more wait in their callers (the channel's
/// senders), so this bounds memory, not concurrency.
const QUEUE: usize = 4096;

/// How long [`OracleNode::shutdown`] waits for the task to resign (etcd may be away).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// What this node is to one oracle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// No leader known: campaigning, or waiting for etcd. `error` is the last failure.
    Electing {
        /// Why the last campaign failed, if it did.
        error: Option<String>,
    },
    /// This node leads, in `term` (this process's count of its terms).
    Leader {
        /// The term.
        term: u64,
    },
    /// Another node leads; requests are forwarded to `leader`.
    Follower {
        /// The leader's advertised URL.
        leader: String,
        /// Its term (the etcd lease its key is bound to): every answer must name it.
        term: i64,
    },
    /// Shut down.
    Stopped,
}

/// The leader task's counters since start.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) terms: AtomicU64,
    pub(super) batches: AtomicU64,
    pub(super) batched_requests: AtomicU64,
    pub(super) window_saves: AtomicU64,
    /// Leader keys found that no campaign wrote, by [`KeyFault::ALL`].
    pub(super) forged_keys: [AtomicU64; KeyFault::ALL.len()],
    /// Leaseless leader keys this node took over.
    pub(super) keys_replaced: AtomicU64,
}

/// What the leader's task and the handle share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) role: watch::Sender<Role>,
    pub(super) counters: Counters,
    /// The oracle's state after the last batch or save (term 0 when not leading).
    pub(super) status: Mutex<Option<TsoStatus>>,
    /// The current term's hold on the leader key (its renewals move `valid_until`).
    pub(super) leadership: Mutex<Option<Arc<Leadership>>>,
}

/// One request for the leader's task.
pub(super) struct Request {
    pub(super) count: u64,
    pub(super) reply: oneshot::Sender<Reply>,
}

/// The leader's task's answer.
pub(super) enum Reply {
    /// The IDs, and the term (the leader's etcd lease) they were issued in.
    Issued(IdRange, i64),
    Failed(OracleError),
    /// The term ended before the request was served.
    NotLeading,
}

/// A snapshot of one oracle on this node, for metrics, readiness and status pages.
#[derive(Debug, Clone)]
pub struct OracleReport {
    /// What this node is.
    pub role: Role,
    /// The oracle's state after its last allocation (term 0 when not leading); `None`
    /// before this node first led.
    pub status: Option<TsoStatus>,
    /// How long the leadership still lets this node issue, when leading.
    pub lease_left: Option<Duration>,
    /// Terms this node has led since start.
    pub terms: u64,
    /// Allocations (each serving a merged group of requests).
    pub batches: u64,
    /// Requests served by those allocations.
    pub batched_requests: u64,
    /// Window saves written to etcd.
    pub window_saves: u64,
    /// Leader keys found that no campaign wrote, by fault, as [`KeyFault::ALL`] lists them.
    pub forged_keys: [u64; KeyFault::ALL.len()],
    /// Leaseless leader keys this node took over.
    pub keys_replaced: u64,
}

/// One timestamp oracle on this node (TiKV PD's TSO allocator with its election): a task
/// that campaigns on etcd and, while this node leads, serves the oracle's terms.
///
/// [`start`](Self::start) connects to etcd and starts the task, which until
/// [`shutdown`](Self::shutdown):
///
/// - campaigns ([`EtcdTso::campaign`]); on winning, starts a term of the
///   [`TimestampOracle`] above the window its predecessors saved, saves its first window
///   before [`role`](Self::role) says [`Role::Leader`], then serves merged groups of
///   requests (one allocation per group), saves the window ahead of need beside them, and
///   renews the lease every third of its ttl on the keepers' runtime;
/// - stops issuing `margin` before its lease could expire when renewals fail, and
///   campaigns again;
/// - while another node leads, says so ([`Role::Follower`], the leader's URL and term)
///   and watches the leader key to campaign as soon as it goes; a key no campaign wrote is
///   counted by [`KeyFault`], never followed, and a leaseless one taken over after a lease.
///
/// Why its IDs are strictly increasing across nodes: only a leader's task allocates, one
/// merged group at a time, only while its lease is valid; a new leader starts above the
/// window its predecessors saved, and a leader never issues past the window it saved.
/// Requests on a node that does not lead are for the caller to forward to the leader
/// [`Role::Follower`] names (the server does).
#[derive(Debug)]
pub struct OracleNode {
    name: String,
    tso: TsoConfig,
    requests: mpsc::Sender<Request>,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    /// The leader's task, until shutdown waits for it.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl OracleNode {
    /// Connects to etcd (on `keepers`, the lease keepers' runtime, where the renewals will
    /// run, so request handling never delays them) and starts the task on the current
    /// runtime, where requests are served: a request then hands over to it without waking
    /// another thread. Returns before any election: [`role`](Self::role) says
    /// [`Role::Electing`] until one is decided.
    pub async fn start<C>(
        config: OracleConfig,
        clock: C,
        keepers: &tokio::runtime::Handle,
    ) -> Result<Self>
    where
        C: Clock + 'static,
    {
        config.validate()?;
        let etcd = {
            let (url, namespace, name) = (
                config.url.clone(),
                config.namespace.clone(),
                config.name.clone(),
            );
            keepers
                .spawn(async move { EtcdTso::connect(&url, &namespace, &name).await })
                .await
                .map_err(|e| {
                    Error::Unavailable(format!("the lease keepers' thread failed: {e}").into())
                })??
        };
        Self::spawn(config, clock, etcd, keepers, nonce())
    }

    /// [`start`](Self::start) on any [`EtcdTso`] ([`EtcdTso::over`]: the simulator's
    /// etcd), the renewals on the current runtime, the holder name's nonce given (the
    /// simulator's is drawn from its seed, so a run replays).
    #[cfg(feature = "sim")]
    pub fn start_on<C>(config: OracleConfig, clock: C, etcd: EtcdTso, nonce: &str) -> Result<Self>
    where
        C: Clock + 'static,
    {
        config.validate()?;
        Self::spawn(
            config,
            clock,
            etcd,
            &tokio::runtime::Handle::current(),
            nonce.to_string(),
        )
    }

    /// Starts the leader task of `config` on `etcd`.
    fn spawn<C>(
        config: OracleConfig,
        clock: C,
        etcd: EtcdTso,
        keepers: &tokio::runtime::Handle,
        nonce: String,
    ) -> Result<Self>
    where
        C: Clock + 'static,
    {
        let oracle = TimestampOracle::new(config.tso, clock)
            .map_err(|e| Error::InvalidInput(e.to_string()))?;
        let (requests, queue) = mpsc::channel(QUEUE);
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            role: watch::Sender::new(Role::Electing { error: None }),
            counters: Counters::default(),
            status: Mutex::new(None),
            leadership: Mutex::new(None),
        });
        let task = Task {
            name: config.name.clone(),
            holder: format!("{} {nonce}", config.advertise),
            advertise: config.advertise.clone(),
            ttl: config.ttl,
            margin: config.margin(),
            etcd,
            oracle,
            shared: shared.clone(),
            queue,
            stop: stopped,
            keepers: keepers.clone(),
            on_group: config.on_group.clone(),
        };
        // The serving loop runs where requests are handled: on the keepers' thread, single
        // IDs through the leader ran at 0.42x a snowflake generator's rate. Its lease
        // renewals run on the keepers' thread, so request load never delays them.
        let task = crate::task::spawn(task.run());
        Ok(Self {
            name: config.name,
            tso: config.tso,
            requests,
            shared,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    /// The oracle's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The oracle's options (epoch, logical bits, window), for decoding.
    pub fn tso_config(&self) -> &TsoConfig {
        &self.tso
    }

    /// What this node is now.
    pub fn role(&self) -> Role {
        self.shared.role.borrow().clone()
    }

    /// What this node is, as it changes.
    pub fn watch_role(&self) -> watch::Receiver<Role> {
        self.shared.role.subscribe()
    }

    /// `count` consecutive IDs from this node's current term, and the term they were
    /// issued in (the leader's etcd lease, which a leader names to a follower it answers).
    /// Requests waiting together are served by one allocation. [`OracleError::NotLeading`]
    /// at once when this node does not lead, or when its term ends before the request was
    /// served: nothing was issued, and [`role`](Self::role) says what this node is now.
    pub async fn next(&self, count: u64) -> std::result::Result<(IdRange, i64), OracleError> {
        match &*self.shared.role.borrow() {
            Role::Leader { .. } => {}
            Role::Stopped => return Err(self.stopped()),
            Role::Electing { .. } | Role::Follower { .. } => return Err(OracleError::NotLeading),
        }
        let (reply, answer) = oneshot::channel();
        if self.requests.send(Request { count, reply }).await.is_err() {
            return Err(self.stopped());
        }
        match answer.await {
            Ok(Reply::Issued(range, term)) => Ok((range, term)),
            Ok(Reply::Failed(e)) => Err(e),
            Ok(Reply::NotLeading) => Err(OracleError::NotLeading),
            Err(_) => Err(self.stopped()),
        }
    }

    /// What this node is, the oracle's state, and the task's counters.
    pub fn report(&self) -> OracleReport {
        let c = &self.shared.counters;
        let role = self.role();
        let leading = matches!(role, Role::Leader { .. });
        let lease_left = lock(&self.shared.leadership)
            .as_ref()
            .filter(|_| leading)
            .map(|l| l.valid_until().saturating_duration_since(Instant::now()));
        OracleReport {
            status: *lock(&self.shared.status),
            role,
            lease_left,
            terms: c.terms.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
            batched_requests: c.batched_requests.load(Ordering::Relaxed),
            window_saves: c.window_saves.load(Ordering::Relaxed),
            forged_keys: std::array::from_fn(|i| c.forged_keys[i].load(Ordering::Relaxed)),
            keys_replaced: c.keys_replaced.load(Ordering::Relaxed),
        }
    }

    /// Ends the task: a leader stops issuing and gives its leadership up at once (its lease
    /// revoked), so another node takes over without waiting for the lease to run out.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let task = lock(&self.task).take();
        if let Some(task) = task {
            // The task ends once it has resigned; bounded, as etcd may be away.
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, task).await;
        }
    }

    fn stopped(&self) -> OracleError {
        OracleError::Stopped {
            name: self.name.clone(),
        }
    }
}

impl Drop for OracleNode {
    /// Tells the task to stop (a leader resigns), as [`shutdown`](Self::shutdown) does
    /// without waiting: a task whose handle is gone must not campaign on.
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

pub(super) fn lock<T>(l: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Writers replace the whole value at once; a panic cannot leave it half written.
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// A value that tells this process's leadership from an earlier run's on the same address.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    // `RandomState` is seeded from the operating system's randomness once per process;
    // the start time makes two states of one process differ too.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", h.finish())
}
