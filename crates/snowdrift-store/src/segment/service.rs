//! Every tag of one store served from memory: a buffer per tag, started on first use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use snowdrift_core::clock::{Clock, SystemClock};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_core::segment::{ChainStatus, IdRange};
use tokio::sync::OnceCell;

use super::tag::{Claim, NewTag, Tag, TagUpdate, validate_tag};
use super::{BufferConfig, DatedBuffer, SegmentBuffer, SegmentStore};
use crate::error::{Error, Result};

/// One tag's buffer, or the start of it that concurrent first callers share.
type Slot = Arc<OnceCell<TagBuffer>>;

/// A started tag: Leaf's numbers, or a template's rendered numbers.
#[derive(Debug, Clone)]
enum TagBuffer {
    Plain(Arc<SegmentBuffer>),
    Dated(Arc<DatedBuffer>),
}

impl TagBuffer {
    fn status(&self) -> ChainStatus {
        match self {
            TagBuffer::Plain(b) => b.status(),
            TagBuffer::Dated(b) => b.servable(),
        }
    }

    fn refill_error(&self) -> Option<String> {
        match self {
            TagBuffer::Plain(b) => b.refill_error(),
            TagBuffer::Dated(b) => b.refill_error(),
        }
    }
}

/// The IDs of one request for a tag, from [`SegmentService::issue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagIds {
    /// A tag without a template: Leaf's numbers, from one segment.
    Numbers(IdRange),
    /// A tag with a template: its numbers of the current period, rendered as text.
    Rendered(Vec<String>),
}

/// How long a name the store said it does not have is answered "not found" without asking
/// again: requests for a name nobody created cost the database nothing for this long,
/// while one created on another node is found within it.
const MISSING_FOR: Duration = Duration::from_secs(1);

/// Most names remembered as missing; past it the memory is cleared, so a flood of made-up
/// names costs a bounded map (and at worst one store read per name per [`MISSING_FOR`]).
const MOST_MISSING: usize = 4096;

/// Serves the segment tags of one store.
///
/// A tag is served from a [`SegmentBuffer`] started the first time someone asks for it, so
/// a tag created after the node started (by `snowdrift tags create`, the HTTP admin API,
/// another node or Leaf's own tooling) is served without a restart. Tags listed in
/// [`preload`](Self::preload) are started up front, so their first ID does not wait for the
/// database. Asking for a tag that does not exist is [`crate::Error::TagNotFound`]; the answer is
/// remembered for a second (so requests for made-up names do not each cost a database
/// read), then checked again, so creating the tag later is enough (at once when it is
/// created through this service).
///
/// ```no_run
/// # async fn demo() -> snowdrift_store::Result<()> {
/// use snowdrift_store::segment::{BufferConfig, SegmentService, SegmentStore};
/// let store = SegmentStore::connect("sqlite://snowdrift.db", "leaf_alloc").await?;
/// let segments = SegmentService::new(store, BufferConfig::default());
/// segments.preload(&["order"]).await?;
/// let ids = segments.next("order", 100).await?;
/// # Ok(()) }
/// ```
pub struct SegmentService {
    store: SegmentStore,
    config: BufferConfig,
    buffers: RwLock<HashMap<String, Slot>>,
    /// Names the store did not have, and when it said so.
    missing: Mutex<HashMap<String, Instant>>,
    /// The time tags with a template take their periods and dates from.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for SegmentService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentService")
            .field("store", &self.store)
            .field("config", &self.config)
            .field("buffers", &self.buffers)
            .field("missing", &self.missing)
            .finish_non_exhaustive()
    }
}

