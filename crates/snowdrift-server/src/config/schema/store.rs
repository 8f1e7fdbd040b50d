//! `[store]`: the segment store.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration_text;

/// `[store]`: the segment store, which holds tags.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreConfig {
    /// `sqlite://FILE`, `postgres://...`, `mysql://...`, `redis://...` or `zookeeper://...`.
    pub url: String,
    /// Several stores striped Tinyid-style (store k serves IDs ≡ k mod n); replaces `url`.
    pub urls: Vec<String>,
    /// The Leaf table (or key prefix / znode root).
    pub table: String,
    /// Tags whose first segment is claimed at start, so their first ID does not wait.
    pub preload: Vec<String>,
    /// How long a request waits for a refill when every buffered ID is used.
    #[serde(with = "duration_text")]
    pub wait: Duration,
    /// The largest step the dynamic step may grow a tag's segments to (Leaf's 1,000,000). A
    /// crash loses what was claimed and not issued: at most the current segment and those
    /// ahead of it, so a lower cap bounds that waste, at the cost of more claims per second
    /// at high rates. A tag's own stored step is never cut below.
    pub max_step: u64,
    /// Share of a segment used before the next one is claimed, 0 to 1 (Leaf's 0.1: claim as
    /// soon as a tenth is used; 0.8 claims later, with less held ahead and so less lost on a
    /// crash, and less time for the claim before the segment runs out).
    pub prefetch_at: f64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://snowdrift.db".into(),
            urls: Vec::new(),
            table: "leaf_alloc".into(),
            preload: Vec::new(),
            wait: Duration::from_secs(1),
            max_step: snowdrift_core::segment::StepPolicy::default().max_step,
            prefetch_at: 0.1,
        }
    }
}
