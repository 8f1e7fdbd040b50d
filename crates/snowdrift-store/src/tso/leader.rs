//! The task of one oracle: campaign on etcd; while leading, serve merged groups of requests
//! from the oracle, save the window ahead of need, renew the lease and stop issuing before
//! it could lapse; while following, watch for the leader's key to go.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use snowdrift_core::clock::Clock;
use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::{Allocation, TimestampOracle, WindowSave};
use tokio::sync::{mpsc, watch};
// The runtime's clock: a server's is the monotonic clock, the simulator's its paused time.
use tokio::time::Instant;

use super::node::{Reply, Request, Shared, lock};
use super::{Campaign, EtcdTso, ForgedKey, GroupObserver, KeyFault, Leadership, OracleError, Role};
use crate::error::Error;

/// How often a leader looks at its lease and window between requests.
const TICK: Duration = Duration::from_millis(50);

/// How long a node waits after a failed campaign (etcd unreachable) before the next.
const RETRY: Duration = Duration::from_millis(500);

/// Everything the task owns.
pub(super) struct Task<C> {
    pub(super) name: String,
    /// The holder name written in the leader key: the advertised URL, a space, a nonce.
    pub(super) holder: String,
    pub(super) advertise: String,
    pub(super) ttl: Duration,
    pub(super) margin: Duration,
    pub(super) etcd: EtcdTso,
    pub(super) oracle: TimestampOracle<C>,
    pub(super) shared: Arc<Shared>,
    pub(super) queue: mpsc::Receiver<Request>,
    pub(super) stop: watch::Receiver<bool>,
    /// The lease keepers' runtime, where renewals run.
    pub(super) keepers: tokio::runtime::Handle,
    /// Told the requests per allocation.
    pub(super) on_group: Option<GroupObserver>,
}

/// How a term ended.
enum TermEnd {
    /// Leadership lost or lapsed: campaign again.
    Lost(String),
    /// Shutdown: resign.
    Stop,
}

