//! `[worker]`: how snowflake generators get and keep their worker ID.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration_text;

/// `[worker]`: how this node gets and keeps the worker ID its snowflake generators issue
/// with. Every worker ID is held under a lease on a registry; the generator stops issuing
/// before the lease can pass to another node (fencing), and a durable high-water mark keeps
/// a restart from reusing time.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkerConfig {
    /// `file` (a lock file on this machine: the default), `static` or `derived` (an ID from
    /// config or from the host, leased on `url` if given, else on a lock file), or a
    /// coordinator: `etcd`, `zookeeper`, `sql` or `redis` (unless `id` is set, a free ID
    /// whose mark has passed, the lowest such; else the one whose mark passes soonest).
    pub registry: Registry,
    /// The worker ID (`static`; `file` and coordinators: this ID instead of a free one of
    /// their choice). Default 0 for `static`.
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
