//! The config file's shape: serde types for every section, with an enum for every mode, so
//! a value that is not one of a key's choices is refused while reading, naming the key.
//! What the values mean together (layouts, leases, tokens, stores) is the
//! [`Plan`](crate::plan::Plan)'s to check.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A word that is none of a mode's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{word:?} is not one of {}", allowed.join(", "))]
pub struct UnknownWord {
    /// What was given.
    pub word: String,
    /// What is allowed.
    pub allowed: Vec<&'static str>,
}

/// Enums read from and written as one of a fixed set of words, with a message that lists
/// them all when a value is not one of them.
macro_rules! word_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in the order the messages list them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word used in config and messages.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;

            fn from_str(text: &str) -> Result<Self, UnknownWord> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == text)
                    .ok_or_else(|| UnknownWord {
                        word: text.to_string(),
                        allowed: Self::ALL.iter().map(|v| v.name()).collect(),
                    })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

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
    /// How Leaf's routes answer.
    pub leaf: LeafConfig,
    /// The generators, by name. Empty means the defaults: `snowflake` (Twitter layout),
    /// `uuid7`, `ulid` and `objectid`.
    #[serde(rename = "generator")]
    pub generators: Vec<GeneratorConfig>,
}

/// `[leaf]`: Meituan Leaf's routes, for clients written for Leaf.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeafConfig {
    /// `snowdrift` (the default: a non-200 status with the error as text) or `leaf` (as Leaf
    /// answers: status 500 with Spring Boot's JSON error body, whose `message` is Leaf's
    /// `Result{id=-N, status=EXCEPTION}`; and `/decodeSnowflakeId` answers a bad ID with 200
    /// and `errorMsg`).
    pub errors: LeafErrors,
}

word_enum!(
    /// `leaf.errors`: how Leaf's routes answer an error.
    LeafErrors {
        /// A non-200 status with the error as text.
        Snowdrift = "snowdrift",
        /// Leaf's own answers.
        Leaf = "leaf",
    }
);

// word_enum! fixes the derives, so the default is written out.
#[allow(clippy::derivable_impls)]
impl Default for LeafErrors {
    fn default() -> Self {
        LeafErrors::Snowdrift
    }
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
    /// The URL other nodes reach this node's gRPC at (`http://10.0.0.5:8080`), which a
    /// `tso` generator's leader publishes so that followers can forward to it. Default:
    /// `http://` (`https://` with TLS) and `listen`, when that is not a wildcard address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertise: Option<String>,
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
            advertise: None,
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
    /// The largest step the dynamic step may grow a tag's segments to (Leaf's 1,000,000). A
    /// crash loses what was claimed and not issued: at most the current segment and those
    /// ahead of it, so a lower cap bounds that waste, at the cost of more claims per second
    /// at high rates. A tag's own stored step is never cut below.
    pub max_step: u64,
    /// Share of a segment used before the next one is claimed, 0 to 1 (Leaf's 0.1: claim as
    /// soon as a tenth is used; 0.8 claims later, with less held ahead and so less lost on a
    /// crash, and less time for the claim before the segment runs out).
    pub prefetch_at: f64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://snowdrift.db".into(),
            urls: Vec::new(),
            table: "leaf_alloc".into(),
            preload: Vec::new(),
            wait: Duration::from_secs(1),
            max_step: snowdrift_core::segment::StepPolicy::default().max_step,
            prefetch_at: 0.1,
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
    pub registry: Registry,
    /// The worker ID (`static`; `file` and coordinators: this ID instead of the lowest free
    /// one). Default 0 for `static`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// `derived`: `hostname` (a hash of the host name), `ip` (the address's low bits) or
    /// `statefulset` (the Kubernetes pod ordinal, the host name's `-N` suffix).
    pub derive: Derive,
    /// `derive = "ip"`: the address to take the low bits of (default: the host's first
    /// non-loopback IPv4 address, from its interfaces).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<std::net::IpAddr>,
    /// `derive = "ip"`: the network interface whose first address to take (`eth0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// `derived`: the highest node field's value (the layout's `datacenter`), from config;
    /// the derived number fills the node bits below it. Needs a layout with two node fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datacenter: Option<u64>,
    /// `derive = "ip"`: `low` (the address's low bits fill the node bits: Sonyflake) or
    /// `octets` (the highest node field from the third octet unless `datacenter` is set, the
    /// bits below it from the fourth; an octet that does not fit is refused).
    pub bits_from: BitsFrom,
    /// The coordinator: `etcd://HOST:2379`, `zookeeper://HOST:2181`, `sqlite://FILE`,
    /// `postgres://...`, `mysql://...`, `redis://HOST:6379`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `static` and `derived`: the coordinator to register the ID on cluster-wide (any
    /// `worker.url` form), so a second node given or deriving the same ID refuses to start
    /// naming both. Without it the ID is only locked on this machine. Same as `url` for
    /// these registries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_with: Option<String>,
    /// The directory of lock and high-water-mark files when there is no coordinator.
    /// Default per machine and user: `/var/lib/snowdrift/workers` when writable, else the
    /// user's runtime directory (`$RUNTIME_DIRECTORY`, `/run/snowdrift`,
    /// `$XDG_RUNTIME_DIR/snowdrift`), else `/tmp/snowdrift-workers-UID`. It must belong to
    /// the server's user and not be writable by others. A relative path is per working
    /// directory (warned at start).
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
            registry: Registry::File,
            id: None,
            derive: Derive::Hostname,
            ip: None,
            interface: None,
            datacenter: None,
            bits_from: BitsFrom::Low,
            url: None,
            verify_with: None,
            path: machine_state_dir(),
            namespace: "snowdrift_workers".into(),
            ttl: w::DEFAULT_TTL,
            window: w::DEFAULT_WINDOW,
            max_mark_wait: w::DEFAULT_MAX_MARK_WAIT,
            clock_bound: w::DEFAULT_CLOCK_BOUND,
        }
    }
}

