//! `snowdrift import sonyflake`: Sonyflake keeps no state; its layout comes from the
//! settings its users give it, its machine IDs from their hosts' addresses (or their own
//! MachineID function), and the marks from the last time they issued.

use std::net::Ipv4Addr;

use anyhow::{Context, Result, bail};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::{Layout, format_ms, parse_epoch};
use snowdrift_server::config::{BitsFrom, Derive, Registry};
use snowdrift_store::worker::{MarkFloor, WorkerSource};

use super::target::{ConfigArgs, RegistryFlags, generator_lines, quote};
use super::{closing, marks};

/// Carry Sonyflake's layout and machine IDs over.
///
/// Give Sonyflake's settings: v1's fixed layout (39 bits of 10 ms, 8 of sequence, 16 of
/// machine ID) or v2's (--v2, --bits-sequence, --bits-machine-id, --time-unit), its
/// StartTime, and its machines: --ips for the default MachineID (the lower 16 bits of
/// the host's private IPv4 address) or --machine-ids for a MachineID of your own. The plan
/// gives the layout and the [worker] settings under which each host keeps its machine ID
/// as its worker ID, and with a registry (--config, or --registry and --generator) a
/// high-water mark per machine ID above the last time Sonyflake issued (--last-issued,
/// default now), so a snowdrift server never issues an ID Sonyflake did.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
snowdrift import sonyflake --ips 10.0.1.7,10.0.1.8 --registry etcd://etcd:2379 --generator flake\n  \
snowdrift import sonyflake --v2 --bits-machine-id 10 --machine-ids 1,2,3 --config snowdrift.toml --apply")]
pub struct Args {
    /// Sonyflake v2 (github.com/sony/sonyflake/v2): its default start time is 2025-01-01
    /// and its bits may be set. Implied by --bits-sequence, --bits-machine-id, --time-unit.
    #[arg(long)]
    v2: bool,
    /// Settings.StartTime (RFC 3339, a date, or ms since 1970); default v1's 2014-09-01,
    /// v2's 2025-01-01.
    #[arg(long, value_name = "TIME")]
    start_time: Option<String>,
    /// Settings.BitsSequence (v2; default 8).
    #[arg(long, value_name = "BITS")]
    bits_sequence: Option<u8>,
    /// Settings.BitsMachineID (v2; default 16).
    #[arg(long, value_name = "BITS")]
    bits_machine_id: Option<u8>,
    /// Settings.TimeUnit (v2; default 10ms): a whole number of ms.
    #[arg(long, value_name = "DURATION")]
    time_unit: Option<String>,
    /// The private IPv4 address of each host Sonyflake ran on with the default MachineID,
    /// comma-separated.
    #[arg(
        long,
        value_name = "IP,IP,...",
        value_delimiter = ',',
        required_unless_present = "machine_ids",
        conflicts_with = "machine_ids"
    )]
    ips: Vec<Ipv4Addr>,
    /// The machine ID each host's own MachineID function returned, comma-separated.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',')]
    machine_ids: Vec<u64>,
    /// When Sonyflake last issued (RFC 3339, or ms since 1970): when its last process
    /// stopped. Default now (stop it first); a machine ID already marked under this layout
    /// keeps its mark then.
    #[arg(long, value_name = "TIME")]
    last_issued: Option<String>,
    #[command(flatten)]
    registry: RegistryFlags,
    #[command(flatten)]
    common: ConfigArgs,
}

