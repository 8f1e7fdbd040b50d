//! # snowdrift-core
//!
//! The pure algorithms of snowdrift: bit layouts, clocks, the lock-free snowflake
//! generator, segment buffers, the timestamp oracle ([`tso`]), string codecs, reversible
//! obfuscation and the 128/96-bit ID kinds. No I/O, no
//! async, no global state: the clock (and any randomness) is passed in, so every rule here
//! is tested with a manual clock.
//!
//! ```
//! use snowdrift_core::{clock::MonotonicClock, generator::SnowflakeGenerator, layout::Layout};
//! let generator = SnowflakeGenerator::builder(Layout::preset("twitter")?)
//!     .node_id(42)?
//!     .build(MonotonicClock::new())?;
//! let block = generator.next_block(1000)?;
//! assert!(block.len() >= 1);
//! # Ok::<(), snowdrift_core::Error>(())
//! ```
#![deny(missing_docs)]

pub mod clock;
pub mod codec;
pub mod counter;
pub mod error;
pub mod generator;
pub mod kinds;
pub mod layout;
pub mod obfuscate;
pub mod segment;
mod sync;
pub mod tso;

pub use error::{Error, Result};