/// The default `worker.path`: one directory per machine and user, so every server of that
/// user sees every other's worker leases whatever directory it was started from, and no
/// other user can delete its locks or plant links in it (the directory must be the
/// server user's and not writable by others; see `FileRegistry`). The first that applies:
///
/// 1. `/var/lib/snowdrift/workers` when this process may write there (root, or a directory
///    a package made for the service user); it survives reboots, and so do its marks;
/// 2. `$RUNTIME_DIRECTORY/workers` (systemd's `RuntimeDirectory=snowdrift`);
/// 3. `/run/snowdrift/workers` when `/run/snowdrift` is writable;
/// 4. `$XDG_RUNTIME_DIR/snowdrift/workers` (the user's own runtime directory);
/// 5. `/tmp/snowdrift-workers-UID`, this user's own (refused at start if another user made it).
///
/// Earlier versions used a shared `/tmp/snowdrift-workers` where any local user could
/// delete a lock; it is no longer a default.
pub fn machine_state_dir() -> String {
    const SYSTEM: &str = "/var/lib/snowdrift/workers";
    let writable = |path: &str| {
        std::ffi::CString::new(path).is_ok_and(|c| {
            // SAFETY: `c` is a valid NUL-terminated string that outlives the call; access(2)
            // only reads it.
            unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
        })
    };
    let exists = |p: &str| std::path::Path::new(p).exists();
    let system_ok = if exists(SYSTEM) {
        writable(SYSTEM)
    } else {
        // Creatable: /var/lib/snowdrift writable, or /var/lib itself for a first start.
        ["/var/lib/snowdrift", "/var/lib"]
            .into_iter()
            .find(|p| exists(p))
            .is_some_and(writable)
    };
    StateDirFacts {
        system_writable: system_ok,
        runtime_directory: std::env::var("RUNTIME_DIRECTORY").ok(),
        run_writable: exists("/run/snowdrift") && writable("/run/snowdrift"),
        xdg_runtime_dir: std::env::var("XDG_RUNTIME_DIR").ok(),
        // SAFETY: geteuid has no preconditions and cannot fail.
        uid: unsafe { libc::geteuid() },
    }
    .choose(SYSTEM)
}

/// What [`machine_state_dir`] looks at, apart, so the order can be tested.
struct StateDirFacts {
    system_writable: bool,
    runtime_directory: Option<String>,
    run_writable: bool,
    xdg_runtime_dir: Option<String>,
    uid: u32,
}

