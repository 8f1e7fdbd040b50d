//! Segment stores: tags and the `max_id` ranges claimed from them.

mod buffer;
mod sql;
mod tag;

pub use buffer::{BufferConfig, SegmentBuffer};
pub use sql::SqlSegmentStore;
pub use tag::{Claim, NewTag, Tag, TagUpdate, validate_step, validate_tag};
