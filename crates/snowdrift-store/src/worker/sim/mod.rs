//! What the deterministic simulator (`crates/snowdrift-sim`) needs of the worker registry
//! (cargo feature `sim`, off by default: no product build carries it).
//!
//! - [`EtcdKv`]: the part of etcd's API the etcd registry uses, which the simulator
//!   implements with a simulated etcd (leases, revisions, transactions) behind a simulated
//!   network; [`EtcdRegistry::over`](super::etcd::EtcdRegistry::over) puts the real etcd
//!   registry on it, so a [`WorkerNode`](super::WorkerNode) runs its real keeper and the
//!   registry's real requests against it
//!   ([`WorkerNode::start_on`](super::WorkerNode::start_on));
//! - [`RedisConn`]: what the Redis registry sends to Redis (scripts, commands,
//!   pipelines), which the simulator implements with a simulated Redis that runs the
//!   registry's Lua scripts; [`RedisRegistry::over`](super::redis::RedisRegistry::over)
//!   puts the real Redis registry on it;
//! - [`Mistake`]: planted mistakes in the keeper, switched on for one thread, to show that
//!   the simulator's checker catches them.

pub use super::etcd::kv::{Compare, EtcdKv, KeyValue, KvFuture, LeaseStatus, Op, Txn, TxnAnswer};
pub use super::redis::conn::{RedisConn, RedisFuture, Value};
pub use super::mistakes::{Mistake, plant};
