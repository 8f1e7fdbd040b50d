//! The async client: a cache per name over the endpoints.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use tonic::metadata::MetadataValue;

use crate::builder::ClientBuilder;
use crate::cache::{Batch, NameCache, Policy, Stats};
use crate::endpoints::{EndpointStatus, Endpoints};
use crate::error::{Error, ErrorKind};
use crate::health::Watchers;
use crate::ids::Ids;
use crate::merge::MAX_MERGED;

/// The next client's id.
static NEXT_CLIENT: AtomicU64 = AtomicU64::new(0);

type Caches = HashMap<Box<str>, Arc<NameCache>, foldhash::fast::RandomState>;

/// A snowdrift client: IDs from a cache per name, refilled from the servers in the
/// background. Cheap to clone; clones share the caches.
///
/// ```no_run
/// # async fn demo() -> Result<(), snowdrift_client::Error> {
/// let client = snowdrift_client::Client::builder()
///     .endpoints(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
///     .build()?;
/// let orders = client.ids("order"); // the name resolved once: the fastest way
/// let id: u64 = orders.next().await?;
/// let id: u64 = client.next("order").await?;
/// let ids: Vec<u64> = client.next_n("order", 500).await?;
/// let text: String = client.next_text("uuid7").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) endpoints: Endpoints,
    pub(crate) token: Option<MetadataValue<tonic::metadata::Ascii>>,
    pub(crate) policy: Policy,
    pub(crate) deadline: Duration,
    pub(crate) attempts: usize,
    /// Tells this client's names in a thread's list of names from another's.
    id: u64,
    /// Where background fetches run.
    runtime: tokio::runtime::Handle,
    /// Read on every call without a lock (names are added rarely, by copying the map).
    caches: ArcSwap<Caches>,
    /// The endpoints' health watchers, which end when this is dropped.
    _watchers: Watchers,
}

