//! The settings of an [`OracleNode`](super::OracleNode).

use std::sync::Arc;
use std::time::Duration;

use snowdrift_core::tso::TsoConfig;

use crate::error::{Error, Result};

/// A leader's lease when none is set: PD's 3 s.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3);

/// Called with the number of requests each allocation served, for a histogram (PD's
/// batching at work). It runs on the serving task: keep it short.
pub type GroupObserver = Arc<dyn Fn(usize) + Send + Sync>;

/// How an [`OracleNode`](super::OracleNode) campaigns for timestamp oracle `name` and
/// serves it while it leads.
///
/// ```
/// use std::time::Duration;
/// use snowdrift_store::tso::OracleConfig;
/// let mut config = OracleConfig::new("etcd://127.0.0.1:2379", "snowdrift", "ts", "http://10.0.0.7:8080");
/// config.ttl = Duration::from_secs(5);
/// assert_eq!(config.margin(), Duration::from_secs(1));
/// config.validate()?;
/// # Ok::<(), snowdrift_store::Error>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct OracleConfig {
    /// The etcd URL (the forms of [`EtcdTso::connect`](super::EtcdTso::connect)).
    pub url: String,
    /// Keys live under `/{namespace}/tso/{name}/`.
    pub namespace: String,
    /// The oracle's name: nodes that campaign under the same namespace and name share it.
    pub name: String,
    /// Epoch, logical bits, window. Every node of one oracle must use the same.
    pub tso: TsoConfig,
    /// The leader's lease on etcd, whole seconds (etcd rounds up). Default 3 s.
    pub ttl: Duration,
    /// A leader stops issuing `margin` before its lease could expire, counted from when
    /// the last renewal was sent. `None`: `ttl / 5`.
    pub margin_override: Option<Duration>,
    /// Where the other nodes reach this one while it leads (its URL, without spaces): the
    /// leader key names it, and [`Role::Follower`](super::Role::Follower) gives it to them.
    pub advertise: String,
    /// Told the size of each merged group of requests.
    pub on_group: Option<GroupObserver>,
}

impl std::fmt::Debug for OracleConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OracleConfig")
            .field("url", &crate::mask_url(&self.url))
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("tso", &self.tso)
            .field("ttl", &self.ttl)
            .field("margin", &self.margin())
            .field("advertise", &self.advertise)
            .finish_non_exhaustive()
    }
}

impl OracleConfig {
    /// Defaults (PD's: 18 logical bits, a 3 s window, a 3 s lease) for oracle `name` on the
    /// etcd at `url`, this node reached at `advertise`.
    pub fn new(
        url: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
        advertise: impl Into<String>,
    ) -> Self {
        Self {
            url: url.into(),
            namespace: namespace.into(),
            name: name.into(),
            tso: TsoConfig::default(),
            ttl: DEFAULT_TTL,
            margin_override: None,
            advertise: advertise.into(),
            on_group: None,
        }
    }

    /// The safety margin in force.
    pub fn margin(&self) -> Duration {
        self.margin_override.unwrap_or(self.ttl / 5)
    }

    /// Checks the settings against each other (the name and namespace are checked when
    /// [`OracleNode::start`](super::OracleNode::start) connects).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(m));
        self.tso
            .validate()
            .or_else(|e| bad(format!("timestamp oracle {:?}: {e}", self.name)))?;
        if self.ttl < Duration::from_secs(1) {
            return bad(format!(
                "tso leader lease {:?} is too short: etcd leases are whole seconds, use at least 1 s (PD uses 3 s)",
                self.ttl
            ));
        }
        if self.margin() >= self.ttl {
            return bad(format!(
                "tso leader margin {:?} must be below the lease ttl {:?} (a fifth of it is usual)",
                self.margin(),
                self.ttl
            ));
        }
        if self.advertise.is_empty() || self.advertise.contains(char::is_whitespace) {
            return bad(format!(
                "tso advertise address {:?} is not one a follower can reach: give this node's URL, without spaces",
                self.advertise
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OracleConfig {
        OracleConfig::new(
            "etcd://127.0.0.1:2379",
            "snowdrift",
            "ts",
            "http://10.0.0.7:8080",
        )
    }

    #[test]
    fn the_defaults_are_pds_and_pass() {
        let c = config();
        assert_eq!(c.tso, TsoConfig::default());
        assert_eq!((c.ttl, c.margin()), (DEFAULT_TTL, DEFAULT_TTL / 5));
        c.validate().unwrap();
    }

    #[test]
    fn settings_that_break_fencing_or_forwarding_are_refused_naming_what_is_allowed() {
        let mut c = config();
        c.margin_override = Some(c.ttl);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("must be below the lease ttl"), "{e}");

        let mut c = config();
        c.ttl = Duration::from_millis(500);
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("use at least 1 s"), "{e}");

        let mut c = config();
        c.advertise = "http://a b".into();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("without spaces"), "{e}");

        let mut c = config();
        c.tso.logical_bits = 40;
        let e = c.validate().unwrap_err().to_string();
        assert!(
            e.contains("logical_bits = 40") && e.contains("\"ts\""),
            "{e}"
        );
    }
}
