//! The servers a client talks to, with what it has seen of each: consecutive failures, when
//! it may be tried again, its last error. A fetch goes to the next endpoint in turn among
//! those that are up (round-robin, so load spreads evenly and a slow server is not
//! favoured or starved), and moves on to another after a failure.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
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
    pub(crate) client: IdServiceClient<Channel>,
    health: Mutex<Health>,
}

#[derive(Debug, Default)]
struct Health {
    failures: u32,
    retry_at: Option<Instant>,
    last_error: Option<String>,
    down_since: Option<SystemTime>,
}

/// Every endpoint, and the turn.
#[derive(Debug)]
pub(crate) struct Endpoints {
    list: Vec<Endpoint>,
    turn: AtomicUsize,
    backoff: (Duration, Duration),
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
            list.push(Endpoint {
                url: url.clone(),
                client: IdServiceClient::new(endpoint.connect_lazy()),
                health: Mutex::new(Health::default()),
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

    /// The next endpoint in turn that is up; if every one is down, the one whose retry time
    /// comes first (a probe: a success brings it back).
    pub(crate) fn pick(&self) -> &Endpoint {
        let n = self.list.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        for k in 0..n {
            let e = &self.list[(start + k) % n];
            if e.health().retry_at.is_none_or(|at| at <= now) {
                return e;
            }
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
        *h = Health::default();
    }

    /// Records a failure; after [`DOWN_AFTER`] in a row the endpoint is down for an
    /// exponential backoff with jitter. Returns how long to wait before the next try.
    pub(crate) fn failed(&self, e: &Endpoint, error: &Error) -> Duration {
        let mut h = e.health();
        h.failures += 1;
        h.last_error = Some(error.message().to_string());
        let (first, most) = self.backoff;
        let exp = first.saturating_mul(1 << h.failures.min(16)).min(most);
        let wait = jitter(exp);
        if h.failures >= DOWN_AFTER {
            if h.down_since.is_none() {
                h.down_since = Some(SystemTime::now());
                tracing::warn!(endpoint = %e.url, error = %error, "snowdrift endpoint is down");
            }
            h.retry_at = Some(Instant::now() + wait);
        }
        wait
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
                format!(
                    "{} ({}{since})",
                    e.url,
                    h.last_error.as_deref().unwrap_or("no error yet")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Endpoint {
    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `wait` with up to half of it taken off at random, so clients that failed together do
/// not retry together.
fn jitter(wait: Duration) -> Duration {
    let mut b = [0u8; 2];
    let r = getrandom::fill(&mut b).map_or(0, |()| u16::from_le_bytes(b));
    let off = wait.as_nanos() as u64 / 2 * u64::from(r) / u64::from(u16::MAX);
    wait.saturating_sub(Duration::from_nanos(off))
}
