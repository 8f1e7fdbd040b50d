//! The servers a client talks to, with what it knows of each: what the server's own gRPC
//! health service says (watched in the background, see [`crate::health`]), and the
//! client's own failures with it (consecutive failures, when it may be tried again, the
//! last error).
//!
//! A fetch goes to the next endpoint in turn among those that are up (round-robin, so load
//! spreads evenly and no server is favoured or starved by a latency estimate): first those
//! whose health service says SERVING and that have not failed lately, then those that only
//! have not failed lately, and when every one has failed, the one whose retry time comes
//! first (a probe: a success brings it back).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint as TonicEndpoint};

use crate::error::{Error, ErrorKind};

/// After this many failures in a row an endpoint is down until its backoff has passed.
const DOWN_AFTER: u32 = 2;

/// One server.
#[derive(Debug)]
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) channel: Channel,
    pub(crate) client: IdServiceClient<Channel>,
    pub(crate) health: Arc<Mutex<Health>>,
    /// The largest count sent to this server's unary `Next`: [`crate::fetch::NEXT_MAX`]
    /// (the servers' default `limits.max_count`) until the server refuses a count that its
    /// `Stream` then serves, which shows its `limits.max_count` is lower.
    pub(crate) next_max: AtomicU64,
}

/// What the client knows of one endpoint.
#[derive(Debug, Default)]
pub(crate) struct Health {
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
    down_since: Option<SystemTime>,
    /// What the server's health service said last: `None` before it answered (or when the
    /// server has none), `Some(false)` for NOT_SERVING or a watch that broke.
    pub(crate) serving: Option<bool>,
}

/// How an endpoint stands, for [`crate::Client::endpoints`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointStatus {
    /// The URL as given.
    pub url: String,
    /// False while the client leaves it out after failures in a row (until a retry time).
    pub up: bool,
    /// What the server's health service says: `Some(true)` SERVING, `Some(false)`
    /// NOT_SERVING or not reachable, `None` not known yet (or the server has none).
    pub serving: Option<bool>,
    /// Failed calls in a row.
    pub failures: u32,
    /// The last failure's message.
    pub last_error: Option<String>,
    /// Since when it has been down, if it is.
    pub down_since: Option<SystemTime>,
}

/// Every endpoint, and the turn.
#[derive(Debug)]
pub(crate) struct Endpoints {
    pub(crate) list: Vec<Endpoint>,
    turn: AtomicUsize,
    pub(crate) backoff: (Duration, Duration),
}

