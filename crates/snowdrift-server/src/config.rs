//! The server's configuration: one TOML file, overridden by `SNOWDRIFT_<SECTION>__<KEY>`
//! environment variables, validated before anything starts.
//!
//! ```toml
//! [server]
//! listen = "127.0.0.1:8080"
//!
//! [store]
//! url = "sqlite://snowdrift.db"
//!
//! [[generator]]
//! name = "snowflake"
//! kind = "snowflake"
//! layout = "twitter"
//! ```
//!
//! Unknown keys are errors naming the key's path, so a typo never silently falls back to a
//! default.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use snowdrift_core::obfuscate::{self, Obfuscator};

use crate::error::ConfigError;

/// Prefix of the environment variables that override the file.
pub const ENV_PREFIX: &str = "SNOWDRIFT_";

/// Everything the server needs to start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where to listen and how.
    pub server: ServerConfig,
    /// Where segment tags live.
    pub store: StoreConfig,
    /// How this node gets its worker ID.
    pub worker: WorkerConfig,
    /// Request limits.
    pub limits: LimitsConfig,
    /// Bearer tokens; none means auth is off.
    pub auth: AuthConfig,
    /// The generators, by name. Empty means the defaults: `snowflake` (Twitter layout),
    /// `uuid7`, `ulid` and `objectid`.
    #[serde(rename = "generator")]
    pub generators: Vec<GeneratorConfig>,
}

/// `[server]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Address of the Redis-protocol (RESP) listener, where `INCR name` issues IDs; off
    /// when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resp_listen: Option<SocketAddr>,
    /// PEM certificate chain: with `tls_key`, the listener speaks TLS (HTTP/1.1 and HTTP/2,
    /// so gRPC too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of `tls_cert`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Allow listening on a non-loopback address without auth.
    pub insecure_bind: bool,
    /// How long shutdown waits for in-flight requests.
    #[serde(with = "duration_text")]
    pub shutdown_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            resp_listen: None,
            tls_cert: None,
            tls_key: None,
            insecure_bind: false,
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// `[store]`: the segment store, which holds tags.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sqlite://FILE`, `postgres://...`, `mysql://...`, `redis://...` or `zookeeper://...`.
    pub url: String,
    /// Several stores striped Tinyid-style (store k serves IDs ≡ k mod n); replaces `url`.
    pub urls: Vec<String>,
    /// The Leaf table (or key prefix / znode root).
    pub table: String,
    /// Tags whose first segment is claimed at start, so their first ID does not wait.
    pub preload: Vec<String>,
    /// How long a request waits for a refill when every buffered ID is used.
    #[serde(with = "duration_text")]
    pub wait: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://snowdrift.db".into(),
            urls: Vec::new(),
            table: "leaf_alloc".into(),
            preload: Vec::new(),
            wait: Duration::from_secs(1),
        }
    }
}

/// `[worker]`: how this node gets and keeps the worker ID its snowflake generators issue
/// with. Every worker ID is held under a lease on a registry; the generator stops issuing
/// before the lease can pass to another node (fencing), and a durable high-water mark keeps
/// a restart from reusing time.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    /// `file` (a lock file on this machine: the default), `static` or `derived` (an ID from
    /// config or from the host, leased on `url` if given, else on a lock file), or a
    /// coordinator: `etcd`, `zookeeper`, `sql` or `redis` (the lowest free ID unless `id` is
    /// set).
    pub registry: String,
    /// The worker ID (`file`, `static`; on a coordinator, this ID instead of the lowest
    /// free one). Default 0 for `file` and `static`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// `derived`: `hostname` (a hash of the host name), `ip` (the address's low bits) or
    /// `statefulset` (the Kubernetes pod ordinal, the host name's `-N` suffix).
    pub derive: String,
    /// The coordinator: `etcd://HOST:2379`, `zookeeper://HOST:2181`, `sqlite://FILE`,
    /// `postgres://...`, `mysql://...`, `redis://HOST:6379`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The directory of lock and high-water-mark files when there is no coordinator.
    pub path: String,
    /// Table, key prefix, root znode or file prefix on the registry; each snowflake
    /// generator leases under `{namespace}_{generator}`.
    pub namespace: String,
    /// Lease time to live; renewed every third of it.
    #[serde(with = "duration_text")]
    pub ttl: Duration,
    /// How far ahead of the clock the high-water mark is written.
    #[serde(with = "duration_text")]
    pub window: Duration,
    /// The longest start waits for the clock to pass the mark before refusing.
    #[serde(with = "duration_text")]
    pub max_mark_wait: Duration,
    /// How far behind a live peer's clock this node's may be.
    #[serde(with = "duration_text")]
    pub clock_bound: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        use snowdrift_store::worker as w;
        Self {
            registry: "file".into(),
            id: None,
            derive: "hostname".into(),
            url: None,
            path: "snowdrift-workers".into(),
            namespace: "snowdrift_workers".into(),
            ttl: w::DEFAULT_TTL,
            window: w::DEFAULT_WINDOW,
            max_mark_wait: w::DEFAULT_MAX_MARK_WAIT,
            clock_bound: w::DEFAULT_CLOCK_BOUND,
        }
    }
}

