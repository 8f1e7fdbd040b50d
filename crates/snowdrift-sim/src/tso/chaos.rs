//! The faults of a tso run, drawn from the run's RNG, one after another on top of etcd's
//! (leader elections, a slow etcd, a zone cut off: the worker simulation's own): the
//! leader killed, any node killed, a graceful restart, a pause longer than the lease
//! (mostly of the leader), a node cut off from etcd and its peers, a wall-clock step that
//! the node's next process starts on.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use tokio::time::Instant;

use super::world::TsoWorld;
use crate::chaos::scale;

/// Injects faults of single nodes until the run ends.
pub async fn node_faults(tso: Arc<TsoWorld>) {
    let world = tso.world.clone();
    let nodes = world.scenario.settings.nodes;
    let ttl = tso.ttl;
    loop {
        let gap = scale(&mut world.rng(), world.scenario.fault_every, 0.0, 2.0);
        tokio::time::sleep(gap).await;
        let (roll, any, leader_first) = {
            let mut rng = world.rng();
            (
                rng.random_range(0..6u32),
                rng.random_range(0..nodes),
                rng.random_bool(0.7),
            )
        };
        // Most faults go to the leader, where they matter.
        let leaders = tso.leaders();
        let n = match leaders.first() {
            Some(&l) if leader_first => l,
            _ => any,
        };
        let now = Instant::now();
        let what = match roll {
            0 | 1 => {
                if let Some(p) = tso.take(n) {
                    p.kill();
                    // The handle dropped: its task stops at its next step.
                    drop(p);
                    let down = Duration::from_millis(world.rng().random_range(500..5_000));
                    let restart = tso.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(down).await;
                        if restart.process(n).is_none() {
                            restart.start(n);
                        }
                    });
                }
                if leaders.contains(&n) {
                    "leader killed"
                } else {
                    "node killed"
                }
            }
            2 => {
                if let Some(p) = tso.take(n) {
                    p.node.shutdown().await;
                    p.kill();
                    tso.start(n);
                }
                "graceful restart"
            }
            3 => {
                let length = scale(&mut world.rng(), ttl, 0.5, 3.0);
                world.with_node(n, |f| f.paused_until = f.paused_until.max(now + length));
                "pause (up to 3 leases)"
            }
            4 => {
                let length = scale(&mut world.rng(), ttl, 0.5, 3.0);
                world.with_node(n, |f| f.cut_until = f.cut_until.max(now + length));
                "node partitioned"
            }
            _ => {
                let step = world.rng().random_range(-20_000..5_000);
                world.with_node(n, |f| f.wall_offset_ms += step);
                "wall clock stepped"
            }
        };
        tso.count(what);
    }
}
