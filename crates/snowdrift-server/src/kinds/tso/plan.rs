//! A `tso` generator's keys and plan: its oracle's options, its election and how followers
//! reach the leader.

use std::time::Duration;

use snowdrift_core::layout::parse_epoch;
use snowdrift_core::tso::TsoConfig;
use snowdrift_store::tso::EtcdTso;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::core_reason;
use crate::kinds::{KindPlan, PlanError, Reached, StartContext};

use super::TsoSource;

/// The etcd namespace of every oracle's keys: `/snowdrift/tso/{name}/leader` and
/// `.../window`. Servers with a generator of the same name on one etcd share its oracle.
pub const TSO_NAMESPACE: &str = "snowdrift";

/// A `tso` generator: its oracle's options, its election and how followers reach the leader.
#[derive(Debug, Clone)]
pub struct TsoPlan {
    /// The etcd URL.
    pub url: String,
    /// Epoch, logical bits, window.
    pub oracle: TsoConfig,
    /// The leader's lease on etcd.
    pub ttl: Duration,
    /// How long before the lease could expire the leader stops issuing.
    pub margin: Duration,
    /// The URL followers forward to when this node leads.
    pub advertise: String,
    /// The token presented to the leader when forwarding, with auth on.
    pub forward_token: Option<String>,
    /// Whether that token may go to a plain `http://` leader.
    pub forward_plaintext: bool,
    /// Most IDs one forwarded call asks of the leader: `limits.max_count` (the leader's, when
    /// nodes share one config).
    pub max_count: u64,
    /// The CA certificate (PEM) an `https://` leader is checked against, and nothing else:
    /// this node's own `server.tls_cert`, as nodes of one cluster share one (or one CA). A
    /// certificate the system's roots trust proves nothing about membership.
    pub forward_ca: Option<std::path::PathBuf>,
    /// `insecure_coordinator`: run on an etcd that takes anonymous requests, or without a
    /// way for followers to check that the leader is a member.
    pub insecure_coordinator: bool,
}

/// The longest `ttl`: a leader that dies is replaced only after its lease runs out.
const MAX_TTL: Duration = Duration::from_secs(60);

/// The longest `window`: how far IDs jump forward at a failover.
const MAX_WINDOW: Duration = Duration::from_secs(60);

/// A `tso` leader's lease when none is configured: PD's 3 s.
pub const DEFAULT_TSO_TTL: Duration = snowdrift_store::tso::DEFAULT_TTL;

impl KindPlan for TsoPlan {
    type Source = TsoSource;
    const KINDS: &'static [Kind] = &[Kind::Tso];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &[
            "epoch",
            "url",
            "window",
            "logical_bits",
            "ttl",
            "forward_token",
            "forward_plaintext",
            "insecure_coordinator",
        ]
    }

    fn plan(config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        tso_plan(config, g).map_err(|(key, e)| match key {
            "" => PlanError::Whole(e),
            key => PlanError::Key(key, e),
        })
    }

    fn kind(&self) -> Kind {
        Kind::Tso
    }

    async fn start(
        &self,
        name: &str,
        cx: &StartContext,
    ) -> Result<TsoSource, snowdrift_store::Error> {
        let offset = super::oracle::test_clock_offset_ms()?;
        if !self.insecure_coordinator
            && snowdrift_store::etcd_takes_anonymous_requests(
                &self.url,
                &format!("/{TSO_NAMESPACE}/tso/{name}/"),
            )
            .await?
        {
            return Err(snowdrift_store::Error::InsecureCoordinator(format!(
                "tso generator {name:?} elects its leader on etcd at {}, which takes requests \
                 from clients without a user or client certificate: anyone who can reach it \
                 can write the leader key and have every node serve their IDs (issue 40: \
                 584,950 duplicates of 2.3 M in 5 s). Turn etcd's authentication on (etcdctl \
                 user add, role grant-permission, auth enable) and give the user in url = \
                 \"etcd://USER:PASSWORD@HOST:2379\", or require client certificates \
                 (--client-cert-auth; https://...?cert=FILE&key=FILE); or set \
                 insecure_coordinator = true on the generator if nothing but the cluster can \
                 reach etcd",
                snowdrift_store::mask_url(&self.url)
            )));
        }
        Ok(TsoSource::new(
            super::oracle::Tso::start(name, self, offset, &cx.keepers).await?,
        ))
    }

    async fn reach(&self, name: &str, _seen: &mut Vec<String>) -> Vec<Reached> {
        let answer = Reached::bounded(EtcdTso::connect(&self.url, TSO_NAMESPACE, name)).await;
        vec![Reached::new(
            format!("etcd of tso generator {name:?}"),
            &self.url,
            answer,
        )]
    }
}

