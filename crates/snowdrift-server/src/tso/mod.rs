//! The `tso` kind on a server (TiKV PD's timestamp oracle, wired): a task per generator that
//! campaigns on etcd and, while it leads, serves the oracle's terms; and the way a request
//! reaches that task, on this node or, forwarded over gRPC, on the leader.
//!
//! The rules live below this module: the oracle's state in `snowdrift_core::tso`, the
//! election and the saved window in `snowdrift_store::tso`. Here: [`Tso`] (what the
//! generator's source holds), `leader` (the task: elections, terms, batching, window saves,
//! renewals, fencing) and `forward` (a follower's gRPC client of the leader).
//!
//! Why a request is linearizable on any node: only the leader's task allocates, one merged
//! group at a time, and it allocates only while its lease is valid (it stops `ttl / 5`
//! before etcd could expire it); a new leader starts above the window its predecessors
//! saved, and a leader never issues past the window it saved. A follower forwards, so an ID
//! always comes from the one allocation order.

mod forward;
mod leader;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::{TsoConfig, TsoStatus};
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::Error;
use crate::plan::TsoPlan;

pub(crate) use forward::{FORWARDED_HEADER, FORWARDED_VALUE, TERM_HEADER};

/// Requests waiting for the leader's task, or for a forward; more wait in their callers (the
/// channel's senders), so this bounds memory, not concurrency.
const QUEUE: usize = 4096;

/// gRPC calls a follower keeps in flight to the leader, each carrying every request that
/// was waiting when it was sent.
const FORWARDERS: usize = 2;

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

/// Counters of one oracle since start, for `/metrics` and `/v1/generators`.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) terms: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) batched_requests: AtomicU64,
    pub(crate) window_saves: AtomicU64,
    pub(crate) forwards: AtomicU64,
    pub(crate) forward_calls: AtomicU64,
    pub(crate) forward_errors: AtomicU64,
    /// Answers of the leader refused, by [`Refusal`].
    pub(crate) refused: [AtomicU64; Refusal::ALL.len()],
    /// Leader keys found that no campaign wrote, by [`KeyFault`](snowdrift_store::tso::KeyFault).
    pub(crate) forged_keys: [AtomicU64; 3],
    /// Leaseless leader keys this node took over.
    pub(crate) keys_replaced: AtomicU64,
}

/// Why a follower refused to forward, or refused what the leader answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The leader is plain `http://` and this node would have to send its
    /// `forward_token` in cleartext (`forward_plaintext` is off).
    PlaintextToken,
    /// The answer names another term than the leader key does (or none).
    Term,
    /// Not one run of exactly the count asked for, of kind tso.
    Shape,
    /// IDs that wrap past 2^64, are not tso IDs (2^63 and up), or lie further in the
    /// future than any leader could have reached.
    OutOfRange,
    /// IDs not above everything this node had served when it asked.
    NotAbove,
}

impl Refusal {
    /// Every reason, in the order of [`Counters::refused`].
    pub const ALL: [Refusal; 5] = [
        Refusal::PlaintextToken,
        Refusal::Term,
        Refusal::Shape,
        Refusal::OutOfRange,
        Refusal::NotAbove,
    ];

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::PlaintextToken => "plaintext_token",
            Refusal::Term => "term",
            Refusal::Shape => "shape",
            Refusal::OutOfRange => "out_of_range",
            Refusal::NotAbove => "not_above_served",
        }
    }
}

/// The index of a leader key's fault in [`Counters::forged_keys`].
pub(crate) fn fault_index(fault: snowdrift_store::tso::KeyFault) -> usize {
    use snowdrift_store::tso::KeyFault;
    match fault {
        KeyFault::NoLease => 0,
        KeyFault::LeaseNotNamed => 1,
        KeyFault::LeaseExpired => 2,
    }
}

/// The labels of [`Counters::forged_keys`], in order.
pub const KEY_FAULTS: [&str; 3] = ["no_lease", "lease_not_named", "lease_expired"];

/// What this node has served of one oracle, to check the leader's answers against: an
/// answer must be above everything served before it was asked for (a leader allocates
/// after it is asked), and must not overlap anything served while it was on its way
/// (two calls are in flight at once, and their answers may arrive in either order).
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// One past the largest ID this node served, as leader or follower (0: none yet).
    top: AtomicU64,
    /// The runs accepted from the leader, newest last, numbered.
    recent: Mutex<Accepted>,
}

#[derive(Debug, Default)]
struct Accepted {
    /// How many runs were ever accepted.
    count: u64,
    /// The last few: (number, start, end).
    runs: VecDeque<(u64, u64, u64)>,
}

/// Runs kept to check concurrent answers against; an answer whose call outlived more
/// accepted runs than this must be above all of them.
const RECENT_RUNS: usize = 64;

/// What a call saw when it was sent: [`Served::mark`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServedMark {
    top: u64,
    accepted: u64,
}

impl Served {
    /// Records IDs this node issued as leader.
    pub(crate) fn issued(&self, range: &IdRange) {
        self.top.fetch_max(range.end, Ordering::Relaxed);
    }

