//! The client for code that is not async: the same caches and failover, behind calls that
//! block. It runs its own small runtime, whose one worker thread does the background
//! fetches while callers block.

use std::sync::Arc;

use crate::cache::Stats;
use crate::error::{Error, ErrorKind};

/// A blocking snowdrift client. Cheap to clone; clones share the caches and the runtime.
/// Do not call it from inside an async runtime (use [`crate::Client`] there).
///
/// ```no_run
/// let client = snowdrift_client::blocking::Client::builder()
///     .endpoints(["http://127.0.0.1:8080"])
///     .build()?;
/// let orders = client.ids("order"); // the name resolved once: the fastest way
/// let id: u64 = orders.next()?;
/// let id: u64 = client.next("order")?;
/// # Ok::<(), snowdrift_client::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    inner: crate::Client,
    runtime: Arc<tokio::runtime::Runtime>,
}

/// Settings for a blocking [`Client`]: those of [`crate::ClientBuilder`].
#[derive(Debug, Clone, Default)]
pub struct ClientBuilder(crate::ClientBuilder);

impl Client {
    /// Settings, then [`ClientBuilder::build`].
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A handle on the IDs of `name` (a 64-bit kind), the name looked up once (see
    /// [`crate::Client::ids`]).
    pub fn ids(&self, name: &str) -> Ids {
        Ids {
            inner: self.inner.ids(name),
            runtime: self.runtime.clone(),
        }
    }

    /// The next ID of `name` (a 64-bit kind; see [`crate::Client::next`]).
    #[inline]
    pub fn next(&self, name: &str) -> Result<u64, Error> {
        // A warm cache answers without entering the runtime.
        match self.inner.try_next(name) {
            Some(id) => Ok(id),
            None => self.next_cold(name),
        }
    }

    // Out of line, so that `next` is small enough to inline into the caller's loop.
    #[cold]
    #[inline(never)]
    fn next_cold(&self, name: &str) -> Result<u64, Error> {
        self.runtime.block_on(self.inner.next(name))
    }

    /// `n` new IDs of `name` (a 64-bit kind).
    pub fn next_n(&self, name: &str, n: usize) -> Result<Vec<u64>, Error> {
        self.runtime.block_on(self.inner.next_n(name, n))
    }

    /// The next ID of `name` for a text kind.
    pub fn next_text(&self, name: &str) -> Result<String, Error> {
        self.runtime.block_on(self.inner.next_text(name))
    }

    /// The UUID a `uuid3` or `uuid5` generator makes of `input` (see
    /// [`crate::Client::next_named`]).
    pub fn next_named(&self, name: &str, input: &str) -> Result<String, Error> {
        self.runtime.block_on(self.inner.next_named(name, input))
    }

    /// How each endpoint stands (see [`crate::Client::endpoints`]).
    pub fn endpoints(&self) -> Vec<crate::EndpointStatus> {
        self.inner.endpoints()
    }

    /// The counts of `name`'s cache, if it has one.
    pub fn stats(&self, name: &str) -> Option<Stats> {
        self.inner.stats(name)
    }
}

/// The IDs of one name on a blocking [`Client`], from [`Client::ids`]: the blocking form of
/// [`crate::Ids`] (the name looked up once; a warm [`next`](Ids::next) is an ID from the
/// calling thread's block). Cheap to clone, shared by threads; keeps the client's runtime.
///
/// ```no_run
/// # fn demo(client: snowdrift_client::blocking::Client) -> Result<(), snowdrift_client::Error> {
/// let orders = client.ids("order");
/// let id: u64 = orders.next()?;
/// let ids: Vec<u64> = orders.next_n(500)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Ids {
    inner: crate::Ids,
    runtime: Arc<tokio::runtime::Runtime>,
}

impl Ids {
    /// The next ID. It blocks on the network only when the cache is empty.
    #[inline]
    pub fn next(&self) -> Result<u64, Error> {
        // A warm cache answers without entering the runtime.
        match self.inner.try_next() {
            Some(id) => Ok(id),
            None => self.next_cold(),
        }
    }

    #[cold]
    #[inline(never)]
    fn next_cold(&self) -> Result<u64, Error> {
        self.runtime.block_on(self.inner.next())
    }

    /// `n` new IDs (see [`crate::Ids::next_n`]).
    pub fn next_n(&self, n: usize) -> Result<Vec<u64>, Error> {
        self.runtime.block_on(self.inner.next_n(n))
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The counts of the name's cache.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

impl ClientBuilder {
    /// Sets what `f` sets on the async builder (every option is the same).
    pub fn with(self, f: impl FnOnce(crate::ClientBuilder) -> crate::ClientBuilder) -> Self {
        Self(f(self.0))
    }

    /// The servers (see [`crate::ClientBuilder::endpoints`]).
    pub fn endpoints<I, S>(self, endpoints: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self(self.0.endpoints(endpoints))
    }

    /// The bearer token (see [`crate::ClientBuilder::token`]).
    pub fn token(self, token: impl Into<String>) -> Self {
        Self(self.0.token(token))
    }

    /// The client, with its runtime.
    pub fn build(self) -> Result<Client, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("snowdrift-client")
            .enable_all()
            .build()
            .map_err(|e| {
                Error::new(
                    ErrorKind::InvalidInput,
                    format!("cannot start the client's runtime: {e}"),
                )
            })?;
        // Channels are made inside the runtime they will run on.
        let inner = {
            let _entered = runtime.enter();
            self.0.build()?
        };
        Ok(Client {
            inner,
            runtime: Arc::new(runtime),
        })
    }
}
