//! # snowdrift-store
//!
//! The outside world of snowdrift: the databases that hand out IDs. Each backend sits behind a
//! cargo feature (`sqlite`, `postgres`, `mysql`, `redis`, `zookeeper`, `etcd`; all on by default).
//!
//! - [`segment`]: Meituan Leaf's segment mode. [`segment::SegmentStore`] keeps tags in Leaf's
//!   own table (`leaf_alloc`, so an existing Leaf database works unchanged), in Redis hashes
//!   or in ZooKeeper znodes, and claims a range in one atomic step, durable before any ID of
//!   it is served; [`segment::SegmentService`] serves every tag from memory.
//! - [`ticket`]: Flickr's ticket servers, interleaved `auto_increment` or sequences on
//!   several MySQL/MariaDB and PostgreSQL servers, in round-robin with health checks.
//! - [`worker`]: worker IDs under fenced leases (etcd, ZooKeeper, SQL, Redis, a local file)
//!   with durable high-water marks, so two nodes never issue with the same worker ID.
//! - [`counter`]: Redis `INCRBY` counters served in batches, with keys that reset each
//!   period and templates such as `ORD{date:%Y%m%d}{seq:08}`.
//! - [`sql_functions`]: `snowdrift_id(generator)` made inside PostgreSQL, under worker IDs
//!   reserved for the database in the servers' own worker table.
//! - [`tso`]: a timestamp oracle's leader election and saved window (etcd), around
//!   [`snowdrift_core::tso::TimestampOracle`].
//! - [`peer`]: the state Tinyid, UidGenerator and Leaf leave behind, read where they keep
//!   it, for `snowdrift import`.
#![deny(missing_docs)]

mod backoff;
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
mod coordinator_url;
#[cfg(feature = "redis")]
pub mod counter;
pub mod error;
#[cfg(feature = "etcd")]
mod etcd_connection;
mod mask;
pub mod peer;
#[cfg(feature = "redis")]
mod redis_connection;
pub mod segment;
mod sql_connection;
pub mod sql_functions;
mod task;
pub mod ticket;
pub mod tso;
pub mod worker;
#[cfg(feature = "zookeeper")]
mod zk_connection;
#[cfg(feature = "zookeeper")]
pub mod zk_version;

pub use error::{Error, Result};
#[cfg(feature = "etcd")]
pub use etcd_connection::takes_anonymous_requests as etcd_takes_anonymous_requests;
pub use mask::mask_url;
#[cfg(feature = "redis")]
pub use redis_connection::check_url as check_redis_url;
/// Simulated processes that can be stopped (the simulator only, cargo feature `sim`).
#[cfg(feature = "sim")]
pub use task::process;
