//! `snowdrift sql install|uninstall|status`: `snowdrift_id(generator)` written into a
//! database, under worker IDs reserved in the servers' own worker table there.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use snowdrift_core::layout::{Layout, format_ms, migrate};
use snowdrift_store::sql_functions::{self, GeneratorStatus, InstallOptions};
use snowdrift_store::worker::WorkerRegistry;

use crate::cmd::next::leased::parse_duration;
use crate::layout_args::LayoutArgs;
use crate::store_args::runtime;

/// IDs made inside the database: `snowdrift_id(generator)` for column defaults, triggers
/// and bulk loads, under worker IDs the servers never use.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    Install(InstallArgs),
    Uninstall(UninstallArgs),
    Status(StatusArgs),
}

/// The database and generator every subcommand names.
#[derive(Debug, Clone, clap::Args)]
struct Target {
    /// The database: postgres://USER@HOST/DB (PostgreSQL 15 or later) or
    /// mariadb://USER@HOST/DB (MariaDB 10.6 or later). The servers of the generator lease
    /// their worker IDs there (worker.registry = "sql", worker.url).
    #[arg(long = "store", value_name = "URL")]
    url: String,
    /// PostgreSQL: the schema the functions go into (default: the connection's current
    /// schema). MariaDB: they go into the URL's database.
    #[arg(long, value_name = "SCHEMA")]
    schema: Option<String>,
    /// The servers' worker registry, when it is not the database's own table: the same
    /// URL as their [worker] registry (etcd://HOST:2379, zookeeper://HOST:2181,
    /// redis://HOST:6379, file:///var/lib/snowdrift, or another SQL database). The worker
    /// IDs are reserved there, under the namespace {namespace}_{NAME}. The database cannot
    /// reach such a registry: its sessions do not check that the reservation is still
    /// there.
    #[arg(long, value_name = "URL")]
    registry: Option<String>,
}

/// Writes snowdrift_id(NAME) and snowdrift_ids(NAME, n) into the database and reserves
/// worker IDs of the generator's space for it in the servers' worker table. Run again by a
/// newer snowdrift, it writes the functions again and keeps everything else.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  snowdrift sql install --store postgres://app@db/shop --generator orders --layout twitter --workers 16\n  \
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowdrift_id('orders'), ...);"
)]
struct InstallArgs {
    #[command(flatten)]
    target: Target,
    /// The generator, as the servers' config names it: its worker IDs are leased in table
    /// {namespace}_{NAME}.
    #[arg(long, value_name = "NAME")]
    generator: String,
    /// The servers' worker.namespace.
    #[arg(long, value_name = "NS", default_value = "snowdrift_workers")]
    namespace: String,
    /// The generator's layout (the servers'); default: the one recorded in the worker
    /// table, else twitter.
    #[command(flatten)]
    layout: LayoutArgs,
    /// How many worker IDs to reserve for the database: the most transactions that make
    /// IDs at the same time.
    #[arg(long, value_name = "N", default_value_t = 16)]
    workers: u64,
    /// How far ahead of the clock each worker ID's high-water mark is written.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    window: Duration,
    /// How far ahead of the clock an ID's time may be when a tick's sequence is used up.
    #[arg(long, value_name = "DURATION", default_value = "0ms", value_parser = parse_duration)]
    max_lead: Duration,
    /// How long a call waits for a database clock that stepped back before it refuses.
    #[arg(long, value_name = "DURATION", default_value = "5ms", value_parser = parse_duration)]
    backward_wait: Duration,
    /// How long the install, and the first call after a crash, wait for the clock to pass
    /// the worker IDs' high-water marks.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    max_mark_wait: Duration,
    /// MariaDB: how long a session keeps its worker ID without a call (every call renews
    /// it); after it, another session may take it.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    lease_ttl: Duration,
    /// Tests only: the functions add the session's setting snowdrift.test_clock_offset_ms
    /// to the database clock.
    #[arg(long, hide = true)]
    test_clock: bool,
}

