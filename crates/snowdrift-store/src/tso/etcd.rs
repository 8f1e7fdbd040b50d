//! Leader election and the saved window of a timestamp oracle on etcd.

use std::sync::{Arc, Mutex};
use std::time::Duration;

// The runtime's clock: a server's is the monotonic clock, the simulator's its paused time.
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::worker::etcd::kv::{Compare, EtcdKv, KeyChange, KeyValue, Op, Txn, TxnAnswer};
use crate::worker::etcd::{ClientKv, ttl_seconds};
use crate::worker::mistakes::{Mistake, planted};
use crate::worker::sql::{validate_holder, validate_namespace};

/// How many times a window save starts over when another save of the same leader moved
/// the window between its read and its write.
const MAX_RACES: usize = 64;

/// The timestamp oracle `name` on etcd: its leader key and its saved window.
///
/// Keys: `/{namespace}/tso/{name}/leader` holds the leader's holder name (use something a
/// follower can reach it by, such as its address) under the leader's lease, and
/// `/{namespace}/tso/{name}/window` holds the saved window end, ms since 1970 in decimal,
/// without a lease: it outlives every leader and only ever goes up.
#[derive(Clone)]
pub struct EtcdTso {
    // A real etcd through `etcd-client`, or the simulator's; shared, so each leadership
    // stays small.
    kv: Arc<dyn EtcdKv>,
    name: String,
    root: String,
}

impl std::fmt::Debug for EtcdTso {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdTso")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// What a [`EtcdTso::campaign`] came to.
#[derive(Debug)]
pub enum Campaign {
    /// This node leads now.
    Won(Leadership),
    /// Another node leads; try again when its key changes
    /// ([`EtcdTso::wait_for_change`]).
    Lost {
        /// The leader's key, checked: bound to a live lease that its value names.
        leader: LeaderKey,
    },
    /// A leader key exists but no campaign wrote it as it is (forged, or edited by hand):
    /// nobody leads. Forward to nobody; see [`KeyFault`] for what to do.
    NotALeader(ForgedKey),
}

/// A leader key that elected [`EtcdTso::campaign`] found and checked: another node leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderKey {
    /// The holder name the leader campaigned with.
    pub holder: String,
    /// The leader's term: the ID of the etcd lease its key is bound to. The campaign writes
    /// it in the key's value too, and a snowdrift leader names it in every answer it gives
    /// a follower, which checks it against this.
    pub term: i64,
    /// The key's create revision.
    pub create_revision: i64,
    /// The key's mod revision: any later change (a put, a delete) is a change of leader.
    pub mod_revision: i64,
}

/// A leader key that is not an election's, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgedKey {
    /// The key (`/{namespace}/tso/{name}/leader`).
    pub key: String,
    /// What it holds, as text.
    pub value: String,
    /// Its lease (0: none).
    pub lease: i64,
    /// Its mod revision: pass it to [`EtcdTso::campaign_replacing`] once a whole lease
    /// has passed with the key unchanged.
    pub mod_revision: i64,
    /// What is wrong with it.
    pub fault: KeyFault,
}

/// What makes a leader key no election's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFault {
    /// It is bound to no lease: a plain `put`. A campaign always binds its key to a lease,
    /// so no leader holds it; once it has stayed unchanged for a whole lease (any leader
    /// it replaced has stopped issuing by then), [`EtcdTso::campaign_replacing`] takes it.
    NoLease,
    /// Its value does not name the lease it is bound to (`HOLDER term=LEASE`): written
    /// with someone else's lease, or by an earlier version. Its lease may be renewed by
    /// whoever granted it, so it is never taken over: it goes when that lease does, or
    /// when an operator deletes it.
    LeaseNotNamed,
    /// Its lease has expired (etcd deletes the key within moments).
    LeaseExpired,
}

