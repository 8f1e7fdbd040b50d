//! The worker-ID lease of each snowflake generator, resolved from `[worker]`: the registry
//! URL, where the worker ID comes from, and the lease's timings, checked against each other.

use snowdrift_store::worker::{self as store_worker, LeaseConfig, NodeSplit, WorkerSource};

use crate::config::{BitsFrom, Derive, Registry, WorkerConfig, mask_url};
use crate::error::ConfigError;

/// The longest lease namespace the registries take.
const MAX_NAMESPACE: usize = 64;

/// The lease settings of snowflake generator `name`: each generator leases its worker ID in
/// its own namespace (`{worker.namespace}_{name}`), since IDs of different generators need
/// not differ.
pub fn lease(worker: &WorkerConfig, name: &str) -> Result<LeaseConfig, ConfigError> {
    let (url, source) = registry(worker)?;
    let mut lease = LeaseConfig::new(url, source);
    lease.split = split(worker)?;
    lease.namespace = namespace(&worker.namespace, name);
    lease.ttl = worker.ttl;
    lease.window = worker.window;
    lease.max_mark_wait = worker.max_mark_wait;
    lease.clock_bound = worker.clock_bound;
    if lease.namespace.len() > MAX_NAMESPACE {
        return Err(ConfigError::new(format!(
            "its worker lease namespace {:?} is over {MAX_NAMESPACE} characters; use a shorter \
             name or worker.namespace",
            lease.namespace
        )));
    }
    lease
        .validate()
        .map_err(|e| ConfigError::new(format!("[worker]: {e}")))?;
    Ok(lease)
}

/// True when worker IDs are leased only on this machine (lock files: `file`, and `static`
/// or `derived` without `worker.url`): nothing stops another machine from issuing under
/// the same ID.
pub fn machine_local(w: &WorkerConfig) -> bool {
    match w.registry {
        Registry::File => true,
        Registry::Static | Registry::Derived => w.url.is_none() && w.verify_with.is_none(),
        _ => false,
    }
}

/// How a derived worker ID fills the layout's node fields (`worker.datacenter`,
/// `worker.bits_from`); checked against each snowflake generator's layout by
/// [`check_split`].
fn split(w: &WorkerConfig) -> Result<NodeSplit, ConfigError> {
    let derived = w.registry == Registry::Derived;
    if !derived && (w.datacenter.is_some() || w.bits_from != BitsFrom::Low) {
        return Err(ConfigError::new(format!(
            "worker.datacenter and worker.bits_from apply to registry = \"derived\", not \"{}\" (a static or leased ID is the whole node value)",
            w.registry
        )));
    }
    if w.bits_from == BitsFrom::Octets && w.derive != Derive::Ip {
        return Err(ConfigError::new(format!(
            "worker.bits_from = \"octets\" takes an address's octets: it needs derive = \"ip\", not \"{}\"",
            w.derive
        )));
    }
    let bits_from = match w.bits_from {
        BitsFrom::Low => store_worker::BitsFrom::Low,
        BitsFrom::Octets => store_worker::BitsFrom::Octets,
    };
    Ok(NodeSplit::new(w.datacenter, bits_from))
}

/// Checks a lease's node split against the generator's layout (two node fields or more, a
/// datacenter that fits the highest), naming the `[worker]` keys.
pub fn check_split(
    lease: &LeaseConfig,
    layout: &snowdrift_core::layout::Layout,
) -> Result<(), ConfigError> {
    if lease.split == NodeSplit::default() {
        return Ok(());
    }
    lease
        .split
        .check(layout)
        .map(|_| ())
        .map_err(|e| ConfigError::new(format!("[worker] datacenter/bits_from: {e}")))
}

/// The registry namespace snowflake generator `name` leases its worker ID under:
/// `{namespace}_{name}` with every character other than a letter or digit made `_`.
pub fn namespace(namespace: &str, name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{namespace}_{name}")
}

