//! A node's hold on its worker ID: claim, wait for the mark, open the fence; the generator
//! it issues with; status and shutdown.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use snowdrift_core::clock::Clock;
use snowdrift_core::generator::{
    Builder, ClosedReason, Fence, IdBlock, OnBackward, SnowflakeGenerator,
};

use super::keeper::{self, Held, OnFailure};
use super::status::{PeerOffset, WorkerState, WorkerStatus};
use super::{LeaseConfig, WorkerRegistry};
use crate::error::{Error, Result};

/// One stretch of issuing under one worker ID: the generator built for the ID, behind its
/// own fence. A node starts with epoch 1; each time it loses its lease and regains an ID
/// (the same or another), a new epoch with a new generator begins. An old epoch's fence
/// stays closed forever, so a caller still holding it gets [`NotIssuing`] and fetches the
/// current one from [`WorkerNode::epoch`].
///
/// [`NotIssuing`]: snowdrift_core::Error::NotIssuing
#[derive(Debug)]
pub struct Epoch<C> {
    number: u64,
    worker_id: u64,
    extension: u64,
    generator: SnowflakeGenerator<C>,
    fence: Arc<Fence>,
}

impl<C: Clock> Epoch<C> {
    /// 1 for the first epoch of a node, then counting up.
    pub fn number(&self) -> u64 {
        self.number
    }
    /// The worker ID the generator issues with.
    pub fn worker_id(&self) -> u64 {
        self.worker_id
    }
    /// The extension value the generator issues under (0 without an extension field).
    /// Fixed for the epoch: it is durable in the mark before the first ID.
    pub fn extension(&self) -> u64 {
        self.extension
    }
    /// The generator (fenced: it refuses once the lease is lost or its deadline passes).
    pub fn generator(&self) -> &SnowflakeGenerator<C> {
        &self.generator
    }
    /// The fence between the keeper and the generator.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }
}

/// What the keeper reports, behind a lock that no hot path takes.
#[derive(Debug)]
pub(super) struct StatusInner {
    pub worker_id: Option<u64>,
    pub state: WorkerState,
    pub deadline_ms: u64,
    pub renewals: u64,
    /// Regains of a lost lease that ended under another worker ID than the lost one.
    pub worker_id_changes: u64,
    pub peers: Vec<PeerOffset>,
    pub last_error: Option<String>,
}

impl<C> Shared<C> {
    fn log_leased(&self, worker_id: u64, message: &str) {
        tracing::info!(
            worker_id,
            holder = %self.holder,
            backend = self.registry.backend(),
            source = %self.config.source.describe(),
            "{message}"
        );
    }
}

/// The parts of a node the keeper task shares with it.
pub(super) struct Shared<C> {
    pub registry: WorkerRegistry,
    pub config: LeaseConfig,
    pub builder: Builder,
    pub clock: C,
    pub holder: String,
    pub hostname: String,
    pub space: u64,
    pub current: RwLock<Arc<Epoch<C>>>,
    pub status: Mutex<StatusInner>,
}

/// A node's lease on a worker ID and the generator that issues under it (invariants 2 and
/// 3 of the design).
///
/// [`start`](Self::start) claims a worker ID from the [`LeaseConfig`]'s source on its
/// registry, checks this node's clock against its live peers' (refusing if it is behind by
/// more than `clock_bound`), reads the ID's high-water mark and waits until the clock
/// passes it (refusing if that takes longer than `max_mark_wait`), writes the mark
/// `now + window` **before** any ID is issued, and only then opens the generator's fence.
/// A background task then, until [`shutdown`](Self::shutdown):
///
/// - renews the lease every `ttl / 3` and moves the fence deadline to
///   `renewal sent + ttl - margin` (on the node's monotonic clock); when renewals fail, the
///   generator stops by itself at that deadline, before the coordinator can give the ID
///   to another node;
/// - raises the mark half a window ahead of use, so the generator never waits for it and
///   the coordinator sees a write every `window / 2`, not one per ID;
/// - publishes the node's clock every `publish_every` and compares it with the peers'; a
///   clock behind by more than `clock_bound` closes the fence until it catches up;
/// - on losing the lease, closes the fence, claims an ID again, waits for that ID's mark,
///   and opens a new [`Epoch`].
///
/// Issue through [`epoch`](Self::epoch) (or the shortcut [`next_block`](Self::next_block));
/// the generator's errors say why it refuses.
///
/// The clock must be monotonic (a [`MonotonicClock`], possibly behind an offset or a
/// cache): the fence deadline is a reading of it.
///
/// [`MonotonicClock`]: snowdrift_core::clock::MonotonicClock
pub struct WorkerNode<C: Clock + Clone + 'static> {
    shared: Arc<Shared<C>>,
    stop: tokio::sync::watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<Held>>,
}

