//! A handle on one name's IDs: the name resolved once, so a warm `next()` is a take from
//! the calling thread's block and nothing else.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::cache::{NameCache, Stats};
use crate::client::Client;
use crate::error::{Error, ErrorKind};

/// The IDs of one name (a 64-bit kind) on one [`Client`], from [`Client::ids`]: the name is
/// looked up once, when the handle is made, so a warm [`next`](Ids::next) is an ID from the
/// calling thread's block of up to 1,024 and no lookup, no hashing, no shared write (about
/// 2 ns, over 4x a shared `AtomicU64::fetch_add`; see BENCHMARKS.md, "The clients").
///
/// Cheap to clone (one reference count); `Send + Sync`, so one handle can be shared by
/// threads or tasks. Each thread takes its own blocks from the name's cache (one
/// compare-and-swap per block), so threads do not contend; the IDs of different threads
/// interleave, and a thread that ends skips what its block still held (at most 1,023, and
/// at most 8 more than the thread took, as blocks start at 8 and double; never
/// served by anyone). A thread's IDs of one name increase within a fetched batch, whether
/// it takes them through handles, [`Client::next`] or `next_n`. Snowflake IDs are checked
/// per ID against `max_age` on a coarse clock that errs on the strict side (see the crate
/// docs).
///
/// Handles and [`Client::next`] share the name's cache and the thread's block. A handle
/// keeps its client's caches alive.
///
/// ```no_run
/// # async fn demo(client: snowdrift_client::Client) -> Result<(), snowdrift_client::Error> {
/// let orders = client.ids("order");
/// let id: u64 = orders.next().await?;
/// let ids: Vec<u64> = orders.next_n(500).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Ids {
    inner: Arc<Inner>,
}

struct Inner {
    // The slot's index and tag, copied so the warm path reads this one line.
    index: usize,
    tag: u64,
    cache: Arc<NameCache>,
    client: Client,
    name: Box<str>,
}

impl Ids {
    pub(crate) fn new(client: Client, name: &str, cache: Arc<NameCache>) -> Self {
        Ids {
            inner: Arc::new(Inner {
                index: cache.slot.index,
                tag: cache.slot.tag,
                cache,
                client,
                name: name.into(),
            }),
        }
    }

    /// The next ID. It waits on the network only when the cache is empty. Like any
    /// future, it takes nothing until it is polled.
    #[inline]
    pub fn next(&self) -> impl Future<Output = Result<u64, Error>> + Send + '_ {
        NextId {
            ids: self,
            cold: None,
        }
    }

    async fn next_cold(&self) -> Result<u64, Error> {
        let mut ids = self.next_n(1).await?;
        ids.pop().ok_or_else(|| {
            Error::new(
                ErrorKind::Unavailable,
                format!("{:?}: no ID was fetched", self.inner.name),
            )
        })
    }

    /// The next ID if the cache has one, without waiting.
    #[inline]
    pub(crate) fn try_next(&self) -> Option<u64> {
        let i = &*self.inner;
        crate::local::next(i.index, i.tag).or_else(|| self.refill())
    }

    #[cold]
    #[inline(never)]
    fn refill(&self) -> Option<u64> {
        let i = &*self.inner;
        let (id, prefetch) = crate::local::refill(&i.cache)?;
        if prefetch {
            i.client.prefetch(&i.name, &i.cache);
        }
        Some(id)
    }

    /// `n` new IDs: first what the thread's block holds, then from the cache and as many
    /// fetches as they take (see [`Client::next_n`]).
    pub async fn next_n(&self, n: usize) -> Result<Vec<u64>, Error> {
        let i = &*self.inner;
        i.client.check_take(&i.cache, n)?;
        i.client.next_n_from(&i.name, i.cache.clone(), n).await
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The counts of the name's cache (see [`Client::stats`]).
    pub fn stats(&self) -> Stats {
        self.inner.cache.stats()
    }
}

/// A fetch being waited for.
type Cold<'a> = Pin<Box<dyn Future<Output = Result<u64, Error>> + Send + 'a>>;

/// The future of [`Ids::next`]: a plain type rather than an `async fn`'s, so that its
/// `poll`, and with it the warm take, is inlined into the caller's own future (an `async
/// fn`'s state machine is a function of its own, called per ID).
struct NextId<'a> {
    ids: &'a Ids,
    /// The wait for a fetch, once the cache was found empty.
    cold: Option<Cold<'a>>,
}

impl Future for NextId<'_> {
    type Output = Result<u64, Error>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let cold = match &mut this.cold {
            Some(cold) => cold,
            None => {
                if let Some(id) = this.ids.try_next() {
                    return Poll::Ready(Ok(id));
                }
                this.cold.insert(Box::pin(this.ids.next_cold()))
            }
        };
        cold.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for Ids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ids")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}
