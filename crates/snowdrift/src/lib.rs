//! The library part of the `snowdrift` command: how its load tools print their results.
//! The peer clients in `bench-peers` print through it too, so the load scripts read
//! `snowdrift bench` and a peer's client alike.
#![deny(missing_docs)]

pub mod report;