impl WorkerConfig {
    /// The registry URL and worker-ID source this section describes.
    pub fn lease_plan(&self) -> Result<(String, snowdrift_store::worker::WorkerSource), String> {
        use snowdrift_store::worker::WorkerSource;
        let file_url = || format!("file://{}", self.path);
        let coordinator = |family: &str, schemes: &[&str]| -> Result<String, String> {
            let Some(url) = &self.url else {
                return Err(format!(
                    "worker.registry = {:?} needs worker.url ({})",
                    self.registry,
                    schemes
                        .iter()
                        .map(|s| format!("{s}://..."))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            let scheme = url.split("://").next().unwrap_or_default();
            if !schemes.contains(&scheme) {
                return Err(format!(
                    "worker.url {:?} is not a {family} URL; use {}",
                    mask_url(url),
                    schemes
                        .iter()
                        .map(|s| format!("{s}://"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ));
            }
            Ok(url.clone())
        };
        let chosen = |default: WorkerSource| self.id.map_or(default, WorkerSource::Static);
        match self.registry.as_str() {
            "file" => {
                if self.url.is_some() {
                    return Err(
                        "worker.registry = \"file\" uses worker.path, not worker.url".into(),
                    );
                }
                Ok((file_url(), WorkerSource::Static(self.id.unwrap_or(0))))
            }
            "static" => Ok((
                self.url.clone().unwrap_or_else(file_url),
                WorkerSource::Static(self.id.unwrap_or(0)),
            )),
            "derived" => {
                if self.id.is_some() {
                    return Err(
                        "worker.id does not apply to registry \"derived\"; use registry \"static\""
                            .into(),
                    );
                }
                let source = match self.derive.as_str() {
                    "hostname" => WorkerSource::Hostname,
                    "ip" => WorkerSource::Ip(None),
                    "statefulset" => WorkerSource::StatefulSetOrdinal,
                    other => {
                        return Err(format!(
                            "worker.derive {other:?} is not one of hostname, ip, statefulset"
                        ));
                    }
                };
                Ok((self.url.clone().unwrap_or_else(file_url), source))
            }
            "etcd" => Ok((
                coordinator("etcd", &["etcd", "http", "https"])?,
                chosen(WorkerSource::Lowest),
            )),
            "zookeeper" => Ok((
                coordinator("ZooKeeper", &["zookeeper", "zk"])?,
                chosen(WorkerSource::Lowest),
            )),
            "sql" => Ok((
                coordinator(
                    "SQL",
                    &["sqlite", "postgres", "postgresql", "mysql", "mariadb"],
                )?,
                chosen(WorkerSource::Lowest),
            )),
            "redis" => Ok((
                coordinator("Redis", &["redis", "rediss"])?,
                chosen(WorkerSource::Lowest),
            )),
            other => Err(format!(
                "worker.registry {other:?} is not one of file, static, derived, etcd, zookeeper, sql, redis"
            )),
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Most IDs one request may ask for.
    pub max_count: u64,
    /// Most IDs one gRPC `Stream` call may ask for in total; its messages carry at most
    /// `max_count` each, so a large total costs no more memory than one batch.
    pub max_stream: u64,
    /// Largest request body, in bytes.
    pub max_body: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_count: 10_000,
            max_stream: 100_000_000,
            max_body: 64 * 1024,
        }
    }
}

/// `[auth]`: bearer tokens. Auth is on exactly when at least one `[[auth.token]]` is
/// configured (there is no separate switch that could leave tokens configured but unused).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// The tokens, as `snowdrift token create` prints them.
    #[serde(rename = "token")]
    pub tokens: Vec<TokenConfig>,
}

/// One `[[auth.token]]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Shown in messages and logs, never used to authenticate.
    pub name: String,
    /// `sha256:<hex>` of the token; the token itself is never stored.
    pub hash: String,
    /// The generator and tag names it may use, or `["*"]` for all.
    pub generators: Vec<String>,
    /// `read` (issue and decode IDs) or `admin` (also tag admin).
    pub role: crate::auth::Role,
    /// Requests per second on average; no limit when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// Requests at once before `rate` applies (default: `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// What a generator produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// 64-bit time-ordered IDs under a bit layout.
    Snowflake,
    /// Leaf segments of a tag in the store.
    Segment,
    /// Flickr ticket servers.
    Ticket,
    /// Redis counters.
    Counter,
    /// UUID version 4 (random).
    Uuid4,
    /// UUID version 7 (time-ordered).
    Uuid7,
    /// ULID.
    Ulid,
    /// MongoDB ObjectId.
    Objectid,
}

impl Kind {
    /// The name used in config and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Snowflake => "snowflake",
            Kind::Segment => "segment",
            Kind::Ticket => "ticket",
            Kind::Counter => "counter",
            Kind::Uuid4 => "uuid4",
            Kind::Uuid7 => "uuid7",
            Kind::Ulid => "ulid",
            Kind::Objectid => "objectid",
        }
    }
}

/// One `[[generator]]`. Keys that do not apply to its kind are errors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// The name it is served under (`/v1/ids/{name}`); shares one namespace with tags.
    pub name: String,
    /// What it produces.
    pub kind: Kind,
    /// `snowflake`: a preset (`twitter`, `sonyflake`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// `snowflake`: a custom layout, e.g. `time:41,datacenter:5,worker:5,seq:12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
    /// `snowflake` with `bits`: the time unit (`1ms`, `10ms`, `1s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// `snowflake` with `bits`: the epoch (RFC 3339, a date, or ms since 1970).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// `segment`: the tag served under this name (default: the name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// `ticket`: the ticket servers' URLs, in the order of their classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// `ticket`: the table (MySQL/MariaDB) or sequence (PostgreSQL) on every server
    /// (default `tickets64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// `counter`: the Redis URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `counter`: a template such as `ORD{date:%Y%m%d}{seq:08}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// `counter`: how many values one Redis round trip reserves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// 64-bit kinds (snowflake, segment, ticket, plain counter): the key, 32 hex digits,
    /// that `format=obfuscated...` permutes IDs under. A secret: `--check-config` masks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfuscate_key: Option<String>,
    /// With `obfuscate_key`: the width of obfuscated IDs in bits, 1 to 64 (default: the
    /// layout's width for snowflake, 63 otherwise; 53 keeps them exact in JavaScript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfuscate_bits: Option<u8>,
}

