//! # snowdrift-bench
//!
//! The load tools behind `snowdrift bench`, and how they print their results:
//!
//! - [`generator`]: the snowflake generator in this process, threads sharing one;
//! - [`load`]: HTTP GETs or RESP `INCR`s on a running server (or Redis) from one polling
//!   thread, closed loop or at a fixed rate, over TCP or TLS;
//! - [`grpc`]: the gRPC `Stream` method, one stream after another per connection;
//! - [`client`]: threads taking IDs through one `snowdrift-client`, as an application would;
//! - [`report`]: the lines they print, which the load scripts parse (the peer clients in
//!   `bench-peers` print through it too).
//!
//! Each run prints to standard output and returns an [`Error`] when it cannot start or
//! finish.
#![deny(missing_docs)]

pub mod client;
mod error;
pub mod generator;
pub mod grpc;
pub mod load;
pub mod report;
mod tls;
mod wire;

pub use error::Error;
