//! Segment stores: tags and the `max_id` ranges claimed from them, on SQL databases,
//! Redis and ZooKeeper, and the buffer that serves them from memory.

mod buffer;
mod dated;
mod floor;
pub mod inspect;
#[cfg(feature = "redis")]
mod redis;
mod service;
mod sql;
mod store;
mod striped;
mod tag;
mod transaction;
#[cfg(feature = "zookeeper")]
mod zookeeper;

pub use buffer::{BufferConfig, SegmentBuffer, SegmentHandle};
#[cfg(feature = "sim")]
pub mod sim;
pub use dated::DatedBuffer;
pub use floor::{TagChange, TagFloor};
#[cfg(feature = "redis")]
pub use redis::RedisSegmentStore;
pub use service::{SegmentService, TagIds};
pub use sql::SqlSegmentStore;
pub use store::SegmentStore;
pub use striped::StripedStore;
pub use tag::{
    Claim, DEFAULT_STEP, DatedClaim, MAX_STEP, NewTag, Tag, TagUpdate, parse_utc_offset,
    show_utc_offset, validate_step, validate_tag, validate_tag_template,
};
#[cfg(feature = "zookeeper")]
pub use zookeeper::ZkSegmentStore;
