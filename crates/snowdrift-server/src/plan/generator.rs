//! One `[[generator]]`, resolved: its layout and worker lease, tag, ticket servers, counter
//! or simple kind, and its obfuscation, each checked the way start would use it. Nothing
//! here connects to anything; `state::generators` does, from these plans.

use snowdrift_core::counter::CounterTemplate;
use snowdrift_core::kinds::uuid::{self as uuid_kind, Uuid, v2::Domain};
use std::time::Duration;

use snowdrift_core::generator::{Builder, OnBackward, SnowflakeGenerator};
use snowdrift_core::layout::{Layout, parse_epoch};
use snowdrift_core::obfuscate::{self, Obfuscator};
use snowdrift_core::tso::TsoConfig;
use snowdrift_store::counter::RedisCounter;
use snowdrift_store::ticket::{TicketPool, TicketPoolBuilder};
use snowdrift_store::worker::LeaseConfig;

use crate::config::{Config, GeneratorConfig, Kind, OnBackwardPolicy, Output};
use crate::error::{ConfigError, core_reason};

/// A generator as it will be served.
#[derive(Debug, Clone)]
pub struct GeneratorPlan {
    /// The name it is served under.
    pub name: String,
    /// Where its IDs come from.
    pub source: SourcePlan,
    /// The obfuscation of `format=obfuscated...`, with an `obfuscate_key`.
    pub obfuscator: Option<Obfuscator>,
}

/// Where a generator's IDs come from, with everything its kind needs.
// A plan is made once per configuration, never per request: the snowflake variant's size
// (layout, lease, options inline) costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum SourcePlan {
    /// Snowflake IDs under `layout`, issued only under the worker lease `lease`.
    Snowflake {
        /// The bit layout.
        layout: Layout,
        /// Its name: a preset's, or `custom`.
        layout_name: String,
        /// The worker-ID lease.
        lease: LeaseConfig,
        /// Clock and sequence policies.
        options: SnowflakeOptions,
        /// The worker ID is leased only on this machine while the server listens beyond
        /// loopback: another machine could issue under the same ID.
        unverified: bool,
    },
    /// The segment tag `tag`.
    Segment {
        /// The tag.
        tag: String,
    },
    /// Ticket servers.
    Ticket {
        /// The pool, checked, to connect.
        pool: TicketPoolBuilder,
    },
    /// A Redis counter.
    Counter(CounterPlan),
    /// UUID v1, v2, v3, v5 or v6, with what its config sets.
    Uuid(UuidPlan),
    /// UUID v4/v7, ULID or ObjectId: nothing to connect.
    Simple(Kind),
    /// ObjectIds under the legacy layout (machine hash and process ID).
    LegacyObjectId,
    /// A timestamp oracle led from etcd.
    Tso(TsoPlan),
    /// A ZooKeeper znode's data version.
    ZkVersion {
        /// The ZooKeeper URL.
        url: String,
        /// The znode.
        znode: String,
    },
}

/// A snowflake generator's options beyond its layout: the clock and sequence policies the
/// core generator takes, and how IDs are written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnowflakeOptions {
    /// IDs go out with their bits reversed within the layout's width.
    pub bit_reversed: bool,
    /// What a clock behind the last time used does, beyond the wait bound.
    pub on_backward: OnBackward,
    /// The wait bound (also the lease's `max_mark_wait`).
    pub backward_wait: Duration,
    /// Future time a burst may borrow.
    pub max_lead: Duration,
    /// Each tick's sequence starts below this, pseudo-randomly.
    pub random_sequence_start: Option<u64>,
}

impl SnowflakeOptions {
    /// The core generator's builder for `layout` with these policies; `seed` varies the
    /// random sequence starts between processes.
    pub fn builder(&self, layout: &Layout, seed: u64) -> Builder {
        let builder = SnowflakeGenerator::builder(layout.clone())
            .on_backward(self.on_backward)
            .backward_wait(self.backward_wait)
            .max_lead(self.max_lead);
        match self.random_sequence_start {
            Some(below) => builder.random_sequence_start(seed, below),
            None => builder,
        }
    }
}

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
    /// The CA certificate (PEM) an `https://` leader is checked against beside the system's
    /// roots: this node's own `server.tls_cert`, as nodes of one cluster usually share one.
    pub forward_ca: Option<std::path::PathBuf>,
}

