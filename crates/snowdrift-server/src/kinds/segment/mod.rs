//! `segment`: Leaf segments of a tag in the store, served from this node's buffers. Tags
//! without a generator of their own are served the same way, under the tag's name.

mod plan;
mod run;
mod source;

pub use plan::SegmentPlan;
pub use source::{SegmentSource, readiness};
