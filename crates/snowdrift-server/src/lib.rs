//! # snowdrift-server
//!
//! The snowdrift server: every ID kind over HTTP, with Leaf-compatible routes, admin, health
//! and metrics.
#![deny(missing_docs)]
