//! The generators one server serves, by name, started from the [`Plan`]: stores connected,
//! worker leases taken. Segment tags without a generator of their own are served under their
//! tag name.

use std::collections::BTreeMap;
use std::sync::Arc;

use snowdrift_core::clock::{Clock, MonotonicClock, SystemClock};
use snowdrift_core::obfuscate::Obfuscator;
use snowdrift_store::segment::{SegmentService, SegmentStore};
use snowdrift_store::worker::WorkerNode;

use crate::config::Kind;
use crate::error::{Error, StartError};
use crate::plan::{GeneratorPlan, Plan, SourcePlan};
use crate::source::{
    CounterSource, IdSource, SegmentSource, SimpleSource, SnowflakeSource, Source, TicketSource,
    TsoSource, UuidSource, ZkVersionSource,
};

/// Every name this server answers to.
#[derive(Debug)]
pub struct Generators {
    by_name: BTreeMap<String, Arc<Source>>,
    /// The runtime the worker leases' keepers run on (see [`Keepers`]).
    keepers: Keepers,
    /// The obfuscation of the generators with an `obfuscate_key`, by name.
    obfuscators: BTreeMap<String, Obfuscator>,
    segments: Arc<SegmentService>,
}

impl Generators {
    /// Connects the stores and starts every generator of `plan`.
    pub async fn start(plan: &Plan) -> Result<Self, StartError> {
        let store_config = plan.store();
        let store = match store_config.urls.as_slice() {
            [] => SegmentStore::connect(&store_config.url, &store_config.table).await?,
            urls => {
                let mut stores = Vec::with_capacity(urls.len());
                for url in urls {
                    stores.push(SegmentStore::connect(url, &store_config.table).await?);
                }
                SegmentStore::striped(stores)?
            }
        };
        let segments = Arc::new(SegmentService::new(store, plan.buffer()));
        let keepers = Keepers::new()?;
        let mut by_name = BTreeMap::new();
        let mut obfuscators = BTreeMap::new();
        for g in plan.generators() {
            let source = start_one(g, &segments, &keepers).await.map_err(|source| {
                StartError::Generator {
                    name: g.name.clone(),
                    source,
                }
            })?;
            by_name.insert(g.name.clone(), Arc::new(source));
            if let Some(o) = &g.obfuscator {
                obfuscators.insert(g.name.clone(), o.clone());
            }
        }
        let preload: Vec<&str> = store_config.preload.iter().map(String::as_str).collect();
        segments.preload(&preload).await?;
        Ok(Self {
            by_name,
            keepers,
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

    /// Stops every snowflake generator (final high-water marks written, worker IDs
    /// released) and every timestamp oracle (a leader resigns, so another takes over at once).
    pub async fn shutdown(&self) {
        for (name, source) in &self.by_name {
            if let Source::Tso(t) = source.as_ref() {
                t.tso().shutdown().await;
                continue;
            }
            if !matches!(source.as_ref(), Source::Snowflake(_)) {
                continue;
            }
            // On the keepers' runtime, where the lease's coordinator connection lives.
            let source = source.clone();
            let stopped = self
                .keepers
                .handle()
                .spawn(async move {
                    match source.as_ref() {
                        Source::Snowflake(s) => s.shutdown().await,
                        _ => Ok(()),
                    }
                })
                .await;
            let error = match stopped {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(e) => e.to_string(),
            };
            tracing::warn!(
                generator = name.as_str(),
                error,
                "releasing the worker lease failed; it expires by itself after its ttl"
            );
        }
    }
}

/// A runtime of its own for the worker leases' keepers, on its own thread: renewing a lease
/// and raising the high-water mark must not wait behind request handling. Under a flood of
/// gRPC streams (BENCHMARKS.md, "Slow and hostile clients") the keeper on the shared runtime
/// was 3.7 s late with the mark, and snowflake issuing stopped until it caught up.
#[derive(Debug)]
struct Keepers {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Keepers {
    fn new() -> Result<Self, StartError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("snowdrift-lease")
            .enable_all()
            .build()
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("starting the lease keepers' thread: {e}"))
            })?;
        Ok(Self {
            runtime: Some(runtime),
        })
    }