impl<C: Clock + 'static> Task<C> {
    pub(super) async fn run(mut self) {
        // A leaseless leader key seen, and since when: once it has stayed unchanged for a
        // whole lease, the next campaign takes it over.
        let mut leaseless: Option<(i64, Instant)> = None;
        while !*self.stop.borrow() {
            let replace = leaseless
                .filter(|(_, since)| since.elapsed() >= self.ttl)
                .map(|(revision, _)| revision);
            let campaign = match replace {
                Some(revision) => {
                    self.etcd
                        .campaign_replacing(&self.holder, self.ttl, self.margin, revision)
                        .await
                }
                None => {
                    self.etcd
                        .campaign(&self.holder, self.ttl, self.margin)
                        .await
                }
            };
            if !matches!(campaign, Ok(Campaign::NotALeader(_))) {
                leaseless = None;
            }
            match campaign {
                Ok(Campaign::Won(leadership)) => {
                    if replace.is_some() {
                        self.shared
                            .counters
                            .keys_replaced
                            .fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            generator = self.name.as_str(),
                            "took over a leader key bound to no lease, which had stayed for \
                             a whole lease (forged, or edited by hand)"
                        );
                    }
                    let leadership = Arc::new(leadership);
                    match self.lead(&leadership).await {
                        TermEnd::Stop => {
                            // `lead` has said Stopped: no request comes here any more.
                            if let Err(e) = leadership.resign().await {
                                tracing::warn!(
                                    generator = self.name.as_str(),
                                    error = %e,
                                    "giving up tso leadership failed; it lapses after its ttl"
                                );
                            }
                            return;
                        }
                        TermEnd::Lost(why) => {
                            tracing::warn!(
                                generator = self.name.as_str(),
                                reason = why.as_str(),
                                "tso leadership ended; campaigning again"
                            );
                            self.set_role(Role::Electing { error: Some(why) });
                        }
                    }
                }
                Ok(Campaign::Lost { leader: key }) => {
                    let leader = leader_url(&key.holder);
                    if leader == self.advertise {
                        // A term of this node that ended here (its lease not renewed in
                        // time), or an earlier run on this address: not a leader to forward to.
                        self.set_role(Role::Electing {
                            error: Some(format!(
                                "the leader key still names this node ({leader}) from a term \
                                 that ended or an earlier run; it lapses within {:?}",
                                self.ttl
                            )),
                        });
                    } else {
                        self.set_role(Role::Follower {
                            leader,
                            term: key.term,
                        });
                    }
                    self.follow(key.mod_revision).await;
                }
                Ok(Campaign::NotALeader(forged)) => {
                    self.forged(&forged, &mut leaseless);
                    self.follow(forged.mod_revision).await;
                }
                Err(e) => {
                    self.set_role(Role::Electing {
                        error: Some(e.to_string()),
                    });
                    self.pause(RETRY).await;
                }
            }
        }
        self.set_role(Role::Stopped);
    }

    /// Says that the leader key is no election's (the role, a metric, the log), and
    /// notes since when a leaseless one has stayed.
    fn forged(&self, forged: &ForgedKey, leaseless: &mut Option<(i64, Instant)>) {
        self.shared.counters.forged_keys[forged.fault.index()].fetch_add(1, Ordering::Relaxed);
        let mut why = forged.to_string();
        if forged.fault == KeyFault::NoLease {
            let since = match *leaseless {
                Some((revision, since)) if revision == forged.mod_revision => since,
                _ => Instant::now(),
            };
            *leaseless = Some((forged.mod_revision, since));
            why.push_str(&format!(
                "; the nodes take it over once it has stayed for the lease ({:?}), when \
                 any leader it replaced has stopped",
                self.ttl
            ));
        }
        tracing::warn!(
            generator = self.name.as_str(),
            fault = forged.fault.label(),
            "{why}"
        );
        self.set_role(Role::Electing { error: Some(why) });
    }

    /// Waits while the leader key stays as it was at `mod_revision` (another node leads, or
    /// a key no campaign wrote is there): until it changes, the lease's length passes (a
    /// fresh campaign then also learns a leader that changed under a lost watch), or stop.
    async fn follow(&mut self, mod_revision: i64) {
        let etcd = self.etcd.clone();
        let vacancy = async move {
            if etcd.wait_for_change(mod_revision).await.is_err() {
                // etcd away: do not spin on campaigns that fail at once.
                tokio::time::sleep(RETRY).await;
            }
        };
        let mut stop = self.stop.clone();
        // Polled in order, not at random: the simulator replays a run from its seed.
        tokio::select! {
            biased;
            () = vacancy => {}
            () = tokio::time::sleep(self.ttl) => {}
            () = stopped(&mut stop) => {}
        }
    }

    async fn pause(&mut self, d: Duration) {
        let mut stop = self.stop.clone();
        tokio::select! {
            biased;
            () = tokio::time::sleep(d) => {}
            () = stopped(&mut stop) => {}
        }
    }

    /// Serves one term, until leadership is lost or stop.
    async fn lead(&mut self, leadership: &Arc<Leadership>) -> TermEnd {
        let term = self.oracle.start_term(leadership.previous_window_ms());
        self.shared.counters.terms.fetch_add(1, Ordering::Relaxed);
        *lock(&self.shared.leadership) = Some(leadership.clone());
        tracing::info!(
            generator = self.name.as_str(),
            term,
            previous_window_ms = leadership.previous_window_ms(),
            "leading the timestamp oracle"
        );
        // Renewals run beside the requests, on the keepers' thread: a slow etcd never delays
        // an allocation, and request load never delays a renewal.
        let (lost_tx, mut lost) = watch::channel(None::<String>);
        let renewer = crate::task::spawn_on(
            &self.keepers,
            renew(leadership.clone(), self.ttl, self.margin, lost_tx),
        );
        // Saves ahead of need run beside the requests too; one at a time.
        let (saved_tx, mut saved) = mpsc::channel::<(WindowSave, Result<(), String>)>(1);
        let mut saving = false;
        // The first window is saved before the role says Leader: requests then never wait
        // for it.
        let end = match self.first_save(leadership).await {
            Ok(()) => {
                self.set_role(Role::Leader { term });
                self.publish_status();
                let mut tick = tokio::time::interval(TICK);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut stop = self.stop.clone();
                loop {
                    tokio::select! {
                        biased;
                        () = stopped(&mut stop) => break TermEnd::Stop,
                        _ = lost.changed() => {
                            let why = lost.borrow().clone().unwrap_or_default();
                            break TermEnd::Lost(why);
                        }
                        Some((save, result)) = saved.recv() => {
                            saving = false;
                            match result {
                                Ok(()) => {
                                    if let Err(why) = self.window_saved(save) {
                                        break TermEnd::Lost(why);
                                    }
                                }
                                Err(e) => tracing::warn!(
                                    generator = self.name.as_str(),
                                    error = e.as_str(),
                                    "saving the tso window ahead failed; trying again"
                                ),
                            }
                        }
                        Some(first) = self.queue.recv() => {
                            if let Err(why) = self.serve(first, leadership).await {
                                break TermEnd::Lost(why);
                            }
                        }
                        _ = tick.tick() => {
                            if !leadership.is_valid() {
                                break TermEnd::Lost(format!(
                                    "the lease was not renewed in time (it lets this node \
                                     issue until {:?} before etcd could expire it)",
                                    self.margin
                                ));
                            }
                        }
                    }
                    if !saving && let Some(save) = self.oracle.window_wanted() {
                        saving = true;
                        let (l, tx) = (leadership.clone(), saved_tx.clone());
                        crate::task::spawn(async move {
                            let result = l
                                .save_window(save.up_to_ms)
                                .await
                                .map_err(|e| e.to_string());
                            let _ = tx.send((save, result)).await;
                        });
                    }
                    self.publish_status();
                }
            }
            // Stopped while the first save was retried: still resign.
            Err(_) if *self.stop.borrow() => TermEnd::Stop,
            Err(why) => TermEnd::Lost(why),
        };
        renewer.abort();
        self.oracle.end_term();
        // The role changes before the queue is drained, so a request told NotLeading finds
        // the new role when it looks.
        self.set_role(match end {
            TermEnd::Lost(_) => Role::Electing { error: None },
            TermEnd::Stop => Role::Stopped,
        });
        *lock(&self.shared.leadership) = None;
        while let Ok(r) = self.queue.try_recv() {
            let _ = r.reply.send(Reply::NotLeading);
        }
        self.publish_status();
        end
    }

    /// Saves the term's first window, retrying while the lease allows. One save is
    /// enough: the serving loop saves ahead of need from then on (when etcd took longer to
    /// answer than half the window, waiting here until a save left half of it had the
    /// leader save forever and never serve).
    async fn first_save(&mut self, leadership: &Leadership) -> Result<(), String> {
        loop {
            let Some(save) = self.oracle.window_wanted() else {
                return Ok(());
            };
            if !leadership.is_valid() {
                return Err("the lease ran out before the first window was saved".into());
            }
            match leadership.save_window(save.up_to_ms).await {
                Ok(()) => return self.window_saved(save),
                Err(e @ Error::LeadershipLost { .. }) => return Err(e.to_string()),
                Err(e) => {
                    tracing::warn!(generator = self.name.as_str(), error = %e, "saving the tso window failed; retrying");
                    self.pause(RETRY).await;
                    if *self.stop.borrow() {
                        return Err("stopping".into());
                    }
                }
            }
        }
    }

    /// Serves `first` and every request already waiting behind it with one allocation (PD's
    /// batching), as far as one millisecond's logical values reach (a request that would
    /// pass it starts the next group). `Err` when leadership is gone (each request then
    /// told so).
    async fn serve(&mut self, first: Request, leadership: &Leadership) -> Result<(), String> {
        let capacity = self.oracle.config().logical_capacity();
        let mut next = Some(first);
        while let Some(first) = next.take() {
            let mut total = first.count;
            let mut group = vec![first];
            while let Ok(r) = self.queue.try_recv() {
                if total + r.count > capacity {
                    next = Some(r);
                    break;
                }
                total += r.count;
                group.push(r);
            }
            match self.allocate(total, leadership).await {
                Ok(range) => {
                    let c = &self.shared.counters;
                    c.batches.fetch_add(1, Ordering::Relaxed);
                    c.batched_requests
                        .fetch_add(group.len() as u64, Ordering::Relaxed);
                    if let Some(observe) = &self.on_group {
                        observe(group.len());
                    }
                    let term = leadership.term();
                    let mut at = 0;
                    for r in group {
                        let _ = r
                            .reply
                            .send(Reply::Issued(range.slice(at, at + r.count), term));
                        at += r.count;
                    }
                }
                Err(Stop::Failed(e)) => {
                    for r in group {
                        let _ = r.reply.send(Reply::Failed(e.clone()));
                    }
                }
                Err(Stop::Lost(why)) => {
                    for r in group.into_iter().chain(next) {
                        let _ = r.reply.send(Reply::NotLeading);
                    }
                    return Err(why);
                }
            }
        }
        Ok(())
    }

    /// One allocation of `count`: the window saved first when the oracle asks, a wait
    /// when the millisecond is full. Fenced: nothing is allocated once the lease no longer
    /// lets this node issue.
    async fn allocate(&mut self, count: u64, leadership: &Leadership) -> Result<IdRange, Stop> {
        loop {
            if !leadership.is_valid() {
                return Err(Stop::Lost(
                    "the lease was not renewed in time to issue".into(),
                ));
            }
            match self.oracle.allocate(count) {
                Ok(Allocation::Issued(range)) => return Ok(range),
                Ok(Allocation::SaveWindow(save)) => {
                    match leadership.save_window(save.up_to_ms).await {
                        Ok(()) => self.window_saved(save).map_err(Stop::Lost)?,
                        Err(e @ Error::LeadershipLost { .. }) => {
                            return Err(Stop::Lost(e.to_string()));
                        }
                        Err(e) => {
                            return Err(Stop::Failed(OracleError::WindowSave {
                                name: self.name.clone(),
                                source: Arc::new(e),
                            }));
                        }
                    }
                }
                Ok(Allocation::Wait { until_ms }) => {
                    let now = self.oracle.clock().now_ms();
                    let wait = Duration::from_millis(until_ms.saturating_sub(now).clamp(1, 2));
                    tokio::time::sleep(wait).await;
                }
                Err(e) => return Err(Stop::Failed(OracleError::Oracle(e))),
            }
        }
    }

    /// Counts a save that etcd confirmed and lets the oracle use it; `Err` when its term
    /// has ended meanwhile.
    fn window_saved(&mut self, save: WindowSave) -> Result<(), String> {
        self.shared
            .counters
            .window_saves
            .fetch_add(1, Ordering::Relaxed);
        self.oracle.window_saved(save).map_err(|e| e.to_string())
    }

    fn set_role(&self, role: Role) {
        self.shared.role.send_replace(role);
    }

    fn publish_status(&self) {
        *lock(&self.shared.status) = Some(self.oracle.status());
    }
}

