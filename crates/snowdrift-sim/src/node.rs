//! One node slot: a process that starts a real [`WorkerNode`] on the simulated coordinator, asks
//! its real generator for IDs and hands every range to the checker, until it is killed or
//! restarted; then the next process of the slot starts, with a clock anchored anew.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use snowdrift_core::generator::{Attempt, SnowflakeGenerator};
use snowdrift_core::layout::Layout;
use snowdrift_store::process;
use snowdrift_store::worker::WorkerNode;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::checker::Range;
use crate::clock::SimClock;
use crate::coordinator;
use crate::issued::Run;
use crate::world::World;

/// The registry namespace of every simulated node.
pub const NAMESPACE: &str = "sim";

/// What the fault driver tells a node's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// SIGKILL: the process ends at once, releasing nothing (its lease expires); the next
    /// one starts after `down`.
    Kill {
        /// How long the node stays down.
        down: Duration,
    },
    /// A graceful restart: `shutdown()` (final mark, release), then a new process.
    Restart,
}

/// Runs node slot `n` until the run ends. Each process starts under the one of `layouts`
/// its slot is set to (the second once a rolling restart has moved it).
pub async fn slot(
    world: Arc<World>,
    n: usize,
    layouts: Arc<[Layout]>,
    mut commands: UnboundedReceiver<Command>,
) {
    let mut incarnation = 0u64;
    loop {
        incarnation += 1;
        let which = world.node(n).layout.min(layouts.len() - 1);
        let layout = &layouts[which];
        world.count(|c| c.starts += 1);
        let (drift, seed, lead) = {
            let m = world.scenario.drift_max_ppm;
            let mut rng = world.rng();
            (
                rng.random_range(-m..=m),
                rng.random::<u64>(),
                Duration::from_millis(*[0u64, 0, 5, 100].get(rng.random_range(0..4)).unwrap_or(&0)),
            )
        };
        let clock = SimClock::new(world.wall_ms_of(n), drift);
        let builder = SnowflakeGenerator::builder(layout.clone())
            .max_lead(lead)
            .random_sequence_start(seed, 16);
        let config = world.scenario.lease_config(n, incarnation);
        let started = tokio::select! {
            biased;
            cmd = commands.recv() => Err(cmd),
            r = process::run(world.process(n), async {
                let registry = coordinator::registry(&world, n, clock).await?;
                WorkerNode::start_on(registry, config, builder, clock).await
            }) => Ok(r),
        };
        let node = match started {
            Ok(Ok(node)) => node,
            Ok(Err(e)) => {
                world.count(|c| {
                    *c.refusals.entry(kind(&e)).or_default() += 1;
                    c.refusal_examples
                        .entry(kind(&e))
                        .or_insert_with(|| e.to_string());
                });
                // NTP gets there in the end on a host that keeps failing to start.
                if world.rng().random_bool(0.2) {
                    let skew = world.scenario.skew_max_ms;
                    let fixed = world.rng().random_range(-skew..=skew);
                    world.with_node(n, |f| f.wall_offset_ms = fixed);
                }
                // Restarted by its supervisor after a while, as a crash-looping pod is.
                let backoff = Duration::from_millis(world.rng().random_range(500..5_000));
                tokio::time::sleep(backoff).await;
                continue;
            }
            Err(Some(Command::Kill { down })) => {
                tokio::time::sleep(down).await;
                continue;
            }
            Err(Some(Command::Restart)) => continue,
            Err(None) => return,
        };
        // NTP may put a stepped wall clock right once the process runs: it keeps the
        // reading it anchored to, the next one starts from the corrected clock.
        if world.rng().random_bool(0.5) {
            let skew = world.scenario.skew_max_ms;
            let fixed = world.rng().random_range(-skew..=skew);
            world.with_node(n, |f| f.wall_offset_ms = fixed);
        }
        let crash_at = world.node(n).crash_after_start.then(|| {
            world.with_node(n, |f| f.crash_after_start = false);
            let half = u64::try_from(world.scenario.window.as_millis() / 2)
                .unwrap_or(1)
                .max(1);
            tokio::time::Instant::now() + Duration::from_millis(world.rng().random_range(0..half))
        });
        loop {
            if let Some(at) = crash_at
                && tokio::time::Instant::now() >= at
            {
                let back = 2 * i64::try_from(world.scenario.window.as_millis()).unwrap_or(0);
                let step = world.rng().random_range(1..=back.max(2));
                world.with_node(n, |f| f.wall_offset_ms -= step);
                drop(node);
                break;
            }
            let gap = gap(&mut world.rng(), world.scenario.issue_every);
            let cmd = tokio::select! {
                biased;
                cmd = commands.recv() => Some(cmd),
                () = tokio::time::sleep(crash_at.map_or(gap, |at| gap.min(at.saturating_duration_since(tokio::time::Instant::now())))) => None,
            };
            match cmd {
                Some(Some(Command::Kill { down })) => {
                    drop(node);
                    tokio::time::sleep(down).await;
                    break;
                }
                Some(Some(Command::Restart)) => {
                    let _ = node.shutdown().await;
                    break;
                }
                Some(None) => return,
                None => {}
            }
            if !world.paused(n) {
                issue(&world, n, incarnation, which, &node);
            }
        }
    }
}

/// One request for IDs from the node's current epoch, under layout `layout` of the run.
fn issue(world: &World, n: usize, incarnation: u64, layout: usize, node: &WorkerNode<SimClock>) {
    let holder = node.holder();
    let epoch = node.epoch();
    let count = {
        let mut rng = world.rng();
        match rng.random_range(0..100) {
            0..70 => rng.random_range(1..=16),
            70..95 => rng.random_range(1..=1_000),
            _ => rng.random_range(1..=10_000),
        }
    };
    match epoch.generator().try_next_block(count) {
        Ok(Attempt::Ready(block)) => {
            let runs: Vec<Run> = block
                .runs()
                .map(|(first, count, stride)| Run {
                    first,
                    count,
                    stride,
                })
                .collect();
            world.record(
                Range {
                    node: n,
                    incarnation,
                    epoch: epoch.number(),
                    worker_id: epoch.worker_id(),
                    layout,
                    first: block.first(),
                    last: block.last(),
                    count: block.len(),
                    at: world.elapsed(),
                },
                &runs,
                holder,
            )
        }
        Ok(Attempt::RetryAfter(_)) => {}
        Err(e) => world.count(|c| *c.not_issuing.entry(kind(&e)).or_default() += 1),
    }
}

/// The time until a node's next request: drawn from `rng`, `mean` on average.
pub(crate) fn gap(rng: &mut rand::rngs::StdRng, mean: Duration) -> Duration {
    let mean = u64::try_from(mean.as_micros()).unwrap_or(1).max(2);
    Duration::from_micros(rng.random_range(1..2 * mean))
}

/// An error's kind: the name of its variant.
pub(crate) fn kind(e: &dyn std::fmt::Debug) -> String {
    let text = format!("{e:?}");
    text.split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_string()
}