impl StateDirFacts {
    fn choose(self, system: &str) -> String {
        if self.system_writable {
            return system.into();
        }
        let absolute = |v: String| v.starts_with('/').then_some(v);
        // systemd may list several runtime directories, separated by colons.
        let runtime = self
            .runtime_directory
            .and_then(|v| v.split(':').next().map(str::to_string))
            .and_then(absolute);
        if let Some(dir) = runtime {
            return format!("{dir}/workers");
        }
        if self.run_writable {
            return "/run/snowdrift/workers".into();
        }
        if let Some(dir) = self.xdg_runtime_dir.and_then(absolute) {
            return format!("{dir}/snowdrift/workers");
        }
        format!("/tmp/snowdrift-workers-{}", self.uid)
    }
}

#[cfg(test)]
mod state_dir_tests {
    use super::StateDirFacts;

    fn facts() -> StateDirFacts {
        StateDirFacts {
            system_writable: false,
            runtime_directory: None,
            run_writable: false,
            xdg_runtime_dir: None,
            uid: 1000,
        }
    }

    #[test]
    fn the_default_worker_directory_is_never_a_shared_one() {
        let sys = "/var/lib/snowdrift/workers";
        let with = |f: fn(&mut StateDirFacts)| {
            let mut x = facts();
            f(&mut x);
            x.choose(sys)
        };
        assert_eq!(with(|f| f.system_writable = true), sys);
        assert_eq!(
            with(|f| f.runtime_directory = Some("/run/snowdrift:/run/other".into())),
            "/run/snowdrift/workers"
        );
        assert_eq!(with(|f| f.run_writable = true), "/run/snowdrift/workers");
        assert_eq!(
            with(|f| f.xdg_runtime_dir = Some("/run/user/1000".into())),
            "/run/user/1000/snowdrift/workers"
        );
        // A relative value is not a runtime directory.
        assert_eq!(
            with(|f| f.xdg_runtime_dir = Some("tmp".into())),
            "/tmp/snowdrift-workers-1000"
        );
        assert_eq!(facts().choose(sys), "/tmp/snowdrift-workers-1000");
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
    /// Largest gRPC request message, in bytes; a call whose message says it is larger is
    /// answered RESOURCE_EXHAUSTED before the message is read. The largest legitimate
    /// request (`Next`, `Decode`, `Stream` with a name, format and input) is a few hundred
    /// bytes; the default is what HTTP allows a request head.
    pub grpc_max_message: usize,
    /// Largest RESP request (a whole command frame, every argument with its length lines),
    /// in bytes; a frame whose `*N` / `$len` lines say it is larger is refused at those
    /// lines, before its bytes are read, and its connection closed.
    pub resp_max_frame: usize,
    /// Largest HTTP request head (request line and headers), in bytes; a larger one is
    /// answered 431 before it is read whole. At least 8192 (hyper's smallest buffer).
    pub max_head: usize,
    /// Longest wait for the rest of a request once its first byte came (an HTTP/1.1
    /// request head, a RESP request); a client that takes longer is disconnected. On a
    /// connection hyper serves it also bounds the wait for the next request.
    #[serde(with = "duration_text")]
    pub header_timeout: Duration,
    /// Longest wait for a request's body once its head came: an HTTP request (HTTP/1.1 or
    /// HTTP/2, gRPC calls included) whose body has not ended by then is refused (408,
    /// gRPC DEADLINE_EXCEEDED) and, over HTTP/1.1, its connection closed. A RESP request
    /// must be whole within the shorter of this and `header_timeout` of its first byte.
    #[serde(with = "duration_text")]
    pub body_timeout: Duration,
    /// A connection with nothing read or written for this long is closed (HTTP/1.1 between
    /// requests, RESP, and HTTP/2 whose peer stops answering pings, which are sent every
    /// half of it).
    #[serde(with = "duration_text")]
    pub idle_timeout: Duration,
    /// Most client connections open at once (HTTP, gRPC and RESP together); one over it is
    /// closed as soon as it is accepted. 0: the open-file limit less 256 (kept for stores,
    /// registries and files).
    pub max_connections: usize,
    /// Most `IdService` gRPC calls in flight on the whole server (a `Stream` counts until
    /// it ends); one over it is answered UNAVAILABLE at once.
    pub max_streams: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_count: 10_000,
            max_stream: 100_000_000,
            max_body: 64 * 1024,
            grpc_max_message: 16 * 1024,
            resp_max_frame: 4 * 1024,
            max_head: 16 * 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 0,
            max_streams: 1024,
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
    pub role: Role,
    /// Requests per second on average; no limit when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// Requests at once before `rate` applies (default: `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// What a generator produces: the wire contract's, so the config file, the HTTP and gRPC
/// answers and the clients name kinds alike.
pub use snowdrift_proto::Kind;

/// One `[[generator]]`. Keys that do not apply to its kind are errors.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// The name it is served under (`/v1/ids/{name}`); shares one namespace with tags.
    pub name: String,
    /// What it produces.
    pub kind: Kind,
    /// `snowflake`: a preset (`twitter`, `sonyflake`, ...). `objectid`: `random` (the
    /// default) or `legacy` (machine hash and process ID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// `snowflake`: a custom layout, e.g. `time:41,datacenter:5,worker:5,seq:12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<String>,
    /// `snowflake` with `bits`: the time unit (`1ms`, `10ms`, `1s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// `snowflake`, `tso`: the epoch (RFC 3339, a date, or ms since 1970). With a preset it
    /// replaces the preset's (a `baidu` layout that ran out, moved to 2025-01-01); with
    /// `bits` default Twitter's; for `tso` default the Unix epoch, as PD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// `snowflake`: how long a start may wait for the clock to pass the worker ID's
    /// high-water mark (a restart behind it, or a clock that stepped back), before
    /// `on_backward` decides. Default `worker.max_mark_wait`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub backward_wait: Option<Duration>,
    /// `snowflake`: beyond `backward_wait`, `extension` (the default: go on at once under
    /// the layout's next extension value, refusing when there is no extension field or
    /// every value is used), `wait` (refuse) or `refuse` (wait only for the window the
    /// last holder wrote ahead, never for a clock that went back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_backward: Option<OnBackwardPolicy>,
    /// `snowflake`: future time a generator may borrow when a tick's sequence is used up
    /// under a burst, instead of waiting for the next tick (bounded; the high-water mark
    /// covers it). Below `worker.window`. Default 0: wait.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub max_lead: Option<Duration>,
    /// `snowflake`: start each tick's sequence at a pseudo-random value below this (Leaf
    /// uses 100), so a generator issuing a few IDs per tick does not issue only multiples
    /// of the sequence size (every ID even, `id % shards` skewed). Costs up to that many
    /// IDs per tick. Default: start at 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_sequence_start: Option<u64>,
    /// `snowflake`: `plain` (the default) or `bit-reversed`: each ID's bits reversed within
    /// the layout's width (Spanner's bit-reversed sequences), so consecutive IDs land far
    /// apart in a range-sharded key space. Still unique and decodable (decode reverses
    /// first), no longer in time order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Output>,
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
    /// `counter`: the Redis URL. `tso`: the etcd cluster the leader is elected on and the
    /// window saved in (`etcd://HOST:2379[,HOST:2379...]`). `zk-version`: the ZooKeeper
    /// cluster (`zookeeper://HOST:2181[,...]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `zk-version`: the znode whose data version is the ID (default
    /// `/snowdrift/versions/{name}`), created if missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub znode: Option<String>,
    /// `counter`: a template such as `ORD{date:%Y%m%d}{seq:08}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// `counter`: how many values one Redis round trip reserves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// `uuid1`, `uuid2`, `uuid6`: the node ID, 12 hex digits (`01:23:45:67:89:ab` also
    /// reads); default a random value with the multicast bit set, new at every start, so no
    /// MAC address leaks and no two processes share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `uuid3`, `uuid5`: the namespace the request's name is hashed under: `dns`, `url`,
    /// `oid`, `x500` or a UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `uuid2`: the local domain, `person` (default), `group` or `org`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// `uuid2`: the local ID (a UID, GID or organisation number); default the server
    /// process's effective UID for `person`, its effective GID for `group`; `org` needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_id: Option<u32>,
    /// 64-bit kinds (snowflake, segment, ticket, plain counter): the key, 32 hex digits,
    /// that `format=obfuscated...` permutes IDs under. A secret: `--check-config` masks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfuscate_key: Option<String>,
    /// With `obfuscate_key`: the width of obfuscated IDs in bits, 1 to 64 (default: the
    /// layout's width for snowflake, 63 otherwise; 53 keeps them exact in JavaScript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub obfuscate_bits: Option<u8>,
    /// `tso`: how far past the time in use the leader saves its window in etcd (default
    /// `3s`, as PD): longer means fewer saves and a larger jump forward at each failover.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub window: Option<Duration>,
    /// `tso`: bits of the logical part, 1 to 32 (default 18, as PD): IDs per millisecond
    /// are `2^logical_bits`, and at least `limits.max_count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_bits: Option<u8>,
    /// `tso`: the leader's lease on etcd (default `3s`, as PD). A leader that stops
    /// renewing (killed, cut off) is replaced about this long after; it stops issuing a
    /// fifth of it before then.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "duration_text::option"
    )]
    pub ttl: Option<Duration>,
    /// `tso` with auth on: the bearer token this node presents when it forwards a request
    /// to the leader (a `read` token of the leader's config whose scope has this
    /// generator). A secret: `--check-config` masks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_token: Option<String>,
    /// `tso` with auth on: let this node send `forward_token` to a leader whose URL is plain
    /// `http://` (default false: it refuses to forward there, saying why, since anyone on
    /// the path, or a fake leader named in etcd, would read the token). Set it only on a
    /// network you trust.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_plaintext: Option<bool>,
}