/// Removes NAME's functions: waits for the transactions issuing under its worker IDs,
/// writes each worker ID's last high-water mark into its row and gives it back to the
/// servers.
#[derive(Debug, clap::Args)]
struct UninstallArgs {
    #[command(flatten)]
    target: Target,
    /// The generator.
    #[arg(long, value_name = "NAME")]
    generator: String,
    /// The longest wait for transactions still issuing IDs.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    wait: Duration,
}

/// The generators installed in the database: their worker IDs, the sessions that hold
/// them, the last tick and high-water mark of each.
#[derive(Debug, clap::Args)]
struct StatusArgs {
    #[command(flatten)]
    target: Target,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Install(a) => install(a),
        Command::Uninstall(a) => uninstall(a),
        Command::Status(a) => status(a),
    }
}

/// The layout given, else the one the worker table records, else the default preset.
async fn layout(args: &InstallArgs, table: &str) -> Result<Layout> {
    if args.layout.layout.is_some() || args.layout.bits.is_some() {
        return Ok(args.layout.resolve(None)?.0);
    }
    let registry = WorkerRegistry::connect(
        args.target.registry.as_deref().unwrap_or(&args.target.url),
        table,
    )
    .await
    .with_context(|| format!("opening the worker table {table:?}"))?;
    let listed = registry.list().await?;
    let mut recorded: Vec<String> = listed
        .entries
        .into_iter()
        .filter_map(|e| e.layout)
        .collect();
    recorded.sort();
    recorded.dedup();
    match recorded.as_slice() {
        [] => Ok(args.layout.resolve(None)?.0),
        [one] => Ok(migrate::parse_record(one)?),
        many => bail!(
            "the worker table {table:?} records several layouts ({}): give the generator's with --layout or --bits",
            many.join(", ")
        ),
    }
}

fn install(args: InstallArgs) -> Result<()> {
    let table =
        snowdrift_server::kinds::snowflake::lease::namespace(&args.namespace, &args.generator);
    let rt = runtime()?;
    let (installed, layout) = rt.block_on(async {
        let layout = layout(&args, &table).await?;
        let mut options = InstallOptions::new(&args.generator, layout.clone(), &table);
        options.schema = args.target.schema.clone();
        options.registry_url = args.target.registry.clone();
        options.workers = args.workers;
        options.window = args.window;
        options.max_lead = args.max_lead;
        options.backward_wait = args.backward_wait;
        options.max_mark_wait = args.max_mark_wait;
        options.lease_ttl = args.lease_ttl;
        options.test_clock = args.test_clock;
        let installed = sql_functions::install(&args.target.url, &options)
            .await
            .with_context(|| format!("installing generator {:?}", args.generator))?;
        anyhow::Ok((installed, layout))
    })?;
    let verb = if installed.replaced {
        "wrote again (counters, marks and reservation kept)"
    } else {
        "installed"
    };
    let mut ids = installed.workers.clone();
    ids.sort_unstable();
    outln!(
        "{verb} snowdrift_id('{}') in schema {} (layout {})",
        args.generator,
        installed.schema,
        migrate::record(&layout)
    )?;
    let ids_text = ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    match &args.target.registry {
        None => outln!(
            "worker IDs {ids_text} reserved in table {table} for {}",
            installed.holder
        )?,
        Some(_) => {
            outln!(
                "worker IDs {ids_text} reserved in the servers' registry (namespace {table}) for {}",
                installed.holder
            )?;
            outln!(
                "note: the database cannot reach that registry, so its sessions do not check that the reservation is still there (as they do in a SQL table): deleting those entries by hand lets a server repeat the database's IDs; free them only with snowdrift sql uninstall --registry"
            )?;
        }
    }
    let (s, g) = (&installed.schema, &args.generator);
    if args.target.url.starts_with("postgres") {
        outln!(
            "use: id bigint DEFAULT {s}.snowdrift_id('{g}'); many at once: SELECT * FROM {s}.snowdrift_ids('{g}', 1000)"
        )?;
    } else {
        // MariaDB takes no stored function as a column DEFAULT.
        outln!(
            "use: CREATE TRIGGER t_id BEFORE INSERT ON t FOR EACH ROW SET NEW.id = IF(NEW.id = 0, snowdrift_id('{g}'), NEW.id); \
             many at once (a JSON array): SELECT snowdrift_ids('{g}', 1000)"
        )?;
    }
    Ok(())
}

