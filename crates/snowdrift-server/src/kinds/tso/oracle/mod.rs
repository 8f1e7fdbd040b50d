//! The `tso` kind on a server (TiKV PD's timestamp oracle, wired): the way a request
//! reaches the oracle's leader, on this node or, forwarded over gRPC, on another.
//!
//! The oracle lives below this module, as PD keeps its allocator in its own package: its
//! state in `snowdrift_core::tso`; its election, saved window and leader task (terms,
//! batching, window saves, renewals, fencing) in `snowdrift_store::tso` ([`OracleNode`]).
//! Here: [`Tso`] (what the generator's source holds: the store's node, built from the
//! plan, and the routing of a request by the node's [`Role`]), `stream` (a follower's one
//! stream to the leader, merging what waits) and `forward` (the `Next` call to a leader
//! without the stream, and the wiring of the checks of the leader's answers, which live in
//! `snowdrift_store::tso` beside what a follower has served, so the simulator runs them too).
//!
//! Why a request is linearizable on any node: only the leader's task allocates, one merged
//! group at a time, and it allocates only while its lease is valid (it stops `ttl / 5`
//! before etcd could expire it); a new leader starts above the window its predecessors
//! saved, and a leader never issues past the window it saved. A follower forwards, so an ID
//! always comes from the one allocation order.

mod forward;
mod stream;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snowdrift_core::clock::{MonotonicClock, OffsetClock};
use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::{TsoConfig, TsoStatus};
use snowdrift_store::tso::{KeyFault, OracleConfig, OracleError, OracleNode};
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::Error;
use crate::kinds::tso::TsoPlan;

pub(crate) use forward::{FORWARDED_HEADER, FORWARDED_VALUE, TERM_HEADER};
/// What this node is to one oracle (it lives with the leader task in the store).
pub use snowdrift_store::tso::Role;
pub use snowdrift_store::tso::Refusal;
pub(crate) use snowdrift_store::tso::Served;

/// Requests waiting for a forward; more wait in their callers (the channel's senders), so
/// this bounds memory, not concurrency.
const QUEUE: usize = 4096;

/// The first wait before a request asks the leader it knows again, after that leader did not
/// answer with IDs while this node's view of the leader stayed the same; doubled up to
/// [`RETRY_MAX`]. Such a leader has usually just won (its first window is being saved) or is
/// stopping (its key not yet gone), and this node's view changes only when the key does.
const RETRY_FIRST: Duration = Duration::from_millis(10);
/// The longest wait between two asks of the same leader.
const RETRY_MAX: Duration = Duration::from_millis(250);

tokio::task_local! {
    /// Set while serving a request another node forwarded: it is answered here or refused,
    /// never forwarded again, so two nodes that each think the other leads cannot bounce a
    /// request between them.
    static FORWARDED: ();
}

/// Runs `work` as the handling of a request another node forwarded (`forwarded`), or as
/// a request of a client.
pub async fn serve_forwarded<F: Future>(forwarded: bool, work: F) -> F::Output {
    if forwarded {
        FORWARDED.scope((), work).await
    } else {
        work.await
    }
}

/// The forwarding counters of one oracle since start, for `/metrics` and `/v1/generators`
/// (the leader task's are in its [`OracleReport`](snowdrift_store::tso::OracleReport)).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) forwards: AtomicU64,
    pub(crate) forward_calls: AtomicU64,
    pub(crate) forward_errors: AtomicU64,
    /// Answers of the leader refused, by [`Refusal`].
    pub(crate) refused: [AtomicU64; Refusal::ALL.len()],
}

/// The labels of [`TsoReport::forged_keys`], in order.
pub const KEY_FAULTS: [&str; 3] = [
    KeyFault::ALL[0].label(),
    KeyFault::ALL[1].label(),
    KeyFault::ALL[2].label(),
];

/// What the request side and the forwarders share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// What this node is, as the oracle's task says.
    pub(crate) role: watch::Receiver<Role>,
    pub(crate) counters: Counters,
    /// Why the last forward that found no leader failed.
    pub(crate) forward_error: Mutex<String>,
    /// What this node has served.
    pub(crate) served: Served,
}

