//! The segment simulation's faults, drawn from the run's RNG, several at once: pauses
//! longer than a claim's timeout, kills, restarts and partitions of single nodes; a slow
//! database, failovers and cut-off zones; and the database's own timer, which ends
//! sessions left idle in a transaction.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use super::node::Command;
use super::world::World;
use crate::chaos::{scale, zone};
use crate::world::lock;

/// How often the database looks for sessions idle in a transaction.
const IDLE_CHECK_EVERY: Duration = Duration::from_millis(500);

/// The database's timer: ends sessions idle in a transaction past the timeout.
pub async fn idle_sessions(world: Arc<World>) {
    loop {
        tokio::time::sleep(IDLE_CHECK_EVERY).await;
        let released = lock(&world.db).end_idle(Instant::now());
        if released {
            world.released.notify_waiters();
        }
    }
}

/// `base` scaled by a factor drawn in `lo..hi`.
fn scaled(world: &World, base: Duration, lo: f64, hi: f64) -> Duration {
    scale(&mut world.rng(), base, lo, hi)
}

/// Faults of the database and of many nodes at once.
pub async fn database_faults(world: Arc<World>, nodes: usize) {
    let timeout = world.scenario.buffer.claim_timeout;
    loop {
        let gap = scaled(&world, world.scenario.database_fault_every, 0.0, 2.0);
        tokio::time::sleep(gap).await;
        let roll = world.rng().random_range(0..3u32);
        let now = Instant::now();
        let what = match roll {
            0 => {
                let length = Duration::from_millis(world.rng().random_range(1_000..10_000));
                let by = scaled(&world, timeout, 0.1, 2.0);
                world.slow_down(length, by);
                "slow database"
            }
            1 => {
                let down = Duration::from_millis(world.rng().random_range(500..5_000));
                lock(&world.db).fail_over(now, down);
                world.released.notify_waiters();
                "failover"
            }
            _ => {
                let length = scaled(&world, timeout, 0.5, 4.0);
                let cut: Vec<usize> = zone(&mut world.rng(), nodes).collect();
                for m in cut {
                    world.with_node(m, |f| f.cut_until = f.cut_until.max(now + length));
                }
                "zone partition"
            }
        };
        world.count(|c| *c.faults.entry(what).or_default() += 1);
    }
}

/// One fault of one node after another until the run ends.
pub async fn node_faults(world: Arc<World>, commands: Vec<UnboundedSender<Command>>) {
    let nodes = commands.len();
    let timeout = world.scenario.buffer.claim_timeout;
    loop {
        let gap = scaled(&world, world.scenario.fault_every, 0.0, 2.0);
        tokio::time::sleep(gap).await;
        let (n, roll) = {
            let mut rng = world.rng();
            (rng.random_range(0..nodes), rng.random_range(0..100u32))
        };
        let now = Instant::now();
        let what = match roll {
            0..30 => {
                // A GC pause or SIGSTOP, often past a claim's timeout (and past the
                // database's patience with a session idle in a transaction).
                let length = scaled(&world, timeout, 0.2, 6.0);
                world.with_node(n, |f| f.paused_until = f.paused_until.max(now + length));
                "pause"
            }
            30..60 => {
                let length = scaled(&world, timeout, 0.2, 4.0);
                world.with_node(n, |f| f.cut_until = f.cut_until.max(now + length));
                "partition"
            }
            60..80 => {
                let down = Duration::from_millis(world.rng().random_range(0..3_000));
                let _ = commands[n].send(Command::Kill { down });
                "kill"
            }
            _ => {
                let _ = commands[n].send(Command::Restart);
                "restart"
            }
        };
        world.count(|c| *c.faults.entry(what).or_default() += 1);
    }
}
