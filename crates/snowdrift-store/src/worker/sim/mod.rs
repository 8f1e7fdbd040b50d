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
//! - [`Fs`]: what the file registry does to the file system, which the simulator implements
//!   with a disk shared by the nodes of one machine, whose crash loses what was not fsynced;
//!   [`FileRegistry::connect_on`](super::FileRegistry::connect_on) puts the real file
//!   registry on it;
//! - [`ZkConnector`] and [`ZkSession`]: the part of ZooKeeper's API the ZooKeeper registry
//!   uses, which the simulator implements with a simulated ensemble (sessions, ephemeral
//!   znodes, versions, `multi`) and client; [`ZkRegistry::over`](super::zookeeper::ZkRegistry::over)
//!   puts the real ZooKeeper registry on it;
//! - [`SqlDb`]: what the SQL registry sends to its database (a statement with its binds,
//!   its rows), which the simulator implements with an in-process SQLite behind a simulated
//!   network; [`SqlRegistry::over`](super::sql::SqlRegistry::over) puts the real SQL
//!   registry on it;
//! - [`Mistake`]: planted mistakes in the keeper, switched on for one thread, to show that
//!   the simulator's checker catches them.

pub use super::etcd::kv::{
    Compare, EtcdKv, KeyChange, KeyValue, KvFuture, LeaseStatus, Op, Txn, TxnAnswer,
};
pub use super::file::fs::{Dir, File, Fs, Job, JobFuture, Kind, Meta, Open};
pub use super::mistakes::{Mistake, plant};
pub use super::redis::conn::{RedisConn, RedisFuture, Value};
pub use super::sql::db::{SqlDb, SqlFuture, SqlRow, SqlValue};
pub use super::zookeeper::api::{
    Mode, MultiWriteError, Stat, WriteOp, ZkConnector, ZkError, ZkFuture, ZkSession,
};