/// A `tso` leader's lease when none is configured: PD's 3 s.
pub const DEFAULT_TSO_TTL: Duration = Duration::from_secs(3);

/// The UUID versions a `[[generator]]` configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UuidPlan {
    /// `uuid1` or `uuid6` (`kind` says which).
    Gregorian {
        /// [`Kind::Uuid1`] or [`Kind::Uuid6`].
        kind: Kind,
        /// The configured node ID; a random multicast one when `None`.
        node: Option<[u8; 6]>,
    },
    /// `uuid2`.
    Dce {
        /// The configured node ID; a random multicast one when `None`.
        node: Option<[u8; 6]>,
        /// The local domain.
        domain: Domain,
        /// The local ID.
        local_id: u32,
    },
    /// `uuid3` or `uuid5` (`kind` says which): one UUID per name a request brings.
    Named {
        /// [`Kind::Uuid3`] or [`Kind::Uuid5`].
        kind: Kind,
        /// The namespace names are hashed under.
        namespace: Uuid,
    },
}

impl UuidPlan {
    /// The kind of UUIDs.
    pub fn kind(&self) -> Kind {
        match self {
            UuidPlan::Gregorian { kind, .. } | UuidPlan::Named { kind, .. } => *kind,
            UuidPlan::Dce { .. } => Kind::Uuid2,
        }
    }
}

impl SourcePlan {
    /// The kind of IDs.
    pub fn kind(&self) -> Kind {
        match self {
            SourcePlan::Snowflake { .. } => Kind::Snowflake,
            SourcePlan::Segment { .. } => Kind::Segment,
            SourcePlan::Ticket { .. } => Kind::Ticket,
            SourcePlan::Counter(_) => Kind::Counter,
            SourcePlan::Uuid(plan) => plan.kind(),
            SourcePlan::Simple(kind) => *kind,
            SourcePlan::LegacyObjectId => Kind::Objectid,
            SourcePlan::Tso(_) => Kind::Tso,
            SourcePlan::ZkVersion { .. } => Kind::ZkVersion,
        }
    }

    /// The counter builder of a counter plan, checked.
    pub fn counter(
        name: &str,
        template: Option<&CounterTemplate>,
        batch: Option<u64>,
        max_per_call: u64,
    ) -> snowdrift_store::counter::RedisCounterBuilder {
        let mut counter = RedisCounter::builder(name);
        if let Some(template) = template {
            counter = counter.template(template.clone());
        }
        if let Some(batch) = batch {
            counter = counter.batch(batch);
        }
        counter.max_per_call(max_per_call)
    }
}

/// A `counter` generator: its Redis and how its counter counts.
#[derive(Debug, Clone)]
pub struct CounterPlan {
    /// The Redis URL.
    pub url: String,
    /// The template its IDs are rendered through, if any.
    pub template: Option<CounterTemplate>,
    /// Values reserved per round trip.
    pub batch: Option<u64>,
    /// Most IDs per call: `limits.max_count`.
    pub max_per_call: u64,
}

impl CounterPlan {
    /// The counter of generator `name`, connected as start connects it.
    pub async fn connect(&self, name: &str) -> snowdrift_store::Result<RedisCounter> {
        SourcePlan::counter(name, self.template.as_ref(), self.batch, self.max_per_call)
            .connect(&self.url)
            .await
    }
}

