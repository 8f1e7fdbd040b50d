//! `[server]`, `[store]` and `[limits]` checked: every limit and duration within the range a
//! user would expect (one table below, which docs/src/reference/config.md renders), and
//! no key set where it has no effect. `[worker]`'s durations are in the same table;
//! `worker.rs` checks the rest of that section.

use std::time::Duration;

use snowdrift_core::segment::{ChainConfig, StepPolicy};
use snowdrift_store::segment::BufferConfig;

use crate::config::origin::Origins;
use crate::config::{LimitsConfig, ServerConfig, StoreConfig};
use crate::error::ConfigError;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// The smallest `limits.grpc_max_message` and `limits.resp_max_frame`: room for any
/// legitimate request with names and tokens of a few hundred bytes.
const MIN_REQUEST: u64 = KIB;

/// A count or size key's range, and why each end is where it is.
pub(super) struct Count {
    pub(super) key: &'static str,
    pub(super) min: u64,
    pub(super) max: u64,
    /// `bytes`, or empty.
    pub(super) unit: &'static str,
    /// Why less is refused.
    pub(super) low: &'static str,
    /// Why more is refused.
    pub(super) high: &'static str,
}

/// A duration key's range, and why each end is where it is.
pub(super) struct Span {
    pub(super) key: &'static str,
    pub(super) min: Duration,
    pub(super) max: Duration,
    pub(super) low: &'static str,
    pub(super) high: &'static str,
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

const fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// `[limits]`' counts and sizes.
pub(super) const COUNTS: &[Count] = &[
    Count {
        key: "limits.max_count",
        min: 1,
        max: 10_000_000,
        unit: "",
        low: "a request must be able to ask for one ID",
        high: "one answer holds all its IDs in memory at once (some 20 bytes each)",
    },
    Count {
        key: "limits.max_stream",
        min: 1,
        max: u64::MAX,
        unit: "",
        low: "a gRPC Stream must be able to carry one ID",
        high: "",
    },
    Count {
        key: "limits.max_body",
        min: KIB,
        max: 16 * MIB,
        unit: " bytes",
        low: "too small for a tag admin request's JSON body",
        high: "a request body is held in memory whole",
    },
    Count {
        key: "limits.grpc_max_message",
        min: MIN_REQUEST,
        max: 4 * MIB,
        unit: " bytes",
        low: "too small for the largest Next, Stream or Decode request with its name, format and input",
        high: "gRPC's own default cap; a legitimate request is a few hundred bytes",
    },
    Count {
        key: "limits.resp_max_frame",
        min: MIN_REQUEST,
        max: MIB,
        unit: " bytes",
        low: "too small for HELLO 3 AUTH with a token and a client name",
        high: "a legitimate RESP request is a few hundred bytes",
    },
    Count {
        key: "limits.max_head",
        min: 8192,
        max: MIB,
        unit: " bytes",
        low: "the smallest request head buffer hyper takes",
        high: "a request head is held in memory whole",
    },
    Count {
        key: "limits.max_answer_bytes",
        min: 64 * KIB,
        max: 1024 * MIB,
        unit: " bytes",
        low: "too small for one answer of the longest text IDs",
        high: "one answer is held in memory whole (and its JSON beside it)",
    },
    Count {
        key: "limits.max_streams",
        min: 1,
        max: 1_000_000,
        unit: "",
        low: "at least one gRPC call must be able to run",
        high: "each call in flight holds memory",
    },
];

/// Every duration key's range (the generators' are their kinds' to check).
pub(super) const SPANS: &[Span] = &[
    Span {
        key: "server.shutdown_timeout",
        min: Duration::ZERO,
        max: secs(3600),
        low: "",
        high: "requests in flight take milliseconds; a stop that waits longer looks hung",
    },
    Span {
        key: "store.wait",
        min: Duration::ZERO,
        max: secs(60),
        low: "",
        high: "a request that waits longer for its store is better refused: clients give up sooner",
    },
    Span {
        key: "limits.header_timeout",
        min: ms(100),
        max: secs(600),
        low: "a client on a slow network could not send a request head in time",
        high: "a client that takes longer holds a connection's memory that long",
    },
    Span {
        key: "limits.body_timeout",
        min: ms(100),
        max: secs(600),
        low: "a client on a slow network could not send a request body in time",
        high: "a client that takes longer holds a connection's memory that long",
    },
    Span {
        key: "limits.idle_timeout",
        min: secs(1),
        max: secs(24 * 3600),
        low: "connections would close between a client's requests",
        high: "an idle connection holds memory and a file descriptor that long",
    },
    Span {
        key: "worker.ttl",
        min: ms(100),
        max: secs(600),
        low: "the lease must outlast a renewal's round trip",
        high: "a node that dies holds its worker ID that long before another may take it",
    },
    Span {
        key: "worker.window",
        min: ms(20),
        max: secs(60),
        low: "the high-water mark would be saved every few milliseconds",
        high: "a node restarted after a crash must wait for its clock to pass the mark, up to \
               this long (or, with on_backward = \"extension\", spend an extension value)",
    },
    Span {
        key: "worker.max_mark_wait",
        min: Duration::ZERO,
        max: secs(600),
        low: "",
        high: "a start that waits longer for its clock looks hung; set the clock right instead",
    },
    Span {
        key: "worker.clock_bound",
        min: ms(1),
        max: secs(60),
        low: "no two clocks agree to the nanosecond: every peer would be refused",
        high: "a clock a minute behind its peers is wrong, not late",
    },
];

fn count(key: &str, value: u64) -> Result<(), ConfigError> {
    let Some(c) = COUNTS.iter().find(|c| c.key == key) else {
        return Ok(());
    };
    let (min, max, unit) = (c.min, c.max, c.unit);
    let allowed = if max == u64::MAX {
        format!("give {min}{unit} or more")
    } else {
        format!("give {min} to {max}{unit}")
    };
    if value < min {
        return Err(ConfigError::at(
            key,
            format!("{key}: {value}{unit} is below {min}, {}; {allowed}", c.low),
        ));
    }
    if value > max {
        return Err(ConfigError::at(
            key,
            format!("{key}: {value}{unit} is above {max}: {}; {allowed}", c.high),
        ));
    }
    Ok(())
}

/// Checks `value` of the duration key `key` against its range in [`SPANS`].
pub(super) fn span(key: &str, value: Duration) -> Result<(), ConfigError> {
    let Some(s) = SPANS.iter().find(|s| s.key == key) else {
        return Ok(());
    };
    let shown = |d: Duration| {
        jiff::SignedDuration::try_from(d).map_or_else(|_| format!("{d:?}"), |d| format!("{d:#}"))
    };
    let allowed = format!("give \"{}\" to \"{}\"", shown(s.min), shown(s.max));
    if value.is_zero() && !s.min.is_zero() && key.starts_with("limits.") {
        return Err(ConfigError::at(
            key,
            format!(
                "{key}: must be above zero (e.g. \"10s\"); a connection without a bound on its \
                 wait is what slow clients use to hold a server's memory"
            ),
        ));
    }
    if value < s.min {
        return Err(ConfigError::at(
            key,
            format!(
                "{key}: {} is below {}: {}; {allowed}",
                shown(value),
                shown(s.min),
                s.low
            ),
        ));
    }
    if value > s.max {
        return Err(ConfigError::at(
            key,
            format!(
                "{key}: {} is above {}: {}; {allowed}",
                shown(value),
                shown(s.max),
                s.high
            ),
        ));
    }
    Ok(())
}

/// `[server]`'s duration.
pub(super) fn check_server(server: &ServerConfig) -> Result<(), ConfigError> {
    span("server.shutdown_timeout", server.shutdown_timeout)
}

/// `[limits]`: every count, size and timeout within its range, and no RESP frame limit
/// without a RESP listener.
pub(super) fn check_limits(
    limits: &LimitsConfig,
    server: &ServerConfig,
    origins: &Origins,
) -> Result<(), ConfigError> {
    let size = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
    for (key, value) in [
        ("limits.max_count", limits.max_count),
        ("limits.max_stream", limits.max_stream),
        ("limits.max_body", size(limits.max_body)),
        ("limits.grpc_max_message", size(limits.grpc_max_message)),
        ("limits.resp_max_frame", size(limits.resp_max_frame)),
        ("limits.max_head", size(limits.max_head)),
        ("limits.max_streams", size(limits.max_streams)),
        ("limits.max_answer_bytes", limits.max_answer_bytes),
    ] {
        count(key, value)?;
    }
    for (key, value) in [
        ("limits.header_timeout", limits.header_timeout),
        ("limits.body_timeout", limits.body_timeout),
        ("limits.idle_timeout", limits.idle_timeout),
    ] {
        span(key, value)?;
    }
    let frame_set = origins.is_set("limits.resp_max_frame")
        || limits.resp_max_frame != LimitsConfig::default().resp_max_frame;
    if frame_set && server.resp_listen.is_none() {
        return Err(ConfigError::at(
            "limits.resp_max_frame",
            "limits.resp_max_frame: applies to the RESP listener, and server.resp_listen is not \
             set, so it would have no effect; set server.resp_listen, or remove the limit"
                .into(),
        ));
    }
    Ok(())
}

/// Checks `[store]` and resolves its buffer settings.
pub(super) fn check_store(
    store: &StoreConfig,
    origins: &Origins,
) -> Result<BufferConfig, ConfigError> {
    let url_set = origins.is_set("store.url") || store.url != StoreConfig::default().url;
    let urls: Vec<&String> = match store.urls.as_slice() {
        [] => vec![&store.url],
        [_] => {
            return Err(ConfigError::at(
                "store.urls",
                "store.urls: striping needs at least 2 stores; for one, use store.url".into(),
            ));
        }
        _ if url_set => {
            return Err(ConfigError::at(
                "store.url",
                "store.url: has no effect when store.urls is set (the stores are striped \
                 over store.urls alone); give one or the other"
                    .into(),
            ));
        }
        urls => urls.iter().collect(),
    };
    let url_key = if store.urls.is_empty() {
        "store.url"
    } else {
        "store.urls"
    };
    for url in urls {
        snowdrift_store::segment::SegmentStore::check(url, &store.table).map_err(|e| {
            let key = match e {
                snowdrift_store::Error::InvalidUrl { .. } => url_key,
                _ => "store.table",
            };
            ConfigError::at(key, format!("[store]: {e}"))
        })?;
    }
    for tag in &store.preload {
        snowdrift_store::segment::validate_tag(tag)
            .map_err(|e| ConfigError::at("store.preload", format!("store.preload: {e}")))?;
    }
    let max = snowdrift_store::segment::MAX_STEP as u64;
    if !(1..=max).contains(&store.max_step) {
        return Err(ConfigError::at(
            "store.max_step",
            format!(
                "store.max_step: {} is not a step; use 1 to {max} (Leaf caps at 1000000)",
                store.max_step
            ),
        ));
    }
    if !(0.0..=1.0).contains(&store.prefetch_at) {
        return Err(ConfigError::at(
            "store.prefetch_at",
            format!(
                "store.prefetch_at: {} is not a share of a segment; use 0 to 1 (0.1 claims the \
                 next segment once a tenth of the current one is used, as Leaf; 0.8 once 80% is)",
                store.prefetch_at
            ),
        ));
    }
    span("store.wait", store.wait)?;
    let defaults = BufferConfig::default();
    Ok(BufferConfig {
        wait: store.wait,
        step: StepPolicy {
            max_step: store.max_step,
            ..defaults.step
        },
        chain: ChainConfig {
            // The chain counts whole percent.
            prefetch_percent: (store.prefetch_at * 100.0).round() as u8,
            ..defaults.chain
        },
        ..defaults
    })
}