word_enum!(
    /// `output`: how a snowflake generator writes its IDs.
    Output {
        /// As the layout composes them: time-ordered.
        Plain = "plain",
        /// Bits reversed within the layout's width: spread over the key space.
        BitReversed = "bit-reversed",
    }
);

word_enum!(
    /// `on_backward`: what a snowflake generator does when its clock is behind the time it
    /// (or the last holder of its worker ID) used.
    OnBackwardPolicy {
        /// Wait up to `backward_wait`, then the next extension value.
        Extension = "extension",
        /// Wait up to `backward_wait`, then refuse.
        Wait = "wait",
        /// Never wait for a clock that went back.
        Refuse = "refuse",
    }
);

word_enum!(
    /// `worker.registry`: where a snowflake generator leases its worker ID.
    Registry {
        /// Lock files on this machine (`worker.path`): the lowest worker ID no process on the
        /// machine holds, or `worker.id`.
        File = "file",
        /// Worker ID `worker.id`, leased on `worker.verify_with` (or `worker.url`) if given, else on a lock file.
        Static = "static",
        /// A worker ID from the host (`worker.derive`), leased as for `static`.
        Derived = "derived",
        /// etcd: a lease and a transaction per worker ID.
        Etcd = "etcd",
        /// ZooKeeper: an ephemeral node per worker ID.
        Zookeeper = "zookeeper",
        /// A SQL table with expiring rows (SQLite, PostgreSQL, MySQL/MariaDB).
        Sql = "sql",
        /// Redis keys with an expiry.
        Redis = "redis",
    }
);