/// Why an allocation stopped.
enum Stop {
    /// The request fails; the term goes on.
    Failed(OracleError),
    /// The term is over.
    Lost(String),
}

/// Renews the lease every third of its ttl until it is lost (then says why on `lost`).
/// Renewals start a third of the ttl after the previous successful one was *sent*, not
/// after it was answered: when etcd answers slowly (a loaded machine), waiting a third
/// after each slow answer let the validity (`ttl - margin` from when a renewal is sent) run
/// out between two renewals that each succeeded, and leadership moved although nothing had
/// failed (with etcd answering 1 s late and a 5 s lease, every term ended). An attempt that has
/// not answered by the time the next is due is dropped and the next sent, so one stuck
/// call (etcd's client waits 5 s) cannot hold renewals up. A renewal that fails for want
/// of etcd is tried again after a tick; the serving loop stops issuing by itself when
/// `valid_until` passes.
async fn renew(
    leadership: Arc<Leadership>,
    ttl: Duration,
    margin: Duration,
    lost: watch::Sender<Option<String>>,
) {
    let period = ttl / 3;
    let validity = ttl - margin;
    let mut retry_at = Instant::now();
    loop {
        // A third of the ttl after the last renewal that succeeded was sent (at first, the
        // grant: a campaign and a first save that took long leave less of it).
        let last_sent = leadership.valid_until() - validity;
        tokio::time::sleep_until((last_sent + period).max(retry_at)).await;
        match tokio::time::timeout(period, leadership.renew()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e @ Error::LeadershipLost { .. })) => {
                let _ = lost.send(Some(e.to_string()));
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "renewing the tso leader lease failed; retrying");
                retry_at = Instant::now() + TICK;
            }
            Err(_) => {
                tracing::warn!(
                    timeout = ?period,
                    "renewing the tso leader lease got no answer in time; sending another"
                );
                retry_at = Instant::now();
            }
        }
    }
}

/// Returns once `stop` says true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`; it must not live across the select.
    let _ = stop.wait_for(|s| *s).await.map(|_| ());
}

/// The URL in a holder name (`URL NONCE`).
fn leader_url(holder: &str) -> String {
    holder.split(' ').next().unwrap_or(holder).to_string()
}
