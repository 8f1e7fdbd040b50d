//! The async client: a cache per name over the endpoints.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use snowdrift_proto::grpc::NextRequest;
use tonic::metadata::MetadataValue;

use crate::builder::ClientBuilder;
use crate::cache::{Batch, NameCache, Policy, Stats, Taken};
use crate::endpoints::Endpoints;
use crate::error::{Error, ErrorKind};

/// A snowdrift client: IDs from a cache per name, refilled from the servers in the
/// background. Cheap to clone; clones share the caches.
///
/// ```no_run
/// # async fn demo() -> Result<(), snowdrift_client::Error> {
/// let client = snowdrift_client::Client::builder()
///     .endpoints(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
///     .build()?;
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
    caches: RwLock<HashMap<String, Arc<NameCache>>>,
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
    ) -> Self {
        Self {
            shared: Arc::new(Shared {
                endpoints,
                token,
                policy,
                deadline,
                attempts,
                caches: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The next ID of generator or tag `name` (a 64-bit kind).
    pub async fn next(&self, name: &str) -> Result<u64, Error> {
        let mut ids = self.next_n(name, 1).await?;
        ids.pop().ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{name:?}: no ID was fetched"),
            )
        })
    }

    /// `n` new IDs of `name` (a 64-bit kind), from the cache and as many fetches as they
    /// take.
    pub async fn next_n(&self, name: &str, n: usize) -> Result<Vec<u64>, Error> {
        match self.take(name, n, false).await? {
            Taken::Numbers(v) => Ok(v),
            Taken::Text(_) => Err(Error::new(ErrorKind::WrongKind, "expected numbers")),
        }
    }

    /// The next ID of `name` for a text kind (UUID, ULID, ObjectId, templated counter).
    pub async fn next_text(&self, name: &str) -> Result<String, Error> {
        match self.take(name, 1, true).await? {
            Taken::Text(mut v) => v.pop().ok_or_else(|| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!("{name:?}: no ID was fetched"),
                )
            }),
            Taken::Numbers(_) => Err(Error::new(ErrorKind::WrongKind, "expected text")),
        }
    }

    /// The counts of `name`'s cache, if it has one.
    pub fn stats(&self, name: &str) -> Option<Stats> {
        self.shared.cache_if_any(name).map(|c| c.stats())
    }

    async fn take(&self, name: &str, n: usize, text: bool) -> Result<Taken, Error> {
        if n == 0 {
            return Err(Error::new(ErrorKind::InvalidInput, "ask for at least 1 ID"));
        }
        let cache = self.shared.cache(name);
        let mut out = if text {
            Taken::Text(Vec::with_capacity(n))
        } else {
            Taken::Numbers(Vec::with_capacity(n))
        };
        loop {
            let prefetch = cache.take(n, text, &mut out)?;
            let have = match &out {
                Taken::Numbers(v) => v.len(),
                Taken::Text(v) => v.len(),
            };
            if have == n {
                if prefetch {
                    self.prefetch(name, &cache);
                }
                return Ok(out);
            }
            // Empty: fetch now, or wait for the fetch in flight.
            let _fetching = cache.fetch.lock().await;
            if cache.has_ids() {
                continue;
            }
            let size = cache.next_size((n - have) as u64);
            let batch = self.shared.fetch(name, size).await?;
            cache.install(batch);
        }
    }

    /// Fetches `name`'s next batch in the background, unless one is on its way.
    fn prefetch(&self, name: &str, cache: &Arc<NameCache>) {
        if cache.prefetching.swap(true, Ordering::AcqRel) {
            return;
        }
        let (shared, cache, name) = (self.shared.clone(), cache.clone(), name.to_string());
        tokio::spawn(async move {
            let fetching = cache.fetch.lock().await;
            let size = cache.next_size(1);
            match shared.fetch(&name, size).await {
                Ok(batch) => cache.install(batch),
                // A caller that runs dry fetches again and gets the error itself.
                Err(e) => tracing::debug!(name, error = %e, "snowdrift prefetch failed"),
            }
            drop(fetching);
            cache.prefetching.store(false, Ordering::Release);
        });
    }
}

impl Shared {
    fn cache(&self, name: &str) -> Arc<NameCache> {
        if let Some(c) = self.cache_if_any(name) {
            return c;
        }
        let mut caches = self.caches.write().unwrap_or_else(PoisonError::into_inner);
        caches
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(NameCache::new(self.policy)))
            .clone()
    }

    fn cache_if_any(&self, name: &str) -> Option<Arc<NameCache>> {
        let caches = self.caches.read().unwrap_or_else(PoisonError::into_inner);
        caches.get(name).cloned()
    }

    /// One batch of `count` IDs of `name`: from the endpoints in turn, each call cut at the
    /// deadline, a failed one retried on the next endpoint after a backoff; a final error
    /// (unknown name, refused token, bad request) at once.
    async fn fetch(&self, name: &str, count: u64) -> Result<Batch, Error> {
        let mut last = None;
        for _ in 0..self.attempts {
            let endpoint = self.endpoints.pick();
            let mut request = tonic::Request::new(NextRequest {
                name: name.to_string(),
                count: Some(count),
                format: None,
            });
            request.set_timeout(self.deadline);
            if let Some(token) = &self.token {
                request
                    .metadata_mut()
                    .insert("authorization", token.clone());
            }
            let mut client = endpoint.client.clone();
            let answer = tokio::time::timeout(self.deadline, client.next(request)).await;
            let error = match answer {
                Ok(Ok(batch)) => {
                    self.endpoints.succeeded(endpoint);
                    return Ok(Batch::from_message(batch.into_inner()));
                }
                Ok(Err(status)) => Error::from_status(&endpoint.url, &status),
                Err(_) => Error::new(
                    ErrorKind::Unavailable,
                    format!("{}: no answer within {:?}", endpoint.url, self.deadline),
                ),
            };
            if error.is_final() {
                return Err(error);
            }
            let wait = self.endpoints.failed(endpoint, &error);
            last = Some(error);
            if self.endpoints.len() == 1 {
                tokio::time::sleep(wait).await;
            }
        }
        let last = last.map(|e| e.message().to_string()).unwrap_or_default();
        Err(Error::new(
            ErrorKind::Unavailable,
            format!(
                "{name:?}: the cache is empty and no server answered after {} tries ({last}); \
                 endpoints: {}",
                self.attempts,
                self.endpoints.describe()
            ),
        ))
    }
}