    /// Before a call to the leader is sent.
    pub(crate) fn mark(&self) -> ServedMark {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        ServedMark {
            top: self.top.load(Ordering::Relaxed),
            accepted: recent.count,
        }
    }

    /// Accepts `range`, the answer to a call sent at `mark`, or says why not.
    pub(crate) fn accept(&self, mark: ServedMark, range: &IdRange) -> Result<(), String> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if range.start < mark.top {
            return Err(format!(
                "it starts at {}, not above {}, the largest ID this node had served when it asked",
                range.start,
                mark.top - 1
            ));
        }
        let since = recent.count - mark.accepted;
        if since as usize > recent.runs.len() {
            // Too many answers came meanwhile to check against each: above them all.
            let top = self.top.load(Ordering::Relaxed);
            if range.start < top {
                return Err(format!(
                    "it starts at {}, not above {}, the largest ID this node has served",
                    range.start,
                    top - 1
                ));
            }
        } else if let Some((_, s, e)) = recent
            .runs
            .iter()
            .rev()
            .take(since as usize)
            .find(|(_, s, e)| range.start < *e && *s < range.end)
        {
            return Err(format!(
                "its IDs {}..{} overlap {s}..{e}, which this node served meanwhile",
                range.start, range.end
            ));
        }
        recent.count += 1;
        let n = recent.count;
        recent.runs.push_back((n, range.start, range.end));
        if recent.runs.len() > RECENT_RUNS {
            recent.runs.pop_front();
        }
        self.top.fetch_max(range.end, Ordering::Relaxed);
        Ok(())
    }
}

/// What the leader's task and the request side share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) role: watch::Sender<Role>,
    pub(crate) counters: Counters,
    /// The oracle's state after the last batch or save (term 0 when not leading).
    pub(crate) status: Mutex<Option<TsoStatus>>,
    /// The current term's hold on the leader key (its renewals move `valid_until`).
    pub(crate) leadership: Mutex<Option<Arc<snowdrift_store::tso::Leadership>>>,
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

/// One request for the leader's task.
pub(crate) struct Request {
    pub(crate) count: u64,
    pub(crate) reply: oneshot::Sender<Reply>,
}

/// The leader's task's answer.
#[derive(Clone)]
pub(crate) enum Reply {
    /// The IDs, and the term (the leader's etcd lease) they were issued in.
    Issued(IdRange, i64),
    Failed(Error),
    /// The term ended before the request was served: ask again as the new role says.
    NotLeading,
}

