//! A timestamp oracle (TiKV PD's TSO): strictly increasing IDs across a cluster, from one
//! leader at a time.
//!
//! An ID is `physical << logical_bits | logical`: the physical part is milliseconds since
//! the oracle's epoch (the Unix epoch by default, as PD), the logical part counts the IDs
//! handed out within that millisecond (18 bits by default, as PD). With the defaults an ID
//! has PD's form and fits a positive `i64` until the year 3085.
//!
//! [`TimestampOracle`] is the pure part: state and rules, no I/O, no threads, no async.
//! Above it a driver (the leader task, `snowdrift_store::tso::OracleNode`) does what the
//! oracle asks for:
//!
//! - it wins an election (etcd) and reads the window end the previous leader saved, then
//!   calls [`start_term`](TimestampOracle::start_term): the oracle starts strictly above
//!   that window, so no ID of this term can repeat or precede one of an earlier term, even
//!   when the previous leader's clock was ahead;
//! - it merges the requests that arrive together and calls
//!   [`allocate`](TimestampOracle::allocate) once for their total (PD's batching), then
//!   hands each request its [`slice`](crate::segment::IdRange::slice) of the range;
//! - when the oracle answers [`Allocation::SaveWindow`] it durably saves the window end
//!   (conditioned on still leading), reports it with
//!   [`window_saved`](TimestampOracle::window_saved) and asks again; to keep that off the
//!   hot path it saves ahead of time whenever
//!   [`window_wanted`](TimestampOracle::window_wanted) says so;
//! - when the oracle answers [`Allocation::Wait`] (the logical part of the current
//!   millisecond is used up) it waits on the clock, at most a millisecond, and asks again;
//! - when it loses leadership it calls [`end_term`](TimestampOracle::end_term) before its
//!   lease can expire.
//!
//! The physical part follows the clock and never goes back. When the clock is behind it
//! (stepped back, or a new leader starting above a window its predecessor saved ahead of
//! its own clock), the physical part stays where it is and the logical part counts on;
//! when that runs out, the physical part moves on one millisecond without waiting for the
//! clock, as PD's does, never past the saved window.
//!
//! The oracle is not shared between threads: one task owns it and serves a merged group
//! per call, so a lock or a compare-and-swap would only add cost (PD's oracle holds a
//! mutex for the same step).
//!
//! ```
//! use snowdrift_core::clock::ManualClock;
//! use snowdrift_core::tso::{Allocation, TimestampOracle, TsoConfig};
//! let clock = ManualClock::new(1_700_000_000_000);
//! let mut oracle = TimestampOracle::new(TsoConfig::default(), clock.clone())?;
//! oracle.start_term(None); // no window saved before: a new cluster
//! let save = match oracle.allocate(10)? {
//!     Allocation::SaveWindow(save) => save, // the first ID needs a saved window
//!     other => panic!("{other:?}"),
//! };
//! // ... the driver writes save.up_to_ms to etcd under its leadership, then:
//! oracle.window_saved(save)?;
//! let Allocation::Issued(ids) = oracle.allocate(10)? else { panic!() };
//! assert_eq!(ids.len(), 10);
//! assert_eq!(oracle.config().decode(ids.start)?.physical_ms, 1_700_000_000_000);
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

mod config;
mod oracle;
#[cfg(test)]
mod tests;

pub use config::{TsoConfig, TsoParts};
pub use oracle::{Allocation, TimestampOracle, TsoStatus, WindowSave};