/// Sonyflake's layout from its settings, checked as its `New` checks them.
fn peer_layout(args: &Args) -> Result<(Layout, &'static str)> {
    let v2 = args.v2
        || args.bits_sequence.is_some()
        || args.bits_machine_id.is_some()
        || args.time_unit.is_some();
    let (seq, machine) = (
        args.bits_sequence.unwrap_or(8),
        args.bits_machine_id.unwrap_or(16),
    );
    if seq > 30 || machine > 30 || seq == 0 || machine == 0 {
        bail!(
            "--bits-sequence {seq} and --bits-machine-id {machine}: Sonyflake takes 1 to 30 for each (0 means its default)"
        );
    }
    let time = 63 - u32::from(seq) - u32::from(machine);
    if time < 32 {
        bail!(
            "--bits-sequence {seq} + --bits-machine-id {machine} leave {time} bits of time: Sonyflake refuses fewer than 32"
        );
    }
    let unit = match &args.time_unit {
        None => 10,
        Some(t) => {
            let d: jiff::SignedDuration = t
                .trim()
                .parse()
                .with_context(|| format!("--time-unit {t:?} is not a duration (10ms, 1s)"))?;
            let ms = u64::try_from(d.as_millis()).unwrap_or(0);
            if ms == 0 || d.as_nanos() % 1_000_000 != 0 {
                bail!(
                    "--time-unit {t:?}: snowdrift's layouts count whole milliseconds, 1ms or more"
                );
            }
            ms
        }
    };
    let start = match &args.start_time {
        Some(t) => parse_epoch(t).context("--start-time")?,
        None if v2 => 1_735_689_600_000,
        None => 1_409_529_600_000,
    };
    // Sonyflake counts whole units since the start time's unit: the epoch is that unit.
    let epoch = start / unit * unit;
    let spec = format!("time:{time},seq:{seq},machine:{machine}");
    let layout = Layout::from_spec(&spec, unit, epoch).context("Sonyflake's layout")?;
    Ok((layout, if v2 { "Sonyflake v2" } else { "Sonyflake" }))
}

/// Sonyflake's default MachineID of a host: its private IPv4 address's lower 16 bits.
fn machine_of(ip: Ipv4Addr) -> u64 {
    let o = ip.octets();
    u64::from(o[2]) << 8 | u64::from(o[3])
}

