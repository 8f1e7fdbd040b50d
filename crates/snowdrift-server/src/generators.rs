//! The generators one server serves, by name, built from the configuration; segment tags
//! without a generator of their own are served under their tag name.

use std::collections::BTreeMap;
use std::sync::Arc;

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::obfuscate::Obfuscator;
use snowdrift_store::counter::RedisCounter;
use snowdrift_store::segment::{BufferConfig, SegmentService, SegmentStore};
use snowdrift_store::ticket::TicketPool;
use snowdrift_store::worker::{WorkerConfig as LeaseConfig, WorkerNode};

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::{ConfigError, Error, StartError};
use crate::source::{
    CounterSource, IdSource, SegmentSource, SimpleSource, SnowflakeSource, Source, TicketSource,
};

/// Every name this server answers to.
#[derive(Debug)]
pub struct Generators {
    by_name: BTreeMap<String, Arc<Source>>,
    /// The obfuscation of the generators with an `obfuscate_key`, by name.
    obfuscators: BTreeMap<String, Obfuscator>,
    segments: Arc<SegmentService>,
}

impl Generators {
    /// Connects the stores and builds every generator of `config`.
    pub async fn build(config: &Config) -> Result<Self, StartError> {
        let store = match config.store.urls.as_slice() {
            [] => SegmentStore::connect(&config.store.url, &config.store.table).await?,
            urls => {
                let mut stores = Vec::with_capacity(urls.len());
                for url in urls {
                    stores.push(SegmentStore::connect(url, &config.store.table).await?);
                }
                SegmentStore::striped(stores)?
            }
        };
        let buffer = BufferConfig {
            wait: config.store.wait,
            ..BufferConfig::default()
        };
        let segments = Arc::new(SegmentService::new(store, buffer));
        let mut by_name = BTreeMap::new();
        let mut obfuscators = BTreeMap::new();
        for g in config.effective_generators() {
            let failed = |message: String| {
                StartError::Config(ConfigError::new(format!(
                    "generator {:?}: {message}",
                    g.name
                )))
            };
            let obfuscator = g
                .obfuscator()
                .map_err(|(key, e)| failed(format!("{key}: {e}")))?;
            let source = build_one(&g, config, &segments).await.map_err(failed)?;
            by_name.insert(g.name.clone(), Arc::new(source));
            if let Some(o) = obfuscator {
                obfuscators.insert(g.name.clone(), o);
            }
        }
        let preload: Vec<&str> = config.store.preload.iter().map(String::as_str).collect();
        segments.preload(&preload).await?;
        Ok(Self {
            by_name,
            obfuscators,
            segments,
        })
    }

    /// The source serving `name`: a configured generator, or else the segment tag of that
    /// name (which may not exist: the store says so on first use).
    pub fn get(&self, name: &str) -> Result<Arc<Source>, Error> {
        if let Some(source) = self.by_name.get(name) {
            return Ok(source.clone());
        }
        snowdrift_store::segment::validate_tag(name)?;
        Ok(Arc::new(Source::Segment(SegmentSource::new(
            self.segments.clone(),
            name.to_string(),
        ))))
    }

    /// The obfuscation of generator `name`, when it has an `obfuscate_key`.
    pub fn obfuscator(&self, name: &str) -> Option<&Obfuscator> {
        self.obfuscators.get(name)
    }

    /// True when `name` is a configured generator (so no tag may take it).
    pub fn is_generator(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The configured generators, by name.
    pub fn configured(&self) -> impl Iterator<Item = (&str, &Source)> {
        self.by_name.iter().map(|(n, s)| (n.as_str(), s.as_ref()))
    }

    /// The snowflake generator named `snowflake`, else the first one, with its name: what
    /// Leaf's `/api/snowflake/get/{key}` serves for a key that names no generator.
    pub fn default_snowflake(&self) -> Option<(&str, Arc<Source>)> {
        let is_snowflake = |s: &&Arc<Source>| s.kind() == Kind::Snowflake;
        self.by_name
            .get_key_value("snowflake")
            .filter(|(_, s)| is_snowflake(s))
            .or_else(|| self.by_name.iter().find(|(_, s)| is_snowflake(s)))
            .map(|(n, s)| (n.as_str(), s.clone()))
    }

    /// The segment service (tags, buffers).
    pub fn segments(&self) -> &Arc<SegmentService> {
        &self.segments
    }
}

/// The lease settings of snowflake generator `name`: each generator leases its worker ID in
/// its own namespace, since IDs of different generators need not differ.
fn lease_config(config: &Config, name: &str) -> Result<LeaseConfig, String> {
    let w = &config.worker;
    let (url, source) = w.lease_plan()?;
    let mut lease = LeaseConfig::new(url, source);
    lease.namespace = crate::config::lease_namespace(&w.namespace, name);
    lease.ttl = w.ttl;
    lease.window = w.window;
    lease.max_mark_wait = w.max_mark_wait;
    lease.clock_bound = w.clock_bound;
    Ok(lease)
}

/// Stops every snowflake generator: final high-water marks written, worker IDs released.
pub async fn shutdown(generators: &Generators) {
    for (name, source) in generators.configured() {
        if let Source::Snowflake(s) = source
            && let Err(e) = s.shutdown().await
        {
            tracing::warn!(generator = name, error = %e, "releasing the worker lease failed; it expires by itself after its ttl");
        }
    }
}

async fn build_one(
    g: &GeneratorConfig,
    config: &Config,
    segments: &Arc<SegmentService>,
) -> Result<Source, String> {
    Ok(match g.kind {
        Kind::Snowflake => {
            let (layout, layout_name) = crate::layout::resolve(
                g.layout.as_deref(),
                g.bits.as_deref(),
                g.unit.as_deref(),
                g.epoch.as_deref(),
            )?;
            let node = WorkerNode::start(
                lease_config(config, &g.name)?,
                SnowflakeGenerator::builder(layout.clone()),
                MonotonicClock::new(),
            )
            .await
            .map_err(|e| format!("worker lease: {e}"))?;
            Source::Snowflake(SnowflakeSource::new(node, layout, layout_name))
        }
        Kind::Segment => {
            let tag = g.tag.clone().unwrap_or_else(|| g.name.clone());
            snowdrift_store::segment::validate_tag(&tag).map_err(|e| format!("tag: {e}"))?;
            Source::Segment(SegmentSource::new(segments.clone(), tag))
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
            Source::Ticket(TicketSource::new(
                pool.connect().await.map_err(|e| e.to_string())?,
            ))
        }
        Kind::Counter => {
            let mut counter = RedisCounter::builder(g.name.as_str());
            if let Some(text) = &g.template {
                let template = text
                    .parse()
                    .map_err(|e| format!("template {text:?}: {e}"))?;
                counter = counter.template(template);
            }
            if let Some(batch) = g.batch {
                counter = counter.batch(batch);
            }
            counter = counter.max_per_call(config.limits.max_count);
            let url = g.url.as_deref().unwrap_or_default();
            Source::Counter(CounterSource::new(
                counter.connect(url).await.map_err(|e| e.to_string())?,
            ))
        }
        kind => Source::Simple(SimpleSource::new(kind).ok_or_else(|| {
            "the operating system gave no randomness for the ObjectId process value".to_string()
        })?),
    })
}