impl KeyFault {
    /// Every fault, in the order of [`OracleReport::forged_keys`](super::OracleReport::forged_keys).
    pub const ALL: [KeyFault; 3] = [Self::NoLease, Self::LeaseNotNamed, Self::LeaseExpired];

    /// A short name for metrics labels.
    pub const fn label(self) -> &'static str {
        match self {
            Self::NoLease => "no_lease",
            Self::LeaseNotNamed => "lease_not_named",
            Self::LeaseExpired => "lease_expired",
        }
    }

    /// Where this fault is in [`ALL`](Self::ALL).
    pub const fn index(self) -> usize {
        match self {
            Self::NoLease => 0,
            Self::LeaseNotNamed => 1,
            Self::LeaseExpired => 2,
        }
    }
}

impl std::fmt::Display for ForgedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.fault {
            KeyFault::NoLease => "is bound to no lease, so no campaign wrote it".to_string(),
            KeyFault::LeaseNotNamed => format!(
                "is bound to lease {:x} but its value does not name it (a campaign writes \
                 \"HOLDER term=LEASE\"), so no campaign wrote it",
                self.lease
            ),
            KeyFault::LeaseExpired => format!("is bound to lease {:x}, which expired", self.lease),
        };
        write!(
            f,
            "the tso leader key {} (holding {:?}) {what}: it is not a leader, and this node \
             forwards to nobody; delete it (etcdctl del {}) if it stays",
            self.key, self.value, self.key
        )
    }
}

/// The key that the `i`th read of a transaction's branch found, if any.
fn kv_at(answer: &TxnAnswer, i: usize) -> Option<&KeyValue> {
    answer.gets.get(i).and_then(|g| g.first())
}

/// The leader key's value for `holder` leading with `lease`.
fn leader_value(holder: &str, lease: i64) -> String {
    format!("{holder} term={lease}")
}

/// The holder and term in a leader key's value, `None` when it holds no term.
fn parse_leader_value(value: &str) -> Option<(&str, i64)> {
    let (holder, term) = value.rsplit_once(" term=")?;
    Some((holder, term.parse().ok()?))
}

/// This node's hold on the leader key. Dropping it does not give leadership up (the lease
/// runs out by itself); [`resign`](Self::resign) does at once.
pub struct Leadership {
    kv: Arc<dyn EtcdKv>,
    name: String,
    holder: String,
    leader_key: String,
    window_key: String,
    lease: i64,
    /// The leader key's create revision: it names this term's key, so a later leader's key
    /// (even under the same holder name) never passes for it.
    revision: i64,
    ttl: Duration,
    margin: Duration,
    previous_window_ms: Option<u64>,
    valid_until: Mutex<Instant>,
}

impl std::fmt::Debug for Leadership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leadership")
            .field("leader_key", &self.leader_key)
            .field("holder", &self.holder)
            .field("lease", &self.lease)
            .field("revision", &self.revision)
            .field("previous_window_ms", &self.previous_window_ms)
            .finish_non_exhaustive()
    }
}

impl EtcdTso {
    /// Connects to `url` (the forms of [`EtcdRegistry::connect`](crate::worker::etcd::EtcdRegistry::connect):
    /// TLS, client certificate and user included) and checks that etcd answers. Keys live
    /// under `/{namespace}/tso/{name}/`. Each request gives up after 5 s.
    pub async fn connect(url: &str, namespace: &str, name: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        validate_name(name)?;
        let root = format!("/{namespace}/tso/{name}");
        let client = crate::etcd_connection::Target::parse(url)?
            .connect(&format!("{root}/"))
            .await?;
        Ok(Self {
            kv: Arc::new(ClientKv::new(client)),
            name: name.to_string(),
            root,
        })
    }

    /// Oracle `name` under `/{namespace}/tso/` of any [`EtcdKv`]: the simulator's etcd.
    #[cfg(feature = "sim")]
    pub fn over(kv: Arc<dyn EtcdKv>, namespace: &str, name: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        validate_name(name)?;
        Ok(Self {
            kv,
            name: name.to_string(),
            root: format!("/{namespace}/tso/{name}"),
        })
    }

