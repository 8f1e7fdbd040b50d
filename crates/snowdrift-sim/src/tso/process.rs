//! One process of a tso node: the real [`OracleNode`] (campaign, terms, window saves,
//! renewals, fencing) on the simulated etcd through the node's [`Link`], with what its
//! follower side has served ([`Served`], the server's own record).
//!
//! A kill stops the process where it stands: its etcd client sends nothing more (calls
//! already in flight still arrive), its leader task stops at its next step (the stop signal
//! is polled first), and it answers no peer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::RngExt;
use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::TsoConfig;
use snowdrift_store::Result;
use snowdrift_store::tso::{EtcdTso, OracleConfig, OracleNode, Served};
use snowdrift_store::worker::sim::{
    EtcdKv, KeyChange, KeyValue, KvFuture, LeaseStatus, Txn, TxnAnswer,
};

use crate::clock::SimClock;
use crate::network::Link;
use crate::node::NAMESPACE;
use crate::world::{World, lock};

/// The oracle's name in the run.
pub const ORACLE: &str = "ts";

/// What a node advertises: the address its peers forward to.
pub fn address(n: usize) -> String {
    format!("http://node-{n}")
}

/// The node an address names.
pub fn node_of(address: &str) -> Option<usize> {
    address.strip_prefix("http://node-")?.parse().ok()
}

/// One running process.
#[derive(Debug)]
pub struct Process {
    /// The oracle node.
    pub node: OracleNode,
    /// What this process has served (as leader or follower), which every answer of a
    /// leader must be above.
    pub served: Served,
    /// Its clock (what `MonotonicClock` gives a server).
    pub clock: SimClock,
    /// The oracle's options.
    pub tso: TsoConfig,
    alive: Arc<AtomicBool>,
    /// The last answer of a leader this process served (`(leader, range, term)`), which
    /// the network may deliver again for a later call.
    last_served: std::sync::Mutex<Option<(usize, IdRange, i64)>>,
}

impl Process {
    /// Starts a process on node `n` with lease `ttl` and oracle options `tso`.
    pub fn start(
        world: &Arc<World>,
        n: usize,
        ttl: std::time::Duration,
        tso: TsoConfig,
    ) -> Result<Self> {
        let drift = world.scenario.drift_max_ppm;
        let (drift, nonce) = {
            let mut rng = world.rng();
            (rng.random_range(-drift..=drift), rng.random::<u64>())
        };
        let clock = SimClock::new(world.wall_ms_of(n), drift);
        let alive = Arc::new(AtomicBool::new(true));
        let kv = Arc::new(ProcessKv {
            link: Link::new(world.clone(), n, clock),
            alive: alive.clone(),
        });
        let etcd = EtcdTso::over(kv, NAMESPACE, ORACLE)?;
        let mut config = OracleConfig::new("etcd://simulated", NAMESPACE, ORACLE, address(n));
        config.ttl = ttl;
        config.tso = tso;
        let node = snowdrift_store::process::enter(world.process(n), || {
            OracleNode::start_on(config, clock, etcd, &format!("{nonce:016x}"))
        })?;
        Ok(Self {
            node,
            served: Served::default(),
            clock,
            tso,
            alive,
            last_served: std::sync::Mutex::new(None),
        })
    }

    /// Whether the process still runs.
    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }

    /// Kills it: nothing more leaves it.
    pub fn kill(&self) {
        self.alive.store(false, Ordering::Relaxed);
    }

    /// The last answer of a leader this process served: `(leader, range, term)`.
    pub fn last_served(&self) -> Option<(usize, IdRange, i64)> {
        *lock(&self.last_served)
    }

    /// Notes that it served `range` of `term` from leader `m`.
    pub fn served_from(&self, m: usize, range: IdRange, term: i64) {
        *lock(&self.last_served) = Some((m, range, term));
    }
}

/// A process's etcd client: the node's link while the process lives, silent once killed.
#[derive(Debug)]
struct ProcessKv {
    link: Link,
    alive: Arc<AtomicBool>,
}

impl ProcessKv {
    fn live<'a, T: Send + 'a>(&'a self, call: KvFuture<'a, T>) -> KvFuture<'a, T> {
        if self.alive.load(Ordering::Relaxed) {
            call
        } else {
            Box::pin(std::future::pending())
        }
    }
}

impl EtcdKv for ProcessKv {
    fn txn(&self, txn: Txn) -> KvFuture<'_, TxnAnswer> {
        self.live(self.link.txn(txn))
    }
    fn range(&self, key: String, prefix: bool) -> KvFuture<'_, Vec<KeyValue>> {
        self.live(self.link.range(key, prefix))
    }
    fn grant(&self, ttl: i64) -> KvFuture<'_, (i64, i64)> {
        self.live(self.link.grant(ttl))
    }
    fn keep_alive(&self, lease: i64) -> KvFuture<'_, bool> {
        self.live(self.link.keep_alive(lease))
    }
    fn time_to_live(&self, lease: i64) -> KvFuture<'_, LeaseStatus> {
        self.live(self.link.time_to_live(lease))
    }
    fn revoke(&self, lease: i64) -> KvFuture<'_, ()> {
        self.live(self.link.revoke(lease))
    }
    fn watch(&self, key: String, from: i64) -> KvFuture<'_, KeyChange> {
        self.live(self.link.watch(key, from))
    }
    fn now_ms(&self) -> u64 {
        self.link.now_ms()
    }
}