/// The plan of `g`, the `index`-th generator of `config`. Errors name the generator and
/// the key at fault.
pub fn plan(
    config: &Config,
    index: usize,
    g: &GeneratorConfig,
) -> Result<GeneratorPlan, ConfigError> {
    let at = format!("generator[{index}] ({:?})", g.name);
    let fail = |e: String| ConfigError::new(format!("{at}: {e}"));
    snowdrift_store::segment::validate_tag(&g.name).map_err(|e| fail(format!("name: {e}")))?;
    check_keys(g).map_err(|e| fail(e.message().to_string()))?;
    let source = match g.kind {
        Kind::Snowflake => {
            let (layout, layout_name) = snowdrift_core::layout::resolve(
                g.layout.as_deref(),
                g.bits.as_deref(),
                g.unit.as_deref(),
                g.epoch.as_deref(),
            )
            .map_err(|e| fail(core_reason(e)))?;
            let mut lease = super::worker::lease(&config.worker, &g.name)
                .map_err(|e| fail(e.message().to_string()))?;
            super::worker::check_split(&lease, &layout)
                .map_err(|e| fail(e.message().to_string()))?;
            let options = snowflake_options(config, g, &layout).map_err(|(key, e)| {
                ConfigError::new(format!("generator[{index}].{key} ({:?}): {e}", g.name))
            })?;
            lease.max_mark_wait = options.backward_wait;
            let server = &config.server;
            let exposed = !server.listen.ip().is_loopback()
                || server.resp_listen.is_some_and(|a| !a.ip().is_loopback());
            SourcePlan::Snowflake {
                layout,
                layout_name,
                lease,
                options,
                unverified: exposed && super::worker::machine_local(&config.worker),
            }
        }
        Kind::Segment => {
            let tag = g.tag.clone().unwrap_or_else(|| g.name.clone());
            snowdrift_store::segment::validate_tag(&tag).map_err(|e| fail(format!("tag: {e}")))?;
            SourcePlan::Segment { tag }
        }
        Kind::Ticket => {
            // Generators on the same servers and table share its tickets, which keeps them
            // unique across those generators too.
            let mut pool = TicketPool::builder();
            if let Some(table) = &g.table {
                pool = pool.name(table.as_str());
            }
            for url in &g.servers {
                pool = pool.server(url.as_str());
            }
            pool.check().map_err(|e| fail(e.to_string()))?;
            SourcePlan::Ticket { pool }
        }
        Kind::Counter => {
            let template = g
                .template
                .as_deref()
                .map(|text| {
                    text.parse::<CounterTemplate>()
                        .map_err(|e| fail(format!("template {text:?}: {e}")))
                })
                .transpose()?;
            let max_per_call = config.limits.max_count;
            SourcePlan::counter(&g.name, template.as_ref(), g.batch, max_per_call)
                .check()
                .map_err(|e| fail(e.to_string()))?;
            SourcePlan::Counter(CounterPlan {
                url: g.url.clone().unwrap_or_default(),
                template,
                batch: g.batch,
                max_per_call,
            })
        }
        Kind::Uuid1 | Kind::Uuid2 | Kind::Uuid3 | Kind::Uuid5 | Kind::Uuid6 => {
            SourcePlan::Uuid(uuid_plan(g).map_err(|(key, e)| {
                ConfigError::new(format!("generator[{index}].{key} ({:?}): {e}", g.name))
            })?)
        }
        Kind::Tso => SourcePlan::Tso(tso_plan(config, g).map_err(|(key, e)| {
            ConfigError::new(format!("generator[{index}].{key} ({:?}): {e}", g.name))
        })?),
        Kind::ZkVersion => {
            let url = g.url.clone().unwrap_or_default();
            if !url.starts_with("zookeeper://") {
                return Err(fail(format!(
                    "url {} is not a ZooKeeper URL; a zk-version generator writes a znode: url \
                     = \"zookeeper://[USER:PASSWORD@]HOST:2181[,HOST:2181...]\"",
                    crate::error::quoted(&crate::config::mask_url(&url))
                )));
            }
            let znode = g
                .znode
                .clone()
                .unwrap_or_else(|| format!("/snowdrift/versions/{}", g.name));
            SourcePlan::ZkVersion { url, znode }
        }
        Kind::Objectid => match g.layout.as_deref() {
            None | Some("random") => SourcePlan::Simple(Kind::Objectid),
            Some("legacy") => SourcePlan::LegacyObjectId,
            Some(other) => {
                return Err(ConfigError::new(format!(
                    "generator[{index}].layout ({:?}): {} is not an ObjectId layout; use \
                     \"random\" (the default: 5 random bytes per process, today's \
                     specification) or \"legacy\" (a 3-byte hash of the host name and the \
                     2-byte process ID, as drivers before 2018 wrote them)",
                    g.name,
                    crate::error::quoted(other)
                )));
            }
        },
        kind => SourcePlan::Simple(kind),
    };
    let obfuscator = obfuscator(g, &source).map_err(|(key, e)| {
        ConfigError::new(format!("generator[{index}].{key} ({:?}): {e}", g.name))
    })?;
    Ok(GeneratorPlan {
        name: g.name.clone(),
        source,
        obfuscator,
    })
}

