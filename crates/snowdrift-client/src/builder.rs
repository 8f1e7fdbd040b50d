//! The client's settings, each with its default.

use std::time::Duration;

use tonic::metadata::MetadataValue;

use crate::cache::Policy;
use crate::client::Client;
use crate::endpoints::Endpoints;
use crate::error::{Error, ErrorKind};

/// Settings for a [`Client`]; every one has a default but the endpoints.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    endpoints: Vec<String>,
    token: Option<String>,
    ca_pem: Option<Vec<u8>>,
    prefetch_at: f64,
    hold: Duration,
    min_batch: u64,
    max_batch: u64,
    max_age: Duration,
    deadline: Duration,
    connect_timeout: Duration,
    attempts: Option<usize>,
    backoff: (Duration, Duration),
    generate_locally: bool,
    thread_block: u64,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            token: None,
            ca_pem: None,
            prefetch_at: 0.8,
            hold: Duration::from_secs(10),
            min_batch: 100,
            max_batch: 1_000_000,
            max_age: Duration::from_secs(10),
            deadline: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
            attempts: None,
            backoff: (Duration::from_millis(50), Duration::from_secs(2)),
            generate_locally: false,
            thread_block: crate::local::MAX_BLOCK,
        }
    }
}

impl ClientBuilder {
    /// The servers: `http://HOST:PORT` or `https://HOST:PORT` (their gRPC, which shares the
    /// HTTP port). Required.
    pub fn endpoints<I, S>(mut self, endpoints: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.endpoints = endpoints.into_iter().map(Into::into).collect();
        self
    }

    /// The bearer token, when the servers have auth on. Default: none.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// A PEM bundle that `https://` endpoints are checked against, besides the system's
    /// roots (for a private CA). Default: the system's roots only.
    pub fn ca_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }

    /// The share of a batch used before the next one is fetched in the background, 0 to 1.
    /// Default 0.8.
    pub fn prefetch_at(mut self, share: f64) -> Self {
        self.prefetch_at = share;
        self
    }

    /// How long a batch should last at the rate IDs are being taken; the batch size adapts
    /// to it. Default 10 s.
    pub fn hold(mut self, hold: Duration) -> Self {
        self.hold = hold;
        self
    }

    /// The bounds of the batch size. Default 100 to 1,000,000. Batches up to 10,000 (the
    /// servers' default `limits.max_count`) are one `Next` call, larger ones a `Stream` of
    /// messages of 10,000 (bounded by the servers' `limits.max_stream`, default 100
    /// million).
    pub fn batch(mut self, min: u64, max: u64) -> Self {
        self.min_batch = min;
        self.max_batch = max;
        self
    }

    /// How long cached snowflake IDs may be handed out after they were issued; older ones
    /// are dropped (and counted as wasted), so an ID's time stays close to when it is used.
    /// Default 10 s.
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// How long one fetch may take before it is cut and tried on another endpoint.
    /// Default 2 s.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// How many calls one fetch makes across the endpoints before it gives up. Default:
    /// twice the number of endpoints, at least 3.
    pub fn attempts(mut self, attempts: usize) -> Self {
        self.attempts = Some(attempts);
        self
    }

    /// The first and the longest wait before an endpoint that failed is tried again
    /// (doubling in between, with jitter). Default 50 ms to 2 s.
    pub fn backoff(mut self, first: Duration, longest: Duration) -> Self {
        self.backoff = (first, longest);
        self
    }

    /// The largest block of IDs a thread takes from a name's cache at once (default 1,024;
    /// blocks start at 8 and double). A thread serves its block alone; larger blocks mean
    /// fewer compare-and-swaps on the word threads share when several take IDs flat out,
    /// and more IDs skipped when a thread ends (at most this many less one, and never more
    /// than the thread took).
    pub fn thread_block(mut self, most: u64) -> Self {
        self.thread_block = most;
        self
    }

    /// For names whose kind is `uuid4`, `uuid7`, `ulid`, `typeid`, `ksuid`, `xid` or `cuid2`:
    /// once the first fetch has shown the kind, make their IDs in this process instead of
    /// fetching them (their uniqueness is in their random bits, or for xid in this host's
    /// machine ID and this process's ID, so they need no server), in the servers' text form:
    /// a TypeID with the prefix of the IDs fetched, a cuid2 of the length the servers' batch
    /// had. `nanoid` names are still fetched: a batch does not carry their alphabet.
    /// Default false: every ID comes from the servers.
    pub fn generate_locally(mut self, yes: bool) -> Self {
        self.generate_locally = yes;
        self
    }

    /// The client. Each endpoint connects in the background, to follow its health service;
    /// nothing is fetched before the first call. Call it
    /// inside a tokio runtime, which runs the background fetches (outside one, use
    /// [`crate::blocking::Client`], which brings its own).
    pub fn build(self) -> Result<Client, Error> {
        let invalid = |m: String| Err(Error::new(ErrorKind::InvalidInput, m));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return invalid(
                "build the client inside a tokio runtime (it runs the background fetches), \
                 or use snowdrift_client::blocking::Client"
                    .into(),
            );
        };
        if !(0.0..=1.0).contains(&self.prefetch_at) {
            return invalid(format!(
                "prefetch_at {} is not a share: give 0 to 1 (0.8 fetches the next batch once \
                 80% of the current one is used)",
                self.prefetch_at
            ));
        }
        if self.min_batch == 0 || self.min_batch > self.max_batch {
            return invalid(format!(
                "batch bounds {} to {} are not valid: give 1 <= min <= max",
                self.min_batch, self.max_batch
            ));
        }
        if !(1..=crate::local::MOST_BLOCK).contains(&self.thread_block) {
            return invalid(format!(
                "thread_block {} is not valid: give 1 to {} (the largest block of IDs a \
                 thread takes from a name's cache at once; default {})",
                self.thread_block,
                crate::local::MOST_BLOCK,
                crate::local::MAX_BLOCK
            ));
        }
        if self.deadline.is_zero() || self.backoff.0.is_zero() || self.backoff.1 < self.backoff.0 {
            return invalid(
                "deadline and backoff must be above zero, the longest backoff at least the \
                 first"
                    .into(),
            );
        }
        let token = match self.token {
            Some(t) => Some(
                MetadataValue::try_from(format!("Bearer {}", t.trim())).map_err(|_| {
                    Error::new(
                        ErrorKind::InvalidInput,
                        "the token has characters a header cannot carry",
                    )
                })?,
            ),
            None => None,
        };
        let endpoints = Endpoints::new(
            &self.endpoints,
            self.ca_pem.as_deref(),
            self.connect_timeout,
            self.backoff,
        )?;
        let attempts = self
            .attempts
            .unwrap_or_else(|| (2 * endpoints.len()).max(3))
            .max(1);
        let policy = Policy {
            prefetch_at: self.prefetch_at,
            hold: self.hold,
            min_batch: self.min_batch,
            max_batch: self.max_batch,
            max_age: self.max_age,
            generate_locally: self.generate_locally,
            thread_block: self.thread_block,
        };
        Ok(Client::from_parts(
            endpoints,
            token,
            policy,
            self.deadline,
            attempts,
            runtime,
        ))
    }
}