/// The plan of a `tso` generator, or the key that is wrong and why.
fn tso_plan(config: &Config, g: &GeneratorConfig) -> Result<TsoPlan, (&'static str, String)> {
    if g.url.is_none() {
        return Err((
            "",
            "kind tso needs url = \"etcd://HOST:2379\": the leader is elected and its window \
             saved there"
                .into(),
        ));
    }
    let defaults = TsoConfig::default();
    let epoch_ms = match g.epoch.as_deref() {
        Some(text) => parse_epoch(text).map_err(|e| ("epoch", core_reason(e)))?,
        None => defaults.epoch_ms,
    };
    let window = g
        .window
        .unwrap_or(Duration::from_millis(defaults.window_ms));
    if window > MAX_WINDOW {
        return Err((
            "window",
            format!(
                "{window:?} is above {MAX_WINDOW:?}: at each failover the new leader starts \
                 past the saved window, so IDs jump forward by up to that much; give 1ms to \
                 {MAX_WINDOW:?} (PD uses 3s)"
            ),
        ));
    }
    let oracle = TsoConfig {
        epoch_ms,
        logical_bits: g.logical_bits.unwrap_or(defaults.logical_bits),
        window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
    };
    oracle.validate().map_err(|e| {
        let key = if g.window.is_some() && oracle.window_ms == 0 {
            "window"
        } else {
            "logical_bits"
        };
        (key, core_reason(e))
    })?;
    let max_count = config.limits.max_count;
    if oracle.logical_capacity() < max_count {
        return Err((
            "logical_bits",
            format!(
                "{} logical bits give {} IDs per millisecond, fewer than limits.max_count = \
                 {max_count}, and a request's IDs come from one millisecond; raise \
                 logical_bits or lower limits.max_count",
                oracle.logical_bits,
                oracle.logical_capacity()
            ),
        ));
    }
    let ttl = g.ttl.unwrap_or(DEFAULT_TSO_TTL);
    if ttl < Duration::from_secs(1) || ttl > MAX_TTL || ttl.subsec_nanos() != 0 {
        return Err((
            "ttl",
            format!(
                "{ttl:?} is not a whole number of seconds from 1 s to {MAX_TTL:?} (etcd leases \
                 are whole seconds; PD uses 3s; a leader that dies is replaced only after its \
                 lease, so a longer one is an outage that long)"
            ),
        ));
    }
    let url = g.url.clone().unwrap_or_default();
    if !["etcd://", "http://", "https://"]
        .iter()
        .any(|scheme| url.starts_with(scheme))
    {
        return Err((
            "url",
            format!(
                "{} is not an etcd URL; the leader is elected on etcd: \
                 url = \"etcd://[USER:PASSWORD@]HOST:2379[,HOST:2379...]\", or \
                 \"https://...?ca=FILE&cert=FILE&key=FILE\" for TLS",
                crate::error::quoted(&crate::config::mask_url(&url))
            ),
        ));
    }
    let advertise = advertise(&config.server).map_err(|e| ("advertise", e))?;
    let auth_on = !config.auth.tokens.is_empty();
    // What a follower presents to its leader matters only with auth on: said rather than
    // ignored.
    for (key, set) in [
        ("forward_token", g.forward_token.is_some()),
        ("forward_plaintext", g.forward_plaintext.is_some()),
    ] {
        if set && !auth_on {
            return Err((
                key,
                "applies only with auth on (it is about the token a follower presents to its \
                 leader), and no [[auth.token]] is configured, so it would have no effect; \
                 remove it, or turn auth on"
                    .into(),
            ));
        }
    }
    if auth_on && g.forward_token.is_none() {
        return Err((
            "forward_token",
            "auth is on, so followers need a token to forward requests to the leader: set \
             forward_token to a read token (snowdrift token create) whose scope has this \
             generator, configured on every node"
                .into(),
        ));
    }
    let forward_plaintext = g.forward_plaintext.unwrap_or(false);
    if auth_on && !forward_plaintext && !advertise.starts_with("https://") {
        return Err((
            "forward_plaintext",
            format!(
                "auth is on and this node is reached at {advertise}, plain http: followers \
                 would send their forward_token in cleartext, which they refuse to do; serve \
                 over TLS (server.tls_cert, or server.advertise = \"https://...\" behind a TLS \
                 proxy), or set forward_plaintext = true if the network is trusted"
            ),
        ));
    }
    let insecure_coordinator = g.insecure_coordinator.unwrap_or(false);
    if !insecure_coordinator && config.server.tls_cert.is_none() {
        return Err((
            "insecure_coordinator",
            format!(
                "followers serve what the node named in etcd's leader key answers, and this \
                 node is reached at {advertise} without server.tls_cert, so nothing lets them \
                 check that a leader is a member of the cluster: anyone who can write that \
                 key would have every node serve their IDs (issue 40: 584,950 duplicates of \
                 2.3 M in 5 s). Serve the nodes over TLS with server.tls_cert and \
                 server.tls_key (one certificate or CA for the cluster: followers check the \
                 leader against it, not the system's roots), and give etcd users (etcd \
                 auth enable; url = \"etcd://USER:PASSWORD@HOST:2379\"); or set \
                 insecure_coordinator = true if nothing but the cluster can reach etcd and \
                 the nodes"
            ),
        ));
    }
    Ok(TsoPlan {
        url,
        oracle,
        ttl,
        margin: ttl / 5,
        advertise,
        forward_token: g.forward_token.clone(),
        forward_plaintext,
        max_count,
        forward_ca: config.server.tls_cert.clone(),
        insecure_coordinator,
    })
}

/// The URL other nodes reach this one's gRPC at: `server.advertise`, else `listen` with the
/// scheme of its TLS setting when it is not a wildcard address.
fn advertise(server: &crate::config::ServerConfig) -> Result<String, String> {
    let scheme = if server.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    let Some(url) = &server.advertise else {
        if server.listen.ip().is_unspecified() || server.listen.port() == 0 {
            return Err(format!(
                "server.listen is {}, which names no address another node can reach: set \
                 server.advertise = \"{scheme}://HOST:PORT\" (how the other nodes reach this \
                 one), which a tso leader publishes to its followers",
                server.listen,
            ));
        }
        return Ok(format!("{scheme}://{}", server.listen));
    };
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let ok =
        rest.is_some_and(|r| !r.is_empty() && !r.contains(['/', ' ', '?', '#']) && r.len() <= 200);
    if !ok {
        return Err(format!(
            "server.advertise {} is not a URL of this node: write \"{scheme}://HOST:PORT\", no \
             path",
            crate::error::quoted(url)
        ));
    }
    Ok(url.clone())
}
