//! `snowdrift import`: another ID system's state, read where it keeps it, carried into
//! snowdrift's store and registry: a plan first, written with `--apply`, idempotent, and
//! never lowering a `max_id` or a high-water mark. One file per peer; what they share (the
//! tags, the marks, the snowdrift side) in one file each.

mod leaf;
mod marks;
mod sonyflake;
mod tags;
mod target;
mod tinyid;
mod uidgenerator;

use anyhow::Result;

/// Carry another ID system's state into snowdrift: Tinyid, Leaf, UidGenerator, Sonyflake.
///
/// Reads the peer's state where it lives (its tables, its znodes, the settings its users
/// give it) and prints the plan: every segment tag and worker ID's high-water mark it will
/// write into snowdrift's store and registry, before and after, and the config lines to
/// add. Nothing is written without --apply. Everything is read and checked before the
/// first write, so a refusal writes nothing; a value already higher in snowdrift is kept
/// (nothing is ever lowered), and running the same import again changes nothing.
///
/// Stop the peer's servers before applying: what they issue after the import is not
/// covered.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
snowdrift import tinyid --source mysql://tinyid@db1/tinyid --source mysql://tinyid@db2/tinyid --config snowdrift.toml\n  \
snowdrift import leaf --source mysql://leaf@db/leaf --zookeeper zookeeper://zk:2181 --config snowdrift.toml --apply\n  \
snowdrift import uidgenerator --source mysql://uid@db/uid --time-bits 30 --worker-bits 20 --seq-bits 13 --epoch-str 2020-01-01 --config snowdrift.toml\n  \
snowdrift import sonyflake --ips 10.0.1.7,10.0.1.8 --registry etcd://etcd:2379 --generator flake\n\n\
Then start snowdrift with the config (the lines the plan prints added), and point the peer's clients at it.\n\
docs/src/operations/migrating.md has the whole move, peer by peer, and how to go back.")]
pub struct Args {
    #[command(subcommand)]
    peer: Peer,
}

#[derive(Debug, clap::Subcommand)]
enum Peer {
    Tinyid(tinyid::Args),
    Leaf(leaf::Args),
    Uidgenerator(uidgenerator::Args),
    Sonyflake(sonyflake::Args),
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    crate::store_args::runtime()?.block_on(async {
        match args.peer {
            Peer::Tinyid(a) => tinyid::run(a).await,
            Peer::Leaf(a) => leaf::run(a).await,
            Peer::Uidgenerator(a) => uidgenerator::run(a).await,
            Peer::Sonyflake(a) => sonyflake::run(a).await,
        }
    })
}

/// The closing line of a plan: what --apply does, or what it did.
fn closing(apply: bool, changes: usize) -> String {
    match (apply, changes) {
        (_, 0) => "Nothing to change: snowdrift already holds all of it.".to_string(),
        (false, n) => format!(
            "Plan only, nothing written ({n} change(s) above). Stop the peer's servers, then run the same command with --apply."
        ),
        (true, n) => format!("Applied: {n} change(s) written."),
    }
}