impl SegmentService {
    /// Serves the tags of `store`, each through a buffer made with `config`.
    pub fn new(store: impl Into<SegmentStore>, config: BufferConfig) -> Self {
        Self {
            store: store.into(),
            config,
            buffers: RwLock::default(),
            missing: Mutex::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same service with tags with a template reading `clock` for their periods and
    /// dates (the system clock unless set).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Starts the buffers of `tags` now: each has its first segment claimed when this
    /// returns. Fails on the first tag that does not exist or cannot be claimed.
    pub async fn preload(&self, tags: &[&str]) -> Result<()> {
        for tag in tags {
            self.started(tag).await?;
        }
        Ok(())
    }

    /// Up to `n` IDs (at least one) of `tag`, from one segment. A tag with a template is
    /// refused ([`Error::TagTemplated`]): its numbers are text, from [`issue`](Self::issue).
    pub async fn next(&self, tag: &str, n: u64) -> Result<IdRange> {
        self.buffer(tag).await?.next(n).await
    }

    /// Up to `n` IDs (at least one) of `tag`, from one segment: numbers, or for a tag with a
    /// template its numbers of the current period rendered as text.
    pub async fn issue(&self, tag: &str, n: u64) -> Result<TagIds> {
        match self.started(tag).await? {
            TagBuffer::Plain(b) => b.next(n).await.map(TagIds::Numbers),
            TagBuffer::Dated(b) => b.next_rendered(n).await.map(TagIds::Rendered),
        }
    }

    /// The buffer serving `tag`, started if this is the tag's first use. A tag with a
    /// template is served by a [`DatedBuffer`] ([`dated`](Self::dated)) and refused here.
    pub async fn buffer(&self, tag: &str) -> Result<Arc<SegmentBuffer>> {
        match self.started(tag).await? {
            TagBuffer::Plain(b) => Ok(b),
            TagBuffer::Dated(b) => Err(Error::TagTemplated {
                tag: tag.to_string(),
                template: Box::new(b.template().clone()),
            }),
        }
    }

    /// The buffer serving `tag`, a tag with a template, started if this is its first use.
    pub async fn dated(&self, tag: &str) -> Result<Arc<DatedBuffer>> {
        match self.started(tag).await? {
            TagBuffer::Dated(b) => Ok(b),
            TagBuffer::Plain(_) => Err(Error::InvalidInput(format!(
                "tag {tag:?} has no template: its IDs are numbers"
            ))),
        }
    }

    /// Whether `tag` has a template, once it is being served on this node (`None` before
    /// its first use): its IDs are then text.
    pub fn is_dated(&self, tag: &str) -> Option<bool> {
        self.template_of(tag).map(|t| t.is_some())
    }

    /// The template of `tag` (`Some(None)` for a tag without one), once it is being served
    /// on this node.
    pub fn template_of(&self, tag: &str) -> Option<Option<CounterTemplate>> {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        Some(match buffers.get(tag)?.get()? {
            TagBuffer::Plain(_) => None,
            TagBuffer::Dated(b) => Some(b.template().clone()),
        })
    }

    async fn started(&self, tag: &str) -> Result<TagBuffer> {
        let slot = self.slot(tag)?;
        let started = slot
            .get_or_try_init(|| async {
                // Only a tag not started yet gets here: the hot path never takes this lock.
                if self.recently_missing(tag) {
                    return Err(Error::TagNotFound(tag.to_string()));
                }
                let started = match SegmentBuffer::start(self.store.clone(), tag, self.config).await
                {
                    Ok(plain) => Ok(TagBuffer::Plain(Arc::new(plain))),
                    // The claim was rolled back: the tag counts per period.
                    Err(Error::TagTemplated { template, .. }) => DatedBuffer::start(
                        self.store.clone(),
                        tag,
                        *template,
                        self.config,
                        self.clock.clone(),
                    )
                    .await
                    .map(|dated| TagBuffer::Dated(Arc::new(dated))),
                    Err(e) => Err(e),
                };
                if let Err(Error::TagNotFound(_)) = &started {
                    self.remember_missing(tag);
                }
                started
            })
            .await;
        match started {
            Ok(buffer) => Ok(buffer.clone()),
            Err(e) => {
                // Forget the failed start, so the next request tries again (the tag may
                // be created, or the store come back, meanwhile).
                let mut buffers = self.buffers.write().unwrap_or_else(|e| e.into_inner());
                if buffers.get(tag).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                    buffers.remove(tag);
                }
                Err(e)
            }
        }
    }

    fn missing(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        // Names and instants: whole after every step.
        self.missing.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn recently_missing(&self, tag: &str) -> bool {
        self.missing()
            .get(tag)
            .is_some_and(|at| at.elapsed() < MISSING_FOR)
    }

    fn remember_missing(&self, tag: &str) {
        let mut missing = self.missing();
        if missing.len() >= MOST_MISSING {
            missing.clear();
        }
        missing.insert(tag.to_string(), Instant::now());
    }

    fn slot(&self, tag: &str) -> Result<Slot> {
        if let Some(slot) = self
            .buffers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tag)
        {
            return Ok(slot.clone());
        }
        // Checked here so a flood of bad names cannot grow the map.
        validate_tag(tag)?;
        let mut buffers = self.buffers.write().unwrap_or_else(|e| e.into_inner());
        Ok(buffers.entry(tag.to_string()).or_default().clone())
    }

    /// What `tag`'s buffer holds, or `None` when the tag is not being served on this node:
    /// one tag's state without copying every tag's name, as [`status`](Self::status) does.
    pub fn status_of(&self, tag: &str) -> Option<ChainStatus> {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        buffers.get(tag)?.get().map(TagBuffer::status)
    }

    /// Why `tag`'s latest refill failed, while none has succeeded since; `None` when it is
    /// not being served on this node or its refills succeed.
    pub fn refill_error(&self, tag: &str) -> Option<String> {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        buffers.get(tag)?.get()?.refill_error()
    }

    /// How many tags served now have a failing refill (the latest failed, none succeeded
    /// since): the store unreachable or refusing, seen before their buffers run dry.
    pub fn refills_failing(&self) -> usize {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        buffers
            .values()
            .filter(|slot| slot.get().is_some_and(|b| b.refill_error().is_some()))
            .count()
    }

    /// The tags being served now and what each buffer holds, by name.
    pub fn status(&self) -> Vec<(String, ChainStatus)> {
        let buffers = self.buffers.read().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<_> = buffers
            .iter()
            .filter_map(|(tag, slot)| slot.get().map(|b| (tag.clone(), b.status())))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Creates a tag in the store; it is served from its first request on.
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        let created = self.store.create_tag(new).await?;
        self.missing().remove(&created.tag);
        Ok(created)
    }

    /// All tags in the store, by name.
    pub async fn list_tags(&self) -> Result<Vec<Tag>> {
        self.store.list_tags().await
    }

    /// One tag as stored.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        self.store.get_tag(tag).await
    }

