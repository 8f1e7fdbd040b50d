//! # snowdrift-sim
//!
//! A deterministic simulation of snowdrift's worker leases (and of the segment buffers'
//! claims, [`segment`], and the timestamp oracle's cluster, [`tso`]): many nodes, each running the
//! real [`WorkerNode`](snowdrift_store::worker::WorkerNode) (claim, mark written ahead,
//! fence, renew, regain, clock checks), its real registry (etcd, Redis, ZooKeeper, SQL or
//! files) and the real snowflake generator, against a simulated coordinator behind a
//! simulated network, under faults drawn from one seeded RNG; a
//! checker sees every range of IDs any node issues. A run is one thread, a current-thread
//! tokio runtime on paused time: the same settings and seed replay the same run exactly,
//! and a failing seed is printed as the command that replays it.
//!
//! `scripts/simulate --seeds N --nodes M` runs it (`docs/src/simulation.md` says what runs
//! for real and what is simulated).
#![deny(missing_docs)]

pub mod capacity;
pub mod chaos;
pub mod checker;
pub mod clock;
pub mod coordinator;
pub mod disk;
pub mod etcd;
pub mod fs;
pub mod issued;
pub mod layouts;
pub mod lua;
pub mod machine;
pub mod network;
pub mod node;
pub mod redis;
pub mod redis_link;
pub mod run;
pub mod scenario;
pub mod segment;
pub mod sql;
pub mod sql_link;
pub mod tso;
pub mod world;
pub mod zk_client;
pub mod zookeeper;

pub use checker::{Checker, Failure, Range};
pub use coordinator::Backend;
pub use layouts::Pick;
pub use run::{Outcome, run};
pub use scenario::{Scenario, Settings};
pub use snowdrift_store::worker::sim::Mistake;

/// Every binary of the simulator (`snowdrift-sim`, the tests) allocates through mimalloc:
/// a node's reads of the simulated coordinator copy every key they return, and at a
/// thousand nodes the system allocator took a third of the run's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