impl Config {
    /// Reads `file` (if any) and the `SNOWDRIFT_<SECTION>__<KEY>` variables of `env`, then
    /// validates the result.
    ///
    /// Environment keys are the config's path in upper case with `__` between levels;
    /// generators are addressed by index: `SNOWDRIFT_GENERATOR__0__LAYOUT=sonyflake`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder();
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError::new(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            builder = builder.add_source(
                config::File::from(path)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        for (key, value) in env {
            let Some(path) = env_key_path(&key) else {
                continue;
            };
            builder = builder
                .set_override(path, value)
                .map_err(|e| ConfigError::new(format!("{key}: {e}")))?;
        }
        let merged = builder
            .build()
            .map_err(|e| ConfigError::new(e.to_string()))?;
        let config: Config = serde_path_to_error::deserialize(merged).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::new(format!("{path}: {}", e.into_inner()))
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what serde cannot: names, kinds' keys, limits.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.limits.max_count == 0 {
            return Err(ConfigError::new(
                "limits.max_count: must be at least 1".into(),
            ));
        }
        if self.limits.max_stream == 0 {
            return Err(ConfigError::new(
                "limits.max_stream: must be at least 1".into(),
            ));
        }
        crate::auth::Auth::from_config(&self.auth)?;
        let auth_on = !self.auth.tokens.is_empty();
        if !self.server.listen.ip().is_loopback() && !self.server.insecure_bind && !auth_on {
            return Err(ConfigError::new(format!(
                "server.listen: {} is reachable from other machines and auth is off (no \
                 [[auth.token]] is configured); listen on 127.0.0.1, add tokens (snowdrift \
                 token create), or set server.insecure_bind = true (--insecure-bind) if the \
                 network is trusted",
                self.server.listen
            )));
        }
        if let Some(resp) = self.server.resp_listen
            && !resp.ip().is_loopback()
            && !self.server.insecure_bind
            && !auth_on
        {
            return Err(ConfigError::new(format!(
                "server.resp_listen: {resp} is reachable from other machines and auth is off \
                 (no [[auth.token]] is configured); listen on 127.0.0.1, add tokens (snowdrift \
                 token create), or set server.insecure_bind = true (--insecure-bind) if the \
                 network is trusted"
            )));
        }
        if self.server.tls_cert.is_some() != self.server.tls_key.is_some() {
            return Err(ConfigError::new(
                "server.tls_cert and server.tls_key go together: give both for TLS, or neither"
                    .into(),
            ));
        }
        self.worker.lease_plan().map_err(ConfigError::new)?;
        let mut seen = BTreeMap::new();
        let mut lease_names = BTreeMap::new();
        for (i, g) in self.generators.iter().enumerate() {
            let at = format!("generator[{i}] ({:?})", g.name);
            snowdrift_store::segment::validate_tag(&g.name)
                .map_err(|e| ConfigError::new(format!("{at}: name: {e}")))?;
            if let Some(first) = seen.insert(g.name.clone(), i) {
                return Err(ConfigError::new(format!(
                    "{at}: the name is already used by generator[{first}]"
                )));
            }
            g.check_keys()
                .map_err(|e| ConfigError::new(format!("{at}: {e}")))?;
            g.obfuscator().map_err(|(key, e)| {
                ConfigError::new(format!("generator[{i}].{key} ({:?}): {e}", g.name))
            })?;
            if g.kind == Kind::Snowflake {
                let ns = lease_namespace(&self.worker.namespace, &g.name);
                if ns.len() > 64 {
                    return Err(ConfigError::new(format!(
                        "{at}: its worker lease namespace {ns:?} is over 64 characters; use a shorter name or worker.namespace"
                    )));
                }
                if let Some(other) = lease_names.insert(ns.clone(), i) {
                    return Err(ConfigError::new(format!(
                        "{at}: its worker lease namespace {ns:?} is the same as generator[{other}]'s; rename one"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The generators to serve: the configured ones, or the defaults when none are.
    pub fn effective_generators(&self) -> Vec<GeneratorConfig> {
        if !self.generators.is_empty() {
            return self.generators.clone();
        }
        let simple = |name: &str, kind| GeneratorConfig::new(name, kind);
        let mut snowflake = simple("snowflake", Kind::Snowflake);
        snowflake.layout = Some("twitter".into());
        vec![
            snowflake,
            simple("uuid7", Kind::Uuid7),
            simple("ulid", Kind::Ulid),
            simple("objectid", Kind::Objectid),
        ]
    }

    /// The effective configuration as TOML, with passwords in URLs masked.
    pub fn to_masked_toml(&self) -> String {
        let mut shown = self.clone();
        shown.generators = self.effective_generators();
        shown.store.url = mask_url(&shown.store.url);
        shown.store.urls = shown.store.urls.iter().map(|u| mask_url(u)).collect();
        shown.worker.url = shown.worker.url.as_deref().map(mask_url);
        for g in &mut shown.generators {
            g.url = g.url.as_deref().map(mask_url);
            g.servers = g.servers.iter().map(|u| mask_url(u)).collect();
            g.obfuscate_key = g.obfuscate_key.as_ref().map(|_| "***".into());
        }
        let value = serde_json::to_value(&shown).unwrap_or_default();
        toml_text(&value)
    }
}

impl GeneratorConfig {
    /// A generator of `kind` named `name` with every optional key unset.
    pub fn new(name: &str, kind: Kind) -> Self {
        Self {
            name: name.into(),
            kind,
            layout: None,
            bits: None,
            unit: None,
            epoch: None,
            tag: None,
            servers: Vec::new(),
            table: None,
            url: None,
            template: None,
            batch: None,
            obfuscate_key: None,
            obfuscate_bits: None,
        }
    }

    /// The obfuscator of `format=obfuscated...`, when `obfuscate_key` is set; or the key
    /// (`obfuscate_key` or `obfuscate_bits`) that is wrong, and why. The message never
    /// shows the key.
    pub fn obfuscator(&self) -> Result<Option<Obfuscator>, (&'static str, String)> {
        let Some(text) = &self.obfuscate_key else {
            return match self.obfuscate_bits {
                Some(_) => Err((
                    "obfuscate_bits",
                    "applies only with obfuscate_key (32 hex digits)".into(),
                )),
                None => Ok(None),
            };
        };
        let key =
            obfuscate::parse_key(text).map_err(|e| ("obfuscate_key", crate::format::reason(e)))?;
        let obfuscator = match self.kind {
            Kind::Snowflake => {
                let (layout, _) = crate::layout::resolve(
                    self.layout.as_deref(),
                    self.bits.as_deref(),
                    self.unit.as_deref(),
                    self.epoch.as_deref(),
                )
                .map_err(|e| ("layout", e))?;
                Obfuscator::for_layout(key, &layout, self.obfuscate_bits)
            }
            _ => Obfuscator::new(key, self.obfuscate_bits.unwrap_or(obfuscate::DEFAULT_BITS)),
        };
        obfuscator
            .map(Some)
            .map_err(|e| ("obfuscate_bits", crate::format::reason(e)))
    }

    /// Refuses keys set for a kind that ignores them, so a misplaced key is not silently
    /// dropped.
    fn check_keys(&self) -> Result<(), String> {
        const WIDE: &[Kind] = &[Kind::Snowflake, Kind::Segment, Kind::Ticket, Kind::Counter];
        let set: [(&str, bool, &[Kind]); 12] = [
            ("layout", self.layout.is_some(), &[Kind::Snowflake]),
            ("bits", self.bits.is_some(), &[Kind::Snowflake]),
            ("unit", self.unit.is_some(), &[Kind::Snowflake]),
            ("epoch", self.epoch.is_some(), &[Kind::Snowflake]),
            ("tag", self.tag.is_some(), &[Kind::Segment]),
            ("servers", !self.servers.is_empty(), &[Kind::Ticket]),
            ("table", self.table.is_some(), &[Kind::Ticket]),
            ("url", self.url.is_some(), &[Kind::Counter]),
            ("template", self.template.is_some(), &[Kind::Counter]),
            ("batch", self.batch.is_some(), &[Kind::Counter]),
            ("obfuscate_key", self.obfuscate_key.is_some(), WIDE),
            ("obfuscate_bits", self.obfuscate_bits.is_some(), WIDE),
        ];
        for (key, present, kinds) in set {
            if present && !kinds.contains(&self.kind) {
                let allowed: Vec<_> = kinds.iter().map(|k| k.name()).collect();
                return Err(format!(
                    "key {key:?} does not apply to kind {}; it is for kind {}",
                    self.kind.name(),
                    allowed.join(", ")
                ));
            }
        }
        if self.layout.is_some() && self.bits.is_some() {
            return Err("give either layout (a preset) or bits (a custom layout), not both".into());
        }
        if self.kind == Kind::Ticket && self.servers.is_empty() {
            return Err("kind ticket needs servers = [\"mysql://...\", ...]".into());
        }
        if self.kind == Kind::Counter && self.url.is_none() {
            return Err("kind counter needs url = \"redis://...\"".into());
        }
        if self.template.is_some() && self.obfuscate_key.is_some() {
            return Err(
                "obfuscate_key applies to 64-bit IDs, and a counter with a template issues \
                 text; drop one of the two"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The registry namespace snowflake generator `name` leases its worker ID under:
/// `{namespace}_{name}` with every character other than a letter or digit made `_`.
pub fn lease_namespace(namespace: &str, name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{namespace}_{name}")
}

/// `SNOWDRIFT_STORE__URL` -> `store.url`; `SNOWDRIFT_GENERATOR__0__LAYOUT` ->
/// `generator[0].layout`. Variables without `__` (such as test-only settings) are not
/// config keys.
fn env_key_path(key: &str) -> Option<String> {
    let rest = key.strip_prefix(ENV_PREFIX)?;
    if !rest.contains("__") {
        return None;
    }
    let mut path = String::new();
    for part in rest.split("__") {
        let part = part.to_ascii_lowercase();
        if part.bytes().all(|b| b.is_ascii_digit()) && !part.is_empty() {
            path.push_str(&format!("[{part}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&part);
        }
    }
    Some(path)
}

/// `scheme://user:secret@host` -> `scheme://user:***@host`.
pub fn mask_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_string(),
    }
}

/// Renders a JSON object of sections as TOML: tables for objects, arrays of tables for
/// arrays of objects, one level deep inside a section too (`[[auth.token]]`). Enough for the
/// config's own shapes.
fn toml_text(value: &serde_json::Value) -> String {
    let mut out = String::new();
    let Some(sections) = value.as_object() else {
        return out;
    };
    for (name, section) in sections {
        match section {
            serde_json::Value::Object(keys) => {
                out.push_str(&format!("[{name}]\n"));
                push_keys(&mut out, keys);
                out.push('\n');
                for (key, value) in keys {
                    for item in tables(value) {
                        out.push_str(&format!("[[{name}.{key}]]\n"));
                        push_keys(&mut out, item);
                        out.push('\n');
                    }
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    if let Some(keys) = item.as_object() {
                        out.push_str(&format!("[[{name}]]\n"));
                        push_keys(&mut out, keys);
                        out.push('\n');
                    }
                }
            }
            other => out.push_str(&format!("{name} = {other}\n")),
        }
    }
    out
}

/// The tables of an array of tables; none for any other value.
fn tables(value: &serde_json::Value) -> Vec<&serde_json::Map<String, serde_json::Value>> {
    match value {
        serde_json::Value::Array(items) if items.first().is_some_and(|i| i.is_object()) => {
            items.iter().filter_map(|i| i.as_object()).collect()
        }
        _ => Vec::new(),
    }
}

fn push_keys(out: &mut String, keys: &serde_json::Map<String, serde_json::Value>) {
    for (key, value) in keys {
        // Arrays of tables follow as `[[section.key]]`, after the section's plain keys.
        if !value.is_null() && tables(value).is_empty() {
            // JSON strings, numbers, booleans and arrays of them are valid TOML values.
            out.push_str(&format!("{key} = {value}\n"));
        }
    }
}

/// Durations as text (`"10s"`, `"250ms"`, `"1m 30s"`), parsed by jiff's friendly format.
mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        let signed = jiff::SignedDuration::try_from(*d).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&format!("{signed:#}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        let signed: jiff::SignedDuration = text.trim().parse().map_err(|_| {
            serde::de::Error::custom(format!(
                "{text:?} is not a duration; write e.g. \"10s\", \"250ms\" or \"1m 30s\""
            ))
        })?;
        Duration::try_from(signed).map_err(|_| {
            serde::de::Error::custom(format!("{text:?}: a duration cannot be negative"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(toml: &str, env: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let dir = std::env::temp_dir().join(format!(
            "snowdrift-config-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| ConfigError::new(e.to_string()))?;
        let path = dir.join("snowdrift.toml");
        std::fs::write(&path, toml).map_err(|e| ConfigError::new(e.to_string()))?;
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let loaded = Config::load(Some(&path), env);
        let _ = std::fs::remove_dir_all(&dir);
        loaded
    }

    fn rand_suffix() -> u64 {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b)
            .map(|()| u64::from_le_bytes(b))
            .unwrap_or(0)
    }

    #[test]
    fn defaults_without_a_file() {
        let c = Config::load(None, Vec::new()).unwrap();
        assert_eq!(c.server.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.store.url, "sqlite://snowdrift.db");
        let names: Vec<_> = c
            .effective_generators()
            .iter()
            .map(|g| g.name.clone())
            .collect();
        assert_eq!(names, ["snowflake", "uuid7", "ulid", "objectid"]);
    }

    #[test]
    fn unknown_keys_name_their_path() {
        let e = load("[server]\nlsten = \"127.0.0.1:1\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("lsten"), "{e}");
        assert!(e.to_string().contains("server"), "{e}");
        let e = load(
            "[[generator]]\nname = \"a\"\nkind = \"snowflake\"\nlayuot = \"twitter\"\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("layuot"), "{e}");
    }

    #[test]
    fn environment_overrides_the_file() {
        let c = load(
            "[server]\nlisten = \"127.0.0.1:1\"\n[[generator]]\nname = \"a\"\nkind = \"snowflake\"\n",
            &[
                ("SNOWDRIFT_SERVER__LISTEN", "127.0.0.1:9999"),
                ("SNOWDRIFT_LIMITS__MAX_COUNT", "5"),
                ("SNOWDRIFT_GENERATOR__0__LAYOUT", "sonyflake"),
                ("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "5"),
            ],
        )
        .unwrap();
        assert_eq!(c.server.listen.port(), 9999);
        assert_eq!(c.limits.max_count, 5);
        assert_eq!(c.generators[0].layout.as_deref(), Some("sonyflake"));
    }

    #[test]
    fn bad_values_say_what_is_allowed() {
        let e = load("[worker]\nttl = \"soon\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("worker.ttl"), "{e}");
        assert!(e.to_string().contains("10s"), "{e}");
        let e = load("[[generator]]\nname = \"a\"\nkind = \"snowflak\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("snowflak"), "{e}");
        let e = load("[limits]\nmax_count = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("max_count"), "{e}");
        let e = load("[limits]\nmax_stream = 0\n", &[]).unwrap_err();
        assert!(e.to_string().contains("limits.max_stream"), "{e}");
        let e = load("[server]\nlisten = \"0.0.0.0:8080\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("insecure_bind"), "{e}");
        let c = load(
            "[server]\nlisten = \"0.0.0.0:8080\"\ninsecure_bind = true\n",
            &[],
        )
        .unwrap();
        assert!(c.server.insecure_bind);
    }

    #[test]
    fn resp_listen_is_off_by_default_and_loopback_only_without_auth() {
        assert_eq!(
            Config::load(None, Vec::new()).unwrap().server.resp_listen,
            None
        );
        let c = load("[server]\nresp_listen = \"127.0.0.1:6380\"\n", &[]).unwrap();
        assert_eq!(c.server.resp_listen.map(|a| a.port()), Some(6380));
        assert!(
            c.to_masked_toml()
                .contains("resp_listen = \"127.0.0.1:6380\"")
        );
        let c = load("", &[("SNOWDRIFT_SERVER__RESP_LISTEN", "127.0.0.1:7000")]).unwrap();
        assert_eq!(c.server.resp_listen.map(|a| a.port()), Some(7000));
        let e = load("[server]\nresp_listen = \"0.0.0.0:6380\"\n", &[]).unwrap_err();
        assert!(
            e.to_string().contains("server.resp_listen") && e.to_string().contains("insecure_bind"),
            "{e}"
        );
        let e = load("[server]\nresp_listen = \"localhost\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("resp_listen"), "{e}");
        let c = load(
            "[server]\nresp_listen = \"0.0.0.0:6380\"\ninsecure_bind = true\n",
            &[],
        )
        .unwrap();
        assert!(c.server.resp_listen.is_some_and(|a| !a.ip().is_loopback()));
    }

    #[test]
    fn keys_of_another_kind_and_duplicate_names_are_refused() {
        let e = load(
            "[[generator]]\nname = \"a\"\nkind = \"uuid7\"\nlayout = \"twitter\"\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not apply"), "{e}");
        let e = load(
            "[[generator]]\nname = \"a\"\nkind = \"uuid7\"\n[[generator]]\nname = \"a\"\nkind = \"ulid\"\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("already used"), "{e}");
    }

    const HASH: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn auth_tokens_turn_auth_on_and_allow_other_machines() {
        let token = format!(
            "[[auth.token]]\nname = \"ci\"\nhash = \"{HASH}\"\ngenerators = [\"orders\"]\n\
             role = \"read\"\nrate = 100\nburst = 200\n"
        );
        let c = load(
            &format!("[server]\nlisten = \"0.0.0.0:8080\"\n{token}"),
            &[],
        )
        .unwrap();
        let t = &c.auth.tokens[0];
        assert_eq!((t.name.as_str(), t.role), ("ci", crate::auth::Role::Read));
        assert_eq!((t.rate, t.burst), (Some(100), Some(200)));
        assert_eq!(t.generators, ["orders"]);
        let e = load("[server]\nlisten = \"0.0.0.0:8080\"\n", &[]).unwrap_err();
        assert!(e.to_string().contains("[[auth.token]]"), "{e}");
        // Unknown keys and bad values are named by path, down to the token.
        let e = load(&format!("{token}scopes = [\"x\"]\n"), &[]).unwrap_err();
        assert!(
            e.to_string().contains("auth.token[0]") && e.to_string().contains("scopes"),
            "{e}"
        );
        let e = load("[auth]\nenabled = true\n", &[]).unwrap_err();
        assert!(
            e.to_string().contains("auth") && e.to_string().contains("enabled"),
            "{e}"
        );
        let e = load(&token.replace("\"read\"", "\"write\""), &[]).unwrap_err();
        assert!(e.to_string().contains("auth.token[0].role"), "{e}");
        let e = load(&token.replace(HASH, "sd_abc"), &[]).unwrap_err();
        assert!(e.to_string().contains("auth.token[0] (\"ci\")"), "{e}");
        // A token's keys can come from the environment as well.
        let c = load(&token, &[("SNOWDRIFT_AUTH__TOKEN__0__RATE", "7")]).unwrap();
        assert_eq!(c.auth.tokens[0].rate, Some(7));
    }

    #[test]
    fn masked_output_keeps_tokens_and_parses_back() {
        let c = load(
            &format!(
                "[[auth.token]]\nname = \"a\"\nhash = \"{HASH}\"\ngenerators = [\"*\"]\n\
                 role = \"admin\"\n[[auth.token]]\nname = \"b\"\nhash = \"{}\"\n\
                 generators = [\"x\", \"y\"]\nrole = \"read\"\nrate = 5\n",
                HASH.replace("ba78", "0000")
            ),
            &[],
        )
        .unwrap();
        let text = c.to_masked_toml();
        assert_eq!(text.matches("[[auth.token]]").count(), 2, "{text}");
        let again = load(&text, &[]).unwrap();
        assert_eq!(again.auth.tokens.len(), 2);
        assert_eq!(again.auth.tokens[1].generators, ["x", "y"]);
        assert_eq!(again.auth.tokens[1].rate, Some(5));
        assert_eq!(again.auth.tokens[0].hash, HASH);
    }

    #[test]
    fn obfuscation_keys_from_file_or_environment_are_checked_and_masked() {
        let key = "5f1e0c9a27b34d6e8a91c2d3e4f50617";
        let segment = "[[generator]]\nname = \"o\"\nkind = \"segment\"\n";
        let c = load(&format!("{segment}obfuscate_key = \"{key}\"\n"), &[]).unwrap();
        let bits = |c: &Config, i: usize| c.generators[i].obfuscator().unwrap().map(|o| o.bits());
        assert_eq!(bits(&c, 0), Some(63));
        let text = c.to_masked_toml();
        assert!(text.contains("obfuscate_key = \"***\""), "{text}");
        assert!(!text.contains(key), "{text}");
        // From the environment, digits only: still text, not a number.
        let c = load(
            "[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"discord\"\n\
             [[generator]]\nname = \"js\"\nkind = \"snowflake\"\nlayout = \"js53\"\n\
             obfuscate_key = \"00112233445566778899001122334455\"\n",
            &[
                (
                    "SNOWDRIFT_GENERATOR__0__OBFUSCATE_KEY",
                    "00112233445566778899001122334455",
                ),
                ("SNOWDRIFT_GENERATOR__1__OBFUSCATE_BITS", "60"),
            ],
        )
        .unwrap();
        assert_eq!(
            c.generators[0].obfuscate_key.as_deref().map(str::len),
            Some(32)
        );
        assert_eq!((bits(&c, 0), bits(&c, 1)), (Some(64), Some(60)));
        assert!(!c.to_masked_toml().contains("0011223344"));
        for (toml, path, why) in [
            (
                format!("{segment}obfuscate_bits = 53\n"),
                "generator[0].obfuscate_bits",
                "only with obfuscate_key",
            ),
            (
                format!("{segment}obfuscate_key = \"{}\"\n", key.replace('5', "g")),
                "generator[0].obfuscate_key",
                "character 1 of this one is not a hex digit",
            ),
            (
                format!("{segment}obfuscate_key = \"{key}\"\nobfuscate_bits = 0\n"),
                "generator[0].obfuscate_bits",
                "use 1 to 64 bits",
            ),
            (
                format!(
                    "[[generator]]\nname = \"c\"\nkind = \"counter\"\nurl = \"redis://x\"\n\
                     template = \"A{{seq:04}}\"\nobfuscate_key = \"{key}\"\n"
                ),
                "generator[0]",
                "a counter with a template issues text",
            ),
            (
                "[[generator]]\nname = \"u\"\nkind = \"ulid\"\nobfuscate_bits = 53\n".to_string(),
                "generator[0]",
                "does not apply to kind ulid",
            ),
        ] {
            let e = load(&toml, &[]).unwrap_err().to_string();
            assert!(e.contains(path) && e.contains(why), "{toml}: {e}");
            assert!(!e.contains("f1e0c9a27b34"), "{e} shows the key");
        }
    }

    #[test]
    fn masked_output_hides_passwords_and_parses_back() {
        let c = load(
            "[store]\nurl = \"postgres://app:hunter2@db:5432/ids\"\n",
            &[],
        )
        .unwrap();
        let text = c.to_masked_toml();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("postgres://app:***@db:5432/ids"), "{text}");
        let again = load(&text, &[]).unwrap();
        assert_eq!(again.server.listen, c.server.listen);
        assert_eq!(again.generators.len(), 4);
    }
}
