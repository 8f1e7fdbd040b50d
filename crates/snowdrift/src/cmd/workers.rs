//! `snowdrift workers list`: the worker IDs held on a registry, by whom, since when, how long
//! their leases last, their high-water marks and layouts, and which IDs are free.

use anyhow::{Context, Result, bail};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::{format_ms, migrate};
use snowdrift_store::worker::{Mark, WorkerEntry, WorkerRegistry};

use crate::layout_args::LayoutArgs;

/// Worker IDs on a registry: who holds which, until when, and which are free.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    List(ListArgs),
}

/// Lists every worker ID held on a registry (holder, claimed since, lease left, high-water
/// mark, layout) and the free ones.
#[derive(Debug, clap::Args)]
#[command(after_help = "A server's generator NAME leases under the namespace \
{worker.namespace}_{NAME} (snowdrift_workers_NAME by default): give --generator NAME, or the whole \
--namespace.\nExamples:\n  snowdrift workers list --registry etcd://127.0.0.1:2379 --generator snowflake\n  \
snowdrift workers list --registry file:///var/lib/snowdrift/workers --generator sf --json\n  \
snowdrift workers list --registry postgres://root@db/ids --namespace snowdrift_workers --layout sonyflake")]
pub struct ListArgs {
    /// The registry: file://DIR, etcd://HOST:2379, zookeeper://HOST:2181, sqlite://FILE,
    /// postgres://..., mysql://..., redis://HOST:6379 (as worker.url or worker.path).
    #[arg(long, value_name = "URL")]
    registry: String,
    /// The registry namespace (a server's worker.namespace, followed by _GENERATOR).
    #[arg(long, value_name = "NS", default_value = "snowdrift_workers")]
    namespace: String,
    /// A server's snowflake generator: the namespace becomes NS_NAME, as the server's.
    #[arg(long, value_name = "NAME")]
    generator: Option<String>,
    /// The layout, for the number of worker IDs (2^node bits) and so the free ones; default:
    /// the layout recorded with the held IDs.
    #[command(flatten)]
    layout: LayoutArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Command::List(a) => list(a),
    }
}

fn namespace(args: &ListArgs) -> String {
    match &args.generator {
        Some(name) => snowdrift_server::kinds::snowflake::lease::namespace(&args.namespace, name),
        None => args.namespace.clone(),
    }
}

