//! Every tag of one store served from memory: a buffer per tag, started on first use.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use snowdrift_core::segment::{ChainStatus, IdRange};
use tokio::sync::OnceCell;

use super::tag::{NewTag, Tag, TagUpdate, validate_tag};
use super::{BufferConfig, SegmentBuffer, SegmentStore};
use crate::error::Result;

/// One tag's buffer, or the start of it that concurrent first callers share.
type Slot = Arc<OnceCell<Arc<SegmentBuffer>>>;

/// Serves the segment tags of one store.
///
/// A tag is served from a [`SegmentBuffer`] started the first time someone asks for it, so
/// a tag created after the node started (by `snowdrift tags create`, the HTTP admin API,
/// another node or Leaf's own tooling) is served without a restart. Tags listed in
/// [`preload`](Self::preload) are started up front, so their first ID does not wait for the
/// database. Asking for a tag that does not exist is [`crate::Error::TagNotFound`] and is checked
/// again on the next request, so creating it later is enough.
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
#[derive(Debug)]
pub struct SegmentService {
    store: SegmentStore,
    config: BufferConfig,
    buffers: RwLock<HashMap<String, Slot>>,
}

impl SegmentService {
    /// Serves the tags of `store`, each through a buffer made with `config`.
    pub fn new(store: impl Into<SegmentStore>, config: BufferConfig) -> Self {
        Self {
            store: store.into(),
            config,
            buffers: RwLock::default(),
        }
    }

    /// Starts the buffers of `tags` now: each has its first segment claimed when this
    /// returns. Fails on the first tag that does not exist or cannot be claimed.
    pub async fn preload(&self, tags: &[&str]) -> Result<()> {
        for tag in tags {
            self.buffer(tag).await?;
        }
        Ok(())
    }

    /// Up to `n` IDs (at least one) of `tag`, from one segment.
    pub async fn next(&self, tag: &str, n: u64) -> Result<IdRange> {
        self.buffer(tag).await?.next(n).await
    }

    /// The buffer serving `tag`, started if this is the tag's first use.
    pub async fn buffer(&self, tag: &str) -> Result<Arc<SegmentBuffer>> {
        let slot = self.slot(tag)?;
        let started = slot
            .get_or_try_init(|| async {
                SegmentBuffer::start(self.store.clone(), tag, self.config)
                    .await
                    .map(Arc::new)
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
        buffers.get(tag)?.get().map(|b| b.status())
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
        self.store.create_tag(new).await
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
}
