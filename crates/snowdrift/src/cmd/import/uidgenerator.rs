//! `snowdrift import uidgenerator`: Baidu UidGenerator's layout, as its Spring config sets
//! it, and its `WORKER_NODE` rows (one per start: every start took a new worker ID) become
//! the generator's layout and a high-water mark for each worker ID it used.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::{Layout, format_ms};
use snowdrift_store::peer::uidgenerator::{self, WorkerNode};
use snowdrift_store::worker::MarkFloor;

use super::target::{ConfigArgs, RegistryFlags, generator_lines, worker_lines};
use super::{closing, marks};

/// Carry Baidu UidGenerator's layout and worker IDs over.
///
/// Give the bits as UidGenerator's Spring config sets them (timeBits, workerBits, seqBits,
/// epochStr; its defaults otherwise). Each WORKER_NODE row's ID is a worker ID a start of
/// UidGenerator issued under; each gets a high-water mark on snowdrift's registry at the
/// second after now (plus --borrowed for CachedUidGenerator, whose ring buffer hands out
/// seconds ahead of the clock), recorded with the layout, so a snowdrift server taking
/// that worker ID never issues an ID UidGenerator issued. When the generator's layout
/// differs from UidGenerator's, `snowdrift layout migrate`'s report on the switch is
/// printed, and an unsafe switch refused; each server checks it again at start against
/// the recorded layout.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
snowdrift import uidgenerator --source mysql://uid@db/uid --time-bits 30 --worker-bits 20 --seq-bits 13 --epoch-str 2020-01-01 --registry postgres://snowdrift@db/ids --generator uid\n  \
snowdrift import uidgenerator --source mysql://uid@db/uid --config snowdrift.toml --apply\n\n\
UidGenerator's default layout (28 bits of seconds from 2016-05-20) ran out on 2024-11-20: give the generator\n\
in --config a layout of its own, and the plan prints the migrate check of the switch.")]
pub struct Args {
    /// UidGenerator's database (mysql://, mariadb://, postgres://), the one its
    /// DisposableWorkerIdAssigner writes WORKER_NODE rows to.
    #[arg(long, value_name = "URL")]
    source: String,
    /// timeBits: bits of seconds since the epoch.
    #[arg(long, value_name = "BITS", default_value_t = 28)]
    time_bits: u8,
    /// workerBits: bits of the worker ID (the WORKER_NODE row's ID).
    #[arg(long, value_name = "BITS", default_value_t = 22)]
    worker_bits: u8,
    /// seqBits: bits of the sequence within a second.
    #[arg(long, value_name = "BITS", default_value_t = 13)]
    seq_bits: u8,
    /// epochStr: the epoch's day, yyyy-MM-dd, at midnight in --utc-offset.
    #[arg(long, value_name = "DATE", default_value = "2016-05-20")]
    epoch_str: String,
    /// The time zone epochStr was read in (the JVM's): UidGenerator's built-in epoch is
    /// 2016-05-20 at midnight in +08:00.
    #[arg(
        long,
        value_name = "+HH:MM",
        default_value = "+08:00",
        allow_hyphen_values = true
    )]
    utc_offset: String,
    /// How far ahead of its clock UidGenerator may have issued: 0 for DefaultUidGenerator;
    /// for CachedUidGenerator, the seconds its ring buffer runs ahead (at most its buffer
    /// size over the IDs per second taken).
    #[arg(long, value_name = "DURATION", default_value = "0s")]
    borrowed: String,
    #[command(flatten)]
    registry: RegistryFlags,
    #[command(flatten)]
    common: ConfigArgs,
}

/// UidGenerator's layout from its Spring settings, checked as its `BitsAllocator` checks
/// them (sign, time, worker and sequence bits make 64).
fn peer_layout(args: &Args) -> Result<Layout> {
    let total =
        1 + u32::from(args.time_bits) + u32::from(args.worker_bits) + u32::from(args.seq_bits);
    if total != 64 {
        bail!(
            "timeBits {} + workerBits {} + seqBits {} make {} bits with the sign bit, not 64: UidGenerator refuses such settings; give the ones its Spring config sets",
            args.time_bits,
            args.worker_bits,
            args.seq_bits,
            total
        );
    }
    let offset =
        snowdrift_store::segment::parse_utc_offset(&args.utc_offset).context("--utc-offset")?;
    let day: jiff::civil::Date = args.epoch_str.trim().parse().with_context(|| {
        format!(
            "--epoch-str {:?} is not a day written yyyy-MM-dd",
            args.epoch_str
        )
    })?;
    let zone =
        jiff::tz::TimeZone::fixed(jiff::tz::Offset::from_seconds(offset).context("--utc-offset")?);
    let epoch = day
        .to_zoned(zone)
        .context("--epoch-str")?
        .timestamp()
        .as_millisecond();
    let epoch = u64::try_from(epoch).context("--epoch-str is before 1970")?;
    let spec = format!(
        "time:{},worker:{},seq:{}",
        args.time_bits, args.worker_bits, args.seq_bits
    );
    Layout::from_spec(&spec, 1000, epoch).context("UidGenerator's layout")
}