impl Client {
    /// Settings, then [`ClientBuilder::build`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    pub(crate) fn from_parts(
        endpoints: Endpoints,
        token: Option<MetadataValue<tonic::metadata::Ascii>>,
        policy: Policy,
        deadline: Duration,
        attempts: usize,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        let watchers = Watchers::start(&endpoints, &runtime);
        Self {
            shared: Arc::new(Shared {
                _watchers: watchers,
                endpoints,
                token,
                policy,
                deadline,
                attempts,
                id: NEXT_CLIENT.fetch_add(1, Ordering::Relaxed),
                runtime,
                caches: ArcSwap::from_pointee(Caches::default()),
            }),
        }
    }

    /// A handle on the IDs of generator or tag `name` (a 64-bit kind): the name is looked
    /// up here, once, so the handle's `next()` is the fastest way to take IDs (see [`Ids`]).
    /// Nothing is fetched until the first take; an unknown name or a text kind is reported
    /// then.
    pub fn ids(&self, name: &str) -> Ids {
        Ids::new(self.clone(), name, self.shared.cache(name))
    }

    /// The next ID of generator or tag `name` (a 64-bit kind). It waits on the network
    /// only when the cache is empty.
    ///
    /// The same as [`Ids::next`] on [`Client::ids`]`(name)`, with the name found again on
    /// each call in a short list of the names the thread used last (a compare of the name,
    /// no hashing): each thread takes a block of up to 1,024 IDs from the name's cache at a
    /// time (one compare-and-swap) and hands them out alone, so threads sharing a client
    /// do not contend; the IDs of different threads interleave, and a thread that ends
    /// skips what its block still held. Snowflake IDs are checked per ID against `max_age`
    /// on a coarse clock that errs on the strict side.
    #[inline]
    pub async fn next(&self, name: &str) -> Result<u64, Error> {
        match self.try_next(name) {
            Some(id) => Ok(id),
            // Boxed so that the warm path's future stays small.
            None => Box::pin(self.next_cold(name)).await,
        }
    }

    async fn next_cold(&self, name: &str) -> Result<u64, Error> {
        let mut ids = self.next_n(name, 1).await?;
        ids.pop().ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{name:?}: no ID was fetched"),
            )
        })
    }

    /// The next ID of `name` if the cache has one, without waiting; `None` otherwise.
    #[inline]
    pub(crate) fn try_next(&self, name: &str) -> Option<u64> {
        crate::local::next_named(self.shared.id, name, |cache| self.prefetch(name, cache))
            .or_else(|| self.try_next_unlisted(name))
    }

    /// [`Client::try_next`] for a name not on the thread's list, or whose block and cache
    /// were empty.
    #[cold]
    #[inline(never)]
    fn try_next_unlisted(&self, name: &str) -> Option<u64> {
        let cache = self.shared.caches.load().get(name).cloned()?;
        crate::local::remember(self.shared.id, name, &cache);
        let (id, prefetch) = crate::local::refill(&cache)?;
        if prefetch {
            self.prefetch(name, &cache);
        }
        Some(id)
    }

    /// `n` new IDs of `name` (a 64-bit kind): first what the calling thread's block holds
    /// (so the thread's IDs stay in order), then from the cache and as many fetches as they
    /// take.
    ///
    /// A `tso` generator's IDs are never cached: each call gets IDs fetched after it began,
    /// so an ID returned after another returned (on any client) is larger, as the oracle
    /// promises. Calls for such a name waiting at the same moment share one fetch of their
    /// sum (at most 10,000 IDs), split among them, while one fetch is in flight the next
    /// gathers the calls that arrive; a call waits at most for the fetch in flight when it
    /// came, then its own. The first call for such a name fetches twice (the first batch
    /// showed the kind, and is skipped).
    pub async fn next_n(&self, name: &str, n: usize) -> Result<Vec<u64>, Error> {
        let cache = self.begin(name, n, false)?;
        self.next_n_from(name, cache, n).await
    }

    /// [`Client::next_n`] from `name`'s cache, after [`Client::check_take`].
    pub(crate) async fn next_n_from(
        &self,
        name: &str,
        cache: Arc<NameCache>,
        n: usize,
    ) -> Result<Vec<u64>, Error> {
        if cache.is_ordered() {
            return self.next_ordered(name, &cache, n).await;
        }
        let mut out = Vec::with_capacity(n);
        crate::local::drain(&cache, n, &mut out);
        loop {
            while out.len() < n {
                let Some(got) = cache.runs.take((n - out.len()) as u64) else {
                    break;
                };
                out.extend(got.ids.iter());
                if got.prefetch {
                    self.prefetch(name, &cache);
                }
            }
            if out.len() == n {
                return Ok(out);
            }
            if let Err(e) = self.refill(name, &cache, n - out.len(), false).await {
                cache.lose(out.len() as u64);
                return Err(e);
            }
            if cache.is_ordered() {
                // Taken before the name turned out to be ordered (its generator changed
                // kind): older than what the fetch below brings, so not handed out with it.
                cache.lose(out.len() as u64);
                return self.next_ordered(name, &cache, n).await;
            }
        }
    }

    /// `n` IDs of an ordered name: merged with the other calls for the name waiting at the
    /// same moment into one fetch (see [`crate::merge`]), or, above what one fetch may
    /// merge, fetched for this caller alone.
    async fn next_ordered(
        &self,
        name: &str,
        cache: &Arc<NameCache>,
        n: usize,
    ) -> Result<Vec<u64>, Error> {
        if n as u64 > MAX_MERGED {
            let ids = self.fetch_ordered(name, cache, n as u64).await?;
            cache.served_direct(name, n as u64, 1);
            return Ok(ids);
        }
        let ticket = cache.merge.join(n as u64);
        if ticket.dispatch {
            let (client, cache, name) = (self.clone(), cache.clone(), name.to_string());
            // Its own task: a caller that stops waiting must not strand the others.
            self.shared.runtime.spawn(async move {
                // The calls the last fetch served, and its round trip.
                let mut last: Option<(usize, std::time::Duration)> = None;
                loop {
                    if let Some((calls, trip)) = last.filter(|&(calls, _)| calls > 1) {
                        cache.merge.gather(calls, trip / 2).await;
                    }
                    let Some(group) = cache.merge.take() else {
                        break;
                    };
                    let (total, calls) = (group.total(), group.calls() as u64);
                    let sent = std::time::Instant::now();
                    let ids = client.fetch_ordered(&name, &cache, total).await;
                    last = Some((group.calls(), sent.elapsed()));
                    // Counted before the callers wake, so a caller that reads the
                    // name's stats after its call returns sees the call in them.
                    let fetched = ids.is_ok();
                    if fetched {
                        cache.served_direct(&name, total, 1);
                    }
                    let unclaimed = group.answer(ids);
                    if fetched {
                        cache.lose(unclaimed);
                    }
                    metrics::histogram!("snowdrift_client_merged_calls", "name" => name.clone())
                        .record(calls as f64);
                }
            });
        }
        match ticket.answer.await {
            Ok(answer) => answer,
            // The dispatcher's task ended without answering: the runtime is shutting down.
            Err(_) => Err(Error::new(
                ErrorKind::Unavailable,
                format!("{name:?}: the client's runtime stopped before the fetch was answered"),
            )),
        }
    }

    /// One fetch of exactly `n` IDs of an ordered name, in the order the server issued
    /// them.
    async fn fetch_ordered(
        &self,
        name: &str,
        cache: &NameCache,
        n: u64,
    ) -> Result<Vec<u64>, Error> {
        let batch = self.shared.fetch(name, n, &cache.guard).await?;
        let Batch::Runs { runs, .. } = batch else {
            return Err(Error::new(
                ErrorKind::WrongKind,
                format!("{name:?} answered text IDs, where it issued timestamp-oracle IDs before"),
            ));
        };
        let ids: Vec<u64> = runs
            .iter()
            .flat_map(|&(first, count, stride)| (0..count).map(move |k| first + k * stride))
            .collect();
        if ids.len() as u64 != n {
            return Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{name:?}: asked for {n} IDs, the server answered {}",
                    ids.len()
                ),
            ));
        }
        Ok(ids)
    }

    /// The next ID of `name` for a text kind (UUID, ULID, ObjectId, templated counter).
    pub async fn next_text(&self, name: &str) -> Result<String, Error> {
        let cache = self.begin(name, 1, true)?;
        let mut out = Vec::with_capacity(1);
        loop {
            // What was fetched before the kind was known goes first.
            if let Some(local) = cache.local.get()
                && cache.texts.cached() == 0
            {
                return local.next();
            }
            if cache.texts.take(1, &mut out) {
                self.prefetch(name, &cache);
            }
            if let Some(id) = out.pop() {
                return Ok(id);
            }
            self.refill(name, &cache, 1, true).await?;
        }
    }

    /// The UUID a `uuid3` or `uuid5` generator `name` makes of `input` (hashed under the
    /// generator's namespace): the same input always gives the same UUID, so nothing is
    /// cached; each call is one request (`input` in gRPC's `NextRequest`).
    ///
    /// ```no_run
    /// # async fn demo(client: snowdrift_client::Client) -> Result<(), snowdrift_client::Error> {
    /// let id = client.next_named("site-ids", "python.org").await?;
    /// # Ok(()) }
    /// ```
    pub async fn next_named(&self, name: &str, input: &str) -> Result<String, Error> {
        match self.shared.fetch_with(name, 1, Some(input), None).await? {
            Batch::Text { mut ids, .. } if ids.len() == 1 => Ok(ids.remove(0)),
            Batch::Text { ids, .. } => Err(Error::new(
                ErrorKind::Unavailable,
                format!(
                    "{name:?}: asked for 1 UUID, the server answered {}",
                    ids.len()
                ),
            )),
            Batch::Runs { .. } => Err(Error::new(
                ErrorKind::WrongKind,
                format!("{name:?} issues 64-bit IDs; next_named is for uuid3 and uuid5 generators"),
            )),
        }
    }

    /// How each endpoint stands: up or left out after failures, what its health service
    /// says, its last error.
    pub fn endpoints(&self) -> Vec<EndpointStatus> {
        self.shared.endpoints.status()
    }

    /// The counts of `name`'s cache, if it has one.
    pub fn stats(&self, name: &str) -> Option<Stats> {
        self.shared.caches.load().get(name).map(|c| c.stats())
    }

    /// `name`'s cache, made on first use, after the checks every take makes.
    fn begin(&self, name: &str, n: usize, text: bool) -> Result<Arc<NameCache>, Error> {
        if n == 0 {
            return Err(Error::new(ErrorKind::InvalidInput, "ask for at least 1 ID"));
        }
        let cache = self.shared.cache(name);
        cache.check_kind(text)?;
        Ok(cache)
    }

    /// The checks [`Client::begin`] makes, for a take of `n` 64-bit IDs through a handle.
    pub(crate) fn check_take(&self, cache: &NameCache, n: usize) -> Result<(), Error> {
        if n == 0 {
            return Err(Error::new(ErrorKind::InvalidInput, "ask for at least 1 ID"));
        }
        cache.check_kind(false)
    }

    /// Waits for a batch for a caller that found the cache empty: the fetch in flight, or
    /// one of its own.
    async fn refill(
        &self,
        name: &str,
        cache: &NameCache,
        demand: usize,
        text: bool,
    ) -> Result<(), Error> {
        let _fetching = cache.fetch.lock().await;
        if !cache.has_ids(text) {
            let size = cache.next_size(demand as u64);
            let batch = self.shared.fetch(name, size, &cache.guard).await?;
            cache.install(name, batch);
        }
        cache.check_kind(text)
    }

    /// Fetches `name`'s next batch in the background, unless one is on its way.
    pub(crate) fn prefetch(&self, name: &str, cache: &Arc<NameCache>) {
        if cache.prefetching.swap(true, Ordering::AcqRel) {
            return;
        }
        let (shared, cache, name) = (self.shared.clone(), cache.clone(), name.to_string());
        self.shared.runtime.spawn(async move {
            let fetching = cache.fetch.lock().await;
            let size = cache.next_size(1);
            match shared.fetch(&name, size, &cache.guard).await {
                Ok(batch) => cache.install(&name, batch),
                // A caller that runs dry fetches again and gets the error itself.
                Err(e) => tracing::debug!(name, error = %e, "snowdrift prefetch failed"),
            }
            drop(fetching);
            cache.prefetching.store(false, Ordering::Release);
        });
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        for (name, cache) in self.caches.load().iter() {
            cache.close(name);
        }
    }
}

impl Shared {
    fn cache(&self, name: &str) -> Arc<NameCache> {
        if let Some(c) = self.caches.load().get(name) {
            return c.clone();
        }
        let mut made = None;
        self.caches.rcu(|caches| {
            let mut caches = Caches::clone(caches);
            made = Some(
                caches
                    .entry(name.into())
                    .or_insert_with(|| Arc::new(NameCache::new(self.policy)))
                    .clone(),
            );
            caches
        });
        match made {
            Some(c) => c,
            // rcu runs its closure at least once.
            None => unreachable!("the cache map's update ran"),
        }
    }
}
