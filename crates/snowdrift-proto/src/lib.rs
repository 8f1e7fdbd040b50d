//! # snowdrift-proto
//!
//! snowdrift's wire contract, shared by the server, the command line and the client so that
//! none of them owns what the others must agree on:
//!
//! - [`grpc`] (feature `grpc`, on by default): the messages, service and client generated
//!   from `proto/snowdrift.proto`;
//! - [`Kind`]: what a generator produces, with the names config files and JSON use;
//! - [`http`]: the HTTP API's routes and the JSON shapes of its bodies;
//! - [`tinyid`]: the shapes of Didi Tinyid's answers, which its routes give byte for byte;
//! - [`wire`]: readers of the request framing the server parses itself, the HTTP/1.1 head of
//!   a single-ID request and RESP frames. They use only std and httparse, so the fuzz targets
//!   build them without the server.
#![deny(missing_docs)]

#[cfg(feature = "grpc")]
pub mod grpc;
pub mod http;
mod kind;
pub mod tinyid;
pub mod wire;

pub use kind::{Kind, UnknownKind};