fn list(args: ListArgs) -> Result<()> {
    let namespace = namespace(&args);
    let given_layout = args.layout.layout.is_some() || args.layout.bits.is_some();
    let layout = if given_layout {
        Some(args.layout.resolve(None)?.0)
    } else {
        None
    };
    let entries = crate::store_args::runtime()?.block_on(async {
        let registry = WorkerRegistry::connect(&args.registry, &namespace)
            .await
            .with_context(|| format!("opening the worker registry (namespace {namespace:?})"))?;
        registry
            .list()
            .await
            .with_context(|| format!("listing worker IDs under namespace {namespace:?}"))
    })?;
    // The number of IDs: the layout given, else the one the holders recorded.
    let recorded: Vec<u32> = entries
        .iter()
        .filter_map(|e| e.layout.as_deref())
        .filter_map(|r| migrate::parse_record(r).ok())
        .map(|l| l.node_bits())
        .collect();
    let node_bits = match &layout {
        Some(l) => Some(l.node_bits()),
        None => recorded.iter().copied().max(),
    };
    if let Some(bits) = node_bits
        && recorded.iter().any(|b| *b != bits)
    {
        bail!(
            "the held IDs recorded layouts with different node bits ({recorded:?}); give the layout with --layout or --bits"
        );
    }
    let now = crate::clock::process_clock()?.now_ms();
    let space = node_bits.map(|b| 1u64.checked_shl(b).unwrap_or(u64::MAX));
    let free = space.map(|s| free_ranges(&entries, s));
    if args.json {
        let v = serde_json::json!({
            "registry": snowdrift_store::mask_url(&args.registry),
            "namespace": namespace,
            "space": space,
            "held": entries.iter().map(|e| entry_json(e, now)).collect::<Vec<_>>(),
            "free": free.as_ref().map(|f| f.iter().map(|(a, b)| serde_json::json!([a, b])).collect::<Vec<_>>()),
            "free_count": free.as_ref().map(|f| f.iter().map(|(a, b)| b - a + 1).sum::<u64>()),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "registry  {} (namespace {namespace})",
        snowdrift_store::mask_url(&args.registry)
    );
    if entries.is_empty() {
        println!("held      none");
    } else {
        println!(
            "{:>9}  {:<8}  {:<24}  {:<24}  {:<24}  holder",
            "worker", "state", "since", "lease left", "mark"
        );
        for e in &entries {
            let (state, left) = lease_text(e);
            println!(
                "{:>9}  {:<8}  {:<24}  {:<24}  {:<24}  {}",
                e.worker_id,
                state,
                e.since_ms.map_or("unknown".into(), format_ms),
                left,
                mark_text(e.mark),
                e.holder
            );
        }
    }
    match (&free, space) {
        (Some(f), Some(s)) => println!(
            "free      {} of {s}: {}",
            f.iter().map(|(a, b)| b - a + 1).sum::<u64>(),
            if f.is_empty() {
                "none".into()
            } else {
                f.iter()
                    .map(|(a, b)| {
                        if a == b {
                            a.to_string()
                        } else {
                            format!("{a}-{b}")
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        _ => println!("free      every ID not listed (give --layout or --bits to count them)"),
    }
    Ok(())
}

fn lease_text(e: &WorkerEntry) -> (&'static str, String) {
    let state = if e.expiring { "expiring" } else { "live" };
    let left = match (e.lease_left_ms, e.lease_ttl_ms) {
        (None, _) => "while its process lives".to_string(),
        (Some(l), Some(t)) => format!("{:.1} s of {:.1} s", l as f64 / 1000.0, t as f64 / 1000.0),
        (Some(l), None) => format!("{:.1} s", l as f64 / 1000.0),
    };
    (state, left)
}

fn mark_text(mark: Option<u64>) -> String {
    match mark.map(Mark::from_stored) {
        None => "none".into(),
        Some(m) if m.extension > 0 => format!("{} (extension {})", format_ms(m.ms), m.extension),
        Some(m) => format_ms(m.ms),
    }
}

fn entry_json(e: &WorkerEntry, now: u64) -> serde_json::Value {
    let mark = e.mark.map(Mark::from_stored);
    serde_json::json!({
        "worker_id": e.worker_id,
        "holder": e.holder,
        "state": if e.expiring { "expiring" } else { "live" },
        "since": e.since_ms.map(format_ms),
        "since_ms": e.since_ms,
        "lease_left_ms": e.lease_left_ms,
        "lease_ttl_ms": e.lease_ttl_ms,
        "mark": mark.map(|m| format_ms(m.ms)),
        "mark_ms": mark.map(|m| m.ms),
        "mark_ahead_ms": mark.map(|m| m.ms.saturating_sub(now)),
        "extension": mark.map(|m| m.extension),
        "layout": e.layout,
    })
}

/// The IDs in `0..space` no entry holds, as inclusive ranges.
fn free_ranges(entries: &[WorkerEntry], space: u64) -> Vec<(u64, u64)> {
    let mut held: Vec<u64> = entries
        .iter()
        .map(|e| e.worker_id)
        .filter(|id| *id < space)
        .collect();
    held.sort_unstable();
    held.dedup();
    let mut out = Vec::new();
    let mut next = 0u64;
    for id in held {
        if id > next {
            out.push((next, id - 1));
        }
        next = id + 1;
    }
    if next < space {
        out.push((next, space - 1));
    }
    out
}
