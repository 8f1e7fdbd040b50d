//! The part of etcd's v3 API that the etcd worker registry and the timestamp oracle's
//! election use (key ranges, transactions on values, revisions and leases, lease grant,
//! keep-alive, time-to-live and revoke, a watch of one key), as a trait: `etcd-client` implements it for a real etcd ([`super::client`]), the
//! deterministic simulator (`crates/snowdrift-sim`) with an etcd of its own, so both drive
//! the one registry and the one election.

use std::future::Future;
use std::pin::Pin;

use crate::error::Result;

/// A boxed future, so [`EtcdKv`] can be a trait object.
pub type KvFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// One key as etcd returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// Its value.
    pub value: String,
    /// The lease it is attached to; 0 for none.
    pub lease: i64,
    /// The revision that created it (since it last did not exist).
    pub create_revision: i64,
    /// The revision that last wrote it.
    pub mod_revision: i64,
}

/// One comparison of a transaction's guard: the key's part equals the value. On a key that
/// does not exist, a value comparison fails and the others compare against 0 (etcd's rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compare {
    /// `value(key) == value`.
    Value(String, String),
    /// `create_revision(key) == revision`.
    CreateRevision(String, i64),
    /// `mod_revision(key) == revision`.
    ModRevision(String, i64),
    /// `lease(key) == lease`.
    Lease(String, i64),
}

/// One operation of a transaction's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Reads `key`, or every key starting with it (`prefix`), in key order.
    Get {
        /// The key or prefix.
        key: String,
        /// Read the range of keys that start with `key`.
        prefix: bool,
    },
    /// Reads at most `limit` of the keys starting with `prefix`, in order of their values
    /// (as text, as etcd compares them): the highest first when `descending`.
    GetByValue {
        /// The prefix.
        prefix: String,
        /// Highest values first.
        descending: bool,
        /// How many keys at most (at least 1).
        limit: i64,
    },
    /// Writes `key`, attached to `lease` (0: none). A lease that does not exist fails the
    /// whole transaction.
    Put {
        /// The key.
        key: String,
        /// Its new value.
        value: String,
        /// The lease to attach it to; 0 for none.
        lease: i64,
    },
    /// Deletes `key` (nothing when it is missing).
    Delete {
        /// The key.
        key: String,
    },
}

/// `if all(when) { then } else { otherwise }`, atomically at one revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Txn {
    /// The guard.
    pub when: Vec<Compare>,
    /// Run when every comparison holds.
    pub then: Vec<Op>,
    /// Run otherwise.
    pub otherwise: Vec<Op>,
}

/// What a transaction answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnAnswer {
    /// The guard held and `then` ran.
    pub succeeded: bool,
    /// The keys each `Get` of the branch that ran read, in order.
    pub gets: Vec<Vec<KeyValue>>,
}

/// What etcd says about a lease.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseStatus {
    /// Whole seconds left; 0 or below when it expired or does not exist.
    pub ttl: i64,
    /// The TTL it was granted with, in seconds.
    pub granted_ttl: i64,
    /// The keys attached to it.
    pub keys: Vec<String>,
}

/// What a watch of one key saw first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyChange {
    /// The key was written (created or changed).
    Put,
    /// The key was deleted (by a delete, or its lease's end).
    Deleted,
    /// The watch ended without an event (canceled: a compaction, etcd restarted): read the
    /// key again and watch from there.
    Restart,
}

/// An etcd cluster as one client sees it: every call may fail with
/// [`Error::Unavailable`](crate::Error::Unavailable) (no answer, a timeout, a leader
/// election), and may or may not have taken effect then.
pub trait EtcdKv: Send + Sync + std::fmt::Debug {
    /// Runs a transaction.
    fn txn(&self, txn: Txn) -> KvFuture<'_, TxnAnswer>;
    /// Reads `key`, or the keys starting with it (`prefix`), in key order.
    fn range(&self, key: String, prefix: bool) -> KvFuture<'_, Vec<KeyValue>>;
    /// Grants a lease of at least `ttl` seconds: its ID and the TTL granted.
    fn grant(&self, ttl: i64) -> KvFuture<'_, (i64, i64)>;
    /// One keep-alive of `lease`: `true` when it was alive and now runs its TTL from when
    /// etcd handled this, `false` when it is gone (expired or revoked).
    fn keep_alive(&self, lease: i64) -> KvFuture<'_, bool>;
    /// The lease's time left and keys.
    fn time_to_live(&self, lease: i64) -> KvFuture<'_, LeaseStatus>;
    /// Revokes `lease`, deleting its keys; an error when it does not exist.
    fn revoke(&self, lease: i64) -> KvFuture<'_, ()>;
    /// Watches `key` from revision `from` on and returns its first change (a delete when
    /// one event of the first answer is one). It waits as long as nothing changes.
    fn watch(&self, key: String, from: i64) -> KvFuture<'_, KeyChange>;
    /// This client's clock, ms since 1970, for the claim time the registry writes (etcd
    /// has no clock to ask).
    fn now_ms(&self) -> u64;
}
