//! # snowdrift-testkit
//!
//! Test tools for snowdrift: the URLs of the services the tests use ([`urls`]), a
//! fault-injecting TCP proxy (`FaultProxy`: cut, black-hole, delay; feature `proxy`, on by
//! default), a checker for collected IDs ([`IdChecker`]: duplicates across sources, order
//! per source), the linearizability checker of recorded histories ([`history`]: the
//! `snowdrift-history` crate, which `snowdrift verify` runs on users' own recordings), and a
//! lying gRPC server ([`Liar`], feature `liar`) that repeats its IDs or answers a run that
//! wraps, and PostgreSQL and MariaDB servers of a test's own to crash
//! ([`PrivatePostgres`], [`PrivateMariaDb`]).
#![deny(missing_docs)]

mod checker;
#[cfg(feature = "liar")]
mod liar;
mod private_db;
#[cfg(feature = "proxy")]
mod proxy;
pub mod urls;

pub use snowdrift_history as history;

pub use checker::{Duplicate, IdChecker, IdValue, Negative, OrderViolation, Report};
#[cfg(feature = "liar")]
pub use liar::{Liar, Lie};
pub use private_db::{PrivateMariaDb, PrivatePostgres};
#[cfg(feature = "proxy")]
pub use proxy::{FaultProxy, Mode};

/// A name no other test, process or earlier run uses: `{prefix}_{pid}_{nanos}_{n}`, made of
/// letters, digits and `_` (so it fits SQL tables, Redis keys and znodes).
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}_{}_{nanos}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}