fn uninstall(args: UninstallArgs) -> Result<()> {
    let gone = runtime()?
        .block_on(sql_functions::uninstall(
            &args.target.url,
            &args.generator,
            args.target.schema.as_deref(),
            args.wait,
            args.target.registry.as_deref(),
        ))
        .with_context(|| format!("uninstalling generator {:?}", args.generator))?;
    for (w, mark) in &gone.released {
        outln!(
            "worker ID {w} given back, high-water mark {}",
            format_ms(*mark)
        )?;
    }
    for w in &gone.not_reserved {
        eprintln!(
            "snowdrift: warning: worker ID {w} was no longer reserved for the database (its row was edited by hand): its high-water mark was not written; check it with snowdrift workers list"
        );
    }
    outln!("removed snowdrift_id('{}')", args.generator)?;
    Ok(())
}

fn status(args: StatusArgs) -> Result<()> {
    let all = runtime()?
        .block_on(sql_functions::status(
            &args.target.url,
            args.target.schema.as_deref(),
            args.target.registry.as_deref(),
        ))
        .context("reading the installed generators")?;
    if args.json {
        let json: Vec<serde_json::Value> = all.iter().map(to_json).collect();
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    if all.is_empty() {
        outln!("no generator is installed in this schema")?;
    }
    for g in &all {
        let place = match sql_functions::external_registry(&g.registry_table) {
            Some((backend, namespace)) => format!(
                "reserved in the servers' {backend} registry, namespace {namespace}{}",
                if g.reservation_checked {
                    ""
                } else {
                    " (not checked: pass --registry URL)"
                }
            ),
            None => format!("table {}", g.registry_table),
        };
        outln!(
            "{} (schema {}, layout {}, {place}, holder {}{})",
            g.name,
            g.schema,
            g.layout,
            g.holder,
            if g.fenced {
                ""
            } else {
                "; not fenced since the database started: the first call moves the counters above their marks"
            }
        )?;
        outln!(
            "  worker  reserved  last tick                  mark                       claimed by / in use by"
        )?;
        for w in &g.workers {
            let who = |s: &Option<sql_functions::Session>| {
                s.as_ref().map_or("-".to_string(), |s| {
                    format!(
                        "pid {} {}{}{}",
                        s.pid,
                        s.user.as_deref().unwrap_or("?"),
                        s.application
                            .as_deref()
                            .filter(|a| !a.is_empty())
                            .map(|a| format!(" ({a})"))
                            .unwrap_or_default(),
                        s.state
                            .as_deref()
                            .map(|st| format!(" [{st}]"))
                            .unwrap_or_default()
                    )
                })
            };
            outln!(
                "  {:<6}  {:<8}  {:<25}  {:<25}  {} / {}",
                w.worker_id,
                match (g.reservation_checked, w.reserved) {
                    (false, _) => "?",
                    (true, true) => "yes",
                    (true, false) => "LOST",
                },
                w.last_ms.map_or("-".into(), format_ms),
                w.mark_ms.map_or("-".into(), format_ms),
                who(&w.claimed_by),
                who(&w.in_use_by)
            )?;
        }
    }
    Ok(())
}

fn to_json(g: &GeneratorStatus) -> serde_json::Value {
    let session = |s: &Option<sql_functions::Session>| {
        s.as_ref().map(|s| {
            serde_json::json!({
                "pid": s.pid, "user": s.user, "application": s.application,
                "client": s.client, "state": s.state,
            })
        })
    };
    serde_json::json!({
        "name": g.name,
        "schema": g.schema,
        "layout": g.layout,
        "registry_table": g.registry_table,
        "reservation_checked": g.reservation_checked,
        "holder": g.holder,
        "fenced": g.fenced,
        "workers": g.workers.iter().map(|w| serde_json::json!({
            "worker_id": w.worker_id,
            "reserved": w.reserved,
            "last_ms": w.last_ms,
            "mark_ms": w.mark_ms,
            "claimed_by": session(&w.claimed_by),
            "in_use_by": session(&w.in_use_by),
        })).collect::<Vec<_>>(),
    })
}