impl Shared {
    fn last_forward_error(&self) -> String {
        self.forward_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// One request for the forwarders.
pub(crate) struct Request {
    pub(crate) count: u64,
    pub(crate) reply: oneshot::Sender<Reply>,
}

/// The forwarders' answer.
#[derive(Clone)]
pub(crate) enum Reply {
    /// The IDs, and the term (the leader's etcd lease) they were issued in.
    Issued(IdRange, i64),
    Failed(Error),
    /// The leader is gone or no longer leads: ask again as the new role says.
    NotLeading,
}

/// What a request does, as this node's role says.
enum Step {
    /// Ask this node's oracle.
    Lead,
    /// Ask the forwarders.
    Forward,
    /// Refuse, saying why.
    Refuse(String),
    /// Wait for a leader; the last election error, if any.
    Wait(Option<String>),
}

/// A snapshot for metrics, readiness and `/v1/generators`.
#[derive(Debug, Clone)]
pub struct TsoReport {
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
    /// Requests forwarded to the leader.
    pub forwards: u64,
    /// Messages on the stream to the leader (or `Next` calls) that carried them
    /// (concurrent requests share one).
    pub forward_calls: u64,
    /// Forwarded requests that failed (leader gone, or it refused).
    pub forward_errors: u64,
    /// Leader answers (or forwards) refused, by reason, as [`Refusal::ALL`] lists them.
    pub refused: [u64; Refusal::ALL.len()],
    /// Leader keys found that no campaign wrote, by fault, as [`KEY_FAULTS`] lists them.
    pub forged_keys: [u64; 3],
    /// Leaseless leader keys this node took over.
    pub keys_replaced: u64,
}

/// One `tso` generator on this node: the store's oracle (its leader task), and its
/// forwarder.
#[derive(Debug)]
pub struct Tso {
    name: String,
    config: TsoConfig,
    oracle: OracleNode,
    shared: Arc<Shared>,
    /// Requests for the forwarders, while another node leads.
    forwards: mpsc::Sender<Request>,
    /// How long a request waits for a leader to be known before it is refused.
    leader_wait: Duration,
}

impl Tso {
    /// Starts the store's oracle `name` as `plan` says (it connects to etcd on `runtime`, the
    /// lease keepers' thread, where its renewals will run, so request handling never delays
    /// them), and the forwarders. Returns before any election: requests wait for one (up to
    /// twice the lease).
    pub async fn start(
        name: &str,
        plan: &TsoPlan,
        clock_offset_ms: i64,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self, snowdrift_store::Error> {
        // Before the oracle starts: a forward_token or forward_ca it refuses must stop the
        // start before this node campaigns.
        let forwarder = Arc::new(forward::Forwarder::new(plan, clock_offset_ms)?);
        let clock = OffsetClock::new(MonotonicClock::new(), clock_offset_ms);
        let oracle = OracleNode::start(oracle_config(name, plan), clock, runtime).await?;
        let (forwards, forward_queue) = mpsc::channel(QUEUE);
        let shared = Arc::new(Shared {
            role: oracle.watch_role(),
            counters: Counters::default(),
            forward_error: Mutex::new(String::new()),
            served: Served::default(),
        });
        // Forwarding is request work: on the runtime that serves requests.
        tokio::spawn(stream::run(
            forward_queue,
            forwarder,
            shared.clone(),
            name.to_string(),
            plan.max_count,
        ));
        Ok(Self {
            name: name.to_string(),
            config: plan.oracle,
            oracle,
            shared,
            forwards,
            leader_wait: plan.ttl * 2,
        })
    }

    /// The oracle's options (epoch, logical bits, window), for decoding.
    pub fn config(&self) -> &TsoConfig {
        &self.config
    }

    /// `count` consecutive IDs, above every ID any node returned before this call began:
    /// from this node's task when it leads, else from the leader (forwarded). While no
    /// leader is known the request waits, up to twice the lease, for an election.
    pub async fn next(&self, count: u64) -> Result<IdRange, Error> {
        self.next_in_term(count).await.map(|(range, _)| range)
    }

    /// [`next`](Self::next), and the term the IDs were issued in (the leader's etcd lease),
    /// which a leader names in its answer to a follower.
    pub async fn next_in_term(&self, count: u64) -> Result<(IdRange, i64), Error> {
        let forwarded = FORWARDED.try_with(|_| ()).is_ok();
        let deadline = tokio::time::Instant::now() + self.leader_wait;
        let mut role = self.oracle.watch_role();
        let mut last_failure: Option<String> = None;
        let mut retry = RETRY_FIRST;
        loop {
            // What to do, read without cloning the role (a follower's leader URL is a String):
            // only the error paths copy anything out of it.
            let step = match &*role.borrow_and_update() {
                Role::Leader { .. } => Step::Lead,
                Role::Follower { .. } if !forwarded => Step::Forward,
                Role::Follower { leader, .. } => Step::Refuse(format!(
                    "this node does not lead, {leader} does; a forwarded request is not \
                     forwarded again (the nodes disagree on the leader for a moment)"
                )),
                Role::Electing { .. } if forwarded => {
                    Step::Refuse("this node does not lead (an election is under way)".into())
                }
                Role::Electing { error } => Step::Wait(error.clone()),
                Role::Stopped => return Err(self.stopped()),
            };
            let queue = match step {
                Step::Lead => match self.oracle.next(count).await {
                    Ok((range, term)) => {
                        self.shared.served.issued(&range);
                        return Ok((range, term));
                    }
                    // This node's term ended (its role has changed already: ask again at
                    // once).
                    Err(OracleError::NotLeading) => {
                        last_failure = Some("this node's term ended".into());
                        continue;
                    }
                    Err(e) => return Err(self.oracle_error(e)),
                },
                Step::Forward => {
                    self.shared
                        .counters
                        .forwards
                        .fetch_add(1, Ordering::Relaxed);
                    &self.forwards
                }
                Step::Refuse(why) => {
                    return Err(Error::unavailable(format!(
                        "tso generator {:?}: {why}; try again",
                        self.name
                    )));
                }
                Step::Wait(error) => {
                    last_failure = error.or(last_failure);
                    self.wait_for_role(&mut role, deadline, None, &last_failure)
                        .await?;
                    continue;
                }
            };
            let (reply, answer) = oneshot::channel();
            if queue.send(Request { count, reply }).await.is_err() {
                return Err(self.stopped());
            }
            // Bounded like the wait for a leader: a leader that keeps the stream but never
            // answers must not hold the request for good.
            let Ok(answer) = tokio::time::timeout_at(deadline, answer).await else {
                return Err(Error::unavailable(format!(
                    "tso generator {:?}: the leader did not answer within {:?}; try again",
                    self.name, self.leader_wait
                )));
            };
            match answer {
                Ok(Reply::Issued(range, term)) => return Ok((range, term)),
                Ok(Reply::Failed(e)) => return Err(e),
                // The leader the forward went to is gone or no longer leads: wait for the
                // election that follows, or for the key to name another node.
                Ok(Reply::NotLeading) => {
                    last_failure = Some(format!(
                        "forwarding to the leader: {}",
                        self.shared.last_forward_error()
                    ));
                    // Not only a change of role: the leader named may be about to lead, and
                    // waiting for a change would wait until its key goes or a lease passes.
                    self.wait_for_role(&mut role, deadline, Some(retry), &last_failure)
                        .await?;
                    retry = (retry * 2).min(RETRY_MAX);
                }
                Err(_) => return Err(self.stopped()),
            }
        }
    }

    /// Waits for the role to change (or for `retry`, if given, to pass), or fails at
    /// `deadline` naming `last_failure`.
    async fn wait_for_role(
        &self,
        role: &mut watch::Receiver<Role>,
        deadline: tokio::time::Instant,
        retry: Option<Duration>,
        last_failure: &Option<String>,
    ) -> Result<(), Error> {
        let until = retry.map_or(deadline, |r| deadline.min(tokio::time::Instant::now() + r));
        match tokio::time::timeout_at(until, role.changed()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.stopped()),
            Err(_) if until < deadline => Ok(()),
            Err(_) => Err(Error::unavailable(format!(
                "tso generator {:?}: no leader answered within {:?}{}; an election is under \
                 way or etcd is unreachable: try again",
                self.name,
                self.leader_wait,
                last_failure
                    .as_ref()
                    .map(|e| format!(" (last: {e})"))
                    .unwrap_or_default()
            ))),
        }
    }

    /// What this node is, the oracle's state, and its counters.
    pub fn report(&self) -> TsoReport {
        let c = &self.shared.counters;
        let o = self.oracle.report();
        TsoReport {
            role: o.role,
            status: o.status,
            lease_left: o.lease_left,
            terms: o.terms,
            batches: o.batches,
            batched_requests: o.batched_requests,
            window_saves: o.window_saves,
            forwards: c.forwards.load(Ordering::Relaxed),
            forward_calls: c.forward_calls.load(Ordering::Relaxed),
            forward_errors: c.forward_errors.load(Ordering::Relaxed),
            refused: std::array::from_fn(|i| c.refused[i].load(Ordering::Relaxed)),
            forged_keys: o.forged_keys,
            keys_replaced: o.keys_replaced,
        }
    }

    /// Ends the oracle's task: a leader stops issuing and gives its leadership up at once
    /// (its lease revoked), so another node takes over without waiting for the lease to
    /// run out.
    pub async fn shutdown(&self) {
        self.oracle.shutdown().await;
    }

    /// What a failure of this node's oracle means to a caller.
    fn oracle_error(&self, e: OracleError) -> Error {
        match e {
            OracleError::Oracle(e) => Error::from(e),
            OracleError::Stopped { .. } => self.stopped(),
            e => Error::unavailable(e.to_string()),
        }
    }

    fn stopped(&self) -> Error {
        Error::unavailable(format!(
            "tso generator {:?} is shutting down on this node; ask another",
            self.name
        ))
    }
}

/// Environment variable that shifts the clock of this process's timestamp oracles and
/// snowflake generators (and of the CLI's generators), for tests that need nodes whose
/// clocks disagree or a restart with the clock set back. Test use only.
pub const TEST_CLOCK_OFFSET_VAR: &str = "SNOWDRIFT_TEST_CLOCK_OFFSET_MS";

/// The offset [`TEST_CLOCK_OFFSET_VAR`] sets, 0 when unset.
pub fn test_clock_offset_ms() -> Result<i64, snowdrift_store::Error> {
    match std::env::var(TEST_CLOCK_OFFSET_VAR) {
        Ok(v) => v.trim().parse().map_err(|_| {
            snowdrift_store::Error::InvalidInput(format!(
                "{TEST_CLOCK_OFFSET_VAR}={v:?} is not a whole number of milliseconds"
            ))
        }),
        Err(_) => Ok(0),
    }
}

/// The etcd namespace of every oracle's keys (the plan decides it, so the plan's reach
/// check and the oracle agree without importing each other in a circle).
pub use super::TSO_NAMESPACE as NAMESPACE;

/// The store's settings of generator `name`'s oracle, from its plan.
fn oracle_config(name: &str, plan: &TsoPlan) -> OracleConfig {
    let mut config = OracleConfig::new(&plan.url, NAMESPACE, name, &plan.advertise);
    config.tso = plan.oracle;
    config.ttl = plan.ttl;
    config.margin_override = Some(plan.margin);
    // Made once: a lookup per allocation would cost more.
    let group_sizes = metrics::histogram!(
        crate::metrics::TSO_GROUP,
        "generator" => name.to_string()
    );
    config.on_group = Some(Arc::new(move |requests| {
        group_sizes.record(requests as f64)
    }));
    config
}
