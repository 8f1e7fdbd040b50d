//! The generators one server serves, by name, started from the [`Plan`]: stores connected,
//! worker leases taken. Segment tags without a generator of their own are served under their
//! tag name.

use std::collections::BTreeMap;
use std::sync::Arc;

use snowdrift_core::clock::{OffsetClock, SystemClock};
use snowdrift_core::obfuscate::Obfuscator;
use snowdrift_store::segment::{SegmentService, SegmentStore};

use crate::error::{Error, StartError};
use crate::kinds::{IdSource, Source, StartContext};
use crate::plan::Plan;

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
        let all = if store_config.urls.is_empty() {
            std::slice::from_ref(&store_config.url)
        } else {
            store_config.urls.as_slice()
        };
        for url in all {
            if let Some(backend) = crate::open_coordinator::by_url(url) {
                // A warning, not a refusal: a single machine runs its store on loopback
                // without users, and refusing would stop every such setup.
                tracing::warn!(
                    store = %snowdrift_store::mask_url(url),
                    "segment tags are claimed on {backend}, which takes writes from clients \
                     without credentials: anyone who can reach it can lower a tag's max_id \
                     and make every node hand out IDs again. Give it users (a URL with \
                     USER:PASSWORD@) unless nothing but this cluster can reach it"
                );
            }
        }
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
        // Tags with a template take their periods and dates from the wall clock (shifted
        // for tests as the snowflake and tso clocks are).
        let offset = crate::kinds::tso::oracle::test_clock_offset_ms()?;
        let clock = OffsetClock::new(SystemClock, offset);
        let segments =
            Arc::new(SegmentService::new(store, plan.buffer()).with_clock(Arc::new(clock)));
        let keepers = Keepers::new()?;
        let cx = StartContext {
            segments: segments.clone(),
            keepers: keepers.handle(),
        };
        let mut by_name = BTreeMap::new();
        let mut obfuscators = BTreeMap::new();
        for g in plan.generators() {
            let source =
                g.source
                    .start(&g.name, &cx)
                    .await
                    .map_err(|source| StartError::Generator {
                        name: g.name.clone(),
                        source,
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
        Ok(Arc::new(Source::tag(
            self.segments.clone(),
            name.to_string(),
        )))
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
        let is_snowflake = |s: &&Arc<Source>| s.snowflake().is_some();
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

    /// Stops every generator: snowflake generators write their final high-water marks and
    /// release their worker IDs, timestamp-oracle leaders resign (so another takes over at
    /// once).
    pub async fn shutdown(&self) {
        let keepers = self.keepers.handle();
        for (name, source) in &self.by_name {
            source.shutdown(name, &keepers).await;
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
