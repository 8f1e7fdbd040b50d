//! One node's connection to the simulated etcd: [`EtcdKv`] over a network with latency,
//! spikes, lost messages and partitions, to a coordinator that may answer late or have no
//! leader.
//!
//! A request travels as its own task, so it arrives (and takes effect) even when the node
//! that sent it was killed meanwhile, as a packet in flight does. While the node's process
//! is paused, its requests wait to leave and its answers wait to be read. A request with
//! no answer fails after [`CLIENT_TIMEOUT`] (etcd-client's request timeout as the real
//! registry sets it), though it may have taken effect.

use std::sync::Arc;
use std::time::Duration;

use snowdrift_core::clock::Clock;
use snowdrift_store::worker::sim::{
    EtcdKv, KeyChange, KeyValue, KvFuture, LeaseStatus, Txn, TxnAnswer,
};
use snowdrift_store::{Error, Result};
use tokio::time::Instant;

use crate::clock::SimClock;
use crate::coordinator::Coordinator;
use crate::etcd::Etcd;
use crate::world::{World, lock};

/// How long a request waits for its answer (the etcd registry connects with a 5 s timeout).
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Node `node`'s etcd client.
#[derive(Debug, Clone)]
pub struct Link {
    world: Arc<World>,
    node: usize,
    clock: SimClock,
}

impl Link {
    /// The client of node `node`, whose process reads `clock`.
    pub fn new(world: Arc<World>, node: usize, clock: SimClock) -> Self {
        Self { world, node, clock }
    }

    /// Sends `apply` to etcd and waits for its answer.
    async fn call<T: Send + 'static>(
        &self,
        apply: impl FnOnce(&mut Etcd, Instant) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (world, node) = (self.world.clone(), self.node);
        world.awake(node).await;
        let rx = send(&world, node, move |coordinator, now| {
            let etcd = coordinator.etcd();
            etcd.serve(now).and_then(|()| apply(etcd, now))
        });
        // A lost request or answer drops the sender: the client hears nothing, and waits
        // out its timeout as over a real network.
        let heard = async {
            match rx.await {
                Ok(answer) => answer,
                Err(_) => std::future::pending().await,
            }
        };
        let answer = tokio::time::timeout(CLIENT_TIMEOUT, heard).await;
        world.awake(node).await;
        match answer {
            Ok(answer) => answer,
            Err(_) => Err(Error::Unavailable(
                format!("etcd gave no answer within {CLIENT_TIMEOUT:?} (simulated)").into(),
            )),
        }
    }
}

/// Sends a request from node `node` to the coordinator, as one message there and one back
/// over the node's network: `apply` runs on the coordinator when (and if) the request
/// arrives, and its answer comes back on the receiver, late by the coordinator's slowness
/// and the trip. A request or answer that is lost, or meets the node's link cut, drops the
/// sender instead. The request flies as a task of its own, so it takes effect even when its
/// sender is gone by then.
pub fn send<T: Send + 'static>(
    world: &Arc<World>,
    node: usize,
    apply: impl FnOnce(&mut Coordinator, Instant) -> T + Send + 'static,
) -> tokio::sync::oneshot::Receiver<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let there = world.trip();
    let back = world.trip();
    let cut_at_send = world.cut(node);
    let flight = world.clone();
    tokio::spawn(async move {
        let (Some(there), false) = (there, cut_at_send) else {
            return;
        };
        tokio::time::sleep(there).await;
        if flight.cut(node) {
            return;
        }
        let answer = apply(&mut lock(&flight.coordinator), Instant::now());
        let late = flight.answer_delay();
        let Some(back) = back else { return };
        tokio::time::sleep(late + back).await;
        if flight.cut(node) {
            return;
        }
        let _ = tx.send(answer);
    });
    rx
}

impl EtcdKv for Link {
    fn txn(&self, txn: Txn) -> KvFuture<'_, TxnAnswer> {
        Box::pin(self.call(move |etcd, _| etcd.txn(&txn)))
    }

    fn range(&self, key: String, prefix: bool) -> KvFuture<'_, Vec<KeyValue>> {
        Box::pin(self.call(move |etcd, _| Ok(etcd.range(&key, prefix))))
    }

    fn grant(&self, ttl: i64) -> KvFuture<'_, (i64, i64)> {
        Box::pin(self.call(move |etcd, now| Ok(etcd.grant(ttl, now))))
    }

    fn keep_alive(&self, lease: i64) -> KvFuture<'_, bool> {
        Box::pin(self.call(move |etcd, now| Ok(etcd.keep_alive(lease, now) > 0)))
    }

    fn time_to_live(&self, lease: i64) -> KvFuture<'_, LeaseStatus> {
        Box::pin(self.call(move |etcd, now| Ok(etcd.time_to_live(lease, now))))
    }

    fn revoke(&self, lease: i64) -> KvFuture<'_, ()> {
        Box::pin(self.call(move |etcd, _| etcd.revoke(lease)))
    }

    fn watch(&self, key: String, from: i64) -> KvFuture<'_, KeyChange> {
        Box::pin(async move {
            let change = self.call(move |etcd, _| Ok(etcd.watch(&key, from))).await?;
            // A dropped watch (etcd's leader gone meanwhile) is one to start again.
            let change = change.await.unwrap_or(KeyChange::Restart);
            // The event comes back over the stream: a trip, delayed by a lost packet's
            // retransmission rather than lost; a link cut by then breaks the stream.
            let trip = self.world.trip().unwrap_or(CLIENT_TIMEOUT / 5);
            tokio::time::sleep(trip).await;
            self.world.awake(self.node).await;
            if self.world.cut(self.node) {
                return Err(Error::Unavailable(
                    "the watch stream to etcd broke (simulated partition)".into(),
                ));
            }
            Ok(change)
        })
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }
}
