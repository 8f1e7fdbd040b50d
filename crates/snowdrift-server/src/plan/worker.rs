//! The worker-ID lease of each snowflake generator, resolved from `[worker]`: the registry
//! URL, where the worker ID comes from, and the lease's timings, checked against each other.

use snowdrift_store::worker::{LeaseConfig, WorkerSource};

use crate::config::{Derive, Registry, WorkerConfig, mask_url};
use crate::error::ConfigError;

/// The longest lease namespace the registries take.
const MAX_NAMESPACE: usize = 64;

/// The lease settings of snowflake generator `name`: each generator leases its worker ID in
/// its own namespace (`{worker.namespace}_{name}`), since IDs of different generators need
/// not differ.
pub fn lease(worker: &WorkerConfig, name: &str) -> Result<LeaseConfig, ConfigError> {
    let (url, source) = registry(worker)?;
    let mut lease = LeaseConfig::new(url, source);
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
        Registry::Static | Registry::Derived => w.url.is_none(),
        _ => false,
    }
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
    Ok(match w.registry {
        Registry::File => {
            if w.url.is_some() {
                return Err(ConfigError::new(
                    "worker.registry = \"file\" uses worker.path, not worker.url".into(),
                ));
            }
            (file_url(), chosen(WorkerSource::Lowest))
        }
        Registry::Static => (
            w.url.clone().unwrap_or_else(file_url),
            WorkerSource::Static(w.id.unwrap_or(0)),
        ),
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
            (w.url.clone().unwrap_or_else(file_url), source)
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
