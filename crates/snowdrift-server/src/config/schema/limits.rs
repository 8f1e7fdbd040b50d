//! `[limits]`: what one request, connection or call may take.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration_text;

/// `[limits]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Most IDs one request may ask for.
    pub max_count: u64,
    /// Most IDs one gRPC `Stream` call may ask for in total; its messages carry at most
    /// `max_count` each, so a large total costs no more memory than one batch.
    pub max_stream: u64,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Largest gRPC request message, in bytes; a call whose message says it is larger is
    /// answered RESOURCE_EXHAUSTED before the message is read. The largest legitimate
    /// request (`Next`, `Decode`, `Stream` with a name, format and input) is a few hundred
    /// bytes; the default is what HTTP allows a request head.
    pub grpc_max_message: usize,
    /// Largest RESP request (a whole command frame, every argument with its length lines),
    /// in bytes; a frame whose `*N` / `$len` lines say it is larger is refused at those
    /// lines, before its bytes are read, and its connection closed.
    pub resp_max_frame: usize,
    /// Largest HTTP request head (request line and headers), in bytes; a larger one is
    /// answered 431 before it is read whole. At least 8192 (hyper's smallest buffer).
    pub max_head: usize,
    /// Longest wait for the rest of a request once its first byte came (an HTTP/1.1
    /// request head, a RESP request); a client that takes longer is disconnected. On a
    /// connection hyper serves it also bounds the wait for the next request.
    #[serde(with = "duration_text")]
    pub header_timeout: Duration,
    /// Longest wait for a request's body once its head came: an HTTP request (HTTP/1.1 or
    /// HTTP/2, gRPC calls included) whose body has not ended by then is refused (408,
    /// gRPC DEADLINE_EXCEEDED) and, over HTTP/1.1, its connection closed. A RESP request
    /// must be whole within the shorter of this and `header_timeout` of its first byte.
    #[serde(with = "duration_text")]
    pub body_timeout: Duration,
    /// A connection with nothing read or written for this long is closed (HTTP/1.1 between
    /// requests, RESP, and HTTP/2 whose peer stops answering pings, which are sent every
    /// half of it).
    #[serde(with = "duration_text")]
    pub idle_timeout: Duration,
    /// Most client connections open at once (HTTP, gRPC and RESP together); one over it is
    /// closed as soon as it is accepted. 0: the open-file limit less 256 (kept for stores,
    /// registries and files).
    pub max_connections: usize,
    /// Most `IdService` gRPC calls in flight on the whole server (a `Stream` counts until
    /// it ends), tso followers' `TsoPeer.Forward` streams included (one per follower and
    /// tso generator, for as long as it lasts); one over it is answered UNAVAILABLE at once.
    pub max_streams: usize,
    /// Largest answer of text IDs, in bytes: a generator whose IDs can be long (a Nano ID
    /// of 255 characters of a multi-byte alphabet is up to 1 KiB) answers at most this many
    /// bytes' worth per request, whatever `max_count` allows, and says how many to ask for;
    /// a gRPC `Stream` sends any number in messages of about 16 KiB.
    pub max_answer_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_count: 10_000,
            max_stream: 100_000_000,
            max_body: 64 * 1024,
            grpc_max_message: 16 * 1024,
            resp_max_frame: 4 * 1024,
            max_head: 16 * 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 0,
            max_streams: 1024,
            max_answer_bytes: 16 * 1024 * 1024,
        }
    }
}
