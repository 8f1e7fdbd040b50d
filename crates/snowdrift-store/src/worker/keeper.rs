//! The lease keeper: claims a worker ID and opens the fence only after the mark is durable,
//! then renews, extends the mark, checks clocks and regains a lost ID, in one task.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use snowdrift_core::clock::Clock;
use snowdrift_core::generator::{ClosedReason, OnBackward};
use snowdrift_core::layout::migrate;

use super::WorkerSource;
use super::mark::{MAX_EXTENSION, Mark};
use super::mistakes::{Mistake, planted};
use super::node::{Epoch, Shared, lock, ms, new_epoch, read};
use super::status::{PeerOffset, WorkerState};
use crate::error::{Error, Result};

/// The lease as the keeper tracks it.
#[derive(Debug)]
pub(super) struct Held {
    pub worker_id: u64,
    /// When the latest successful renewal (or the claim) was sent, on the node's clock
    /// (for the fence deadline) and on the runtime's clock (for scheduling the next one,
    /// so a clock that stands still or jumps cannot stop renewals).
    pub sent_ms: u64,
    pub sent_at: Instant,
    /// `sent_ms + ttl - margin`.
    pub deadline_ms: u64,
    /// The lease is gone; the fence is closed until an ID is regained.
    pub lost: bool,
    /// The clock is behind a peer's; the fence is closed until it catches up.
    pub clock_behind: bool,
    pub last_publish: Option<Instant>,
}

