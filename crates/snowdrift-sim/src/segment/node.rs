//! One node slot of the segment simulation: a process that starts a real
//! [`SegmentBuffer`] for the tag on the simulated database, asks it for IDs (ranges, and
//! single IDs through a [`SegmentHandle`]) and hands every one to the checker, until it is
//! killed or restarted; then the slot's next process starts with a buffer of its own.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use snowdrift_store::segment::{SegmentBuffer, SegmentHandle};
use tokio::sync::mpsc::UnboundedReceiver;

use super::checker::Handout;
use super::conn::SimSql;
use super::world::{TAG, World};
use crate::node::{gap, kind};
use crate::world::lock;

/// What the fault driver tells a node's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// SIGKILL: the process ends at once (its buffered IDs are lost, its connections
    /// close); the next one starts after `down`.
    Kill {
        /// How long the node stays down.
        down: Duration,
    },
    /// A restart: the buffer is dropped (a segment buffer has nothing to hand back), and a
    /// new process starts.
    Restart,
}

/// Runs node slot `n` until the run ends.
pub async fn slot(world: Arc<World>, n: usize, mut commands: UnboundedReceiver<Command>) {
    let mut incarnation = 0u64;
    loop {
        incarnation += 1;
        world.count(|c| c.starts += 1);
        let store = SimSql::new(world.clone(), (n, incarnation));
        let started = tokio::select! {
            biased;
            cmd = commands.recv() => Err(cmd),
            r = SegmentBuffer::start_on(store, TAG, world.scenario.buffer) => Ok(r),
        };
        let buffer = match started {
            Ok(Ok(buffer)) => buffer,
            Ok(Err(e)) => {
                world.count(|c| *c.refusals.entry(kind(&e)).or_default() += 1);
                // Restarted by its supervisor after a while.
                let backoff = Duration::from_millis(world.rng().random_range(200..2_000));
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
        let mut handle = buffer.handle();
        loop {
            let gap = gap(&mut world.rng(), world.scenario.request_every);
            let work = async {
                tokio::time::sleep(gap).await;
                if !world.paused(n) {
                    request(&world, n, incarnation, &buffer, &mut handle).await;
                }
            };
            let cmd = tokio::select! {
                biased;
                cmd = commands.recv() => Some(cmd),
                () = work => None,
            };
            match cmd {
                Some(Some(Command::Kill { down })) => {
                    // Its buffer goes at once (the refill task with it), as in a killed process.
                    drop(buffer);
                    tokio::time::sleep(down).await;
                    break;
                }
                Some(Some(Command::Restart)) => break,
                Some(None) => return,
                None => {}
            }
        }
    }
}

/// One caller's request: a range from `next(n)`, or single IDs from the handle.
async fn request(
    world: &World,
    n: usize,
    incarnation: u64,
    buffer: &SegmentBuffer,
    handle: &mut SegmentHandle<'_>,
) {
    let (singles, count) = {
        let mut rng = world.rng();
        let singles = rng.random_bool(0.2);
        let count = match rng.random_range(0..100) {
            _ if singles => rng.random_range(1..=8),
            0..70 => rng.random_range(1..=4),
            70..95 => rng.random_range(1..=100),
            _ => rng.random_range(1..=1_000),
        };
        (singles, count)
    };
    let handout = |first: u64, count: u64| Handout {
        node: n,
        incarnation,
        first,
        count,
        at: world.elapsed(),
    };
    if singles {
        for _ in 0..count {
            match handle.next().await {
                Ok(id) => lock(&world.checker).record(handout(id, 1)),
                Err(e) => {
                    world.count(|c| *c.failed_requests.entry(kind(&e)).or_default() += 1);
                    return;
                }
            }
        }
        return;
    }
    match buffer.next(count).await {
        Ok(ids) => lock(&world.checker).record(handout(ids.start, ids.end - ids.start)),
        Err(e) => world.count(|c| *c.failed_requests.entry(kind(&e)).or_default() += 1),
    }
}