    fn leader_key(&self) -> String {
        format!("{}/leader", self.root)
    }

    fn window_key(&self) -> String {
        format!("{}/window", self.root)
    }

    /// Tries once to lead: grants a lease of `ttl` (whole seconds, rounded up) and writes
    /// the leader key under it (its value `HOLDER term=LEASE`) if no key exists. The winner
    /// stops issuing `margin` before its lease could expire, counted from when the grant
    /// (later, each renewal) was sent. A key that exists is checked before it is taken for
    /// a leader: bound to a live lease that its value names ([`Campaign::NotALeader`]
    /// otherwise).
    ///
    /// `holder` must be unique per process (host, port, start nonce): a key left by an
    /// earlier run of the same holder is another node's until its lease runs out.
    pub async fn campaign(
        &self,
        holder: &str,
        ttl: Duration,
        margin: Duration,
    ) -> Result<Campaign> {
        self.campaign_inner(holder, ttl, margin, None).await
    }

    /// [`campaign`](Self::campaign), and if the leader key is still the leaseless one seen
    /// at `mod_revision` ([`KeyFault::NoLease`]), takes it over in one transaction. Call it
    /// only after that key has stayed unchanged for at least a whole lease (`ttl`): a
    /// leader whose key was overwritten stops issuing by then (its renewals find the key
    /// no longer its own), so the new leader cannot overlap it.
    pub async fn campaign_replacing(
        &self,
        holder: &str,
        ttl: Duration,
        margin: Duration,
        mod_revision: i64,
    ) -> Result<Campaign> {
        self.campaign_inner(holder, ttl, margin, Some(mod_revision))
            .await
    }

    async fn campaign_inner(
        &self,
        holder: &str,
        ttl: Duration,
        margin: Duration,
        replace: Option<i64>,
    ) -> Result<Campaign> {
        validate_holder(holder)?;
        if margin >= ttl {
            return Err(Error::InvalidInput(format!(
                "tso leader margin {margin:?} must be below the lease ttl {ttl:?} (a fifth of it is usual)"
            )));
        }
        let seconds = ttl_seconds(ttl)?;
        let sent_at = Instant::now();
        let (lease, granted) = self.kv.grant(seconds).await?;
        if granted < seconds {
            // etcd only ever raises a TTL; a shorter one would break fencing.
            let _ = self.kv.revoke(lease).await;
            return Err(Error::Unavailable(
                format!("etcd granted a lease of {granted} s for a ttl of {seconds} s").into(),
            ));
        }
        let leader_key = self.leader_key();
        let window_key = self.window_key();
        let value = leader_value(holder, lease);
        let take = |when: Vec<Compare>| Txn {
            when,
            then: vec![
                Op::Put {
                    key: leader_key.clone(),
                    value: value.clone(),
                    lease,
                },
                // In the same transaction: no earlier leader can save after this read,
                // since its key is gone (or no longer bound to its lease) and its saves
                // are conditioned on it.
                Op::Get {
                    key: window_key.clone(),
                    prefix: false,
                },
                Op::Get {
                    key: leader_key.clone(),
                    prefix: false,
                },
            ],
            otherwise: vec![Op::Get {
                key: leader_key.clone(),
                prefix: false,
            }],
        };
        let mut txn = take(vec![Compare::CreateRevision(leader_key.clone(), 0)]);
        let mut replacing = false;
        loop {
            let answer = match self.kv.txn(txn).await {
                Ok(a) => a,
                Err(e) => {
                    // Whether the key was written is unknown: revoking deletes it if it was.
                    let _ = self.kv.revoke(lease).await;
                    return Err(e);
                }
            };
            if answer.succeeded {
                let previous_window_ms = kv_at(&answer, 0)
                    .map(|kv| window_of(&window_key, kv))
                    .transpose()?;
                // The key as written: a key taken over keeps its create revision.
                let revision = kv_at(&answer, 1).map_or(0, |kv| kv.create_revision);
                return Ok(Campaign::Won(Leadership {
                    kv: Arc::clone(&self.kv),
                    name: self.name.clone(),
                    holder: holder.to_string(),
                    leader_key,
                    window_key,
                    lease,
                    revision,
                    ttl,
                    margin,
                    previous_window_ms,
                    valid_until: Mutex::new(sent_at + (ttl - margin)),
                }));
            }
            let Some(kv) = kv_at(&answer, 0).cloned() else {
                let _ = self.kv.revoke(lease).await;
                return Err(Error::Unavailable(
                    "the tso leader key was deleted during the campaign; campaign again".into(),
                ));
            };
            match (replace, kv.lease) {
                (Some(seen), 0) if seen == kv.mod_revision && !replacing => {
                    replacing = true;
                    txn = take(vec![
                        Compare::ModRevision(leader_key.clone(), seen),
                        Compare::Lease(leader_key.clone(), 0),
                    ]);
                    continue;
                }
                _ => {}
            }
            let _ = self.kv.revoke(lease).await;
            return self.check_leader(&leader_key, &kv).await;
        }
    }

