//! `snowdrift workers list`: the worker IDs held on a registry, by whom, since when, how long
//! their leases last, their high-water marks and layouts, and which IDs are free.

use anyhow::{Context, Result};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::{format_ms, migrate};
use snowdrift_store::worker::{Mark, WorkerEntry, WorkerList, WorkerRegistry, duration_text};

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
/// mark, layout) and the free ones; what cannot be read is flagged, never fatal.
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
    let (backend, listed) = crate::store_args::runtime()?.block_on(async {
        let registry = WorkerRegistry::connect(&args.registry, &namespace)
            .await
            .with_context(|| format!("opening the worker registry (namespace {namespace:?})"))?;
        let listed = registry
            .list()
            .await
            .with_context(|| format!("listing worker IDs under namespace {namespace:?}"))?;
        anyhow::Ok((registry.backend(), listed))
    })?;
    let WorkerList {
        mut entries,
        unreadable,
        ..
    } = listed;
    // The number of IDs: the layout given, else the one the holders recorded.
    let mut recorded = Vec::new();
    for e in &mut entries {
        let Some(r) = e.layout.clone() else { continue };
        match migrate::parse_record(&r) {
            Ok(l) => recorded.push(l.node_bits()),
            Err(err) => e.flag(format!(
                "its layout record {r:?} cannot be read ({err}): a server refuses to start beside it (it cannot compare layouts) or under this ID; it was edited by hand, put back the holder's layout. It does not count for the number of worker IDs: give --layout or --bits"
            )),
        }
    }
    recorded.sort_unstable();
    recorded.dedup();
    let node_bits = match &layout {
        Some(l) => Ok(l.node_bits()),
        None => match recorded.as_slice() {
            [] => Err("every ID not listed (give --layout or --bits to count them)".to_string()),
            [bits] => Ok(*bits),
            _ => Err(format!(
                "not counted: the held IDs recorded layouts with different node bits ({}); give the layout with --layout or --bits",
                recorded
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
    };
    let now = crate::clock::process_clock()?.now_ms();
    let space = node_bits
        .as_ref()
        .ok()
        .map(|b| 1u64.checked_shl(*b).unwrap_or(u64::MAX));
    let free = space.map(|s| free_ranges(&entries, s));
    let free_count = free
        .as_ref()
        .map(|f| f.iter().map(|(a, b)| b - a + 1).sum::<u64>());
    if args.json {
        let v = serde_json::json!({
            "registry": snowdrift_store::mask_url(&args.registry),
            "namespace": namespace,
            "space": space,
            "held": entries.iter().map(|e| entry_json(e, now)).collect::<Vec<_>>(),
            "unreadable": unreadable.iter().map(|u| serde_json::json!({"key": u.key, "problem": u.problem})).collect::<Vec<_>>(),
            "free": free.as_ref().map(|f| f.iter().map(|(a, b)| serde_json::json!([a, b])).collect::<Vec<_>>()),
            "free_count": free_count,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    outln!(
        "registry  {} (namespace {namespace})",
        printable(&snowdrift_store::mask_url(&args.registry))
    )?;
    if entries.is_empty() {
        outln!("held      none")?;
    } else {
        outln!(
            "{:>9}  {:<8}  {:<24}  {:<24}  {:<24}  holder",
            "worker",
            "state",
            "since",
            "lease left",
            "mark"
        )?;
        for e in &entries {
            outln!(
                "{:>9}  {:<8}  {:<24}  {:<24}  {:<24}  {}",
                e.worker_id,
                state(e),
                e.since_ms.map_or("unknown".into(), format_ms),
                lease_text(e, backend),
                mark_text(e),
                printable(&e.holder)
            )?;
            if let Some(p) = &e.problem {
                let label = if reserved(e) { "note" } else { "problem" };
                outln!("{:>9}  {label}: {}", "", printable(p))?;
            }
        }
    }
    for u in &unreadable {
        outln!(
            "unreadable  {}: {}",
            printable(&u.key),
            printable(&u.problem)
        )?;
    }
    match (&free, space, &node_bits) {
        (Some(f), Some(s), _) => outln!(
            "free      {} of {s}: {}",
            free_count.unwrap_or(0),
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
        )?,
        (_, _, Err(why)) => outln!("free      {why}")?,
        _ => {}
    }
    Ok(())
}

/// Whether the entry is a worker ID reserved for a database's ID functions (`snowdrift sql
/// install`), not a stuck lease.
fn reserved(e: &WorkerEntry) -> bool {
    e.never_expires
        && e.holder
            .starts_with(snowdrift_store::sql_functions::RESERVATION_PREFIX)
}

/// `live`, `expiring`, `reserved` for a database's ID functions, or `stuck` for a lease
/// nothing ends and no server can use.
fn state(e: &WorkerEntry) -> &'static str {
    if reserved(e) {
        "reserved"
    } else if e.never_expires {
        "stuck"
    } else if e.expiring {
        "expiring"
    } else {
        "live"
    }
}

fn lease_text(e: &WorkerEntry, backend: &str) -> String {
    if reserved(e) {
        return "until sql uninstall".into();
    }
    if e.never_expires {
        return "never expires".into();
    }
    match (e.lease_left_ms, e.lease_ttl_ms) {
        (None, _) if backend == "file" => "while its process lives".to_string(),
        (None, _) => "unknown".to_string(),
        (Some(l), Some(t)) => format!("{} of {}", duration_text(l), duration_text(t)),
        (Some(l), None) => duration_text(l),
    }
}

fn mark_text(e: &WorkerEntry) -> String {
    match e.mark.map(Mark::from_stored) {
        None => "none".into(),
        Some(m) if m.extension > 0 => format!("{} (extension {})", format_ms(m.ms), m.extension),
        Some(m) => format_ms(m.ms),
    }
}

/// `text` with nothing a terminal acts on: every control character (C0, DEL, C1), Unicode
/// format character (bidi overrides and isolates, zero-width ones) and line or paragraph
/// separator is written as an escape (`\e`, `\n`, `\r`, `\t`, else `\u{202e}`), and a
/// backslash as `\\`, so what a registry holds can neither move the cursor, change colours,
/// reorder the line nor start a new one, and an escape in the output always means one.
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c == '\\' || needs_escape(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Control characters (Unicode category Cc), format characters (Cf: bidi controls,
/// zero-width characters, tags) and line and paragraph separators (Zl, Zp).
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c as u32,
            0x00AD | 0x0600..=0x0605 | 0x061C | 0x06DD | 0x070F | 0x0890..=0x0891 | 0x08E2
            | 0x180E | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
            | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F)
}

fn entry_json(e: &WorkerEntry, now: u64) -> serde_json::Value {
    let mark = e.mark.map(Mark::from_stored);
    serde_json::json!({
        "worker_id": e.worker_id,
        "holder": e.holder,
        "state": state(e),
        "since": e.since_ms.map(format_ms),
        "since_ms": e.since_ms,
        "lease_left_ms": e.lease_left_ms,
        "lease_ttl_ms": e.lease_ttl_ms,
        "never_expires": e.never_expires,
        "mark": mark.map(|m| format_ms(m.ms)),
        "mark_ms": mark.map(|m| m.ms),
        "mark_ahead_ms": mark.map(|m| m.ms.saturating_sub(now)),
        "extension": mark.map(|m| m.extension),
        "layout": e.layout,
        "problem": e.problem,
    })
}

/// The IDs in `0..space` no entry holds, as inclusive ranges: a stuck entry (one no server
/// can use) is not free either, since a server's claim skips it.
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
