//! # snowdrift-client
//!
//! A Rust client for snowdrift servers that caches ID ranges in the application: each name
//! has a batch being served and the next one, fetched in the background once the current
//! one is used past a threshold (0.8 by default), so most calls never leave the process and
//! the servers can be away for a while without the application noticing. The batch size
//! follows the rate of use (about 10 s worth, within bounds). Fetches go over gRPC (runs,
//! so a batch of a million consecutive IDs is a few bytes) to the endpoints in turn; a
//! failed or slow one is retried on the next with backoff and jitter, and an endpoint that
//! keeps failing is left out until a later try succeeds.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = snowdrift_client::Client::builder()
//!     .endpoints(["http://10.0.0.1:8080", "http://10.0.0.2:8080"])
//!     .token(std::env::var("SNOWDRIFT_TOKEN")?)
//!     .build()?;
//! let orders = client.ids("order"); // a handle: the name looked up once
//! let id: u64 = orders.next().await?; // ~2 ns when the cache is warm
//! let id: u64 = client.next("order").await?; // the same, finding the name each time
//! let ids: Vec<u64> = client.next_n("order", 500).await?;
//! let text: String = client.next_text("uuid7").await?;
//! # Ok(()) }
//! ```
//!
//! A handle ([`Ids`], from [`Client::ids`]; [`blocking::Ids`] for code that is not async)
//! is the fastest way to take 64-bit IDs: cheap to clone and shared by threads, each
//! thread serving IDs from its own block of up to 1,024, taken from the name's cache with one
//! compare-and-swap, with no name lookup, no hashing and no shared write per ID.
//!
//! Guarantees: an ID is handed out once; IDs left in the cache when the client is dropped,
//! or in a thread's block when the thread ends, are skipped, never reused; cached snowflake
//! IDs older than `max_age` are dropped rather than handed out late (checked per ID on the
//! kernel's coarse clock, whose lag of about a timer tick is turned to the strict side, also
//! across a process stop). Order holds within a fetched batch (increasing for 64-bit kinds)
//! and, per thread, across handles, `next` and `next_n` of one name; the IDs of different
//! threads interleave, and a later batch from another server may go back.
//!
//! Servers are not trusted to be right: a fetched batch that shares an ID with what the
//! client already received for the name (from any endpoint; for text kinds, one of the
//! newest 65,536 text IDs it received), whose runs reach 2^63 (no snowdrift kind issues such
//! an ID) or wrap past 2^64 - 1, or that is otherwise broken, is refused before any of its
//! IDs is held: counted in
//! [`Stats::refused`], its endpoint left out for its backoff, the next endpoint asked. With
//! no acceptable batch from any endpoint the call fails with [`ErrorKind::Refused`], saying
//! what each endpoint sent.
//!
//! Errors the servers say are final (unknown name, refused token, bad request) come back
//! at once. While no server answers, callers are served from the cache; once it is empty
//! they get [`ErrorKind::Unavailable`] naming the endpoints, their last errors and since
//! when, and the client recovers by itself when a server comes back.
#![deny(missing_docs)]

pub mod blocking;
mod builder;
mod cache;
mod client;
mod clock;
mod endpoints;
mod error;
mod fetch;
mod generate;
mod guard;
mod health;
mod ids;
mod local;
mod merge;
mod runs;
mod text;

pub use builder::ClientBuilder;
pub use cache::Stats;
pub use client::Client;
pub use endpoints::EndpointStatus;
pub use error::{Error, ErrorKind};
pub use ids::Ids;