    /// Whether `kv`, the leader key, is an election's: bound to a lease, which its value
    /// names and which is alive.
    async fn check_leader(&self, key: &str, kv: &KeyValue) -> Result<Campaign> {
        let value = kv.value.clone();
        let forged = |fault| {
            Ok(Campaign::NotALeader(ForgedKey {
                key: key.to_string(),
                value: value.clone(),
                lease: kv.lease,
                mod_revision: kv.mod_revision,
                fault,
            }))
        };
        if kv.lease == 0 {
            return forged(KeyFault::NoLease);
        }
        let holder = match parse_leader_value(&value) {
            Some((holder, term)) if term == kv.lease => holder.to_string(),
            _ => return forged(KeyFault::LeaseNotNamed),
        };
        let alive = self.kv.time_to_live(kv.lease).await?;
        if alive.ttl <= 0 {
            return forged(KeyFault::LeaseExpired);
        }
        Ok(Campaign::Lost {
            leader: LeaderKey {
                holder,
                term: kv.lease,
                create_revision: kv.create_revision,
                mod_revision: kv.mod_revision,
            },
        })
    }

    /// The current leader's holder name, `None` when nobody leads.
    pub async fn leader(&self) -> Result<Option<String>> {
        let answer = self.kv.range(self.leader_key(), false).await?;
        Ok(answer.first().map(|kv| {
            parse_leader_value(&kv.value).map_or(kv.value.clone(), |(h, _)| h.to_string())
        }))
    }

    /// Returns once nobody leads: at once if no leader key exists, else when etcd deletes
    /// it (the leader resigned or its lease expired). Campaign right after; another node
    /// may win first. It waits as long as the leader lives: bound it with a timeout, or
    /// race it with shutdown.
    pub async fn wait_for_vacancy(&self) -> Result<()> {
        self.watch_leader(|_| true, false).await
    }

    /// Returns once the leader key is no longer the one seen at `mod_revision`: deleted
    /// (the leader resigned or its lease expired), or written again (a new leader, or
    /// someone's put). Check it again right after ([`campaign`](Self::campaign)). It waits
    /// as long as the key stays: bound it with a timeout, or race it with shutdown.
    pub async fn wait_for_change(&self, mod_revision: i64) -> Result<()> {
        self.watch_leader(|kv| kv.mod_revision == mod_revision, true)
            .await
    }

