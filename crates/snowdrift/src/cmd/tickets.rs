//! `snowdrift tickets`: administration of Flickr-style ticket servers.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use snowdrift_store::ticket::{DEFAULT_GAP, DEFAULT_NAME, Grow, GrowPlan, ServerState};

use crate::store_args::runtime;

/// Administer ticket servers (generators of kind = "ticket").
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    Grow(GrowArgs),
}

/// Grow a ticket pool from N servers to M > N without new tables or sequences.
///
/// With N servers, server k hands out IDs ≡ k (mod N); with M servers, ≡ k (mod M). The
/// classes of N and of M overlap, so every server moves to a new start above every ticket any
/// server may have handed out: base = the highest current value + --gap, and server k's new
/// start is the smallest value above the base that is ≡ k (mod M).
///
/// Without --yes the command reads every server, prints the plan and changes nothing (on a
/// terminal it asks; otherwise it exits non-zero). Applying reads every server again and
/// changes nothing if one moved past the base, is unreachable, or (MySQL/MariaDB) has other
/// sessions connected to its database; then: PostgreSQL `ALTER SEQUENCE .. INCREMENT BY M
/// START WITH s RESTART WITH s`; MySQL/MariaDB `ALTER TABLE .. AUTO_INCREMENT = s` (the
/// new class in the comment of a table snowdrift created) and one ticket taken with the new
/// class, which must be s. New servers get their table or sequence created at their start.
/// Each server is then checked as the grown pool will check it.
///
/// Running snowdrift servers: stop every process taking tickets from these servers before
/// applying, and start them with the new list (in the same order) after. On MySQL/MariaDB
/// the increment and offset live in each connection's session, so a server left running
/// would go on counting in class k of N from the moved counter, into the other servers' new
/// classes: applying is refused while other sessions are connected to a ticket database.
/// On PostgreSQL the sequence carries the increment, so a server left running gets values
/// of the new classes (its own class check refuses most of them, and no value repeats), but
/// it must still be restarted with the new list to serve.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift tickets grow --from 2 --servers mysql://root@db1/t,mysql://root@db2/t,mysql://root@db3/t\n  snowdrift tickets grow --from 2 --to 3 --servers postgres://u@pg1/t,postgres://u@pg2/t,postgres://u@pg3/t --yes\n\nThen set servers = [...] of the ticket generator to the new list, in the same order, and\nstart the snowdrift servers again."
)]
pub struct GrowArgs {
    /// The grown pool's servers, in the order of their classes: the N current ones in their
    /// order (as in the generator's `servers = [...]`), then the new ones. Comma-separated
    /// or given several times.
    #[arg(
        long,
        value_name = "URL,URL,...",
        value_delimiter = ',',
        required = true
    )]
    servers: Vec<String>,
    /// N: how many servers the pool has now (the first N of --servers).
    #[arg(long, value_name = "N")]
    from: u32,
    /// M: how many it will have; must be the number of --servers (which it defaults to).
    #[arg(long, value_name = "M")]
    to: Option<u32>,
    /// The table (MySQL/MariaDB) or sequence (PostgreSQL) on every server (the generator's
    /// `table`).
    #[arg(long, value_name = "NAME", default_value = DEFAULT_NAME)]
    table: String,
    /// Room above the highest current value, for tickets that processes still running take
    /// between the last reading and the change; costs a gap of that size in the ID space.
    #[arg(long, value_name = "TICKETS", default_value_t = DEFAULT_GAP)]
    gap: u64,
    /// Bound on each step with one server (connecting, each statement), in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    timeout: u64,
    /// Apply the plan without asking.
    #[arg(long, short = 'y')]
    yes: bool,
    /// MySQL/MariaDB: apply even while other sessions are connected to a ticket database
    /// (only when you know none of them takes tickets).
    #[arg(long)]
    ignore_sessions: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    match args.action {
        Action::Grow(a) => grow(a),
    }
}

fn grow(args: GrowArgs) -> Result<()> {
    let count = args.servers.len();
    if let Some(to) = args.to
        && usize::try_from(to).ok() != Some(count)
    {
        bail!(
            "--to {to} but --servers lists {count} URL(s): list the grown pool's {to} servers, the {} current ones first",
            args.from
        );
    }
    if args.timeout == 0 {
        bail!("--timeout 0: give each server time to answer (e.g. 10)");
    }
    let grow = Grow::new(args.servers.iter().cloned(), args.from)
        .name(args.table.as_str())
        .gap(args.gap)
        .timeout(Duration::from_secs(args.timeout));
    runtime()?.block_on(async {
        let plan = grow.plan().await.context("reading the ticket servers")?;
        print_plan(&plan)?;
        if !args.yes {
            confirm(&plan)?;
        }
        plan.apply(args.ignore_sessions)
            .await
            .context("applying the plan")?;
        outln!(
            "\nApplied: {} servers now count in classes of {} above {}. Set the generator's servers = [...] to the new list, in this order, and start the snowdrift servers.",
            plan.to(),
            plan.to(),
            plan.base()
        )?;
        Ok(())
    })
}

fn print_plan(plan: &GrowPlan) -> Result<()> {
    let (from, to) = (plan.from(), plan.to());
    outln!(
        "Plan: grow the ticket pool on {} from {from} to {to} servers",
        plan.name()
    )?;
    let width = plan
        .servers()
        .iter()
        .map(|s| s.url.len())
        .max()
        .unwrap_or(0)
        .max(6);
    outln!(
        "  {:>3}  {:<width$}  {:<30}  {:>20}  {:>9}  {:>20}",
        "#",
        "SERVER",
        "NOW",
        "HIGHEST VALUE",
        "NEW CLASS",
        "NEW START"
    )?;
    for s in plan.servers() {
        let now = match &s.state {
            ServerState::Missing => "none yet (created)".to_string(),
            state => state.to_string(),
        };
        outln!(
            "  {:>3}  {:<width$}  {:<30}  {:>20}  {:>9}  {:>20}",
            s.offset,
            s.url,
            now,
            s.current,
            format!("{} of {to}", s.offset),
            s.start
        )?;
    }
    outln!(
        "Base: {} = highest current value {} + gap {}; every server starts above it.",
        plan.base(),
        plan.base() - plan.gap(),
        plan.gap()
    )?;
    if plan
        .servers()
        .iter()
        .any(|s| s.url.starts_with("mysql:") || s.url.starts_with("mariadb:"))
    {
        outln!(
            "MySQL/MariaDB: the migration takes each table's new start itself, as a check; the pool's first ticket there is start + {to}."
        )?;
    }
    for s in plan.servers().iter().filter(|s| !s.sessions.is_empty()) {
        outln!(
            "Server {}: {} other session(s) on its database: {} (applying is refused while they are connected)",
            s.offset,
            s.sessions.len(),
            s.sessions.join(", ")
        )?;
    }
    outln!(
        "\nBefore applying: stop every snowdrift server (and anything else) taking tickets from these servers; they count in classes of {from}.\nAfter applying: set the ticket generator's servers = [...] to these {to} URLs, in this order, and start them again."
    )?;
    Ok(())
}

/// Asks on a terminal; elsewhere refuses, saying how to apply.
fn confirm(plan: &GrowPlan) -> Result<()> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "plan only, nothing was changed: stop every process taking tickets from these servers, then run the same command with --yes to apply it"
        );
    }
    eprint!(
        "Are the processes taking tickets stopped, and apply this plan to {} servers? Type yes to apply: ",
        plan.to()
    );
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the answer")?;
    if answer.trim() != "yes" {
        bail!("not applied (the answer was not yes): nothing was changed");
    }
    Ok(())
}