impl<C: Clock + Clone + 'static> Shared<C> {
    /// Runs one coordinator call with the configured timeout.
    async fn call<T>(&self, what: &str, f: impl Future<Output = Result<T>>) -> Result<T> {
        let limit = self.config.op_timeout();
        match tokio::time::timeout(limit, f).await {
            Ok(r) => r,
            Err(_) => Err(Error::Unavailable(
                format!(
                    "{what} on the {} coordinator got no answer within {limit:?}",
                    self.registry.backend()
                )
                .into(),
            )),
        }
    }

    /// How often the lease is renewed: a third of the TTL, or more often when the registry
    /// needs it (a file registry proves its lock files are still in place).
    fn renew_every(&self) -> Duration {
        let every = self.config.renew_every();
        self.registry.check_every().map_or(every, |c| c.min(every))
    }

    /// When issuing stops unless a later renewal succeeds: `ttl - margin` after it was
    /// sent, or sooner when the registry says so (a file registry's proof).
    fn deadline(&self, sent_ms: u64) -> u64 {
        let lease = ms(self.config.ttl) - ms(self.config.margin());
        let valid = self
            .registry
            .proof_valid()
            .map_or(lease, |v| ms(v).min(lease));
        sent_ms.saturating_add(valid)
    }

    fn note_error(&self, e: &Error) {
        lock(&self.status).last_error = Some(e.to_string());
    }

    fn set_state(&self, state: WorkerState) {
        lock(&self.status).state = state;
    }

    /// Claims the ID the source names (or a free one, preferring one whose mark this
    /// clock has passed, so a restart need not wait for the ID a killed node just left);
    /// returns it with the time the claim was sent.
    async fn claim(&self) -> Result<(u64, u64, Instant)> {
        let ttl = self.config.ttl;
        let sent_at = Instant::now();
        let sent = self.clock.now_ms();
        let id = match self.config.source.resolve_in(
            self.builder.layout(),
            &self.config.split,
            &self.hostname,
        )? {
            None => {
                self.call(
                    "claiming a worker ID",
                    self.registry
                        .claim_ready(self.space, &self.holder, ttl, sent),
                )
                .await?
            }
            Some(id) => {
                self.call(
                    "claiming a worker ID",
                    self.registry.claim(id, &self.holder, ttl),
                )
                .await?;
                id
            }
        };
        Ok((id, sent, sent_at))
    }

    /// Publishes this node's clock and compares it with the live peers'. Returns how far
    /// behind the furthest peer this clock is for certain (0 if not behind).
    async fn check_clocks(&self, worker_id: u64) -> Result<(Duration, Option<PeerOffset>)> {
        let now = self.clock.now_ms();
        self.call(
            "publishing the clock",
            self.registry.publish_time(worker_id, &self.holder, now),
        )
        .await?;
        let peers = self
            .call(
                "reading the peers' clocks",
                self.registry.peer_clocks(&self.holder),
            )
            .await?;
        let now = self.clock.now_ms();
        let offsets: Vec<PeerOffset> = peers
            .into_vec()
            .into_iter()
            .map(|p| PeerOffset {
                worker_id: p.worker_id,
                holder: p.holder,
                ahead_ms: i64::try_from(i128::from(p.time_ms) - i128::from(now))
                    .unwrap_or(i64::MAX),
            })
            .collect();
        let worst = offsets.iter().max_by_key(|p| p.ahead_ms).cloned();
        let behind = worst
            .as_ref()
            .map_or(0, |p| u64::try_from(p.ahead_ms).unwrap_or(0));
        // A report can be up to one interval old, so a peer that seems ahead by more than
        // that may only have stopped reporting (frozen, about to expire): a warning, not a
        // refusal.
        let slack = ms(self.config.publish_every) + ms(self.config.clock_bound);
        for p in offsets.iter().filter(|p| p.ahead_ms < 0) {
            if p.ahead_ms.unsigned_abs() > slack {
                tracing::warn!(
                    peer = %p.holder,
                    peer_worker_id = p.worker_id,
                    behind_ms = p.ahead_ms.unsigned_abs(),
                    "a peer's clock report is far behind this node's clock (its clock is behind, or it stopped reporting)"
                );
            }
        }
        lock(&self.status).peers = offsets;
        Ok((Duration::from_millis(behind), worst))
    }

    /// After a claim: reads the ID's high-water mark and returns the mark to wait for and
    /// the extension value to issue under. With a `bound` (the first claim), a mark
    /// further ahead of the clock than the bound moves to the next extension value when the
    /// policy and the layout allow, and is refused otherwise.
    async fn read_mark(&self, worker_id: u64, bound: Option<Duration>) -> Result<(Mark, bool)> {
        self.set_state(WorkerState::WaitingForMark);
        lock(&self.status).worker_id = Some(worker_id);
        let stored = self
            .call(
                "reading the high-water mark",
                self.registry.read_mark(worker_id),
            )
            .await?;
        let now = self.clock.now_ms();
        let mark = match stored {
            Some(stored) => Mark::from_stored(stored),
            // No lock and no mark: maybe deleted under a live holder. The registry waited
            // until it stopped; its IDs may lie up to a lead ahead of its clock then.
            None if self.registry.created_lock(worker_id) => Mark {
                extension: 0,
                ms: now.saturating_add(ms(self.builder.lead_bound())),
            },
            None => Mark::from_stored(0),
        };
        let record_layout = if planted(Mistake::IgnoreLayoutChecks) {
            true
        } else {
            let record = self
                .check_layout(worker_id, stored.map(Mark::from_stored), now)
                .await?;
            self.check_live_layouts(worker_id, mark, now).await?;
            record
        };
        let policy = self.builder.backward_policy();
        let bound = bound.map(|b| match policy {
            // Only the window the last holder wrote ahead of its clock is waited out.
            OnBackward::Refuse => b.min(self.config.window),
            _ => b,
        });
        if let Some(bound) = bound
            && mark.ms > now.saturating_add(ms(bound))
        {
            let ext_max = self.ext_max().min(MAX_EXTENSION);
            if policy == OnBackward::Extension && mark.extension < ext_max {
                let next = Mark {
                    extension: mark.extension + 1,
                    ms: now,
                };
                tracing::warn!(
                    worker_id,
                    behind_ms = mark.ms - now,
                    extension = next.extension,
                    extension_values_left = ext_max - next.extension,
                    "the clock is behind the worker ID's high-water mark by more than the wait bound; issuing at once under the next extension value"
                );
                return Ok((next, record_layout));
            }
            let advice = match policy {
                OnBackward::Extension if ext_max == 0 => {
                    "the layout has no extension field (add ext:N to take the next extension value instead of refusing). Fix the clock (NTP), wait and restart, or raise backward_wait".to_string()
                }
                OnBackward::Extension => format!(
                    "every extension value (0..={ext_max}) is used. Fix the clock (NTP) and wait until it passes the mark, or move to a new layout"
                ),
                OnBackward::Wait => "on_backward = \"wait\". Fix the clock (NTP), wait and restart, raise backward_wait, or use on_backward = \"extension\" with an extension field".to_string(),
                _ => "on_backward = \"refuse\" waits only for the window the last holder wrote ahead. Fix the clock (NTP), wait and restart".to_string(),
            };
            return Err(Error::MarkAhead {
                worker_id,
                mark_ms: mark.ms,
                now_ms: now,
                gap: Duration::from_millis(mark.ms - now),
                bound,
                advice,
            });
        }
        if mark.ms > now {
            tracing::info!(
                worker_id,
                wait_ms = mark.ms - now,
                "waiting for the clock to pass the worker ID's high-water mark"
            );
        }
        Ok((mark, record_layout))
    }

    /// Compares the layout recorded beside the worker ID's mark with this node's. Refuses a
    /// switch whose first IDs would not be above every ID the recorded layout can have
    /// issued up to the mark ([`Error::LayoutSwitchUnsafe`]); returns whether this node's
    /// layout must be recorded before its first ID (none is recorded yet, or it changed).
    async fn check_layout(&self, worker_id: u64, mark: Option<Mark>, now: u64) -> Result<bool> {
        let new = self.builder.layout();
        let current = migrate::record(new);
        let recorded = self
            .call(
                "reading the layout recorded with the high-water mark",
                self.registry.read_layout(worker_id),
            )
            .await?;
        let (recorded, mark) = match (recorded, mark) {
            (Some(r), _) if r == current => return Ok(false),
            // Nothing recorded (a first start, or marks of an older version, which knew
            // no layouts), or no ID issued under the recorded one: record this node's.
            (None, _) | (_, None) => return Ok(true),
            (Some(r), Some(mark)) => (r, mark),
        };
        let old = migrate::parse_record(&recorded)
            .map_err(|e| Error::InvalidInput(format!("worker ID {worker_id}: {e}")))?;
        let start = now.max(mark.ms);
        let new_ext = if new.extension_bits() > 0 {
            mark.extension
        } else {
            0
        };
        let old_last = migrate::largest_until(&old, mark.extension, mark.ms);
        let new_first = migrate::smallest_at(new, new_ext, start);
        let above = match (new_first, old_last) {
            (Some(n), Some(o)) => n > o,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !above {
            let args = |l: &snowdrift_core::layout::Layout| {
                format!(
                    "{} --{{}}-unit {}ms --{{}}-epoch {}",
                    migrate::spec(l),
                    l.unit_ms(),
                    l.epoch_ms()
                )
            };
            let side = |l, which: &str| args(l).replace("{}", which);
            return Err(Error::LayoutSwitchUnsafe(Box::new(
                crate::error::LayoutSwitch {
                    worker_id,
                    mark: snowdrift_core::layout::format_ms(mark.ms),
                    old: recorded,
                    new: current,
                    new_first: new_first.map_or("none (the layout cannot issue now)".into(), |v| {
                        v.to_string()
                    }),
                    old_last: old_last.map_or("none".into(), |v| v.to_string()),
                    command: format!(
                        "snowdrift layout migrate --from {} --to {}{}",
                        side(&old, "from"),
                        side(new, "to"),
                        if mark.extension > 0 {
                            format!(" --extension {}", mark.extension)
                        } else {
                            String::new()
                        }
                    ),
                },
            )));
        }
        let check = migrate::check(&old, mark.extension, new, start);
        match check.verdict {
            migrate::Verdict::Safe => tracing::info!(
                worker_id,
                old = %recorded,
                new = %current,
                "the layout changed since the worker ID's high-water mark; the new layout's IDs stay above every ID the old one can issue"
            ),
            migrate::Verdict::SafeIfOldStopsBy(by) => tracing::warn!(
                worker_id,
                old = %recorded,
                new = %current,
                old_must_stop_by = %snowdrift_core::layout::format_ms(by),
                "the layout changed since the worker ID's high-water mark; this node's IDs are above every ID the old layout issued so far, but nodes still issuing under the old layout must move before old_must_stop_by"
            ),
            migrate::Verdict::Unsafe => tracing::warn!(
                worker_id,
                old = %recorded,
                new = %current,
                "the layout changed since the worker ID's high-water mark; this node's IDs are above every ID the old layout issued with this worker ID up to the mark, but a node still issuing under the old layout (or one that did after this mark) issues IDs above this node's: move every node (`snowdrift layout migrate` shows when that is safe)"
            ),
        }
        Ok(true)
    }

    /// Compares this node's layout with the one each live peer recorded: a node still issuing
    /// under another layout may go on doing so for as long as the move takes, and node and
    /// sequence bits in other places let another worker ID make the same 64 bits. Refuses
    /// ([`Error::LayoutPeerUnsafe`]) unless one side's IDs stay above everything the other
    /// can issue for at least [`migrate::DEFAULT_ROLLOUT_MS`]: this node's from its start,
    /// or (this node being the one still on the old layout) the peer's from its claim.
    async fn check_live_layouts(&self, worker_id: u64, mark: Mark, now: u64) -> Result<()> {
        let new = self.builder.layout();
        let current = migrate::record(new);
        let peers = self
            .call("listing the live worker IDs", self.registry.list_brief())
            .await?
            .entries;
        let start = now.max(mark.ms);
        let rollout = migrate::DEFAULT_ROLLOUT_MS;
        for mut peer in peers {
            if peer.holder == self.holder {
                continue;
            }
            // The listing lists what it cannot read with a problem; this check reads such a
            // peer's layout and mark again as the node reads its own, refusing what does not
            // parse, rather than take a part it could not read for none.
            if peer.problem.is_some() {
                peer.layout = self
                    .call(
                        "reading a peer's layout",
                        self.registry.read_layout(peer.worker_id),
                    )
                    .await?;
                if peer.layout.as_deref().is_some_and(|l| l != current) {
                    peer.mark = self
                        .call(
                            "reading a peer's mark",
                            self.registry.read_mark(peer.worker_id),
                        )
                        .await?;
                }
            }
            let Some(recorded) = peer.layout.as_deref() else {
                continue;
            };
            if recorded == current {
                continue;
            }
            let theirs = migrate::parse_record(recorded).map_err(|e| {
                Error::InvalidInput(format!(
                    "worker ID {} ({}): {e}",
                    peer.worker_id, peer.holder
                ))
            })?;
            let their_ext = peer.mark.map_or(0, |m| Mark::from_stored(m).extension);
            // This node the new layout, the peer still on the old one.
            let above = migrate::check(&theirs, their_ext, new, start);
            // This node the one still on the old layout, the peer moved at its claim.
            let below = peer
                .since_ms
                .map(|since| migrate::check(new, mark.extension, &theirs, since));
            let deadline = |m: &migrate::Migration| match m.verdict {
                migrate::Verdict::Safe => Some(None),
                migrate::Verdict::SafeIfOldStopsBy(by) if by > start.saturating_add(rollout) => {
                    Some(Some(by))
                }
                _ => None,
            };
            let (role, by) = match (deadline(&above), below.as_ref().and_then(deadline)) {
                (Some(by), _) => ("the new layout", by),
                (None, Some(by)) => ("the old layout", by),
                (None, None) => {
                    let args = |l: &snowdrift_core::layout::Layout, which: &str| {
                        format!(
                            "--{which} {} --{which}-unit {}ms --{which}-epoch {}",
                            migrate::spec(l),
                            l.unit_ms(),
                            l.epoch_ms()
                        )
                    };
                    return Err(Error::LayoutPeerUnsafe(Box::new(crate::error::LayoutPeer {
                        worker_id,
                        peer_worker_id: peer.worker_id,
                        peer: peer.holder,
                        peer_layout: recorded.to_string(),
                        layout: current,
                        why: match above.verdict {
                            migrate::Verdict::SafeIfOldStopsBy(by) => format!(
                                "the peer's IDs reach this node's first ones at {}, less than {} after this start",
                                snowdrift_core::layout::format_ms(by),
                                jiff::SignedDuration::from_millis(rollout as i64)
                            ),
                            _ => "this node's first IDs would not be above the IDs the peer can issue".into(),
                        },
                        command: format!(
                            "snowdrift layout migrate {} {}{}",
                            args(&theirs, "from"),
                            args(new, "to"),
                            if their_ext > 0 {
                                format!(" --extension {their_ext}")
                            } else {
                                String::new()
                            }
                        ),
                    })));
                }
            };
            tracing::warn!(
                worker_id,
                peer = %peer.holder,
                peer_worker_id = peer.worker_id,
                peer_layout = %recorded,
                layout = %current,
                this_node_runs = role,
                move_every_node_before = %by.map_or("no deadline".into(), snowdrift_core::layout::format_ms),
                "a live peer issues under another layout: the IDs of the two stay apart if every node runs the new layout before move_every_node_before"
            );
        }
        Ok(())
    }

    /// The largest extension value of the layout (0 without an extension field).
    fn ext_max(&self) -> u64 {
        snowdrift_core::layout::mask(self.builder.layout().extension_bits())
    }

    /// After the mark is read: waits until the clock passes it (renewing the lease
    /// meanwhile), writes the next mark, and opens a new epoch's fence.
    async fn enter(&self, claimed: Claimed) -> Result<Held> {
        let Claimed {
            worker_id,
            mut sent_ms,
            mut sent_at,
            mark,
            record_layout,
        } = claimed;
        let renew_every = self.renew_every();
        let mark = if planted(Mistake::ForgetClockBackOnRestart) {
            Mark { ms: 0, ..mark }
        } else {
            mark
        };
        loop {
            let now = self.clock.now_ms();
            // Also once the mark is passed: a claim may have taken longer than a renewal
            // period (a file registry's claim waits out an earlier holder), and the fence
            // opens until a deadline counted from the latest renewal.
            if now >= mark.ms && sent_at.elapsed() < renew_every {
                break;
            }
            if now < mark.ms {
                let left = Duration::from_millis(mark.ms - now);
                tokio::time::sleep(left.min(renew_every)).await;
            }
            if sent_at.elapsed() >= renew_every {
                let (at, now_ms) = (Instant::now(), self.clock.now_ms());
                self.call(
                    "renewing the lease",
                    self.registry
                        .renew(worker_id, &self.holder, self.config.ttl),
                )
                .await?;
                (sent_ms, sent_at) = (now_ms, at);
                lock(&self.status).renewals += 1;
            }
        }
        let number = read(&self.current).number() + 1;
        let epoch = new_epoch(self, number, worker_id, mark.extension)?;
        let new_mark = self
            .clock
            .now_ms()
            .max(mark.ms)
            .saturating_add(ms(self.config.window));
        if record_layout {
            // Durable before the first ID too: a later start under another layout is
            // checked against it.
            self.call(
                "recording the layout beside the high-water mark",
                self.registry.write_layout(
                    worker_id,
                    &self.holder,
                    &migrate::record(self.builder.layout()),
                ),
            )
            .await?;
        }
        // Durable before the first ID of the window: a restart waits past it, or moves
        // above its extension value.
        if !planted(Mistake::SkipMarkWriteAhead) {
            self.call(
                "writing the high-water mark",
                self.registry.write_mark(
                    worker_id,
                    &self.holder,
                    Mark {
                        extension: mark.extension,
                        ms: new_mark,
                    }
                    .stored(),
                ),
            )
            .await?;
        }
        epoch.fence().extend_window(new_mark);
        let deadline_ms = self.deadline(sent_ms);
        epoch.fence().open_until(deadline_ms);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(epoch);
        {
            let mut s = lock(&self.status);
            s.state = WorkerState::Issuing;
            s.deadline_ms = deadline_ms;
            s.last_error = None;
        }
        Ok(Held {
            worker_id,
            sent_ms,
            sent_at,
            deadline_ms,
            lost: false,
            clock_behind: false,
            last_publish: None,
        })
    }
}

