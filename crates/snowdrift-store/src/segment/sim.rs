//! What the deterministic simulator (`crates/snowdrift-sim`) needs of the segment code
//! (cargo feature `sim`, off by default: no product build carries it).
//!
//! - [`ClaimTransaction`]: the statements of a SQL segment claim, which sqlx runs on the
//!   real databases and the simulator on its simulated one (a row per tag, row locks,
//!   transactions); [`claim`] is the SQL store's claim over it, the code
//!   [`SqlSegmentStore::claim`](super::SqlSegmentStore::claim) runs;
//! - [`SegmentClaims`]: where a [`SegmentBuffer`](super::SegmentBuffer) claims from, so
//!   [`SegmentBuffer::start_on`](super::SegmentBuffer::start_on) runs the real buffer on
//!   the simulated database.

pub use super::buffer::SegmentClaims;
pub use super::transaction::{ClaimTransaction, claim};