impl<C: Clock + Clone + 'static> std::fmt::Debug for WorkerNode<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerNode")
            .field("holder", &self.shared.holder)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl<C: Clock + Clone + 'static> WorkerNode<C> {
    /// Claims a worker ID, waits out its high-water mark and starts issuing (see the type's
    /// docs). `builder` configures the generator (layout, lead, ...); its node fields are
    /// set from the worker ID, and the layout's node bits give the number of worker IDs.
    /// Must run inside a tokio runtime, which then runs the keeper task.
    ///
    /// Errors: [`Error::WorkersExhausted`], [`Error::WorkerTaken`], [`Error::MarkAhead`],
    /// [`Error::ClockBehindPeers`], [`Error::InvalidInput`] for bad settings, and the
    /// coordinator's errors. On an error after the claim, the ID is released.
    pub async fn start(config: LeaseConfig, builder: Builder, clock: C) -> Result<Self> {
        let shared = Arc::new(Self::prepare(config, builder, clock).await?);
        let held = keeper::acquire(&shared, true, OnFailure::Release).await?;
        shared.log_leased(held.worker_id, "worker ID leased; issuing");
        Ok(Self::run(shared, held))
    }

    /// Hands a held lease to a new keeper task.
    fn run(shared: Arc<Shared<C>>, held: Held) -> Self {
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let task = crate::task::spawn(keeper::run(shared.clone(), stop_rx, held));
        Self {
            shared,
            stop,
            task: Some(task),
        }
    }

    /// Like [`start`](Self::start), but returns as soon as the worker ID is claimed and its
    /// high-water mark is known to be within `max_mark_wait`: the wait for the clock to
    /// pass the mark happens in the keeper task. Until then the node's state is
    /// [`WorkerState::WaitingForMark`] and its generator refuses with
    /// [`NotIssuing`](snowdrift_core::Error::NotIssuing), so a server can serve its other
    /// kinds at once and say what is still waiting. The same start-up errors as `start`,
    /// except those of the wait itself: if entering fails there, the keeper claims one
    /// again, as after a lost lease (leaving the failed claim to expire, not releasing it).
    pub async fn claim(config: LeaseConfig, builder: Builder, clock: C) -> Result<Self> {
        let shared = Arc::new(Self::prepare(config, builder, clock).await?);
        let claimed = keeper::claim(&shared, true, OnFailure::Release).await?;
        if claimed.mark.ms <= shared.clock.now_ms() {
            // Nothing to wait for: enter at once, so a node that can issue does on return.
            let held = keeper::enter(&shared, claimed, true, OnFailure::Release).await?;
            shared.log_leased(held.worker_id, "worker ID leased; issuing");
            return Ok(Self::run(shared, held));
        }
        shared.log_leased(
            claimed.worker_id,
            "worker ID leased; issuing once the clock passes its high-water mark",
        );
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let task = crate::task::spawn(keeper::run_claimed(shared.clone(), stop_rx, claimed));
        Ok(Self {
            shared,
            stop,
            task: Some(task),
        })
    }

    /// The shared parts before any claim: settings checked, registry connected.
    async fn prepare(config: LeaseConfig, builder: Builder, clock: C) -> Result<Shared<C>> {
        config.validate()?;
        let registry = WorkerRegistry::connect(&config.registry_url, &config.namespace).await?;
        Self::prepare_on(registry, config, builder, clock)
    }

    /// As [`start`](Self::start), on a registry connected already instead of the one
    /// `config.registry_url` names: how the simulator hands each node its simulated etcd.
    #[cfg(feature = "sim")]
    pub async fn start_on(
        registry: WorkerRegistry,
        config: LeaseConfig,
        builder: Builder,
        clock: C,
    ) -> Result<Self> {
        config.validate()?;
        let shared = Arc::new(Self::prepare_on(registry, config, builder, clock)?);
        let held = keeper::acquire(&shared, true, OnFailure::Release).await?;
        shared.log_leased(held.worker_id, "worker ID leased; issuing");
        Ok(Self::run(shared, held))
    }

    fn prepare_on(
        registry: WorkerRegistry,
        config: LeaseConfig,
        builder: Builder,
        clock: C,
    ) -> Result<Shared<C>> {
        let node_bits = builder.layout().node_bits();
        let space = 1u64.checked_shl(node_bits).unwrap_or(u64::MAX);
        let hostname = config.hostname.clone().unwrap_or_else(super::hostname);
        let holder = config
            .holder
            .clone()
            .unwrap_or_else(|| default_holder(&hostname));
        let current = RwLock::new(Arc::new(placeholder_epoch(&builder, &clock)?));
        Ok(Shared {
            current,
            registry,
            config,
            builder,
            clock,
            holder,
            hostname,
            space,
            status: Mutex::new(StatusInner {
                worker_id: None,
                state: WorkerState::Starting,
                deadline_ms: 0,
                renewals: 0,
                worker_id_changes: 0,
                peers: Vec::new(),
                last_error: None,
            }),
        })
    }

    /// The current epoch: the worker ID and the generator to issue with. Cheap (a read
    /// lock and an `Arc` clone); keep the result for a batch of calls and fetch it again
    /// when its generator refuses.
    pub fn epoch(&self) -> Arc<Epoch<C>> {
        read(&self.shared.current).clone()
    }

    /// Up to `n` IDs from the current epoch's generator (waiting on the clock as
    /// [`SnowflakeGenerator::next_block`] does), or the reason it may not issue now.
    pub fn next_block(&self, n: u64) -> snowdrift_core::Result<IdBlock> {
        self.epoch().generator().next_block(n)
    }

    /// This node's name on the coordinator.
    pub fn holder(&self) -> &str {
        &self.shared.holder
    }

    /// A snapshot for `/readyz`, `/metrics` and dashboards.
    pub fn status(&self) -> WorkerStatus {
        status_of(&self.shared)
    }

    /// Stops issuing, writes the final high-water mark, releases the worker ID and stops the
    /// keeper. IDs issued before are covered by the mark, so the next holder of the ID
    /// (this node restarted, or another) continues after them.
    pub async fn shutdown(mut self) -> Result<()> {
        let _ = self.stop.send(true);
        let held = match self.task.take() {
            Some(task) => task.await.ok(),
            None => None,
        };
        let epoch = self.epoch();
        epoch.fence().close(ClosedReason::ShutDown);
        let result = match held {
            Some(held) if !held.lost => keeper::finish(&self.shared, &epoch, held.worker_id).await,
            _ => Ok(()),
        };
        lock(&self.shared.status).state = WorkerState::Stopped;
        result
    }
}

