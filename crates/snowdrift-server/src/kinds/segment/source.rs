//! Leaf segments: IDs of one tag, served from the node's buffers.

use std::sync::Arc;

use serde_json::Value;
use snowdrift_store::segment::{SegmentService, TagIds, show_utc_offset};

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{Consecutive, IdRun, IdSource, Ids};

/// The IDs of one tag. Tags with no generator of their own are served the same way, under
/// the tag's name.
#[derive(Debug, Clone)]
pub struct SegmentSource {
    service: Arc<SegmentService>,
    tag: String,
}

impl SegmentSource {
    /// Serves `tag` from `service`.
    pub fn new(service: Arc<SegmentService>, tag: String) -> Self {
        Self { service, tag }
    }

    /// The tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The service that holds the tag's buffer.
    pub fn service(&self) -> &Arc<SegmentService> {
        &self.service
    }
}

impl IdSource for SegmentSource {
    fn kind(&self) -> Kind {
        Kind::Segment
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        let mut runs = Vec::new();
        let mut text = Vec::new();
        let mut left = count;
        while left > 0 {
            // One call returns IDs of one segment; a request spanning segments takes several.
            let n = match self.service.issue(&self.tag, left).await? {
                // Segment IDs are positive i64s (Leaf's max_id), so they fit a u64.
                TagIds::Numbers(range) => {
                    let n = range.len();
                    if n > 0 {
                        runs.push(IdRun {
                            first: range.start,
                            count: n,
                            stride: range.stride,
                        });
                    }
                    n
                }
                // A tag with a template: its numbers rendered, as a templated counter's.
                TagIds::Rendered(numbers) => {
                    let n = numbers.len() as u64;
                    text.extend(numbers);
                    n
                }
            };
            if n == 0 {
                return Err(Error::unavailable(format!(
                    "tag {:?} returned no IDs",
                    self.tag
                )));
            }
            left = left.saturating_sub(n);
        }
        // A tag is one or the other for as long as the node serves it.
        Ok(if text.is_empty() {
            Ids::Runs(runs)
        } else {
            Ids::Text(text)
        })
    }

    /// False for a tag with a template once this node serves it; before its first request
    /// the node cannot know, and the IDs a format was asked for then are refused as text.
    fn numeric(&self) -> bool {
        self.service.is_dated(&self.tag) != Some(true)
    }

    fn describe(&self, out: &mut Value) {
        out["tag"] = self.tag.as_str().into();
        if let Some(Some(template)) = self.service.template_of(&self.tag) {
            out["template"] = template.as_str().into();
            out["utc_offset"] = show_utc_offset(template.utc_offset_seconds()).into();
        }
    }

    async fn readiness(&self) -> Result<(), String> {
        readiness(&self.service, &self.tag).await
    }

    async fn consecutive(&self, name: &str, n: u64) -> Result<Consecutive, Error> {
        super::run::consecutive(self, name, n).await
    }
}

/// Whether tag `tag` can issue now: IDs are buffered, or else its refills are not failing
/// and the store answers for it.
pub async fn readiness(segments: &SegmentService, tag: &str) -> Result<(), String> {
    let buffered = segments
        .status_of(tag)
        .is_some_and(|st| st.current_left + st.ids_ahead > 0);
    if buffered {
        return Ok(());
    }
    if let Some(error) = segments.refill_error(tag) {
        return Err(format!("the buffer is empty and refills fail: {error}"));
    }
    segments
        .get_tag(tag)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
