//! # snowdrift-testkit
//!
//! Test tools for snowdrift (dev only): the URLs of the services the tests use, a
//! fault-injecting TCP proxy, and checkers for collected IDs.
#![deny(missing_docs)]
