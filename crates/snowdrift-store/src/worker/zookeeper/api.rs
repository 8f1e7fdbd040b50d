//! The part of ZooKeeper's API that the ZooKeeper worker registry uses (sessions with a
//! negotiated timeout; create, read, list, versioned set and delete of znodes, `sync`, and
//! `multi`), as two traits: `zookeeper-client` implements them for a real ensemble
//! ([`super::client`]), the deterministic simulator (`crates/snowdrift-sim`) with an
//! ensemble and a client of its own, so both drive the one registry.
//!
//! The vocabulary is `zookeeper-client`'s: its errors (`NoNode`, `NodeExists`,
//! `BadVersion`, `SessionExpired`, `ConnectionLoss`, ...), [`Stat`] and
//! [`MultiWriteError`], so the registry tells outcomes apart as it would on the client.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub use zookeeper_client::{Error as ZkError, MultiWriteError, Stat};

use crate::error::Error;

/// A boxed future of a ZooKeeper request, so the traits can be trait objects.
pub type ZkFuture<'a, T, E = ZkError> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'a>>;

/// Whether a created znode outlives its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Stays until deleted.
    Persistent,
    /// Deleted by ZooKeeper when the session that created it ends.
    Ephemeral,
}

/// One operation of a `multi`: all of them take effect, or none does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOp {
    /// Fails unless `path` is at `version`.
    Check {
        /// The znode.
        path: String,
        /// Its expected data version.
        version: i32,
    },
    /// Creates `path` (its parent must exist).
    Create {
        /// The znode.
        path: String,
        /// Its data.
        data: Vec<u8>,
        /// Persistent or ephemeral.
        mode: Mode,
    },
    /// Sets `path`'s data, if it is at `version` (`None`: any).
    SetData {
        /// The znode.
        path: String,
        /// Its new data.
        data: Vec<u8>,
        /// Its expected data version.
        version: Option<i32>,
    },
    /// Deletes `path`, if it is at `version` (`None`: any) and has no children.
    Delete {
        /// The znode.
        path: String,
        /// Its expected data version.
        version: Option<i32>,
    },
}

/// One ZooKeeper session, as its client holds it: every request may fail with the
/// client's errors, and one that failed with `ConnectionLoss` may have taken effect.
pub trait ZkSession: Send + Sync + std::fmt::Debug {
    /// The session's ID (a znode's `ephemeral_owner` when this session created it).
    fn session_id(&self) -> i64;
    /// The timeout the server negotiated.
    fn session_timeout(&self) -> Duration;
    /// Whether the session is over for good (expired, closed, refused): the client then
    /// fails every request, and a new session must be opened.
    fn is_terminated(&self) -> bool;
    /// Creates `path` holding `data`.
    fn create<'a>(&'a self, path: &'a str, data: &'a [u8], mode: Mode) -> ZkFuture<'a, ()>;
    /// Reads `path`'s data and stat.
    fn get_data<'a>(&'a self, path: &'a str) -> ZkFuture<'a, (Vec<u8>, Stat)>;
    /// Reads `path`'s stat; `None` when it does not exist.
    fn check_stat<'a>(&'a self, path: &'a str) -> ZkFuture<'a, Option<Stat>>;
    /// The names of `path`'s children.
    fn list_children<'a>(&'a self, path: &'a str) -> ZkFuture<'a, Vec<String>>;
    /// Sets `path`'s data if it is at `version` (`None`: any).
    fn set_data<'a>(
        &'a self,
        path: &'a str,
        data: &'a [u8],
        version: Option<i32>,
    ) -> ZkFuture<'a, Stat>;
    /// Deletes `path` if it is at `version` (`None`: any).
    fn delete<'a>(&'a self, path: &'a str, version: Option<i32>) -> ZkFuture<'a, ()>;
    /// Makes the server this session reads from catch up with the leader.
    fn sync<'a>(&'a self, path: &'a str) -> ZkFuture<'a, ()>;
    /// Runs `ops` atomically: `OperationFailed` names the first that failed (none took
    /// effect then).
    fn multi(&self, ops: Vec<WriteOp>) -> ZkFuture<'_, (), MultiWriteError>;
    /// With a user, gives `path` (and with `tree` its children) the ACL "this user
    /// writes, anyone reads" if anyone may write it; nothing without a user.
    fn secure<'a>(&'a self, path: &'a str, tree: bool) -> ZkFuture<'a, (), Error>;
}

/// A ZooKeeper ensemble as one machine reaches it: opens sessions.
pub trait ZkConnector: Send + Sync + std::fmt::Debug {
    /// Opens a session asking for `timeout` (the server negotiates it into its bounds);
    /// `connection_timeout` is how long the client waits for a server to answer before it
    /// tries again (`None`: the client's default, from the session timeout).
    fn connect(
        &self,
        timeout: Duration,
        connection_timeout: Option<Duration>,
    ) -> ZkFuture<'_, Arc<dyn ZkSession>>;
    /// The refusal of a request on `path` said with who was refused (`NoAuth`); other
    /// errors as they are.
    fn refused(&self, path: &str, e: ZkError) -> Error;
    /// This machine's clock, ms since 1970 (for how long a lease has been silent).
    fn now_ms(&self) -> u64;
}