fn is_private(ip: Ipv4Addr) -> bool {
    ip.is_private() || ip.is_link_local()
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
    let (layout, which) = peer_layout(&args)?;
    let space = 1u64 << layout.node_bits();
    let now = crate::clock::process_clock()?.now_ms();
    let last = match &args.last_issued {
        Some(t) => parse_epoch(t).context("--last-issued")?,
        None => now,
    };
    say!(
        out,
        "Plan: import {which}: layout {} of {} ms from {}",
        snowdrift_core::layout::migrate::spec(&layout),
        layout.unit_ms(),
        format_ms(layout.epoch_ms())
    );
    let mut machines: Vec<(u64, String)> = Vec::new();
    for ip in &args.ips {
        if !is_private(*ip) {
            bail!(
                "--ips {ip} is no private IPv4 address: Sonyflake's default MachineID takes the first private one (10/8, 172.16/12, 192.168/16, 169.254/16); give that one"
            );
        }
        let id = machine_of(*ip);
        if id >= space {
            bail!(
                "host {ip}: machine ID {id} (its lower 16 bits) does not fit {} bits: Sonyflake refuses to start there (ErrInvalidMachineID); leave the host out",
                layout.node_bits()
            );
        }
        machines.push((id, format!("host {ip}")));
    }
    for id in &args.machine_ids {
        if *id >= space {
            bail!(
                "--machine-ids {id} does not fit {} bits of machine ID: Sonyflake refuses it",
                layout.node_bits()
            );
        }
        machines.push((*id, format!("MachineID {id}")));
    }
    machines.sort();
    if let Some(w) = machines.windows(2).find(|w| w[0].0 == w[1].0) {
        bail!(
            "{} and {} have the same machine ID {}: Sonyflake issued the same IDs on both; give each host's own",
            w[0].1,
            w[1].1,
            w[0].0
        );
    }
    say!(
        out,
        "\nWorker IDs: each host keeps its machine ID as its worker ID:"
    );
    if !args.ips.is_empty() {
        let keeps = config.as_ref().is_some_and(|c| {
            c.worker.registry == Registry::Derived
                && c.worker.derive == Derive::Ip
                && c.worker.bits_from == BitsFrom::Low
        });
        for ip in &args.ips {
            // The server's own derivation, so what is printed is what it takes.
            let derived = WorkerSource::Ip(Some((*ip).into()))
                .resolve(space, "")?
                .unwrap_or(u64::MAX);
            say!(
                out,
                "  host {ip}: Sonyflake machine ID {}, snowdrift worker ID {derived} (worker.derive = \"ip\", bits_from = \"low\")",
                machine_of(*ip)
            );
            if derived != machine_of(*ip) {
                bail!(
                    "host {ip}: snowdrift derives worker ID {derived}, not Sonyflake's {}",
                    machine_of(*ip)
                );
            }
        }
        if keeps {
            say!(
                out,
                "  the config's [worker] (derived from the IP's low bits) keeps them."
            );
        } else {
            say!(
                out,
                "\n  [worker]\n  registry = \"derived\"\n  derive = \"ip\"\n  bits_from = \"low\"\n  # ip = \"10.0.1.7\" or interface = \"eth0\" where the host's first address is not its private one (Sonyflake takes the first private one)\n{}",
                verify_line(&args)
            );
        }
    } else {
        for id in &args.machine_ids {
            say!(
                out,
                "  on the host whose MachineID was {id}:  [worker] registry = \"static\", id = {id}"
            );
        }
        say!(out, "{}", verify_line(&args));
    }
    let target = super::target::snowflake(&args.registry, config.as_ref(), &layout)?;
    let Some(target) = target else {
        say!(
            out,
            "\nNo registry given (--config, or --registry and --generator): no marks planned. snowdrift's servers issue from their own clocks; give a registry to keep a server whose clock is behind {} from issuing below Sonyflake's last IDs.",
            format_ms(last)
        );
        say!(out, "\n{}", generator_lines("flake", &layout));
        say!(out, "{}", closing(false, 0));
        out!("{out}")?;
        return Ok(());
    };
    let check = marks::check_layout(&layout, &target, now)?;
    if let Some(report) = &check.report {
        say!(
            out,
            "\nGenerator {:?}'s layout differs from Sonyflake's; snowdrift layout migrate says:\n{report}",
            target.generator
        );
    }
    let gen_space = 1u64
        .checked_shl(target.layout.node_bits())
        .unwrap_or(u64::MAX);
    let floor = marks::next_tick(&layout, last);
    let floors: Vec<MarkFloor> = machines
        .iter()
        .filter(|(id, _)| *id < gen_space)
        .map(|(id, _)| MarkFloor {
            worker_id: *id,
            at_least_ms: floor,
            from_clock: args.last_issued.is_none(),
        })
        .collect();
    let planned = marks::preview(&target, &floors, &check.record).await?;
    out.push_str(&marks::render(&target, &planned, &|id| {
        machines
            .iter()
            .find(|(m, _)| *m == id)
            .map_or(String::new(), |(_, from)| from.clone())
    }));
    say!(
        out,
        "  each mark: the {} ms tick after Sonyflake's last ID ({})",
        layout.unit_ms(),
        format_ms(last)
    );
    if target.registry.starts_with("file://") {
        say!(
            out,
            "  the registry is lock files on one machine: these marks help only servers on this host; run the import on each host, or lease on a coordinator (worker.verify_with)"
        );
    }
    if !target.configured {
        say!(out, "\n{}", generator_lines(&target.generator, &layout));
    }
    say!(
        out,
        "Not carried over: Sonyflake's CheckMachineID (snowdrift's registry refuses a second live holder of a worker ID instead), and IDs Sonyflake issues after --last-issued: stop it first."
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

fn verify_line(args: &Args) -> String {
    match &args.registry.registry {
        Some(url) => format!("  verify_with = {}     # a second host with the same ID is refused", quote(url)),
        None => "  verify_with = \"etcd://...\"   # a coordinator: a second host with the same ID is refused".into(),
    }
}