    /// Changes a tag's step and/or description. A running buffer uses the new step as its
    /// floor from its next claim on.
    pub async fn update_tag(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        self.store.update_tag(tag, update).await
    }

    /// The store behind this service.
    pub fn store(&self) -> &SegmentStore {
        &self.store
    }

    /// How this service's buffers prefetch and wait.
    pub fn config(&self) -> &BufferConfig {
        &self.config
    }

    /// Claims the next segment of `tag` for a client that issues its IDs itself (Tinyid's
    /// client): durably, in the store's one atomic step, exactly as a buffer claims one, so
    /// no buffer and no other client (on this node or any other on the store) ever gets
    /// those IDs. The segment is the tag's stored step, as Tinyid's server hands out, and
    /// never enters this node's buffers. Bounded by the buffers' `claim_timeout`: a claim
    /// cut off may still commit, and its range is then skipped, never handed out twice.
    ///
    /// A tag with a template is refused ([`Error::TagTemplated`], the claim rolled back):
    /// its numbers count per period and are served rendered, never as a raw range.
    pub async fn claim_for_client(&self, tag: &str) -> Result<Claim> {
        validate_tag(tag)?;
        let bound = self.config.claim_timeout;
        tokio::time::timeout(bound, self.store.claim(tag, None))
            .await
            .unwrap_or_else(|_| {
                Err(Error::Unavailable(
                    format!("the store did not answer within {bound:?}").into(),
                ))
            })
    }
}