impl<C: Clock + Clone + 'static> Drop for WorkerNode<C> {
    fn drop(&mut self) {
        // Without shutdown() the lease is not released: it expires after its ttl, and the
        // mark already covers every ID issued.
        if let Some(task) = self.task.take() {
            task.abort();
            self.epoch().fence().close(ClosedReason::ShutDown);
        }
    }
}

pub(super) fn status_of<C: Clock + Clone>(shared: &Shared<C>) -> WorkerStatus {
    let epoch = read(&shared.current).clone();
    let now_ms = shared.clock.now_ms();
    let s = lock(&shared.status);
    let mut state = s.state;
    if state == WorkerState::Issuing && now_ms >= s.deadline_ms {
        // Renewals failed for longer than the lease allows: the generator has stopped.
        state = WorkerState::LeaseLost;
    }
    WorkerStatus {
        worker_id: s.worker_id,
        holder: shared.holder.clone(),
        backend: shared.registry.backend(),
        state,
        epoch: epoch.number,
        deadline_ms: if state == WorkerState::Issuing {
            s.deadline_ms
        } else {
            0
        },
        mark_ms: epoch.fence().window_end(),
        renewals: s.renewals,
        worker_id_changes: s.worker_id_changes,
        now_ms,
        peers: s.peers.clone(),
        last_error: s.last_error.clone(),
    }
}

/// Builds the generator of a new epoch behind a closed fence.
pub(super) fn new_epoch<C: Clock + Clone>(
    shared: &Shared<C>,
    number: u64,
    worker_id: u64,
    extension: u64,
) -> Result<Epoch<C>> {
    build_epoch(&shared.builder, &shared.clock, number, worker_id, extension)
}

fn build_epoch<C: Clock + Clone>(
    builder: &Builder,
    clock: &C,
    number: u64,
    worker_id: u64,
    extension: u64,
) -> Result<Epoch<C>> {
    let fence = Arc::new(Fence::new());
    // An extension value is taken only here, at the start of an epoch, after the mark that
    // carries it is durable. A step back while issuing waits or refuses instead: a value
    // taken then would not be in the mark, and a restart could take it again.
    let in_run = match builder.backward_policy() {
        OnBackward::Extension => OnBackward::Wait,
        other => other,
    };
    let generator = builder
        .clone()
        .on_backward(in_run)
        .extension(extension)
        .node_id(worker_id)
        .and_then(|b| b.fence(fence.clone()).build(clock.clone()))
        .map_err(|e| Error::InvalidInput(format!("worker ID {worker_id}: {e}")))?;
    Ok(Epoch {
        number,
        worker_id,
        extension,
        generator,
        fence,
    })
}

/// Epoch 0: a generator whose fence never opens, in place until the first claim succeeds.
fn placeholder_epoch<C: Clock + Clone>(builder: &Builder, clock: &C) -> Result<Epoch<C>> {
    build_epoch(builder, clock, 0, 0, 0)
}

fn default_holder(hostname: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    // A random nonce tells apart two runs of the same pid (containers restart at pid 1).
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!(
        "{hostname}/{}/{:08x}",
        std::process::id(),
        h.finish() as u32
    )
}

pub(super) fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    // Writers replace the whole value at once; a panic cannot leave it half written.
    l.read().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn lock<T>(l: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// `d` in whole milliseconds, saturating.
pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
