//! The simulated etcd: one key space with revisions, leases granted, kept alive and expired
//! by the coordinator's clock, and transactions on values, revisions and leases, with the
//! rules of etcd 3.4 that the worker registry depends on.
//!
//! Modelled as etcd does it: a lease's TTL is at least [`MIN_TTL`] seconds and counts from
//! when the leader handled the grant or keep-alive; a lease past its expiry can no longer
//! be kept alive, and its keys go when the lessor revokes it (every [`LESSOR_EVERY`], as
//! etcd's lessor checks); `time_to_live` answers whole seconds, truncated; a transaction
//! compares a missing key's value as false and its revisions and lease as 0; a put under a
//! lease that does not exist fails the whole transaction; a new leader extends every lease
//! by its TTL from its election on; a watch of one key from a revision on answers its first
//! change at that revision or later (at once when the key changed since), and a leader
//! change cancels every watch (the client reads again and watches anew). Not modelled:
//! compaction, auth, several members (the cluster is one linearizable key space, as
//! etcd's clients see it).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use snowdrift_store::worker::sim::{Compare, KeyChange, KeyValue, LeaseStatus, Op, Txn, TxnAnswer};
use snowdrift_store::{Error, Result};
use tokio::time::Instant;

use crate::coordinator::Stats;

/// etcd's shortest lease, in seconds (1.5 election timeouts of its defaults, rounded up).
pub const MIN_TTL: i64 = 2;
/// How often etcd's lessor revokes expired leases.
pub const LESSOR_EVERY: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
struct Stored {
    value: String,
    lease: i64,
    create_revision: i64,
    mod_revision: i64,
}

#[derive(Debug)]
struct Lease {
    ttl: i64,
    expires: Instant,
    keys: BTreeSet<String>,
}

/// The simulated etcd cluster.
#[derive(Debug)]
pub struct Etcd {
    revision: i64,
    kvs: BTreeMap<String, Stored>,
    leases: BTreeMap<i64, Lease>,
    next_lease: i64,
    no_leader_until: Option<Instant>,
    /// Each key's last change: its revision, and whether it was a delete.
    changes: BTreeMap<String, (i64, bool)>,
    /// Watches waiting: the key, the first revision they want, where to answer.
    watchers: Vec<(String, i64, tokio::sync::oneshot::Sender<KeyChange>)>,
    /// What it did so far: writes are transactions that put, grants, revokes and expiries;
    /// keep-alives are handled by the leader alone (etcd 3.4).
    pub stats: Stats,
}

impl Default for Etcd {
    fn default() -> Self {
        Self::new()
    }
}

