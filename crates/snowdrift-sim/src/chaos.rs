//! The faults, drawn from the run's RNG, several at once: process pauses longer than a
//! lease, kills, graceful restarts, partitions between nodes and the coordinator, wall-clock steps,
//! a slow coordinator and leader elections; and the rolling restart of the whole fleet.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use crate::node::Command;
use crate::world::{World, lock};

/// The faults by the names `--only-faults` takes: of single nodes (by the roll's range in
/// [`faults`]), then of the coordinator or many nodes (by [`coordinator_faults`]' roll),
/// then lost messages and latency spikes (drawn per seed, [`crate::Scenario`]).
pub const FAULT_KINDS: [&str; 11] = [
    "pause",
    "partition",
    "clock-step",
    "kill-clock-behind",
    "kill",
    "crash-after-start",
    "graceful-restart",
    "slow-coordinator",
    "election",
    "zone-partition",
    "loss",
];

/// Whether the run injects faults of kind `kind` (one of [`FAULT_KINDS`]).
fn allowed(world: &World, kind: &str) -> bool {
    world
        .scenario
        .settings
        .only_faults
        .as_ref()
        .is_none_or(|only| only.iter().any(|k| k == kind))
}

/// The coordinator's periodic work (etcd's lessor revoking expired leases, ...).
pub async fn coordinator_ticks(world: Arc<World>) {
    let every = lock(&world.coordinator).tick_every();
    loop {
        tokio::time::sleep(every).await;
        lock(&world.coordinator).tick(Instant::now());
    }
}

/// `base` scaled by a factor drawn in `lo..hi`.
fn scaled(world: &World, base: Duration, lo: f64, hi: f64) -> Duration {
    scale(&mut world.rng(), base, lo, hi)
}

/// `base` scaled by a factor drawn from `rng` in `lo..hi`.
pub(crate) fn scale(rng: &mut StdRng, base: Duration, lo: f64, hi: f64) -> Duration {
    base.mul_f64(rng.random_range(lo..hi))
}

/// A zone of a fleet of `nodes`: up to a third of them, from one drawn from `rng` on.
pub(crate) fn zone(rng: &mut StdRng, nodes: usize) -> impl Iterator<Item = usize> {
    let first = rng.random_range(0..nodes);
    let many = rng.random_range(1..=nodes.div_ceil(3));
    (first..first + many).map(move |m| m % nodes)
}

/// Faults of the coordinator and of many nodes at once, at a rate that does not grow with
/// the fleet: a slow coordinator (a busy disk), a leader election (no answers, then every
/// lease extended; Redis's failover to its replica; the file registry's machine crashing),
/// a zone cut off.
pub async fn coordinator_faults(world: Arc<World>, commands: Vec<UnboundedSender<Command>>) {
    let nodes = commands.len();
    let ttl = world.scenario.ttl;
    loop {
        let gap = scaled(&world, world.scenario.coordinator_fault_every, 0.0, 2.0);
        tokio::time::sleep(gap).await;
        let roll = world.rng().random_range(0..3u32);
        let now = Instant::now();
        if !allowed(&world, FAULT_KINDS[7 + roll as usize]) {
            continue;
        }
        let what = match roll {
            0 => {
                let length = Duration::from_millis(world.rng().random_range(1_000..10_000));
                let by = scaled(&world, ttl, 0.05, 1.0);
                world.slow_down(length, by);
                "slow coordinator"
            }
            1 => {
                let outage = Duration::from_millis(world.rng().random_range(500..3_000));
                let disk = lock(&world.coordinator).disk().cloned();
                match disk {
                    Some(disk) => crate::machine::crash(&world, &disk, &commands, outage),
                    None => lock(&world.coordinator).elect(now, outage),
                }
            }
            _ => {
                let length = scaled(&world, ttl, 0.5, 2.0);
                let cut: Vec<usize> = zone(&mut world.rng(), nodes).collect();
                for m in cut {
                    world.with_node(m, |f| f.cut_until = f.cut_until.max(now + length));
                    if length >= ttl && !world.scenario.settings.registry.one_machine() {
                        lock(&world.capacity).cut_past_lease(m, world.elapsed() + length);
                    }
                }
                "zone partition"
            }
        };
        world.count(|c| *c.faults.entry(what).or_default() += 1);
    }
}

