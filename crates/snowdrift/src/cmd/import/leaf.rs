//! `snowdrift import leaf`: Leaf's segment table is snowdrift's own, checked and adopted
//! (or its tags carried to another store), and Leaf's snowflake workers in ZooKeeper become
//! worker IDs whose high-water marks are above every time Leaf issued under them.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use snowdrift_core::clock::Clock;
use snowdrift_core::layout::{Layout, format_ms, parse_epoch};
use snowdrift_store::peer::leaf::{self, LeafWorker, MAX_WORKER_ID, REPORT_EVERY_MS};
use snowdrift_store::segment::{TagFloor, inspect};
use snowdrift_store::worker::MarkFloor;

use super::target::{ConfigArgs, RegistryFlags, Stores, generator_lines, quote, worker_lines};
use super::{closing, marks, tags};

/// Leaf's snowflake layout (`SnowflakeIDGenImpl`): 41 bits of ms, a 10-bit worker ID, 12
/// bits of sequence.
const LEAF_BITS: &str = "time:41,worker:10,seq:12";

/// Leaf's default epoch (`twepoch`), Twitter's.
const LEAF_EPOCH: &str = "1288834974657";

/// Carry Meituan Leaf's segment tags and snowflake workers over.
///
/// Segments: Leaf's table (leaf_alloc) is the table snowdrift's segment store reads and
/// writes. Its columns are checked against snowdrift's (a table that differs is refused,
/// naming the column); with no other store given it is adopted as it is (point [store] url
/// at it: the plan prints the lines; --apply lets snowdrift add its three template columns,
/// whose defaults Leaf never notices), else every tag is carried to the store given with
/// its max_id (Leaf's next ID) and step, a tag already higher kept.
///
/// Snowflake: every Leaf server's znode /snowflake/{leaf.name}/forever/{ip:port}-{seq}
/// names its worker ID (the sequence number) and its clock at its last report (every 3 s).
/// Each worker ID gets a high-water mark on snowdrift's registry above that report plus 3 s,
/// so a snowdrift server with Leaf's layout never issues an ID a
/// Leaf server issued; the mark is written under the ID's lease, as a server writes it,
/// with the layout beside it. A worker ID a live snowdrift server holds is refused.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
snowdrift import leaf --source mysql://leaf@db/leaf --zookeeper zookeeper://zk:2181 --config snowdrift.toml\n  \
snowdrift import leaf --zookeeper zookeeper://zk:2181 --leaf-name leaf-prod --registry etcd://etcd:2379 --generator leaf --apply")]
pub struct Args {
    /// Leaf's segment database (mysql://, mariadb://, postgres://), as Leaf's
    /// jdbc.url names it.
    #[arg(long, value_name = "URL", required_unless_present = "zookeeper")]
    source: Option<String>,
    /// Leaf's segment table.
    #[arg(long, value_name = "NAME", default_value = "leaf_alloc")]
    table: String,
    /// Leaf's ZooKeeper (leaf.snowflake.zk.address), as zookeeper://HOST:PORT[,...].
    #[arg(long, value_name = "URL")]
    zookeeper: Option<String>,
    /// Leaf's leaf.name: its znodes are under /snowflake/{NAME}. Default: the only one.
    #[arg(long, value_name = "NAME", requires = "zookeeper")]
    leaf_name: Option<String>,
    /// Leaf's snowflake epoch (twepoch), ms since 1970 or RFC 3339.
    #[arg(long, value_name = "EPOCH", default_value = LEAF_EPOCH)]
    epoch: String,
    /// The store the tags go to, when not Leaf's own table: as [store] url (several for
    /// striped stores). Default: --config's [store], else Leaf's database (adopted).
    #[arg(
        long = "store",
        value_name = "URL",
        value_delimiter = ',',
        conflicts_with = "config"
    )]
    stores: Vec<String>,
    #[command(flatten)]
    registry: RegistryFlags,
    #[command(flatten)]
    common: ConfigArgs,
}