/// The clock and sequence policies of a `snowflake` generator, or the key that is wrong and
/// why.
fn snowflake_options(
    config: &Config,
    g: &GeneratorConfig,
    layout: &Layout,
) -> Result<SnowflakeOptions, (&'static str, String)> {
    let on_backward = match g.on_backward {
        None | Some(OnBackwardPolicy::Extension) => OnBackward::Extension,
        Some(OnBackwardPolicy::Wait) => OnBackward::Wait,
        Some(OnBackwardPolicy::Refuse) => OnBackward::Refuse,
    };
    if g.on_backward == Some(OnBackwardPolicy::Extension) && layout.extension_bits() == 0 {
        return Err((
            "on_backward",
            "\"extension\" needs an extension field in the layout, and this one has none: \
             give bits = \"ext:2,time:...\" (2 extension bits absorb 3 clock steps or \
             restarts behind the mark), or use on_backward = \"wait\""
                .into(),
        ));
    }
    let max_lead = g.max_lead.unwrap_or(Duration::ZERO);
    let unit = Duration::from_millis(layout.unit_ms());
    if !max_lead.is_zero() && max_lead < unit {
        return Err((
            "max_lead",
            format!(
                "{max_lead:?} is less than one tick of the layout ({unit:?}), so it would \
                 borrow nothing; give at least {unit:?}, or 0s to wait for the next tick"
            ),
        ));
    }
    if max_lead >= config.worker.window {
        return Err((
            "max_lead",
            format!(
                "{max_lead:?} is not below worker.window ({:?}): the high-water mark is \
                 written that far ahead of the clock and must cover borrowed time; lower \
                 max_lead or raise worker.window",
                config.worker.window
            ),
        ));
    }
    let seq_max = snowdrift_core::layout::mask(layout.sequence_bits());
    if let Some(below) = g.random_sequence_start
        && (below == 0 || below > seq_max)
    {
        return Err((
            "random_sequence_start",
            format!(
                "{below} is not between 1 and {seq_max}: each tick's sequence starts below it, \
                 and this layout's sequence holds {} values (Leaf uses 100)",
                seq_max + 1
            ),
        ));
    }
    Ok(SnowflakeOptions {
        bit_reversed: g.output == Some(Output::BitReversed),
        on_backward,
        backward_wait: g.backward_wait.unwrap_or(config.worker.max_mark_wait),
        max_lead,
        random_sequence_start: g.random_sequence_start,
    })
}

/// The plan of a `uuid1`, `uuid2`, `uuid3`, `uuid5` or `uuid6` generator, or the key that is
/// wrong and why. `check_keys` has already refused keys of other kinds and a missing
/// `namespace`.
fn uuid_plan(g: &GeneratorConfig) -> Result<UuidPlan, (&'static str, String)> {
    let node = g
        .node
        .as_deref()
        .map(uuid_kind::parse_node)
        .transpose()
        .map_err(|e| ("node", core_reason(e)))?;
    Ok(match g.kind {
        Kind::Uuid3 | Kind::Uuid5 => {
            let text = g.namespace.as_deref().unwrap_or_default();
            let namespace =
                uuid_kind::namespace(text).map_err(|e| ("namespace", core_reason(e)))?;
            UuidPlan::Named {
                kind: g.kind,
                namespace,
            }
        }
        Kind::Uuid2 => {
            let domain = match g.domain.as_deref() {
                Some(text) => text
                    .parse::<Domain>()
                    .map_err(|e| ("domain", core_reason(e)))?,
                None => Domain::Person,
            };
            let local_id = match (g.local_id, default_local_id(domain)) {
                (Some(id), _) | (None, Some(id)) => id,
                (None, None) => {
                    return Err((
                        "local_id",
                        format!(
                            "domain {domain} has no local ID this process can take for \
                             itself; give local_id (the {domain}'s number, 0 to 4294967295)"
                        ),
                    ));
                }
            };
            UuidPlan::Dce {
                node,
                domain,
                local_id,
            }
        }
        kind => UuidPlan::Gregorian { kind, node },
    })
}

