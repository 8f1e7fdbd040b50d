//! The library part of the `snowdrift` command: how its load tools print their results,
//! which `snowdrift-bench` holds ([`report`] is its module, re-exported so this path keeps
//! working).
#![deny(missing_docs)]

pub use snowdrift_bench::report;