/// A worker ID claimed and its high-water mark read, not yet entered.
#[derive(Debug, Clone, Copy)]
pub(super) struct Claimed {
    pub worker_id: u64,
    /// When the claim was sent (see [`Held`]).
    pub sent_ms: u64,
    pub sent_at: Instant,
    /// The ID's high-water mark: no ID may be issued at or before it under its extension
    /// value, nor under a lower one.
    pub mark: Mark,
    /// This node's layout is to be recorded beside the mark before its first ID.
    pub record_layout: bool,
}

/// What a claim or an entry that fails after the claim does with the worker ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnFailure {
    /// Releases it: the caller gives up and returns the error (a start), so whoever claims
    /// the ID next is another holder.
    Release,
    /// Leaves it, unrenewed, to expire: the keeper is about to claim again as the same
    /// holder, and a release sent now may arrive after that claim (a request given up for
    /// lost is still in flight, or sits on a connection given up for dead) and free the ID
    /// under the new epoch. The simulator's seeds 204 and 237 on Redis issued without the
    /// lease so; every registry's release names only the holder, so every one could.
    Keep,
}

/// Claims an ID and reads its mark: for the first epoch (`first`) with the start-up checks
/// (clocks against the peers', the mark within `max_mark_wait`). On failure the ID is
/// released or kept as `on_failure` says.
pub(super) async fn claim<C: Clock + Clone + 'static>(
    shared: &Shared<C>,
    first: bool,
    on_failure: OnFailure,
) -> Result<Claimed> {
    let (worker_id, sent_ms, sent_at) =
        shared.claim().await.map_err(|e| explain_claim(shared, e))?;
    let result = async {
        if first {
            let (behind, worst) = shared.check_clocks(worker_id).await?;
            if behind > shared.config.clock_bound
                && let Some(peer) = worst
            {
                return Err(Error::ClockBehindPeers {
                    peer: peer.holder,
                    peer_worker_id: peer.worker_id,
                    behind,
                    bound: shared.config.clock_bound,
                });
            }
        }
        let bound = first.then_some(shared.config.max_mark_wait);
        shared.read_mark(worker_id, bound).await
    }
    .await;
    match result {
        Ok((mark, record_layout)) => Ok(Claimed {
            worker_id,
            sent_ms,
            sent_at,
            mark,
            record_layout,
        }),
        Err(e) => {
            if on_failure == OnFailure::Release {
                release(shared, worker_id).await;
            }
            Err(e)
        }
    }
}