/// The plan of a `tso` generator, or the key that is wrong and why.
fn tso_plan(config: &Config, g: &GeneratorConfig) -> Result<TsoPlan, (&'static str, String)> {
    let defaults = TsoConfig::default();
    let epoch_ms = match g.epoch.as_deref() {
        Some(text) => parse_epoch(text).map_err(|e| ("epoch", core_reason(e)))?,
        None => defaults.epoch_ms,
    };
    let window = g
        .window
        .unwrap_or(Duration::from_millis(defaults.window_ms));
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
    if ttl < Duration::from_secs(1) || ttl.subsec_nanos() != 0 {
        return Err((
            "ttl",
            format!(
                "{ttl:?} is not a whole number of seconds of at least 1 s (etcd leases are \
                 whole seconds; PD uses 3s)"
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

/// The local ID of `domain` when the config gives none: DCE 1.1 puts the user's UID in the
/// person domain and the group's GID in the group domain, so the server's own effective
/// IDs are what a v2 UUID made by this process would carry. An organisation's number has
/// no such source.
pub fn default_local_id(domain: Domain) -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: geteuid and getegid take no arguments, cannot fail and touch no memory
        // of ours (POSIX: "shall always be successful").
        match domain {
            Domain::Person => Some(unsafe { libc::geteuid() }),
            Domain::Group => Some(unsafe { libc::getegid() }),
            Domain::Org => None,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = domain;
        None
    }
}

/// The obfuscator of `format=obfuscated...`, when `obfuscate_key` is set; or the key
/// (`obfuscate_key` or `obfuscate_bits`) that is wrong, and why. The message never shows
/// the key.
fn obfuscator(
    g: &GeneratorConfig,
    source: &SourcePlan,
) -> Result<Option<Obfuscator>, (&'static str, String)> {
    let Some(text) = &g.obfuscate_key else {
        return match g.obfuscate_bits {
            Some(_) => Err((
                "obfuscate_bits",
                "applies only with obfuscate_key (32 hex digits)".into(),
            )),
            None => Ok(None),
        };
    };
    let key = obfuscate::parse_key(text).map_err(|e| ("obfuscate_key", core_reason(e)))?;
    let obfuscator = match source {
        SourcePlan::Snowflake { layout, .. } => {
            Obfuscator::for_layout(key, layout, g.obfuscate_bits)
        }
        _ => Obfuscator::new(key, g.obfuscate_bits.unwrap_or(obfuscate::DEFAULT_BITS)),
    };
    obfuscator
        .map(Some)
        .map_err(|e| ("obfuscate_bits", core_reason(e)))
}

/// Refuses keys set for a kind that ignores them, so a misplaced key is not silently
/// dropped, and keys a kind cannot do without.
fn check_keys(g: &GeneratorConfig) -> Result<(), ConfigError> {
    let refuse = |message: &str| Err(ConfigError::new(message.to_string()));
    const WIDE: &[Kind] = &[
        Kind::Snowflake,
        Kind::Segment,
        Kind::Ticket,
        Kind::Counter,
        Kind::ZkVersion,
    ];
    const GREGORIAN: &[Kind] = &[Kind::Uuid1, Kind::Uuid2, Kind::Uuid6];
    const NAMED: &[Kind] = &[Kind::Uuid3, Kind::Uuid5];
    let set: [(&str, bool, &[Kind]); 27] = [
        (
            "layout",
            g.layout.is_some(),
            &[Kind::Snowflake, Kind::Objectid],
        ),
        (
            "backward_wait",
            g.backward_wait.is_some(),
            &[Kind::Snowflake],
        ),
        ("on_backward", g.on_backward.is_some(), &[Kind::Snowflake]),
        ("max_lead", g.max_lead.is_some(), &[Kind::Snowflake]),
        ("output", g.output.is_some(), &[Kind::Snowflake]),
        (
            "random_sequence_start",
            g.random_sequence_start.is_some(),
            &[Kind::Snowflake],
        ),
        ("bits", g.bits.is_some(), &[Kind::Snowflake]),
        ("unit", g.unit.is_some(), &[Kind::Snowflake]),
        ("epoch", g.epoch.is_some(), &[Kind::Snowflake, Kind::Tso]),
        ("tag", g.tag.is_some(), &[Kind::Segment]),
        ("servers", !g.servers.is_empty(), &[Kind::Ticket]),
        ("table", g.table.is_some(), &[Kind::Ticket]),
        (
            "url",
            g.url.is_some(),
            &[Kind::Counter, Kind::Tso, Kind::ZkVersion],
        ),
        ("znode", g.znode.is_some(), &[Kind::ZkVersion]),
        ("template", g.template.is_some(), &[Kind::Counter]),
        ("batch", g.batch.is_some(), &[Kind::Counter]),
        ("node", g.node.is_some(), GREGORIAN),
        ("namespace", g.namespace.is_some(), NAMED),
        ("domain", g.domain.is_some(), &[Kind::Uuid2]),
        ("local_id", g.local_id.is_some(), &[Kind::Uuid2]),
        ("obfuscate_key", g.obfuscate_key.is_some(), WIDE),
        ("obfuscate_bits", g.obfuscate_bits.is_some(), WIDE),
        ("window", g.window.is_some(), &[Kind::Tso]),
        ("logical_bits", g.logical_bits.is_some(), &[Kind::Tso]),
        ("ttl", g.ttl.is_some(), &[Kind::Tso]),
        ("forward_token", g.forward_token.is_some(), &[Kind::Tso]),
        (
            "forward_plaintext",
            g.forward_plaintext.is_some(),
            &[Kind::Tso],
        ),
    ];
    for (key, present, kinds) in set {
        if present && !kinds.contains(&g.kind) {
            let allowed: Vec<_> = kinds.iter().map(|k| k.as_str()).collect();
            return Err(ConfigError::new(format!(
                "key {key:?} does not apply to kind {}; it is for kind {}",
                g.kind.as_str(),
                allowed.join(", ")
            )));
        }
    }
    if g.layout.is_some() && g.bits.is_some() {
        return refuse("give either layout (a preset) or bits (a custom layout), not both");
    }
    if g.kind == Kind::Ticket && g.servers.is_empty() {
        return refuse("kind ticket needs servers = [\"mysql://...\", ...]");
    }
    if NAMED.contains(&g.kind) && g.namespace.is_none() {
        return Err(ConfigError::new(format!(
            "kind {} needs namespace = \"dns\", \"url\", \"oid\", \"x500\" or a UUID: the \
             namespace each request's name is hashed under",
            g.kind.as_str()
        )));
    }
    if g.kind == Kind::Counter && g.url.is_none() {
        return refuse("kind counter needs url = \"redis://...\"");
    }
    if g.kind == Kind::ZkVersion && g.url.is_none() {
        return refuse(
            "kind zk-version needs url = \"zookeeper://HOST:2181\": the ZooKeeper whose znode \
             version is the ID",
        );
    }
    if g.kind == Kind::Tso && g.url.is_none() {
        return refuse(
            "kind tso needs url = \"etcd://HOST:2379\": the leader is elected and its window \
             saved there",
        );
    }
    if g.template.is_some() && g.obfuscate_key.is_some() {
        return refuse(
            "obfuscate_key applies to 64-bit IDs, and a counter with a template issues text; \
             drop one of the two",
        );
    }
    Ok(())
}
