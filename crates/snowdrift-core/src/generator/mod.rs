//! The snowflake generator and the blocks of IDs it hands out.

mod block;
mod fence;
pub mod mastodon;
mod packing;
mod snowflake;
mod ticks;

pub use block::{IdBlock, IdBlockIter, Runs};
pub use fence::{ClosedReason, Fence};
pub use mastodon::MastodonTail;
pub use snowflake::{Builder, OnBackward, SnowflakeGenerator};

use std::time::Duration;

/// The outcome of a non-blocking request for IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Attempt<T> {
    /// The IDs.
    Ready(T),
    /// Nothing can be issued now; ask again after this long. Returned when the sequence of
    /// the current tick (and any allowed lead) is used up, or when the clock stepped back by
    /// less than the wait bound. Nothing was reserved.
    RetryAfter(Duration),
}