/// Waits out a claimed ID's mark and opens its epoch. On failure the ID is released or
/// kept as `on_failure` says.
pub(super) async fn enter<C: Clock + Clone + 'static>(
    shared: &Shared<C>,
    claimed: Claimed,
    first: bool,
    on_failure: OnFailure,
) -> Result<Held> {
    match shared.enter(claimed).await {
        Ok(mut held) => {
            if first {
                held.last_publish = Some(Instant::now());
            }
            Ok(held)
        }
        Err(e) => {
            if on_failure == OnFailure::Release {
                release(shared, claimed.worker_id).await;
            }
            Err(e)
        }
    }
}

/// Claims an ID and opens the first (`first`: with the start-up checks and bounds) or a
/// later epoch. On failure after the claim, the ID is released or kept as `on_failure` says.
pub(super) async fn acquire<C: Clock + Clone + 'static>(
    shared: &Shared<C>,
    first: bool,
    on_failure: OnFailure,
) -> Result<Held> {
    let claimed = claim(shared, first, on_failure).await?;
    enter(shared, claimed, first, on_failure).await
}

async fn release<C: Clock + Clone + 'static>(shared: &Shared<C>, worker_id: u64) {
    let _ = shared
        .call(
            "releasing the worker ID",
            shared.registry.release(worker_id, &shared.holder),
        )
        .await;
}