/// The registry URL and worker-ID source `[worker]` describes.
pub fn registry(w: &WorkerConfig) -> Result<(String, WorkerSource), ConfigError> {
    let file_url = || format!("file://{}", w.path);
    let coordinator = |family: &str, schemes: &[&str]| -> Result<String, ConfigError> {
        let list = |form: &dyn Fn(&str) -> String, sep: &str| {
            schemes
                .iter()
                .map(|s| form(s))
                .collect::<Vec<_>>()
                .join(sep)
        };
        let Some(url) = &w.url else {
            return Err(ConfigError::new(format!(
                "worker.registry = \"{}\" needs worker.url ({})",
                w.registry,
                list(&|s| format!("{s}://..."), ", ")
            )));
        };
        let scheme = url.split("://").next().unwrap_or_default();
        if !schemes.contains(&scheme) {
            return Err(ConfigError::new(format!(
                "worker.url {:?} is not a {family} URL; use {}",
                mask_url(url),
                list(&|s| format!("{s}://"), " or ")
            )));
        }
        Ok(url.clone())
    };
    let chosen = |default: WorkerSource| w.id.map_or(default, WorkerSource::Static);
    let by_ip = w.registry == Registry::Derived && w.derive == Derive::Ip;
    if !by_ip && (w.ip.is_some() || w.interface.is_some()) {
        return Err(ConfigError::new(
            "worker.ip and worker.interface apply to registry = \"derived\" with derive = \
             \"ip\""
                .into(),
        ));
    }
    if w.ip.is_some() && w.interface.is_some() {
        return Err(ConfigError::new(
            "give worker.ip or worker.interface, not both".into(),
        ));
    }
    if w.verify_with.is_some() {
        if !matches!(w.registry, Registry::Static | Registry::Derived) {
            return Err(ConfigError::new(format!(
                "worker.verify_with applies to registry = \"static\" or \"derived\"; registry \"{}\" already registers every ID {}",
                w.registry,
                if w.registry == Registry::File {
                    "on this machine (use a coordinator registry to register cluster-wide)"
                } else {
                    "on worker.url"
                }
            )));
        }
        if w.url.is_some() {
            return Err(ConfigError::new(
                "give worker.verify_with or worker.url, not both: for static and derived IDs they name the same coordinator".into(),
            ));
        }
    }
    let verify = |w: &WorkerConfig| -> Result<String, ConfigError> {
        match w.verify_with.as_ref().or(w.url.as_ref()) {
            None => Ok(file_url()),
            Some(url) => {
                let scheme = url.split("://").next().unwrap_or_default();
                if store_worker::REGISTRY_SCHEMES.contains(&scheme) {
                    Ok(url.clone())
                } else {
                    Err(ConfigError::new(format!(
                        "worker.{} {:?} is not a registry URL; use {}",
                        if w.verify_with.is_some() {
                            "verify_with"
                        } else {
                            "url"
                        },
                        mask_url(url),
                        store_worker::REGISTRY_SCHEMES
                            .iter()
                            .map(|s| format!("{s}://"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )))
                }
            }
        }
    };
    Ok(match w.registry {
        Registry::File => {
            if w.url.is_some() {
                return Err(ConfigError::new(
                    "worker.registry = \"file\" uses worker.path, not worker.url".into(),
                ));
            }
            (file_url(), chosen(WorkerSource::Lowest))
        }
        Registry::Static => (verify(w)?, WorkerSource::Static(w.id.unwrap_or(0))),
        Registry::Derived => {
            if w.id.is_some() {
                return Err(ConfigError::new(
                    "worker.id does not apply to registry \"derived\"; use registry \"static\""
                        .into(),
                ));
            }
            let source = match w.derive {
                Derive::Hostname => WorkerSource::Hostname,
                Derive::Ip => match &w.interface {
                    Some(name) => WorkerSource::Interface(name.clone()),
                    None => WorkerSource::Ip(w.ip),
                },
                Derive::Statefulset => WorkerSource::StatefulSetOrdinal,
            };
            (verify(w)?, source)
        }
        Registry::Etcd => (
            coordinator("etcd", &["etcd", "http", "https"])?,
            chosen(WorkerSource::Lowest),
        ),
        Registry::Zookeeper => (
            coordinator("ZooKeeper", &["zookeeper", "zk"])?,
            chosen(WorkerSource::Lowest),
        ),
        Registry::Sql => (
            coordinator(
                "SQL",
                &["sqlite", "postgres", "postgresql", "mysql", "mariadb"],
            )?,
            chosen(WorkerSource::Lowest),
        ),
        Registry::Redis => (
            coordinator("Redis", &["redis", "rediss"])?,
            chosen(WorkerSource::Lowest),
        ),
    })
}