/// Injects one fault of one node after another until the run ends.
pub async fn faults(world: Arc<World>, commands: Vec<UnboundedSender<Command>>) {
    let nodes = commands.len();
    let ttl = world.scenario.ttl;
    loop {
        let gap = scaled(&world, world.scenario.fault_every, 0.0, 2.0);
        tokio::time::sleep(gap).await;
        let (n, roll) = {
            let mut rng = world.rng();
            (rng.random_range(0..nodes), rng.random_range(0..100u32))
        };
        let now = Instant::now();
        let kind = match roll {
            0..20 => 0,
            20..43 => 1,
            43..51 => 2,
            51..58 => 3,
            58..73 => 4,
            73..83 => 5,
            _ => 6,
        };
        if !allowed(&world, FAULT_KINDS[kind]) {
            continue;
        }
        let what = match roll {
            0..20 => {
                // A GC pause or SIGSTOP, often past the lease.
                let length = scaled(&world, ttl, 0.2, 3.0);
                world.with_node(n, |f| f.paused_until = f.paused_until.max(now + length));
                "pause"
            }
            20..43 => {
                let length = scaled(&world, ttl, 0.2, 3.0);
                world.with_node(n, |f| f.cut_until = f.cut_until.max(now + length));
                if length >= ttl && !world.scenario.settings.registry.one_machine() {
                    lock(&world.capacity).cut_past_lease(n, world.elapsed() + length);
                }
                "partition"
            }
            43..51 => {
                // The wall clock steps (NTP, an operator, a VM resume): back more often
                // than forward. The running process does not see it; its next one does.
                let step = world.rng().random_range(-20_000i64..5_000);
                world.with_node(n, |f| f.wall_offset_ms += step);
                "wall clock step"
            }
            51..58 => {
                // A crash and a reboot whose clock comes up behind (no RTC, NTP not yet
                // synced), then is put right while the next process runs.
                let step = world.rng().random_range(-15_000i64..-1);
                world.with_node(n, |f| f.wall_offset_ms += step);
                let down = scaled(&world, ttl, 0.0, 1.0);
                let _ = commands[n].send(Command::Kill { down });
                "kill, clock behind at restart"
            }
            58..73 => {
                let down = scaled(&world, ttl, 0.0, 3.0);
                let _ = commands[n].send(Command::Kill { down });
                "kill"
            }
            73..83 => {
                world.with_node(n, |f| f.crash_after_start = true);
                let _ = commands[n].send(Command::Restart);
                "crash right after a start"
            }
            _ => {
                let _ = commands[n].send(Command::Restart);
                "graceful restart"
            }
        };
        world.count(|c| *c.faults.entry(what).or_default() += 1);
    }
}

/// Restarts every node once, gracefully, a tenth of the fleet at a time, from `at` on;
/// each restarted node's next process runs the layout the run switches to, if any.
pub async fn rolling_restart(
    world: Arc<World>,
    commands: Vec<UnboundedSender<Command>>,
    at: Duration,
) {
    tokio::time::sleep(at).await;
    let wave = commands.len().div_ceil(10).max(1);
    let switch = usize::from(world.scenario.switch_to.is_some());
    for (i, batch) in commands.chunks(wave).enumerate() {
        for (j, c) in batch.iter().enumerate() {
            world.with_node(i * wave + j, |f| f.layout = switch);
            let _ = c.send(Command::Restart);
        }
        world.count(|c| *c.faults.entry("rolling restart wave").or_default() += 1);
        // As a deployment waits for the new pods to be ready before the next ones.
        let settle = world.scenario.window + Duration::from_secs(1);
        tokio::time::sleep(settle).await;
    }
}