    fn handle(&self) -> tokio::runtime::Handle {
        match &self.runtime {
            Some(runtime) => runtime.handle().clone(),
            // Only `drop` takes it.
            None => tokio::runtime::Handle::current(),
        }
    }
}

impl Drop for Keepers {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which an async context forbids; its tasks are the
        // keepers, whose leases end by themselves (after `shutdown`, or by their ttl).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Starts one generator: takes its worker lease (its keeper on `keepers`), connects its
/// servers.
async fn start_one(
    g: &GeneratorPlan,
    segments: &Arc<SegmentService>,
    keepers: &Keepers,
) -> Result<Source, snowdrift_store::Error> {
    Ok(match &g.source {
        SourcePlan::Snowflake {
            layout,
            layout_name,
            lease,
            options,
            unverified,
        } => {
            if lease.registry_url.starts_with("file://")
                && !lease.registry_url["file://".len()..].starts_with('/')
            {
                tracing::warn!(
                    generator = %g.name,
                    path = &lease.registry_url["file://".len()..],
                    "worker.path is relative: a server started from another directory on this \
                     machine would not see this one's worker leases; use an absolute path (the \
                     default is machine-wide)"
                );
            }
            if *unverified {
                tracing::warn!(
                    generator = %g.name,
                    "the worker ID is leased only on this machine (worker.registry = file, or \
                     static/derived without worker.verify_with) while the server listens beyond \
                     loopback: a server on another machine with the same worker ID would issue \
                     the same IDs. Lease worker IDs on a coordinator (worker.registry = etcd, \
                     zookeeper, sql or redis; or worker.verify_with for static and derived IDs)"
                );
            }
            let mut seed = [0u8; 8];
            // Without randomness the starts are still spread over ticks, only alike
            // between processes.
            let _ = getrandom::fill(&mut seed);
            let builder = options.builder(layout, u64::from_le_bytes(seed));
            let lease = lease.clone();
            let offset = crate::tso::test_clock_offset_ms()?;
            let clock = MonotonicClock::anchored_at(
                SystemClock.now_ms().saturating_add_signed(offset),
                std::time::Instant::now(),
            );
            let node = keepers
                .handle()
                .spawn(WorkerNode::claim(lease, builder, clock))
                .await
                .map_err(|e| {
                    snowdrift_store::Error::Unavailable(
                        format!("the lease keepers' thread failed: {e}").into(),
                    )
                })??;
            Source::Snowflake(SnowflakeSource::new(
                node,
                layout.clone(),
                layout_name.clone(),
                *options,
                *unverified,
            ))
        }
        SourcePlan::Segment { tag } => {
            Source::Segment(SegmentSource::new(segments.clone(), tag.clone()))
        }
        SourcePlan::Ticket { pool } => {
            Source::Ticket(TicketSource::new(pool.clone().connect().await?))
        }
        SourcePlan::Counter(plan) => {
            Source::Counter(CounterSource::new(plan.connect(&g.name).await?))
        }
        SourcePlan::Uuid(plan) => Source::Uuid(UuidSource::new(plan).ok_or_else(|| {
            snowdrift_store::Error::Unavailable(
                "the operating system gave no randomness for the UUID node ID and clock \
                 sequence"
                    .into(),
            )
        })?),
        SourcePlan::Tso(plan) => {
            let offset = crate::tso::test_clock_offset_ms()?;
            Source::Tso(TsoSource::new(
                crate::tso::Tso::start(&g.name, plan, offset, &keepers.handle()).await?,
            ))
        }
        SourcePlan::ZkVersion { url, znode } => Source::ZkVersion(ZkVersionSource::new(
            snowdrift_store::zk_version::ZkVersion::connect(url, znode).await?,
        )),
        SourcePlan::LegacyObjectId => {
            Source::Simple(SimpleSource::legacy_objectid().ok_or_else(|| {
                snowdrift_store::Error::Unavailable(
                    "the operating system gave no randomness for the ObjectId counter".into(),
                )
            })?)
        }
        SourcePlan::Simple(kind) => Source::Simple(SimpleSource::new(*kind).ok_or_else(|| {
            snowdrift_store::Error::Unavailable(
                "the operating system gave no randomness for the ObjectId process value".into(),
            )
        })?),
    })
}
