//! # snowdrift-store
//!
//! The outside world of snowdrift: where segments of IDs are claimed and tags are kept. Each
//! backend sits behind a cargo feature (`sqlite`, `postgres`, `mysql`; all on by default).
//!
//! [`segment::SqlSegmentStore`] keeps Meituan Leaf's own table, `leaf_alloc`, so an existing
//! Leaf database works unchanged; claiming a segment is one transaction that moves
//! `max_id` forward by the step, durable before any ID of it is served.
#![deny(missing_docs)]

#[cfg(feature = "redis")]
pub mod counter;
pub mod error;
pub mod segment;
pub mod ticket;

pub use error::{Error, Result};
