//! The one machine the file registry's nodes share: its crash kills every node's process
//! at once, and its disk keeps only what was made durable ([`crate::disk`]).

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use tokio::sync::mpsc::UnboundedSender;

use crate::disk::Disk;
use crate::node::Command;
use crate::world::World;

/// The machine crashes now (a kernel panic, a power cut) and boots again after `down`:
/// every process is killed in the same instant (none can make another call: the disk
/// fails every call of a process of an earlier boot), and the disk loses what was not
/// fsynced. Half the time the machine's clock comes up behind, by up to 15 s (no RTC, NTP
/// not yet synced), as a reboot's can. The name of the fault.
pub fn crash(
    world: &Arc<World>,
    disk: &Disk,
    commands: &[UnboundedSender<Command>],
    down: Duration,
) -> &'static str {
    disk.crash(&mut world.rng());
    if world.rng().random_bool(0.5) {
        let step = world.rng().random_range(1..15_000i64);
        // One machine, one clock: every node's.
        world.with_node(0, |f| f.wall_offset_ms -= step);
    }
    for c in commands {
        let _ = c.send(Command::Kill { down });
    }
    "machine crash"
}