/// Names both nodes and this node's source when the ID it was given (static or derived,
/// not picked by the registry) is held by another.
fn explain_claim<C: Clock + Clone + 'static>(shared: &Shared<C>, e: Error) -> Error {
    match e {
        Error::WorkerTaken { worker_id, holder }
            if shared.config.source != WorkerSource::Lowest =>
        {
            Error::WorkerCollision {
                worker_id,
                holder,
                this: shared.holder.clone(),
                source_desc: shared.config.source.describe(),
            }
        }
        other => other,
    }
}

/// The keeper task of a node started with [`WorkerNode::claim`](super::WorkerNode::claim):
/// first waits out the claimed ID's mark (a stop meanwhile releases the ID), then runs as
/// [`run`] does. If entering fails, the ID is released and the keeper tries to regain one,
/// as after a lost lease.
pub(super) async fn run_claimed<C: Clock + Clone + 'static>(
    shared: Arc<Shared<C>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    claimed: Claimed,
) -> Held {
    let unheld = Held {
        worker_id: claimed.worker_id,
        sent_ms: claimed.sent_ms,
        sent_at: claimed.sent_at,
        deadline_ms: 0,
        lost: true,
        clock_behind: false,
        last_publish: None,
    };
    // Biased (here and below): the branches are polled in order, not at random, so a
    // simulated run (crates/snowdrift-sim) replays exactly from its seed.
    let entered = tokio::select! {
        biased;
        // On failure the keeper claims again as this holder: see OnFailure::Keep.
        r = enter(&shared, claimed, true, OnFailure::Keep) => r,
        _ = stop.changed() => {
            release(&shared, claimed.worker_id).await;
            return unheld;
        }
    };
    let held = match entered {
        Ok(held) => {
            tracing::info!(
                worker_id = held.worker_id,
                "the clock passed the worker ID's high-water mark; issuing"
            );
            held
        }
        Err(e) => {
            shared.note_error(&e);
            shared.set_state(WorkerState::LeaseLost);
            tracing::error!(error = %e, "could not start issuing under the claimed worker ID; trying to claim one again");
            unheld
        }
    };
    run(shared, stop, held).await
}

