//! The [`Plan`]: a configuration checked and resolved once, into the values the server runs
//! with: listeners and TLS, the stores, limits, tokens, and every generator's layout, worker
//! lease and obfuscation. `--check-config` builds it and prints the config; start builds it
//! and starts from it; a reload builds one for the new tokens. So `--check-config` catches
//! every configuration error start would; what it cannot catch is what only a connection
//! tells (a store that is down, a password it refuses, a worker ID another node holds).

pub mod generator;
mod reach;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;

pub use generator::{
    CounterPlan, GeneratorPlan, SnowflakeOptions, SourcePlan, TSO_NAMESPACE, TsoPlan, UuidPlan,
};
pub use reach::{REACH_TIMEOUT, Reached};

use crate::auth::Tokens;
use crate::config::{Config, Kind, LimitsConfig, ServerConfig, StoreConfig};
use crate::error::ConfigError;
use crate::tls::{self, Tls};
use snowdrift_core::segment::{ChainConfig, StepPolicy};
use snowdrift_store::segment::BufferConfig;

/// A configuration, checked and resolved. Made by [`Config::plan`].
#[derive(Debug)]
pub struct Plan {
    pub(crate) config: Config,
    pub(crate) tls: Option<Tls>,
    pub(crate) tokens: Tokens,
    pub(crate) generators: Vec<GeneratorPlan>,
    pub(crate) buffer: BufferConfig,
}

impl Config {
    /// Checks everything the values mean together and resolves them, without connecting to
    /// anything: limits, listeners against auth, TLS files, tokens, the store URLs, and
    /// every generator (names, keys of its kind, layout, worker lease, obfuscation, ticket
    /// servers, counter template). The error names the key at fault and what is allowed.
    pub fn plan(&self) -> Result<Plan, ConfigError> {
        Plan::new(self)
    }
}

impl Plan {
    fn new(config: &Config) -> Result<Self, ConfigError> {
        check_limits(&config.limits)?;
        let tokens = Tokens::from_config(&config.auth, None)?;
        check_exposure(&config.server, tokens.is_enabled())?;
        let tls = match (&config.server.tls_cert, &config.server.tls_key) {
            (Some(cert), Some(key)) => Some(tls::acceptor(cert, key)?),
            (None, None) => None,
            _ => {
                return Err(ConfigError::new(
                    "server.tls_cert and server.tls_key go together: give both for TLS, or \
                     neither"
                        .into(),
                ));
            }
        };
        let buffer = check_store(&config.store)?;
        // The worker section is checked even when no generator leases a worker ID, so a
        // mistake in it shows before someone adds a snowflake generator.
        crate::kinds::snowflake::lease::registry(&config.worker)?;
        let mut generators = Vec::new();
        let mut seen = BTreeMap::new();
        let mut namespaces = BTreeMap::new();
        for (i, g) in config.effective_generators().iter().enumerate() {
            if let Some(first) = seen.insert(g.name.clone(), i) {
                return Err(ConfigError::new(format!(
                    "generator[{i}] ({:?}): the name is already used by generator[{first}]",
                    g.name
                )));
            }
            let plan = generator::plan(config, i, g)?;
            if let Some(lease) = plan.source.lease()
                && let Some(other) = namespaces.insert(lease.namespace.clone(), i)
            {
                return Err(ConfigError::new(format!(
                    "generator[{i}] ({:?}): its worker lease namespace {:?} is the same as \
                     generator[{other}]'s; rename one",
                    g.name, lease.namespace
                )));
            }
            generators.push(plan);
        }
        Ok(Self {
            config: config.clone(),
            tls,
            tokens,
            generators,
            buffer,
        })
    }

    /// The configuration this plan was made from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `[server]`.
    pub fn server(&self) -> &ServerConfig {
        &self.config.server
    }

    /// `[store]`.
    pub fn store(&self) -> &StoreConfig {
        &self.config.store
    }

    /// How segment buffers run: `[store]`'s `wait`, `max_step` and `prefetch_at` resolved.
    pub fn buffer(&self) -> BufferConfig {
        self.buffer
    }

    /// `[limits]`.
    pub fn limits(&self) -> &LimitsConfig {
        &self.config.limits
    }

    /// Where the HTTP (and gRPC) listener listens.
    pub fn listen(&self) -> SocketAddr {
        self.config.server.listen
    }

    /// The generators, configured or default, in config order.
    pub fn generators(&self) -> &[GeneratorPlan] {
        &self.generators
    }

