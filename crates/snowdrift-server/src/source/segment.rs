//! Leaf segments: IDs of one tag, served from the node's buffers.

use std::sync::Arc;

use snowdrift_store::segment::SegmentService;

use super::{IdRun, IdSource, Ids};
use crate::config::Kind;
use crate::error::Error;

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
        let mut left = count;
        while left > 0 {
            // One call returns IDs of one segment; a request spanning segments takes several.
            let range = self.service.next(&self.tag, left).await?;
            let n = range.len();
            if n == 0 {
                return Err(Error::unavailable(format!(
                    "tag {:?} returned no IDs",
                    self.tag
                )));
            }
            // Segment IDs are positive i64s (Leaf's max_id), so they fit a u64.
            runs.push(IdRun {
                first: range.start as u64,
                count: n,
                stride: range.stride as u64,
            });
            left = left.saturating_sub(n);
        }
        Ok(Ids::Runs(runs))
    }
}