/// The keeper task: runs until `stop` turns true; returns the lease as it stands.
pub(super) async fn run<C: Clock + Clone + 'static>(
    shared: Arc<Shared<C>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut held: Held,
) -> Held {
    let config = &shared.config;
    // Often enough to renew on time, extend the mark half a window ahead, and notice a
    // lost lease well before the deadline.
    let tick = (shared.renew_every() / 2)
        .min(config.window / 4)
        .min(config.publish_every)
        .max(Duration::from_millis(5));
    loop {
        tokio::select! {
            biased;
            _ = stop.changed() => break,
            _ = tokio::time::sleep(tick) => {}
        }
        if held.lost {
            regain(&shared, &mut held).await;
            continue;
        }
        step(&shared, &mut held).await;
    }
    held
}

/// One round while holding the lease: renew, extend the mark, check clocks.
async fn step<C: Clock + Clone + 'static>(shared: &Shared<C>, held: &mut Held) {
    let config = &shared.config;
    let epoch = read(&shared.current).clone();
    if held.sent_at.elapsed() >= shared.renew_every() && renew(shared, &epoch, held).await {
        return;
    }
    let used = shared
        .clock
        .now_ms()
        .max(epoch.generator().used_until_ms().unwrap_or(0));
    let window = ms(config.window);
    if epoch.fence().window_end() < used.saturating_add(window / 2) {
        let mark = used.saturating_add(window);
        let stored = Mark {
            extension: epoch.extension(),
            ms: mark,
        }
        .stored();
        if planted(Mistake::SkipMarkWriteAhead) {
            epoch.fence().extend_window(mark);
        }
        let write = shared.call(
            "writing the high-water mark",
            shared
                .registry
                .write_mark(held.worker_id, &shared.holder, stored),
        );
        tokio::pin!(write);
        // A durable write can take seconds on a busy disk; renewals go on meanwhile, or a
        // lease whose proof is short (a file registry's, 300 ms) would close the fence
        // although nothing is wrong with it.
        let every = shared.renew_every();
        let mut due = held.sent_at + every;
        let written = loop {
            tokio::select! {
                biased;
                written = &mut write => break written,
                () = tokio::time::sleep_until(due) => {
                    if renew(shared, &epoch, held).await {
                        return;
                    }
                    // After a failed renewal, again soon; not at once.
                    due = (held.sent_at + every).max(Instant::now() + every / 4);
                }
            }
        };
        match written {
            Ok(()) => epoch.fence().extend_window(mark),
            Err(e) => {
                if failed(shared, &epoch, held, &e) {
                    return;
                }
            }
        }
    }
    if held
        .last_publish
        .is_none_or(|at| at.elapsed() >= config.publish_every)
    {
        held.last_publish = Some(Instant::now());
        match shared.check_clocks(held.worker_id).await {
            Ok((behind, worst)) => {
                if behind > config.clock_bound {
                    if !held.clock_behind {
                        held.clock_behind = true;
                        epoch.fence().close(ClosedReason::ClockBehind);
                        shared.set_state(WorkerState::ClockBehind);
                        tracing::error!(
                            behind_ms = ms(behind),
                            bound_ms = ms(config.clock_bound),
                            peer = ?worst.map(|p| p.holder),
                            "this node's clock is behind a peer's by more than the bound; stopped issuing until it catches up (check NTP)"
                        );
                    }
                } else if held.clock_behind {
                    held.clock_behind = false;
                    epoch.fence().open_until(held.deadline_ms);
                    shared.set_state(WorkerState::Issuing);
                    tracing::info!("this node's clock caught up with its peers; issuing again");
                }
            }
            Err(e) => {
                failed(shared, &epoch, held, &e);
            }
        }
    }
}

