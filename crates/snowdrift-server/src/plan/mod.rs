//! The [`Plan`]: a configuration checked and resolved once, into the values the server runs
//! with: listeners and TLS, the stores, limits, tokens, and every generator's layout, worker
//! lease and obfuscation. `--check-config` builds it and prints the config; start builds it
//! and starts from it; a reload builds one for the new tokens. So `--check-config` catches
//! every configuration error start would; what it cannot catch is what only a connection
//! tells (a store that is down, a password it refuses, a worker ID another node holds).

pub mod generator;
mod reach;
mod sections;
#[cfg(test)]
mod tests;
mod worker;

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
    /// servers, counter template), the range of every limit and duration, and keys set
    /// where they have no effect. The error names the key at fault and what is allowed,
    /// and where the key was set when the config was loaded from a file, the environment
    /// or flags.
    pub fn plan(&self) -> Result<Plan, ConfigError> {
        Plan::new(self).map_err(|e| self.origins.locate(e))
    }
}

impl Plan {
    fn new(config: &Config) -> Result<Self, ConfigError> {
        sections::check_server(&config.server)?;
        sections::check_limits(&config.limits, &config.server, &config.origins)?;
        let tokens = Tokens::from_config(&config.auth, None)?;
        check_exposure(&config.server, tokens.is_enabled())?;
        let tls = match (&config.server.tls_cert, &config.server.tls_key) {
            (Some(cert), Some(key)) => Some(tls::acceptor(cert, key)?),
            (None, None) => None,
            (cert, _) => {
                return Err(ConfigError::at(
                    if cert.is_some() {
                        "server.tls_cert"
                    } else {
                        "server.tls_key"
                    },
                    "server.tls_cert and server.tls_key go together: give both for TLS, or \
                     neither"
                        .into(),
                ));
            }
        };
        let buffer = sections::check_store(&config.store, &config.origins)?;
        // The worker section is checked even when no generator leases a worker ID, so a
        // mistake in it shows before someone adds a snowflake generator.
        worker::check(&config.worker, &config.origins)?;
        let mut generators = Vec::new();
        let mut seen = BTreeMap::new();
        let mut namespaces = BTreeMap::new();
        for (i, g) in config.effective_generators().iter().enumerate() {
            if let Some(first) = seen.insert(g.name.clone(), i) {
                return Err(ConfigError::at(
                    &format!("generator[{i}].name"),
                    format!(
                        "generator[{i}] ({:?}): the name is already used by generator[{first}]",
                        g.name
                    ),
                ));
            }
            let plan = generator::plan(config, i, g)?;
            if let (Some(lease), Some(layout)) = (plan.source.lease(), plan.source.layout()) {
                worker::check_worker_id(lease, layout)?;
            }
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

    /// What a person should know before running this config, though nothing in it is
    /// refused: each names its generator (`generator[0] ("short"): ...`).
    pub fn warnings(&self) -> Vec<String> {
        self.generators
            .iter()
            .enumerate()
            .flat_map(|(i, g)| {
                g.source
                    .warnings()
                    .into_iter()
                    .map(move |w| format!("generator[{i}] ({:?}): {w}", g.name))
            })
            .collect()
    }

    /// The names of the generators of `kind`.
    pub fn names_of(&self, kind: Kind) -> impl Iterator<Item = &str> {
        self.generators
            .iter()
            .filter(move |g| g.source.kind() == kind)
            .map(|g| g.name.as_str())
    }
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