    /// The names of the generators of `kind`.
    pub fn names_of(&self, kind: Kind) -> impl Iterator<Item = &str> {
        self.generators
            .iter()
            .filter(move |g| g.source.kind() == kind)
            .map(|g| g.name.as_str())
    }
}

/// The smallest `limits.grpc_max_message` and `limits.resp_max_frame`: room for any
/// legitimate request with names and tokens of a few hundred bytes.
const MIN_REQUEST: usize = 1024;

fn check_limits(limits: &LimitsConfig) -> Result<(), ConfigError> {
    if limits.max_count == 0 {
        return Err(ConfigError::new(
            "limits.max_count: must be at least 1".into(),
        ));
    }
    if limits.max_stream == 0 {
        return Err(ConfigError::new(
            "limits.max_stream: must be at least 1".into(),
        ));
    }
    if limits.max_streams == 0 {
        return Err(ConfigError::new(
            "limits.max_streams: must be at least 1 (gRPC calls in flight at once)".into(),
        ));
    }
    if limits.max_head < 8192 {
        return Err(ConfigError::new(format!(
            "limits.max_head: {} bytes is below 8192, the smallest request head buffer hyper \
             takes; give 8192 or more (default 16384)",
            limits.max_head
        )));
    }
    for (key, value, why) in [
        (
            "limits.grpc_max_message",
            limits.grpc_max_message,
            "the largest Next, Stream or Decode request with its name, format and input",
        ),
        (
            "limits.resp_max_frame",
            limits.resp_max_frame,
            "HELLO 3 AUTH with a token and a client name",
        ),
    ] {
        if value < MIN_REQUEST {
            return Err(ConfigError::new(format!(
                "{key}: {value} bytes is below {MIN_REQUEST}, too small for {why}; give \
                 {MIN_REQUEST} or more"
            )));
        }
    }
    for (key, value) in [
        ("limits.header_timeout", limits.header_timeout),
        ("limits.body_timeout", limits.body_timeout),
        ("limits.idle_timeout", limits.idle_timeout),
    ] {
        if value.is_zero() {
            return Err(ConfigError::new(format!(
                "{key}: must be above zero (e.g. \"10s\"); a connection without a bound on \
                 its wait is what slow clients use to hold a server's memory"
            )));
        }
    }
    Ok(())
}

/// Checks `[store]` and resolves its buffer settings.
fn check_store(store: &StoreConfig) -> Result<BufferConfig, ConfigError> {
    let urls: Vec<&String> = match store.urls.as_slice() {
        [] => vec![&store.url],
        [_] => {
            return Err(ConfigError::new(
                "store.urls: striping needs at least 2 stores; for one, use store.url".into(),
            ));
        }
        urls => urls.iter().collect(),
    };
    for url in urls {
        snowdrift_store::segment::SegmentStore::check(url, &store.table)
            .map_err(|e| ConfigError::new(format!("[store]: {e}")))?;
    }
    for tag in &store.preload {
        snowdrift_store::segment::validate_tag(tag)
            .map_err(|e| ConfigError::new(format!("store.preload: {e}")))?;
    }
    let max = snowdrift_store::segment::MAX_STEP as u64;
    if !(1..=max).contains(&store.max_step) {
        return Err(ConfigError::new(format!(
            "store.max_step: {} is not a step; use 1 to {max} (Leaf caps at 1000000)",
            store.max_step
        )));
    }
    if !(0.0..=1.0).contains(&store.prefetch_at) {
        return Err(ConfigError::new(format!(
            "store.prefetch_at: {} is not a share of a segment; use 0 to 1 (0.1 claims the \
             next segment once a tenth of the current one is used, as Leaf; 0.8 once 80% is)",
            store.prefetch_at
        )));
    }
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

/// Refuses a listener reachable from other machines while auth is off, unless
/// `server.insecure_bind` says the network is trusted. At start, and at a reload against
/// the listeners the server runs with, so a new `[auth]` never leaves a server open.
pub(crate) fn check_exposure(server: &ServerConfig, auth_on: bool) -> Result<(), ConfigError> {
    if server.insecure_bind || auth_on {
        return Ok(());
    }
    let listeners = [
        ("server.listen", Some(server.listen)),
        ("server.resp_listen", server.resp_listen),
    ];
    for (key, addr) in listeners {
        if let Some(addr) = addr
            && !addr.ip().is_loopback()
        {
            return Err(ConfigError::new(format!(
                "{key}: {addr} is reachable from other machines and auth is off (no \
                 [[auth.token]] is configured); listen on 127.0.0.1, add tokens (snowdrift \
                 token create), or set server.insecure_bind = true (--insecure-bind) if the \
                 network is trusted"
            )));
        }
    }
    Ok(())
}
