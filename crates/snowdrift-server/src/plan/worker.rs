//! `[worker]` as a section: checked whole, with or without a snowflake generator to use it
//! (the lease each snowflake generator resolves from it is its kind's, in
//! `kinds/snowflake/lease.rs`), and a static worker ID against each layout it is used with.

use snowdrift_core::layout::Layout;
use snowdrift_store::worker::{self as store_worker, FileRegistry, LeaseConfig, WorkerSource};

use crate::config::origin::Origins;
use crate::config::{Derive, Registry, WorkerConfig};
use crate::error::ConfigError;
use crate::kinds::snowflake::lease;

/// Checks `[worker]` as a whole, with or without a snowflake generator to use it: the
/// registry and its URL, the namespace and the lock directory as the registry's `connect`
/// would check them at start, every duration within its range, and no `derive` without
/// `registry = "derived"`.
pub(crate) fn check(w: &WorkerConfig, origins: &Origins) -> Result<(), ConfigError> {
    let (url, _) = lease::registry(w)?;
    store_worker::validate_namespace(&w.namespace).map_err(|e| {
        ConfigError::at(
            "worker.namespace",
            format!(
                "worker.namespace: {} (each snowflake generator leases under \
                 {{namespace}}_{{generator}})",
                store_reason(e)
            ),
        )
    })?;
    if url.starts_with("file://") && FileRegistry::dir_of(&url).is_err() {
        let (key, value) = if w.verify_with.as_deref() == Some(url.as_str()) {
            ("worker.verify_with", url.as_str())
        } else if w.url.as_deref() == Some(url.as_str()) {
            ("worker.url", url.as_str())
        } else {
            ("worker.path", w.path.as_str())
        };
        return Err(ConfigError::at(
            key,
            format!(
                "{key}: {} names no directory; give the directory of the lock and mark files \
                 (worker.path; left out, a directory per machine and user)",
                crate::error::quoted(value)
            ),
        ));
    }
    let derive_set = origins.is_set("worker.derive") || w.derive != Derive::Hostname;
    if derive_set && w.registry != Registry::Derived {
        return Err(ConfigError::at(
            "worker.derive",
            format!(
                "worker.derive applies to registry = \"derived\", and registry is \"{}\", \
                 which {}; remove derive, or set registry = \"derived\"",
                w.registry,
                if w.registry == Registry::Static {
                    "takes worker.id"
                } else {
                    "claims a free worker ID (or worker.id)"
                }
            ),
        ));
    }
    for (key, value) in [
        ("worker.ttl", w.ttl),
        ("worker.window", w.window),
        ("worker.max_mark_wait", w.max_mark_wait),
        ("worker.clock_bound", w.clock_bound),
    ] {
        super::sections::span(key, value)?;
    }
    Ok(())
}

/// A store error's message without the kind in front.
fn store_reason(e: snowdrift_store::Error) -> String {
    match e {
        snowdrift_store::Error::InvalidInput(message) => message,
        other => other.to_string(),
    }
}

/// Refuses a static worker ID (`worker.id`) that `layout`'s node fields cannot hold, by the
/// same call a start makes to resolve it, so `--check-config` refuses what the start would.
pub(super) fn check_worker_id(lease: &LeaseConfig, layout: &Layout) -> Result<(), ConfigError> {
    if let WorkerSource::Static(_) = lease.source {
        // A static ID resolves without the host: its name is not read.
        lease
            .source
            .resolve_in(layout, &lease.split, "")
            .map_err(|e| ConfigError::at("worker.id", format!("worker.id: {}", store_reason(e))))?;
    }
    Ok(())
}
