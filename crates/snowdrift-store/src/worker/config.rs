//! The settings of a [`WorkerNode`](super::WorkerNode).

use std::time::Duration;

use super::{NodeSplit, WorkerSource};
use crate::error::{Error, Result};

/// Default lease length.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);
/// Default high-water-mark window (TiKV PD uses 3 s for its TSO window).
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(3);
/// Default bound on waiting for the clock to pass the mark at start.
pub const DEFAULT_MAX_MARK_WAIT: Duration = Duration::from_secs(10);
/// Default bound on how far behind its peers a node's clock may be.
pub const DEFAULT_CLOCK_BOUND: Duration = Duration::from_secs(1);
/// Default interval of clock reports (Leaf reports every 3 s).
pub const DEFAULT_PUBLISH_EVERY: Duration = Duration::from_secs(3);

/// How a [`WorkerNode`](super::WorkerNode) holds its worker ID.
///
/// ```
/// use std::time::Duration;
/// use snowdrift_store::worker::{LeaseConfig, WorkerSource};
/// let mut config = LeaseConfig::new("etcd://127.0.0.1:2379", WorkerSource::Lowest);
/// config.ttl = Duration::from_secs(5);
/// assert_eq!(config.margin(), Duration::from_secs(1));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaseConfig {
    /// The coordinator (see [`WorkerRegistry`](super::WorkerRegistry) for the URLs).
    pub registry_url: String,
    /// Table, key prefix, root znode or file prefix on the coordinator.
    pub namespace: String,
    /// Where the worker ID comes from.
    pub source: WorkerSource,
    /// How a derived worker ID fills a layout with several node fields. Default: the
    /// whole node space from the derived number.
    pub split: NodeSplit,
    /// Lease length. Renewed every `ttl / 3`. Default 10 s.
    pub ttl: Duration,
    /// Issuing stops at `renewal sent + ttl - margin`, so a node stops before the
    /// coordinator can give its ID to another. `None`: `ttl / 5`.
    pub margin_override: Option<Duration>,
    /// How far ahead of the clock the high-water mark is written (persistence happens once
    /// per half window, not per ID). Default 3 s.
    pub window: Duration,
    /// The longest a node waits at start for its clock to pass the mark; beyond it, it
    /// refuses to start ([`Error::MarkAhead`]). Default 10 s.
    pub max_mark_wait: Duration,
    /// How far behind a live peer's clock this node's clock may be. Default 1 s.
    pub clock_bound: Duration,
    /// How often the node publishes its clock and checks its peers'. Default 3 s.
    pub publish_every: Duration,
    /// The longest one coordinator call may take before it counts as failed. `None`:
    /// `ttl / 3`.
    pub op_timeout_override: Option<Duration>,
    /// Who this node is on the coordinator. `None`: `host/pid/nonce`.
    pub holder: Option<String>,
    /// This host's name for the derived sources. `None`: the system's host name.
    pub hostname: Option<String>,
}

impl LeaseConfig {
    /// Defaults for the coordinator at `registry_url` and the given source.
    pub fn new(registry_url: impl Into<String>, source: WorkerSource) -> Self {
        Self {
            registry_url: registry_url.into(),
            namespace: "snowdrift_workers".into(),
            source,
            split: NodeSplit::default(),
            ttl: DEFAULT_TTL,
            margin_override: None,
            window: DEFAULT_WINDOW,
            max_mark_wait: DEFAULT_MAX_MARK_WAIT,
            clock_bound: DEFAULT_CLOCK_BOUND,
            publish_every: DEFAULT_PUBLISH_EVERY,
            op_timeout_override: None,
            holder: None,
            hostname: None,
        }
    }

    /// The safety margin in force.
    pub fn margin(&self) -> Duration {
        self.margin_override.unwrap_or(self.ttl / 5)
    }

    /// The per-call timeout in force.
    pub fn op_timeout(&self) -> Duration {
        self.op_timeout_override.unwrap_or(self.ttl / 3)
    }

    /// How often the lease is renewed.
    pub fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(m));
        if self.ttl < Duration::from_millis(100) {
            return bad(format!(
                "worker lease ttl {:?} is too short: use at least 100 ms (a few seconds is usual)",
                self.ttl
            ));
        }
        if self.margin() >= self.ttl {
            return bad(format!(
                "worker lease margin {:?} must be below the ttl {:?}",
                self.margin(),
                self.ttl
            ));
        }
        if self.op_timeout() + self.renew_every() >= self.ttl - self.margin() {
            return bad(format!(
                "a coordinator call timeout of {:?} leaves no time to renew within ttl {:?} minus margin {:?}; use a shorter timeout",
                self.op_timeout(),
                self.ttl,
                self.margin()
            ));
        }
        if self.window < Duration::from_millis(20) {
            return bad(format!(
                "high-water mark window {:?} is too short: use at least 20 ms (a few seconds is usual)",
                self.window
            ));
        }
        if self.publish_every.is_zero() {
            return bad("clock report interval must be above 0".into());
        }
        Ok(())
    }
}