    /// Watches the leader key while `still` holds for it: returns once the key is gone,
    /// no longer satisfies `still`, or (with `any_write`) is written at all.
    async fn watch_leader(&self, still: impl Fn(&KeyValue) -> bool, any_write: bool) -> Result<()> {
        let leader_key = self.leader_key();
        loop {
            let answer = self.kv.range(leader_key.clone(), false).await?;
            let from = match answer.first() {
                // From the revision just read: a change between the read and the watch is
                // not missed (no later revision of this key existed when etcd read it).
                Some(kv) if still(kv) => kv.mod_revision + 1,
                _ => return Ok(()),
            };
            // A watch that ends or is canceled (a compaction, a restart of etcd) is started
            // again from a fresh read; so is one that saw a put while only a delete ends
            // this wait.
            match self.kv.watch(leader_key.clone(), from).await? {
                KeyChange::Deleted => return Ok(()),
                KeyChange::Put if any_write => return Ok(()),
                KeyChange::Put | KeyChange::Restart => {}
            }
        }
    }

    /// The saved window end (ms since 1970), `None` if no leader ever saved one.
    pub async fn window(&self) -> Result<Option<u64>> {
        let window_key = self.window_key();
        let answer = self.kv.range(window_key.clone(), false).await?;
        answer
            .first()
            .map(|kv| window_of(&window_key, kv))
            .transpose()
    }
}

impl Leadership {
    /// The window end the previous leaders saved, read when this leadership was won:
    /// pass it to [`start_term`](snowdrift_core::tso::TimestampOracle::start_term).
    pub fn previous_window_ms(&self) -> Option<u64> {
        self.previous_window_ms
    }

    /// The holder name this node leads under.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// This term's ID: the lease the leader key is bound to, also written in its value.
    /// A follower checks it in each answer against the key it read ([`LeaderKey::term`]).
    pub fn term(&self) -> i64 {
        self.lease
    }

    /// Until when (on this process's monotonic clock) this node may issue: the last
    /// renewal (or the grant) sent, plus ttl, minus margin. etcd cannot expire the lease
    /// before then, so no other node can lead before then.
    pub fn valid_until(&self) -> Instant {
        *self.valid_until.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this node may still issue now. Check it before answering each batch, and
    /// end the oracle's term when it turns false.
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until()
    }

    /// Keeps the lease alive (call it every ttl/3 or so) and checks that the leader key is
    /// still this term's; returns the new [`valid_until`](Self::valid_until).
    /// [`Error::LeadershipLost`] when the lease expired or the key is gone or another's.
    pub async fn renew(&self) -> Result<Instant> {
        let sent_at = Instant::now();
        // Side by side, both sent after `sent_at`: a renewal costs one round trip, not two
        // (under load each took long enough that two in a row let the lease lapse). The
        // keep-alive proves the lease alive when etcd got it, the read that the key was
        // still this term's when etcd read it; together, as in turn, no other node can
        // lead before `sent_at + ttl`.
        let (alive, answer) = tokio::join!(
            self.kv.keep_alive(self.lease),
            self.kv.range(self.leader_key.clone(), false)
        );
        // The keeper's planted mistakes, where the leader commits them too (simulator only).
        let blind = planted(Mistake::RenewWithoutFence);
        if !alive? && !blind {
            return Err(self.lost("the etcd lease expired before the keep-alive reached it"));
        }
        match self.check_key(answer?.first()) {
            Err(e) if !blind => return Err(e),
            _ => {}
        }
        let from = if planted(Mistake::TrustLeaseAfterPause) {
            Instant::now()
        } else {
            sent_at
        };
        let until = from + (self.ttl - self.margin);
        let mut valid = self.valid_until.lock().unwrap_or_else(|e| e.into_inner());
        *valid = (*valid).max(until);
        Ok(*valid)
    }