/// What a request does, as this node's role says.
enum Step {
    /// Ask this node's task.
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
    /// gRPC calls that carried them (concurrent requests share one).
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

/// One `tso` generator on this node: the handle of its leader's task, and its forwarder.
#[derive(Debug)]
pub struct Tso {
    name: String,
    config: TsoConfig,
    requests: mpsc::Sender<Request>,
    shared: Arc<Shared>,
    /// Requests for the forwarders, while another node leads.
    forwards: mpsc::Sender<Request>,
    stop: watch::Sender<bool>,
    /// The leader's task, until shutdown waits for it.
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// How long a request waits for a leader to be known before it is refused.
    leader_wait: Duration,
}

impl Tso {
    /// Connects to etcd (on `runtime`, the lease keepers' thread, where the renewals will
    /// run, so request handling never delays them) and starts the task of oracle `name`.
    /// Returns before any election: requests wait for one (up to twice the lease).
    pub async fn start(
        name: &str,
        plan: &TsoPlan,
        clock_offset_ms: i64,
        runtime: &tokio::runtime::Handle,
    ) -> Result<Self, snowdrift_store::Error> {
        let etcd = {
            let (url, name) = (plan.url.clone(), name.to_string());
            runtime
                .spawn(async move {
                    snowdrift_store::tso::EtcdTso::connect(&url, NAMESPACE, &name).await
                })
                .await
                .map_err(|e| {
                    snowdrift_store::Error::Unavailable(
                        format!("the lease keepers' thread failed: {e}").into(),
                    )
                })??
        };
        let forwarder = Arc::new(forward::Forwarder::new(plan, clock_offset_ms)?);
        let (requests, queue) = mpsc::channel(QUEUE);
        let (forwards, forward_queue) = mpsc::channel(QUEUE);
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared {
            role: watch::Sender::new(Role::Electing { error: None }),
            counters: Counters::default(),
            status: Mutex::new(None),
            leadership: Mutex::new(None),
            forward_error: Mutex::new(String::new()),
            served: Served::default(),
        });
        let clock = snowdrift_core::clock::OffsetClock::new(
            snowdrift_core::clock::MonotonicClock::new(),
            clock_offset_ms,
        );
        let oracle = snowdrift_core::tso::TimestampOracle::new(plan.oracle, clock)
            .map_err(|e| snowdrift_store::Error::InvalidInput(e.to_string()))?;
        let task = leader::Task {
            name: name.to_string(),
            holder: format!("{} {}", plan.advertise, nonce()),
            advertise: plan.advertise.clone(),
            ttl: plan.ttl,
            margin: plan.margin,
            etcd,
            oracle,
            shared: shared.clone(),
            queue,
            stop: stopped,
            keepers: runtime.clone(),
            group_sizes: metrics::histogram!(
                crate::metrics::TSO_GROUP,
                "generator" => name.to_string()
            ),
        };
        // The serving loop runs where requests are handled: a request then hands over to
        // it without waking another thread (on the keepers' thread, single IDs through the
        // leader ran at 0.42x a snowflake generator's rate). Its lease renewals run on the
        // keepers' thread, so request load never delays them.
        let task = tokio::spawn(task.run());
        // Forwarding is request work: on the runtime that serves requests.
        let forward_queue = Arc::new(tokio::sync::Mutex::new(forward_queue));
        for _ in 0..FORWARDERS {
            tokio::spawn(forward::run(
                forward_queue.clone(),
                forwarder.clone(),
                shared.clone(),
                name.to_string(),
                plan.max_count,
            ));
        }
        Ok(Self {
            name: name.to_string(),
            config: plan.oracle,
            requests,
            shared,
            forwards,
            stop,
            task: Mutex::new(Some(task)),
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
        let mut role = self.shared.role.subscribe();
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
            let leading = matches!(step, Step::Lead);
            let queue = match step {
                Step::Lead => &self.requests,
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
            match answer.await {
                Ok(Reply::Issued(range, term)) => return Ok((range, term)),
                Ok(Reply::Failed(e)) => return Err(e),
                // This node's term ended (its role has changed already: ask again at once),
                // or the leader a forward went to is gone or no longer leads (wait for the
                // election that follows, or for the key to name another node).
                Ok(Reply::NotLeading) if leading => {
                    last_failure = Some("this node's term ended".into());
                }
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
        let role = self.shared.role.borrow().clone();
        let leading = matches!(role, Role::Leader { .. });
        let lease_left = self
            .shared
            .leadership
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|_| leading)
            .map(|l| l.valid_until().saturating_duration_since(Instant::now()));
        TsoReport {
            status: *self.shared.status.lock().unwrap_or_else(|e| e.into_inner()),
            role,
            lease_left,
            terms: c.terms.load(Ordering::Relaxed),
            batches: c.batches.load(Ordering::Relaxed),
            batched_requests: c.batched_requests.load(Ordering::Relaxed),
            window_saves: c.window_saves.load(Ordering::Relaxed),
            forwards: c.forwards.load(Ordering::Relaxed),
            forward_calls: c.forward_calls.load(Ordering::Relaxed),
            forward_errors: c.forward_errors.load(Ordering::Relaxed),
            refused: std::array::from_fn(|i| c.refused[i].load(Ordering::Relaxed)),
            forged_keys: std::array::from_fn(|i| c.forged_keys[i].load(Ordering::Relaxed)),
            keys_replaced: c.keys_replaced.load(Ordering::Relaxed),
        }
    }

    /// Ends the task: a leader stops issuing and gives its leadership up at once (its lease
    /// revoked), so another node takes over without waiting for the lease to run out.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            // The task ends once it has resigned; bounded, as etcd may be away.
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
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
pub use crate::plan::TSO_NAMESPACE as NAMESPACE;

/// A value that tells this process's leadership from an earlier run's on the same address.
fn nonce() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // The start time alone still differs between runs of one address.
        bytes = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64))
        .to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_must_be_above_what_was_served_when_it_was_asked_for() {
        let served = Served::default();
        served.issued(&IdRange::new(100, 110));
        let mark = served.mark();
        let e = served.accept(mark, &IdRange::new(105, 115)).unwrap_err();
        assert!(e.contains("not above 109"), "{e}");
        served.accept(mark, &IdRange::new(110, 120)).unwrap();
        // The same run again, asked for after it was served.
        let e = served
            .accept(served.mark(), &IdRange::new(110, 120))
            .unwrap_err();
        assert!(e.contains("not above 119"), "{e}");
    }

    #[test]
    fn concurrent_answers_may_arrive_in_either_order_but_never_overlap() {
        let served = Served::default();
        // Two calls in flight at once; the leader allocates the first before the second,
        // but the second's answer arrives first.
        let (first, second) = (served.mark(), served.mark());
        served.accept(second, &IdRange::new(20, 30)).unwrap();
        served.accept(first, &IdRange::new(10, 20)).unwrap();
        // A third call, in flight with both, answered with IDs one of them got.
        let third = first;
        let e = served.accept(third, &IdRange::new(25, 35)).unwrap_err();
        assert!(e.contains("overlap 20..30"), "{e}");
        // A call that outlived more answers than are kept must be above them all.
        let old = served.mark();
        for i in 0..RECENT_RUNS as u64 + 1 {
            served
                .accept(served.mark(), &IdRange::new(1000 + i * 10, 1010 + i * 10))
                .unwrap();
        }
        let e = served.accept(old, &IdRange::new(40, 50)).unwrap_err();
        assert!(e.contains("largest ID this node has served"), "{e}");
    }
}