/// Renews the lease (for a file registry: proves the lock file is still in place) and
/// moves the fence's deadline on; returns true when the lease is lost.
async fn renew<C: Clock + Clone + 'static>(
    shared: &Shared<C>,
    epoch: &Epoch<C>,
    held: &mut Held,
) -> bool {
    let config = &shared.config;
    let (sent, sent_at) = (shared.clock.now_ms(), Instant::now());
    let renewed = shared
        .call(
            "renewing the lease",
            shared
                .registry
                .renew(held.worker_id, &shared.holder, config.ttl),
        )
        .await;
    let (sent, renewed) = match renewed {
        Err(Error::LeaseLost { .. }) if planted(Mistake::RenewWithoutFence) => (sent, Ok(())),
        Ok(()) if planted(Mistake::TrustLeaseAfterPause) => (shared.clock.now_ms(), Ok(())),
        other => (sent, other),
    };
    match renewed {
        Ok(()) => {
            held.sent_ms = sent;
            held.sent_at = sent_at;
            held.deadline_ms = shared.deadline(sent);
            if !held.clock_behind {
                epoch.fence().open_until(held.deadline_ms);
            }
            let mut s = lock(&shared.status);
            s.deadline_ms = held.deadline_ms;
            s.renewals += 1;
            s.last_error = None;
            if !held.clock_behind {
                s.state = WorkerState::Issuing;
            }
            false
        }
        Err(e) => failed(shared, epoch, held, &e),
    }
}