/// The floor of each Leaf worker: the start of the millisecond after its last report plus
/// the report interval, what it may have issued until it stopped. Taken from Leaf's own
/// data, so a second run finds the same floors.
fn mark_floors(
    workers: &[LeafWorker],
    layout: &Layout,
    space: u64,
) -> (Vec<MarkFloor>, Vec<String>) {
    let mut floors = Vec::new();
    let mut skipped = Vec::new();
    for w in workers {
        if w.worker_id > MAX_WORKER_ID {
            skipped.push(format!(
                "{} (worker ID {} is above {MAX_WORKER_ID}: Leaf refused to start with it, so it issued nothing)",
                w.znode, w.worker_id
            ));
            continue;
        }
        if w.worker_id >= space {
            skipped.push(format!(
                "{} (worker ID {} is outside the generator's {space} worker IDs: no snowdrift server can take it)",
                w.znode, w.worker_id
            ));
            continue;
        }
        let last = w.timestamp_ms.saturating_add(REPORT_EVERY_MS);
        floors.push(MarkFloor {
            worker_id: w.worker_id,
            at_least_ms: marks::next_tick(layout, last),
            from_clock: false,
        });
    }
    (floors, skipped)
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
    let mut changes = 0;
    let mut apply_tags = None;
    let mut apply_marks = None;
    let mut lines = String::new();
    say!(out, "Plan: import Meituan Leaf");
    if let Some(source) = &args.source {
        let shown = snowdrift_store::mask_url(source);
        let found = inspect::inspect(source, &args.table)
            .await
            .with_context(|| format!("reading Leaf's database {shown}"))?;
        found.check(&format!("Leaf's database {shown}"))?;
        let has_template_columns = ["id_template", "utc_offset", "period_key"]
            .iter()
            .all(|c| found.columns.iter().any(|(n, _)| n == c));
        say!(
            out,
            "\nLeaf's table {} on {shown}: its columns biz_tag, max_id, step, description, update_time are snowdrift's segment table's; {} tag(s).",
            args.table,
            found.tags.len()
        );
        let leaf_tags: Vec<_> = found.tags.iter().filter(|t| t.template.is_none()).collect();
        let floors: Vec<TagFloor> = leaf_tags
            .iter()
            .map(|t| TagFloor {
                tag: t.tag.clone(),
                // Leaf's segments are [max_id - step, max_id): max_id is its next ID.
                next_id: t.max_id.max(1),
                step: t.step,
                description: t.description.clone(),
            })
            .collect();
        let targets = match super::target::stores(
            &super::target::StoreFlags {
                stores: args.stores.clone(),
                table: None,
            },
            config.as_ref(),
        )? {
            Some(s) => s,
            None => Stores {
                urls: vec![source.clone()],
                table: args.table.clone(),
            },
        };
        let adopted = targets.urls == [source.clone()] && targets.table == args.table;
        let plan = tags::preview(&targets, &floors).await?;
        let from: BTreeMap<&str, String> = leaf_tags
            .iter()
            .map(|t| {
                (
                    t.tag.as_str(),
                    format!("Leaf max_id {}, step {}", t.max_id, t.step),
                )
            })
            .collect();
        out.push_str(&tags::render(&plan, &|tag| {
            from.get(tag).cloned().unwrap_or_default()
        }));
        if adopted {
            say!(
                out,
                "Adopted: snowdrift serves Leaf's table as it is, each tag under its name (and on Leaf's /api/segment/get/{{tag}}); Leaf and snowdrift servers may share it while clients move (a claim is one UPDATE ... max_id = max_id + step)."
            );
            if !has_template_columns {
                say!(
                    out,
                    "With --apply (and at every snowdrift start) the table gets the columns id_template, utc_offset and period_key, whose defaults leave Leaf's rows as they are."
                );
                changes += 1;
            }
            if config.is_none() {
                lines.push_str(&format!(
                    "[store]\nurl = {}\ntable = {}\n\n[leaf]\nerrors = \"leaf\"\n\n",
                    quote(source),
                    quote(&args.table)
                ));
            }
        }
        changes += plan.changes();
        let add_columns = adopted && !has_template_columns;
        apply_tags = Some((plan, floors, add_columns, targets));
    }
    if let Some(zk) = &args.zookeeper {
        let shown = snowdrift_store::mask_url(zk);
        let found = leaf::read(zk, args.leaf_name.as_deref())
            .await
            .with_context(|| format!("reading Leaf's snowflake workers on {shown}"))?;
        let epoch = parse_epoch(&args.epoch).context("--epoch")?;
        let layout = Layout::from_spec(LEAF_BITS, 1, epoch).context("Leaf's layout")?;
        let Some(target) = super::target::snowflake(&args.registry, config.as_ref(), &layout)?
        else {
            bail!(
                "Leaf's snowflake workers need snowdrift's worker registry for their marks: pass --config FILE (its snowflake generator's [worker]) or --registry URL --generator NAME"
            );
        };
        let now = crate::clock::process_clock()?.now_ms();
        let check = marks::check_layout(&layout, &target, now)?;
        say!(
            out,
            "\nLeaf's snowflake workers on {shown} (/snowflake/{}/forever): {} znode(s); layout {LEAF_BITS}, 1 ms from {}.",
            found.name,
            found.workers.len(),
            format_ms(epoch)
        );
        if let Some(report) = &check.report {
            say!(
                out,
                "Generator {:?}'s layout differs from Leaf's; snowdrift layout migrate says:\n{report}",
                target.generator
            );
        }
        let space = 1u64
            .checked_shl(target.layout.node_bits())
            .unwrap_or(u64::MAX);
        let (floors, skipped) = mark_floors(&found.workers, &layout, space);
        let planned = marks::preview(&target, &floors, &check.record).await?;
        let by_id: BTreeMap<u64, &LeafWorker> =
            found.workers.iter().map(|w| (w.worker_id, w)).collect();
        out.push_str(&marks::render(&target, &planned, &|id| {
            by_id.get(&id).map_or(String::new(), |w| {
                format!("Leaf {} reported {}", w.address, format_ms(w.timestamp_ms))
            })
        }));
        for s in &skipped {
            say!(out, "  skipped: {s}");
        }
        say!(
            out,
            "  each mark: the ms after the last report + {} s (Leaf reports every 3 s while it runs); snowdrift's servers issue from their own clock on, after it",
            REPORT_EVERY_MS / 1000
        );
        if !target.configured {
            lines.push_str(&worker_lines(&target.registry, &args.registry.namespace));
            lines.push('\n');
            lines.push_str(&generator_lines(&target.generator, &layout));
            lines.push_str("random_sequence_start = 100   # each ms's sequence starts below 100, as Leaf's\n\n");
        }
        changes += planned.iter().filter(|c| c.changes()).count();
        apply_marks = Some((target, marks::to_write(&planned, &floors), check.record));
    }
    if !lines.is_empty() {
        say!(
            out,
            "\nConfig lines for snowdrift's servers (add them to the config; --apply does not write them):\n\n{lines}"
        );
    }
    say!(
        out,
        "Not carried over: Leaf's local workerID.properties cache (snowdrift leases its worker IDs; a server never starts on a cached one), and the IDs a Leaf server issues after this import: stop them first."
    );
    out!("{out}")?;
    if !args.common.apply || changes == 0 {
        outln!("\n{}", closing(false, changes))?;
        return Ok(());
    }
    let mut written = 0;
    if let Some((plan, floors, add_columns, targets)) = &apply_tags {
        if *add_columns {
            // Opening the store as a server does adds the template columns.
            snowdrift_store::segment::SegmentStore::connect(&targets.urls[0], &targets.table)
                .await
                .context("opening Leaf's table as snowdrift's store")?;
            written += 1;
        }
        written += tags::apply(plan, floors).await?.changes();
    }
    if let Some((target, floors, record)) = &apply_marks {
        written += marks::apply(target, floors, record)
            .await?
            .iter()
            .filter(|c| c.changes())
            .count();
    }
    outln!("\n{}", closing(true, written))?;
    Ok(())
}
