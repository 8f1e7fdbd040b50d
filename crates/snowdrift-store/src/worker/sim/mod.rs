//! What the deterministic simulator (`crates/snowdrift-sim`) needs of the worker registry
//! (cargo feature `sim`, off by default: no product build carries it).
//!
//! - [`EtcdKv`]: the part of etcd's API the etcd registry uses, which the simulator
//!   implements with a simulated etcd (leases, revisions, transactions) behind a simulated
//!   network;
//! - [`SimEtcdRegistry`]: the etcd registry's requests over it, as
//!   [`WorkerRegistry::Sim`](super::WorkerRegistry::Sim), so a
//!   [`WorkerNode`](super::WorkerNode) runs its real keeper against it
//!   ([`WorkerNode::start_on`](super::WorkerNode::start_on));
//! - [`Mistake`]: planted mistakes in the keeper, switched on for one thread, to show that
//!   the simulator's checker catches them.

mod kv;
mod registry;

pub use super::mistakes::{Mistake, plant};
pub use kv::{Compare, EtcdKv, KeyValue, KvFuture, LeaseStatus, Op, Txn, TxnAnswer};
pub use registry::SimEtcdRegistry;