word_enum!(
    /// `worker.derive`: where `registry = "derived"` takes the worker ID from.
    Derive {
        /// A hash of the host name.
        Hostname = "hostname",
        /// The low bits of the host's address (`worker.ip`, `worker.interface`, or the first
        /// non-loopback one).
        Ip = "ip",
        /// The Kubernetes pod ordinal: the host name's `-N` suffix.
        Statefulset = "statefulset",
    }
);

word_enum!(
    /// `worker.bits_from`: which bits of a derived address become the worker ID.
    BitsFrom {
        /// The low bits, below `worker.datacenter` if set.
        Low = "low",
        /// The third octet for the highest node field, the fourth for the bits below it.
        Octets = "octets",
    }
);

word_enum!(
    /// What a token may do. `admin` includes everything `read` may.
    Role {
        /// Issue and decode IDs.
        Read = "read",
        /// Also administer segment tags: create, update and read them.
        Admin = "admin",
    }
);

/// Durations as text (`"10s"`, `"250ms"`, `"1m 30s"`), parsed by jiff's friendly format.
impl Config {
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
            backward_wait: None,
            on_backward: None,
            max_lead: None,
            random_sequence_start: None,
            output: None,
            tag: None,
            servers: Vec::new(),
            table: None,
            url: None,
            znode: None,
            template: None,
            batch: None,
            node: None,
            namespace: None,
            domain: None,
            local_id: None,
            obfuscate_key: None,
            obfuscate_bits: None,
            window: None,
            logical_bits: None,
            ttl: None,
            forward_token: None,
            forward_plaintext: None,
        }
    }
}

pub(crate) mod duration_text {
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

    /// The same for an optional key.
    pub mod option {
        use std::time::Duration;

        use serde::{Deserializer, Serializer};

        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}