    /// Raises the saved window end to `up_to_ms` (a lower value leaves it as it is), in
    /// a transaction that succeeds only while this node holds the leader key of this term.
    /// Report it to the oracle with
    /// [`window_saved`](snowdrift_core::tso::TimestampOracle::window_saved) only after this
    /// returns `Ok`.
    pub async fn save_window(&self, up_to_ms: u64) -> Result<()> {
        for _ in 0..MAX_RACES {
            let current = self.kv.range(self.window_key.clone(), false).await?;
            let (current, revision) = match current.first() {
                Some(w) => (Some(window_of(&self.window_key, w)?), w.mod_revision),
                None => (None, 0),
            };
            let then = if current.is_none_or(|w| w < up_to_ms) {
                vec![Op::Put {
                    key: self.window_key.clone(),
                    value: up_to_ms.to_string(),
                    lease: 0,
                }]
            } else {
                Vec::new()
            };
            let txn = Txn {
                when: vec![
                    Compare::CreateRevision(self.leader_key.clone(), self.revision),
                    Compare::Lease(self.leader_key.clone(), self.lease),
                    // A missing key's mod revision compares as 0.
                    Compare::ModRevision(self.window_key.clone(), revision),
                ],
                then,
                otherwise: vec![Op::Get {
                    key: self.leader_key.clone(),
                    prefix: false,
                }],
            };
            let answer = self.kv.txn(txn).await?;
            if answer.succeeded {
                return Ok(());
            }
            // Still this term's key: only the window moved (a concurrent save); read again.
            self.check_key(kv_at(&answer, 0))?;
        }
        Err(Error::Unavailable(
            format!(
                "the window of timestamp oracle {:?} changed under each of {MAX_RACES} saves; retry",
                self.name
            )
            .into(),
        ))
    }

    /// Gives leadership up at once: revokes the lease, which deletes the leader key, so
    /// another node can win. End the oracle's term before calling it.
    pub async fn resign(&self) -> Result<()> {
        match self.kv.revoke(self.lease).await {
            Ok(()) => Ok(()),
            // etcd refuses to revoke a lease that expired meanwhile: given up all the same.
            Err(e) => {
                let answer = self.kv.range(self.leader_key.clone(), false).await?;
                match self.check_key(answer.first()) {
                    Err(Error::LeadershipLost { .. }) => Ok(()),
                    _ => Err(e),
                }
            }
        }
    }

    /// `Ok` when `key` is this term's leader key.
    fn check_key(&self, key: Option<&KeyValue>) -> Result<()> {
        match key {
            Some(k) if k.create_revision == self.revision && k.lease == self.lease => Ok(()),
            Some(k) if k.lease == 0 => Err(self.lost(&format!(
                "the leader key was overwritten without a lease (holding {:?})",
                k.value
            ))),
            Some(k) => {
                let holder = parse_leader_value(&k.value).map_or(k.value.as_str(), |(h, _)| h);
                Err(self.lost(&format!("{holder:?} leads now")))
            }
            None => {
                Err(self
                    .lost("no leader key: the lease expired or was revoked (etcd deleted the key)"))
            }
        }
    }

    fn lost(&self, reason: &str) -> Error {
        Error::LeadershipLost {
            name: self.name.clone(),
            holder: self.holder.clone(),
            reason: reason.to_string(),
        }
    }
}

/// The window end in `kv`, or an error naming the key when it holds something else.
fn window_of(key: &str, kv: &KeyValue) -> Result<u64> {
    let value = &kv.value;
    value.parse().map_err(|_| {
        Error::InvalidInput(format!(
            "etcd key {key} holds {value:?}, not a window end: it was edited by hand; set it to the largest time any leader may have used (ms since 1970), never lower"
        ))
    })
}

/// Oracle names are one key segment: 1 to 64 letters, digits, `_`, `-` or `.`.
fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && name != "."
        && name != "..";
    if !ok {
        return Err(Error::InvalidInput(format!(
            "timestamp oracle name {name:?} is not valid: use 1 to 64 letters, digits, '_', '-' or '.'"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fault_is_counted_where_all_lists_it() {
        for (i, fault) in KeyFault::ALL.iter().enumerate() {
            assert_eq!(fault.index(), i, "{fault:?}");
        }
    }
}