fn parse_duration_ms(text: &str) -> Result<u64> {
    let d: jiff::SignedDuration = text
        .trim()
        .parse()
        .with_context(|| format!("--borrowed {text:?} is not a duration (e.g. 0s, 30s, 5m)"))?;
    u64::try_from(d.as_millis()).with_context(|| format!("--borrowed {text:?} is negative"))
}

/// Runs the import.
pub async fn run(args: Args) -> Result<()> {
    // The plan is printed once everything is read and checked: a refusal prints only itself.
    let mut out = String::new();
    macro_rules! say {
        ($out:ident, $($arg:tt)*) => {{
            use std::fmt::Write as _;
            let _ = writeln!($out, $($arg)*);
        }};
    }
    let config = args.common.load()?;
    let layout = peer_layout(&args)?;
    let borrowed = parse_duration_ms(&args.borrowed)?;
    let shown = snowdrift_store::mask_url(&args.source);
    let rows = uidgenerator::read(&args.source)
        .await
        .with_context(|| format!("reading UidGenerator's database {shown}"))?;
    let Some(target) = super::target::snowflake(&args.registry, config.as_ref(), &layout)? else {
        bail!(
            "UidGenerator's worker IDs need snowdrift's worker registry for their marks: pass --config FILE (its snowflake generator's [worker]) or --registry URL --generator NAME"
        );
    };
    let now = crate::clock::process_clock()?.now_ms();
    say!(
        out,
        "Plan: import Baidu UidGenerator from {shown}: {} WORKER_NODE row(s); layout {} of 1 s from {}",
        rows.len(),
        snowdrift_core::layout::migrate::spec(&layout),
        format_ms(layout.epoch_ms())
    );
    if layout.is_expired_at(now) {
        say!(
            out,
            "UidGenerator's layout ran out at {}: it has refused to issue since (\"Timestamp bits is exhausted\").",
            layout.lifetime()
        );
    }
    let check = marks::check_layout(&layout, &target, now)?;
    match &check.report {
        Some(report) => say!(
            out,
            "\nGenerator {:?}'s layout differs from UidGenerator's; snowdrift layout migrate says:\n{report}",
            target.generator
        ),
        None => say!(
            out,
            "\nGenerator {:?} keeps UidGenerator's layout: its IDs are UidGenerator's, and the marks keep each worker ID above what it issued.",
            target.generator
        ),
    }
    let max_worker = (1u64 << args.worker_bits) - 1;
    let space = 1u64
        .checked_shl(target.layout.node_bits())
        .unwrap_or(u64::MAX);
    let floor = marks::next_tick(&layout, now.saturating_add(borrowed));
    let mut floors = Vec::new();
    let mut skipped = Vec::new();
    for row in &rows {
        let id = u64::try_from(row.id).unwrap_or(u64::MAX);
        if id > max_worker {
            skipped.push(format!(
                "row ID {} (above the largest worker ID {max_worker} of {} bits: UidGenerator refused to start with it)",
                row.id, args.worker_bits
            ));
        } else if id >= space {
            skipped.push(format!(
                "row ID {} (outside generator {:?}'s {space} worker IDs: no snowdrift server can take it)",
                row.id, target.generator
            ));
        } else {
            floors.push(MarkFloor {
                worker_id: id,
                at_least_ms: floor,
                from_clock: true,
            });
        }
    }
    let planned = marks::preview(&target, &floors, &check.record).await?;
    let by_id: BTreeMap<u64, &WorkerNode> = rows
        .iter()
        .filter_map(|r| Some((u64::try_from(r.id).ok()?, r)))
        .collect();
    out.push_str(&marks::render(&target, &planned, &|id| {
        by_id.get(&id).map_or(String::new(), |r| {
            format!(
                "WORKER_NODE {} {}:{} (launched {})",
                if r.node_type == 1 {
                    "container"
                } else {
                    "host"
                },
                r.host_name,
                r.port,
                r.launch_date
            )
        })
    }));
    for s in &skipped {
        say!(out, "  skipped: {s}");
    }
    say!(
        out,
        "  each mark: the second after now ({}){}; a worker ID with a mark under this layout already keeps it (written after UidGenerator stopped)",
        format_ms(now),
        if borrowed > 0 {
            format!(" + {} borrowed", args.borrowed)
        } else {
            String::new()
        }
    );
    if !target.configured {
        say!(
            out,
            "\nConfig lines for snowdrift's servers (add them to the config; --apply does not write them):\n\n{}\n{}",
            worker_lines(&target.registry, &args.registry.namespace),
            generator_lines(&target.generator, &layout)
        );
    }
    say!(
        out,
        "Not carried over: WORKER_NODE itself (snowdrift leases worker IDs and reuses them, so far fewer worker bits do: 10 serve 1,024 live nodes), and IDs UidGenerator issues after this import: stop it first."
    );
    out!("{out}")?;
    let changes = planned.iter().filter(|c| c.changes()).count();
    if !args.common.apply || changes == 0 {
        outln!("\n{}", closing(false, changes))?;
        return Ok(());
    }
    let done = marks::apply(&target, &marks::to_write(&planned, &floors), &check.record).await?;
    outln!(
        "\n{}",
        closing(true, done.iter().filter(|c| c.changes()).count())
    )?;
    Ok(())
}