impl Etcd {
    /// An empty cluster at revision 1.
    pub fn new() -> Self {
        Self {
            revision: 1,
            kvs: BTreeMap::new(),
            leases: BTreeMap::new(),
            next_lease: 0x1000,
            no_leader_until: None,
            changes: BTreeMap::new(),
            watchers: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Fails while the cluster has no leader; counts the request.
    pub fn serve(&mut self, now: Instant) -> Result<()> {
        if self.no_leader_until.is_some_and(|t| now < t) {
            return Err(Error::Unavailable(
                "etcdserver: no leader (simulated election)".into(),
            ));
        }
        self.stats.requests += 1;
        Ok(())
    }

    /// The leader is lost at `now` and a new one elected after `outage`: no request is
    /// served meanwhile, and the new leader extends every lease by its TTL.
    pub fn elect(&mut self, now: Instant, outage: Duration) {
        let elected = now + outage;
        self.no_leader_until = Some(elected);
        for lease in self.leases.values_mut() {
            lease.expires = lease.expires.max(elected + secs(lease.ttl));
        }
        for (_, _, answer) in self.watchers.drain(..) {
            let _ = answer.send(KeyChange::Restart);
        }
    }

    /// Watches `key` from revision `from` on: answers its first change then or later.
    pub fn watch(&mut self, key: &str, from: i64) -> tokio::sync::oneshot::Receiver<KeyChange> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        match self.changes.get(key) {
            Some(&(revision, deleted)) if revision >= from => {
                let _ = tx.send(if deleted {
                    KeyChange::Deleted
                } else {
                    KeyChange::Put
                });
            }
            _ => self.watchers.push((key.to_string(), from, tx)),
        }
        rx
    }

    /// Notes a change of `key` at the current revision and answers its watches.
    fn changed(&mut self, key: &str, deleted: bool) {
        let revision = self.revision;
        self.changes.insert(key.to_string(), (revision, deleted));
        let change = if deleted {
            KeyChange::Deleted
        } else {
            KeyChange::Put
        };
        let mut waiting = Vec::new();
        for (k, from, answer) in self.watchers.drain(..) {
            if k == key && revision >= from {
                let _ = answer.send(change);
            } else if !answer.is_closed() {
                waiting.push((k, from, answer));
            }
        }
        self.watchers = waiting;
    }

    /// Revokes the leases whose TTL ran out by `now` (etcd's lessor).
    pub fn expire(&mut self, now: Instant) {
        if self.no_leader_until.is_some_and(|t| now < t) {
            return;
        }
        let gone: Vec<i64> = self
            .leases
            .iter()
            .filter(|(_, l)| l.expires <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.stats.expired += 1;
            self.drop_lease(id);
        }
    }

    fn drop_lease(&mut self, id: i64) {
        if let Some(lease) = self.leases.remove(&id) {
            self.stats.writes += 1;
            self.revision += 1;
            for key in lease.keys {
                if self.kvs.get(&key).is_some_and(|s| s.lease == id) {
                    self.kvs.remove(&key);
                    self.changed(&key, true);
                }
            }
        }
    }

    fn read(&mut self, key: &str, prefix: bool) -> Vec<KeyValue> {
        let found: Vec<KeyValue> = if prefix {
            self.kvs
                .range(key.to_string()..)
                .take_while(|(k, _)| k.starts_with(key))
                .map(|(k, s)| kv(k, s))
                .collect()
        } else {
            self.kvs.get(key).map(|s| kv(key, s)).into_iter().collect()
        };
        self.stats.keys_read += found.len() as u64;
        found
    }

    /// As etcd does: the range sorted by value (ties in key order), then the limit;
    /// only what is returned counts as read.
    fn read_by_value(&mut self, prefix: &str, descending: bool, limit: i64) -> Vec<KeyValue> {
        let mut range: Vec<(&String, &Stored)> = self
            .kvs
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .collect();
        let take = usize::try_from(limit)
            .ok()
            .filter(|n| *n > 0)
            .unwrap_or(usize::MAX);
        // Ties in key order, and descending is that order reversed. Keys are unique, so
        // this is a total order: picking the first `take` before sorting them returns what
        // sorting the whole range would (a start's limit is 3 of a fleet's reports).
        let order = |a: &(&String, &Stored), b: &(&String, &Stored)| {
            let up = a.1.value.cmp(&b.1.value).then_with(|| a.0.cmp(b.0));
            if descending { up.reverse() } else { up }
        };
        if take < range.len() {
            range.select_nth_unstable_by(take, order);
            range.truncate(take);
        }
        range.sort_unstable_by(order);
        let found: Vec<KeyValue> = range
            .into_iter()
            .take(take)
            .map(|(k, s)| kv(k, s))
            .collect();
        self.stats.keys_read += found.len() as u64;
        found
    }

    fn holds(&self, compare: &Compare) -> bool {
        let found = match compare {
            Compare::Value(k, _)
            | Compare::CreateRevision(k, _)
            | Compare::ModRevision(k, _)
            | Compare::Lease(k, _) => self.kvs.get(k),
        };
        match (compare, found) {
            (Compare::Value(_, v), Some(s)) => s.value == *v,
            (Compare::Value(_, _), None) => false,
            (Compare::CreateRevision(_, r), s) => s.map_or(0, |s| s.create_revision) == *r,
            (Compare::ModRevision(_, r), s) => s.map_or(0, |s| s.mod_revision) == *r,
            (Compare::Lease(_, l), s) => s.map_or(0, |s| s.lease) == *l,
        }
    }

    /// Runs a transaction.
    pub fn txn(&mut self, txn: &Txn) -> Result<TxnAnswer> {
        let succeeded = txn.when.iter().all(|c| self.holds(c));
        let ops = if succeeded { &txn.then } else { &txn.otherwise };
        for op in ops {
            if let Op::Put { lease, .. } = op
                && *lease != 0
                && !self.leases.contains_key(lease)
            {
                return Err(Error::Unavailable(
                    "etcdserver: requested lease not found".into(),
                ));
            }
        }
        let writes = ops
            .iter()
            .any(|op| matches!(op, Op::Put { .. } | Op::Delete { .. }));
        if writes {
            self.revision += 1;
            self.stats.writes += 1;
        }
        let mut gets = Vec::new();
        for op in ops {
            match op {
                Op::Get { key, prefix } => gets.push(self.read(key, *prefix)),
                Op::GetByValue {
                    prefix,
                    descending,
                    limit,
                } => gets.push(self.read_by_value(prefix, *descending, *limit)),
                Op::Put { key, value, lease } => self.put(key, value, *lease),
                Op::Delete { key } => self.delete(key),
            }
        }
        Ok(TxnAnswer { succeeded, gets })
    }

    fn put(&mut self, key: &str, value: &str, lease: i64) {
        let revision = self.revision;
        let old = self.kvs.get(key).cloned();
        if let Some(old) = &old
            && old.lease != lease
            && let Some(l) = self.leases.get_mut(&old.lease)
        {
            l.keys.remove(key);
        }
        if let Some(l) = self.leases.get_mut(&lease) {
            l.keys.insert(key.to_string());
        }
        self.kvs.insert(
            key.to_string(),
            Stored {
                value: value.to_string(),
                lease,
                create_revision: old.map_or(revision, |o| o.create_revision),
                mod_revision: revision,
            },
        );
        self.changed(key, false);
    }

    fn delete(&mut self, key: &str) {
        if let Some(old) = self.kvs.remove(key) {
            if let Some(l) = self.leases.get_mut(&old.lease) {
                l.keys.remove(key);
            }
            self.changed(key, true);
        }
    }

    /// Reads a key or a prefix.
    pub fn range(&mut self, key: &str, prefix: bool) -> Vec<KeyValue> {
        self.read(key, prefix)
    }

    /// Grants a lease of at least `ttl` seconds from `now`.
    pub fn grant(&mut self, ttl: i64, now: Instant) -> (i64, i64) {
        let ttl = ttl.max(MIN_TTL);
        let id = self.next_lease;
        self.next_lease += 1;
        self.stats.writes += 1;
        self.leases.insert(
            id,
            Lease {
                ttl,
                expires: now + secs(ttl),
                keys: BTreeSet::new(),
            },
        );
        (id, ttl)
    }

    /// Extends a live lease by its TTL from `now`: the TTL, or 0 when it is gone or ran out
    /// (etcd answers an expired lease's keep-alive only once it is revoked: not found).
    pub fn keep_alive(&mut self, id: i64, now: Instant) -> i64 {
        self.stats.keep_alives += 1;
        match self.leases.get_mut(&id) {
            Some(l) if l.expires > now => {
                l.expires = now + secs(l.ttl);
                l.ttl
            }
            _ => 0,
        }
    }

    /// A lease's time left (whole seconds, truncated) and keys.
    pub fn time_to_live(&mut self, id: i64, now: Instant) -> LeaseStatus {
        match self.leases.get(&id) {
            Some(l) => LeaseStatus {
                ttl: i64::try_from(l.expires.saturating_duration_since(now).as_secs())
                    .unwrap_or(i64::MAX),
                granted_ttl: l.ttl,
                keys: l.keys.iter().cloned().collect(),
            },
            None => LeaseStatus {
                ttl: -1,
                granted_ttl: 0,
                keys: Vec::new(),
            },
        }
    }

    /// Revokes a lease and deletes its keys.
    pub fn revoke(&mut self, id: i64) -> Result<()> {
        if !self.leases.contains_key(&id) {
            return Err(Error::Unavailable(
                "etcdserver: requested lease not found".into(),
            ));
        }
        self.drop_lease(id);
        Ok(())
    }

    /// Who holds `key` under a lease that has not run out at `now` (the ground truth a
    /// node must agree with whenever it issues), if anyone.
    pub fn live_holder(&self, key: &str, now: Instant) -> Option<&str> {
        let stored = self.kvs.get(key)?;
        let lease = self.leases.get(&stored.lease)?;
        (lease.expires > now).then_some(stored.value.as_str())
    }

    /// The worker leases held now: `(worker key, holder)`, for the end-of-run checks.
    pub fn keys_under(&self, prefix: &str) -> Vec<(String, String)> {
        self.kvs
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, s)| (k.clone(), s.value.clone()))
            .collect()
    }
}

fn kv(key: &str, s: &Stored) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: s.value.clone(),
        lease: s.lease,
        create_revision: s.create_revision,
        mod_revision: s.mod_revision,
    }
}

fn secs(s: i64) -> Duration {
    Duration::from_secs(u64::try_from(s).unwrap_or(0))
}
