//! Worker IDs carried over: the peer's layout against the generator's (`snowdrift layout
//! migrate`'s check when they differ), each ID's mark previewed and raised through the
//! registry's own lease, mark and layout writes.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use snowdrift_core::layout::migrate::{self, Verdict};
use snowdrift_core::layout::{Layout, format_ms};
use snowdrift_store::worker::{Mark, MarkChange, MarkFloor, WorkerRegistry};

use super::target::{Snowflake, holder};

/// How long the import leases each worker ID while it raises its mark.
const LEASE: Duration = Duration::from_secs(30);

/// Whether two layouts make the same IDs from the same worker ID: the same widths of time,
/// node and sequence bits in the same places (neighbouring node fields taken as one, since
/// a worker ID fills every node bit), with the same unit and epoch, whatever the fields
/// are named.
pub fn same_bits(a: &Layout, b: &Layout) -> bool {
    use snowdrift_core::layout::Role;
    let shape = |l: &Layout| {
        let mut out: Vec<(Role, u32)> = Vec::new();
        for f in l.fields() {
            match out.last_mut() {
                Some((Role::Node, bits)) if f.role() == Role::Node => *bits += u32::from(f.bits()),
                _ => out.push((f.role(), u32::from(f.bits()))),
            }
        }
        out
    };
    shape(a) == shape(b) && a.unit_ms() == b.unit_ms() && a.epoch_ms() == b.epoch_ms()
}

/// How the peer's layout stands to the generator's.
#[derive(Debug)]
pub struct LayoutCheck {
    /// The layout recorded beside the marks: the generator's when it makes the peer's IDs
    /// (so its servers see their own layout), else the peer's, so each server checks its
    /// switch against it at start.
    pub record: String,
    /// `snowdrift layout migrate`'s report, when the layouts differ.
    pub report: Option<String>,
}

/// Checks the generator's layout against the peer's at `now`: refused when the generator's
/// layout cannot issue now, or when a switch from the peer's is unsafe even with every
/// peer node stopped.
pub fn check_layout(peer: &Layout, target: &Snowflake, now: u64) -> Result<LayoutCheck> {
    if let Err(e) = target.layout.check_at(now) {
        bail!(
            "generator {:?}'s layout cannot issue now ({e}): choose a layout with time left (`snowdrift layout migrate --from ... --to ...` finds one above the peer's IDs)",
            target.generator
        );
    }
    if same_bits(peer, &target.layout) {
        return Ok(LayoutCheck {
            record: migrate::record(&target.layout),
            report: None,
        });
    }
    let (m, text) = super::super::layout_migrate::report(
        peer,
        "the peer's",
        &target.layout,
        &format!("generator {}", target.generator),
        now,
    );
    if m.verdict == Verdict::Unsafe {
        bail!(
            "generator {:?}'s layout {} may issue IDs the peer's layout {} issued (snowdrift layout migrate --from {} --to {} says unsafe at {}): give the generator the peer's layout, or one whose IDs start above the peer's",
            target.generator,
            migrate::record(&target.layout),
            migrate::record(peer),
            migrate::spec(peer),
            migrate::spec(&target.layout),
            format_ms(now)
        );
    }
    Ok(LayoutCheck {
        record: migrate::record(peer),
        report: Some(text),
    })
}

/// The first instant of the tick after the one `t_ms` falls in, under `layout`: a mark
/// there keeps every ID of that tick, the last one issued, behind.
pub fn next_tick(layout: &Layout, t_ms: u64) -> u64 {
    let (unit, epoch) = (layout.unit_ms(), layout.epoch_ms());
    let since = t_ms.saturating_sub(epoch);
    epoch.saturating_add((since / unit + 1).saturating_mul(unit))
}

/// Each worker ID's mark now and after, read without writing: a registry nothing ever
/// leased on (no table, no namespace znode) is left as it is and counts as empty.
pub async fn preview(
    target: &Snowflake,
    floors: &[MarkFloor],
    record: &str,
) -> Result<Vec<MarkChange>> {
    WorkerRegistry::preview_marks_at(&target.registry, &target.namespace, floors, record)
        .await
        .with_context(|| format!("reading the marks on {}", shown(target)))
}

/// Raises every worker ID's mark, each under a lease of the import's (see
/// `WorkerRegistry::raise_marks`).
pub async fn apply(
    target: &Snowflake,
    floors: &[MarkFloor],
    record: &str,
) -> Result<Vec<MarkChange>> {
    let registry = connect(target).await?;
    registry
        .raise_marks(floors, record, &holder(), LEASE)
        .await
        .with_context(|| format!("raising the marks on {}", shown(target)))
}

async fn connect(target: &Snowflake) -> Result<WorkerRegistry> {
    WorkerRegistry::connect(&target.registry, &target.namespace)
        .await
        .with_context(|| format!("opening the worker registry {}", shown(target)))
}

fn shown(target: &Snowflake) -> String {
    format!(
        "{} (namespace {})",
        snowdrift_store::mask_url(&target.registry),
        target.namespace
    )
}

fn mark_text(m: Option<Mark>) -> String {
    match m {
        None => "none".into(),
        Some(m) if m.extension > 0 => format!("{} (extension {})", format_ms(m.ms), m.extension),
        Some(m) => format_ms(m.ms),
    }
}

/// The lines beyond which a list of worker IDs is cut (the rest counted).
const SHOWN: usize = 40;

/// The plan's lines for the marks: each worker ID, its peer-side source (`from`), its mark
/// before and after.
pub fn render(target: &Snowflake, changes: &[MarkChange], from: &dyn Fn(u64) -> String) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nHigh-water marks on snowdrift's registry {} for generator {:?}:",
        shown(target),
        target.generator
    );
    if changes.is_empty() {
        let _ = writeln!(s, "  none");
        return s;
    }
    let _ = writeln!(
        s,
        "  {:>9}  {:<26}  {:<26}  {:<6}  FROM",
        "WORKER", "MARK BEFORE", "MARK AFTER", "CHANGE"
    );
    for c in changes.iter().take(SHOWN) {
        let verb = match (c.before, c.changes()) {
            (None, _) => "set",
            (Some(_), false) => "keep",
            (Some(b), true) if b < c.after => "raise",
            (Some(_), true) => "layout",
        };
        let _ = writeln!(
            s,
            "  {:>9}  {:<26}  {:<26}  {:<6}  {}",
            c.worker_id,
            mark_text(c.before),
            mark_text(Some(c.after)),
            verb,
            from(c.worker_id)
        );
    }
    if changes.len() > SHOWN {
        let _ = writeln!(
            s,
            "  ... and {} more worker IDs ({} of them change)",
            changes.len() - SHOWN,
            changes[SHOWN..].iter().filter(|c| c.changes()).count()
        );
    }
    if let Some(c) = changes.first() {
        let _ = writeln!(s, "  recorded beside each mark: layout {}", c.layout_after);
    }
    s
}

/// The floors whose worker IDs change: only those are leased and written, so a worker ID a
/// snowdrift server holds with a mark already high enough is left alone.
pub fn to_write(changes: &[MarkChange], floors: &[MarkFloor]) -> Vec<MarkFloor> {
    changes
        .iter()
        .zip(floors)
        .filter(|(c, _)| c.changes())
        .map(|(_, f)| *f)
        .collect()
}