impl Endpoints {
    /// Channels to `urls` (connected lazily, on first use). `ca` is a PEM bundle that
    /// `https://` endpoints are checked against besides the system's roots.
    pub(crate) fn new(
        urls: &[String],
        ca: Option<&[u8]>,
        connect_timeout: Duration,
        backoff: (Duration, Duration),
    ) -> Result<Self, Error> {
        if urls.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                "no endpoint: give the servers' URLs, e.g. .endpoints([\"http://10.0.0.1:8080\"])",
            ));
        }
        let mut list = Vec::with_capacity(urls.len());
        for url in urls {
            let bad = |e: &dyn std::fmt::Display| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!("endpoint {url:?}: {e}; write http://HOST:PORT or https://HOST:PORT"),
                )
            };
            let mut endpoint = TonicEndpoint::from_shared(url.clone())
                .map_err(|e| bad(&e))?
                .connect_timeout(connect_timeout)
                .tcp_nodelay(true);
            if url.starts_with("https://") {
                let mut tls = ClientTlsConfig::new().with_native_roots();
                if let Some(pem) = ca {
                    tls = tls.ca_certificate(Certificate::from_pem(pem));
                }
                endpoint = endpoint.tls_config(tls).map_err(|e| bad(&e))?;
            } else if !url.starts_with("http://") {
                return Err(bad(&"the scheme is not http or https"));
            }
            let channel = endpoint.connect_lazy();
            list.push(Endpoint {
                url: url.clone(),
                client: IdServiceClient::new(channel.clone()),
                channel,
                health: Arc::default(),
                next_max: AtomicU64::new(crate::fetch::NEXT_MAX),
            });
        }
        Ok(Self {
            list,
            turn: AtomicUsize::new(0),
            backoff,
        })
    }

    /// How many endpoints.
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The endpoint for the next call (see the module's doc for the order).
    pub(crate) fn pick(&self) -> &Endpoint {
        let n = self.list.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let in_turn = (0..n).map(|k| &self.list[(start + k) % n]);
        let not_failing = |e: &&Endpoint| e.health().retry_at.is_none_or(|at| at <= now);
        if let Some(e) = in_turn
            .clone()
            .find(|e| not_failing(e) && e.health().serving != Some(false))
        {
            return e;
        }
        if let Some(e) = in_turn.clone().find(not_failing) {
            return e;
        }
        self.list
            .iter()
            .min_by_key(|e| e.health().retry_at)
            .unwrap_or(&self.list[start % n])
    }

    /// Records a success: the endpoint is up.
    pub(crate) fn succeeded(&self, e: &Endpoint) {
        let mut h = e.health();
        if h.down_since.is_some() {
            tracing::info!(endpoint = %e.url, "snowdrift endpoint is back up");
        }
        let serving = h.serving;
        *h = Health {
            serving,
            ..Health::default()
        };
    }

    /// Records a failure; after [`DOWN_AFTER`] in a row the endpoint is down for an
    /// exponential backoff with jitter. Returns how long to wait before the next try.
    pub(crate) fn failed(&self, e: &Endpoint, error: &Error) -> Duration {
        let mut h = e.health();
        h.failures += 1;
        h.last_error = Some(error.message().to_string());
        let wait = backoff(self.backoff, h.failures);
        if h.failures >= DOWN_AFTER {
            if h.down_since.is_none() {
                h.down_since = Some(SystemTime::now());
                tracing::warn!(endpoint = %e.url, error = %error, "snowdrift endpoint is down");
            }
            h.retry_at = Some(Instant::now() + wait);
        }
        wait
    }

    /// Records a refused answer (IDs repeated, a run that wraps): a failure that leaves the
    /// endpoint out at once for its backoff, without the second chance a failed call gets,
    /// so the next fetch goes elsewhere. Returns how long to wait before the next try.
    pub(crate) fn refused(&self, e: &Endpoint, error: &Error) -> Duration {
        {
            let mut h = e.health();
            h.failures = h.failures.max(DOWN_AFTER - 1);
        }
        self.failed(e, error)
    }

    /// Every endpoint with its last error and since when it is down, for the error of a
    /// fetch that found none.
    pub(crate) fn describe(&self) -> String {
        self.list
            .iter()
            .map(|e| {
                let h = e.health();
                let since = h
                    .down_since
                    .and_then(|t| t.elapsed().ok())
                    .map(|d| format!(", down for {:.1} s", d.as_secs_f64()))
                    .unwrap_or_default();
                let health = match h.serving {
                    Some(false) => ", health: not serving",
                    _ => "",
                };
                format!(
                    "{} ({}{since}{health})",
                    e.url,
                    h.last_error.as_deref().unwrap_or("no error yet")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// How each endpoint stands.
    pub(crate) fn status(&self) -> Vec<EndpointStatus> {
        let now = Instant::now();
        self.list
            .iter()
            .map(|e| {
                let h = e.health();
                EndpointStatus {
                    url: e.url.clone(),
                    up: h.retry_at.is_none_or(|at| at <= now),
                    serving: h.serving,
                    failures: h.failures,
                    last_error: h.last_error.clone(),
                    down_since: h.down_since,
                }
            })
            .collect()
    }
}

impl Endpoint {
    pub(crate) fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        lock(&self.health)
    }
}

/// The health record, whole after every assignment.
pub(crate) fn lock(health: &Mutex<Health>) -> std::sync::MutexGuard<'_, Health> {
    health.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The wait after the `failures`th failure in a row: `first` doubled each time up to
/// `longest`, with up to half of it taken off at random, so clients that failed together
/// do not retry together.
pub(crate) fn backoff((first, longest): (Duration, Duration), failures: u32) -> Duration {
    let wait = first.saturating_mul(1 << failures.min(16)).min(longest);
    let mut b = [0u8; 2];
    let r = getrandom::fill(&mut b).map_or(0, |()| u16::from_le_bytes(b));
    let off = wait.as_nanos() as u64 / 2 * u64::from(r) / u64::from(u16::MAX);
    wait.saturating_sub(Duration::from_nanos(off))
}
