//! # snowdrift-testkit
//!
//! Test tools for snowdrift (dev only): the URLs of the services the tests use
//! ([`urls`]), a fault-injecting TCP proxy ([`FaultProxy`]: cut, black-hole, delay), and a
//! checker for collected IDs ([`IdChecker`]: duplicates across sources, order per source).
#![deny(missing_docs)]

mod checker;
mod proxy;
pub mod urls;

pub use checker::{Duplicate, IdChecker, IdValue, Negative, OrderViolation, Report};
pub use proxy::{FaultProxy, Mode};