/// Handles a failed coordinator call; returns true when the lease is lost.
fn failed<C: Clock + Clone + 'static>(
    shared: &Shared<C>,
    epoch: &Epoch<C>,
    held: &mut Held,
    e: &Error,
) -> bool {
    shared.note_error(e);
    if let Error::LeaseLost { .. } = e {
        epoch.fence().close(ClosedReason::LeaseLost);
        held.lost = true;
        shared.set_state(WorkerState::LeaseLost);
        tracing::error!(
            worker_id = held.worker_id,
            error = %e,
            "lost the worker ID's lease; stopped issuing and trying to regain an ID"
        );
        return true;
    }
    tracing::warn!(
        worker_id = held.worker_id,
        error = %e,
        deadline_ms = held.deadline_ms,
        "coordinator call failed; issuing continues until the lease deadline unless a retry succeeds"
    );
    false
}

/// Tries once to claim an ID again after losing the lease.
async fn regain<C: Clock + Clone + 'static>(shared: &Shared<C>, held: &mut Held) {
    match acquire(shared, false, OnFailure::Keep).await {
        Ok(new) if new.worker_id != held.worker_id => {
            let changes = {
                let mut s = lock(&shared.status);
                s.worker_id_changes += 1;
                s.worker_id_changes
            };
            // Not info: whatever maps worker IDs to nodes (dashboards, `workers list`
            // scripts, an operator's notes) is wrong from now on.
            tracing::warn!(
                lost_worker_id = held.worker_id,
                worker_id = new.worker_id,
                epoch = read(&shared.current).number(),
                worker_id_changes = changes,
                "regained a worker ID other than the lost one (that was taken meanwhile); issuing again under the new one after its high-water mark"
            );
            *held = new;
        }
        Ok(new) => {
            tracing::info!(
                worker_id = new.worker_id,
                epoch = read(&shared.current).number(),
                "regained a worker ID, the lost one; issuing again after its high-water mark"
            );
            *held = new;
        }
        Err(e) => {
            shared.note_error(&e);
            tracing::warn!(error = %e, "could not regain a worker ID yet; retrying");
        }
    }
}

/// At shutdown: the final mark (covering every ID issued), then the release.
pub(super) async fn finish<C: Clock + Clone + 'static>(
    shared: &Shared<C>,
    epoch: &Epoch<C>,
    worker_id: u64,
) -> Result<()> {
    let mark = epoch
        .fence()
        .window_end()
        .max(epoch.generator().used_until_ms().unwrap_or(0));
    let stored = Mark {
        extension: epoch.extension(),
        ms: mark,
    }
    .stored();
    shared
        .call(
            "writing the final high-water mark",
            shared
                .registry
                .write_mark(worker_id, &shared.holder, stored),
        )
        .await?;
    shared
        .call(
            "releasing the worker ID",
            shared.registry.release(worker_id, &shared.holder),
        )
        .await
}
