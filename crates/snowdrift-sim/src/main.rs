//! `snowdrift-sim` (run as `scripts/simulate`): runs seeds of the deterministic simulation,
//! prints progress and simulated node-hours, and for a failing seed the command that
//! replays it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use snowdrift_sim::chaos::FAULT_KINDS;
use snowdrift_sim::{Backend, Failure, Mistake, Outcome, Pick, Settings, run, segment, tso};

/// Deterministic simulation of snowdrift's worker leases: the real keeper and generator of
/// many nodes against a simulated etcd, Redis, ZooKeeper or disk, under seeded faults; with
/// --segments, of the segment buffers' claims against a simulated SQL database.
#[derive(Debug, Parser)]
#[command(name = "scripts/simulate")]
struct Args {
    /// How many seeds to run (0: until stopped).
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    from: u64,
    /// Run exactly this seed (a replay), printing what it did.
    #[arg(long)]
    seed: Option<u64>,
    /// Nodes per seed.
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Worker ID bits (1 to 10); drawn per seed when not given.
    #[arg(long)]
    bits: Option<u32>,
    /// Simulated time per seed: 300s, 5m, 2h.
    #[arg(long, default_value = "300s", value_parser = duration)]
    duration: Duration,
    /// The lease's ttl (drawn per seed when not given: 2, 3, 5 or 10 s; 2 s above 100
    /// nodes).
    #[arg(long, value_parser = duration)]
    ttl: Option<Duration>,
    /// The high-water mark's window (drawn per seed when not given: 0.2 to 8 s).
    #[arg(long, value_parser = duration)]
    window: Option<Duration>,
    /// The clock report interval (drawn per seed when not given: 0.5, 1 or 3 s).
    #[arg(long, value_parser = duration)]
    publish_every: Option<Duration>,
    /// Only these kinds of fault, comma-separated: pause, partition, clock-step,
    /// kill-clock-behind, kill, crash-after-start, graceful-restart, slow-coordinator,
    /// election, zone-partition, loss (lost messages and latency spikes).
    #[arg(long, value_delimiter = ',', value_parser = fault_kind)]
    only_faults: Option<Vec<String>>,
    /// No faults (only the rolling restart and ordinary latency).
    #[arg(long)]
    no_faults: bool,
    /// No rolling restart of the fleet.
    #[arg(long)]
    no_rolling_restart: bool,
    /// The coordinator in another zone: 2 to 4 ms each way.
    #[arg(long)]
    far: bool,
    /// A pause stops the node's whole process, as SIGSTOP or a stop-the-world GC does:
    /// its keeper's (or tso term's) timers make no step until it ends. Without it a pause
    /// holds only the node's messages back (the seeds the tests keep were found so)
    #[arg(long)]
    freeze_pauses: bool,
    /// The rolling restart moves the fleet to another layout: `safe` (one `snowdrift layout
    /// migrate` calls safe, drawn per seed), `unsafe` (one it calls unsafe) or a target's
    /// name (epoch-30d-earlier, wider-worker, worker-below-seq, ...).
    #[arg(long, value_name = "SAFE|UNSAFE|NAME", value_parser = layout_switch)]
    layout_switch: Option<Pick>,
    /// Plant a mistake (repeatable): in the keeper skip-mark-write-ahead,
    /// renew-without-fence, trust-lease-after-pause, forget-clock-back-on-restart,
    /// ignore-layout-checks; in the file registry skip-mark-fsync; in the Redis registry
    /// renew-any-holder; in the ZooKeeper registry renew-by-client-session; with
    /// --segments, in the SQL segment claim claim-ignores-failed-commit,
    /// claim-reads-before-update.
    #[arg(long = "mistake", value_parser = mistake)]
    mistakes: Vec<Mistake>,
    /// The registry the nodes run, on its simulated coordinator: etcd, redis, zookeeper,
    /// sql (a real in-process SQLite behind a simulated network), or file (every node on one
    /// machine, sharing its disk).
    #[arg(long, default_value = "etcd", value_parser = Backend::parse)]
    registry: Backend,
    /// With --registry redis: a failover is the primary's host dying, which loses what its
    /// asynchronous replica had not applied (otherwise failovers are planned: FAILOVER).
    #[arg(long)]
    redis_crash_failover: bool,
    /// Simulate the segment buffers instead: each node's real segment buffer claiming from
    /// a simulated SQL database (row locks, transactions) under faults. The mistakes
    /// claim-ignores-failed-commit and claim-reads-before-update apply to it.
    #[arg(long)]
    segments: bool,
    /// Simulate a timestamp oracle cluster instead (`kind = "tso"`): the real leader
    /// election, window saves and followers' checks of every node on the simulated etcd,
    /// the answers checked linearizable (5 nodes unless --nodes says otherwise).
    #[arg(long)]
    tso: bool,
    /// Stop at the first failing seed.
    #[arg(long)]
    fail_fast: bool,
    /// With --seed: print the nodes' log lines as they run, stamped with the simulated
    /// time: a filter such as `warn` or `snowdrift_store=debug` (tracing's syntax).
    #[arg(long, value_name = "FILTER", requires = "seed")]
    log: Option<String>,
    /// Seeds run at once, one thread each.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
}

fn duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write 500ms, 300s, 5m or 2h"))?;
    let ms = match unit {
        "ms" => n,
        "" | "s" => n * 1000,
        "m" => n * 60_000,
        "h" => n * 3_600_000,
        _ => return Err(format!("{text:?}: the unit is ms, s, m or h")),
    };
    Ok(Duration::from_millis(ms))
}

fn mistake(text: &str) -> Result<Mistake, String> {
    Mistake::ALL
        .into_iter()
        .find(|m| m.name() == text)
        .ok_or_else(|| {
            let names: Vec<&str> = Mistake::ALL.iter().map(|m| m.name()).collect();
            format!("no mistake {text:?}; the mistakes are {}", names.join(", "))
        })
}

fn fault_kind(text: &str) -> Result<String, String> {
    FAULT_KINDS
        .contains(&text)
        .then(|| text.to_string())
        .ok_or_else(|| {
            format!(
                "no fault {text:?}; the faults are {}",
                FAULT_KINDS.join(", ")
            )
        })
}

fn layout_switch(text: &str) -> Result<Pick, String> {
    Pick::parse(text)
}

fn settings(args: &Args, seed: u64) -> Settings {
    let mut s = Settings::new(seed, args.nodes);
    s.worker_bits = args.bits;
    s.duration = args.duration;
    s.faults = !args.no_faults;
    s.rolling_restart = !args.no_rolling_restart;
    s.mistakes = args.mistakes.clone();
    s.far = args.far;
    s.registry = args.registry;
    s.redis_crash_failover = args.redis_crash_failover;
    s.layout_switch = args.layout_switch.clone();
    s.ttl = args.ttl;
    s.window = args.window;
    s.publish_every = args.publish_every;
    s.only_faults = args.only_faults.clone();
    s.freeze_pauses = args.freeze_pauses;
    s
}

fn segment_settings(args: &Args, seed: u64) -> segment::Settings {
    let mut s = segment::Settings::new(seed, args.nodes);
    s.duration = args.duration;
    s.faults = !args.no_faults;
    s.mistakes = args.mistakes.clone();
    s
}

/// What the seeds loop needs of a run, whichever simulation made it.
fn tso_settings(args: &Args, seed: u64) -> Settings {
    let mut s = Settings::new(seed, args.nodes);
    s.duration = args.duration;
    s.faults = !args.no_faults;
    s.mistakes = args.mistakes.clone();
    s.freeze_pauses = args.freeze_pauses;
    s
}

trait Ran: Sized {
    fn failures(&self) -> &[Failure];
    fn node_hours(&self) -> f64;
    fn ids(&self) -> u64;
    fn digest(&self) -> u64;
    fn describe(&self) -> String;
    fn replay_command(&self) -> String;
    /// Examples of what went on, printed for a single seed.
    fn examples(&self) -> Vec<String>;
    /// The same settings run again.
    fn again(&self) -> Self;
}

impl Ran for Outcome {
    fn failures(&self) -> &[Failure] {
        &self.failures
    }
    fn node_hours(&self) -> f64 {
        Outcome::node_hours(self)
    }
    fn ids(&self) -> u64 {
        self.ids
    }
    fn digest(&self) -> u64 {
        self.digest
    }
    fn describe(&self) -> String {
        describe(self)
    }
    fn replay_command(&self) -> String {
        Outcome::replay_command(self)
    }
    fn examples(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .counts
            .refusal_examples
            .iter()
            .map(|(kind, example)| format!("a start refused ({kind}): {example}"))
            .collect();
        lines.extend(self.capacity.lines(self.simulated, self.coordinator));
        lines
    }
    fn again(&self) -> Self {
        run(self.scenario.settings.clone())
    }
}

impl Ran for segment::Outcome {
    fn failures(&self) -> &[Failure] {
        &self.failures
    }
    fn node_hours(&self) -> f64 {
        segment::Outcome::node_hours(self)
    }
    fn ids(&self) -> u64 {
        self.ids
    }
    fn digest(&self) -> u64 {
        self.digest
    }
    fn describe(&self) -> String {
        segment::Outcome::describe(self)
    }
    fn replay_command(&self) -> String {
        segment::Outcome::replay_command(self)
    }
    fn examples(&self) -> Vec<String> {
        Vec::new()
    }
    fn again(&self) -> Self {
        segment::run(self.scenario.settings.clone())
    }
}

impl Ran for tso::Outcome {
    fn failures(&self) -> &[Failure] {
        &self.failures
    }
    fn node_hours(&self) -> f64 {
        tso::Outcome::node_hours(self)
    }
    fn ids(&self) -> u64 {
        self.ids
    }
    fn digest(&self) -> u64 {
        self.digest
    }
    fn describe(&self) -> String {
        tso::Outcome::describe(self)
    }
    fn replay_command(&self) -> String {
        tso::Outcome::replay_command(self)
    }
    fn examples(&self) -> Vec<String> {
        Vec::new()
    }
    fn again(&self) -> Self {
        tso::run(self.settings.clone())
    }
}

fn describe(o: &Outcome) -> String {
    let s = &o.scenario;
    format!(
        "{} nodes on {} worker IDs{}{}, ttl {:?}, window {:?}, clock reports every {:?}; {:.1} node-hours in {:?} simulated; {} starts ({} refused: {:?}); {} ranges, {} IDs; faults {:?}; not issuing {:?}; {}: {} requests, {} writes ({:.1}/s), {} keep-alives or pings, {} keys read, {} leases or sessions expired; {} worker IDs held at the end",
        s.settings.nodes,
        1u64 << s.worker_bits,
        if s.static_ids { " (static IDs)" } else { "" },
        s.switch_to.as_ref().map_or(String::new(), |t| format!(
            ", moving to layout {} ({}/{}ms/{}: {:?}, {} for `snowdrift layout migrate`; {} ranges before, {} after)",
            t.name,
            snowdrift_core::layout::migrate::spec(&t.layout),
            t.layout.unit_ms(),
            t.layout.epoch_ms(),
            t.verdict,
            if t.safe { "safe" } else { "unsafe" },
            o.ranges_by_layout.first().copied().unwrap_or(0),
            o.ranges_by_layout.get(1).copied().unwrap_or(0),
        )),
        s.ttl,
        s.window,
        s.publish_every,
        o.node_hours(),
        o.simulated,
        o.counts.starts,
        o.counts.refusals.values().sum::<u64>(),
        o.counts.refusals,
        o.ranges,
        o.ids,
        o.counts.faults,
        o.counts.not_issuing,
        s.settings.registry.name(),
        o.coordinator.requests,
        o.coordinator.writes,
        o.coordinator.writes as f64 / o.simulated.as_secs_f64().max(1e-9),
        o.coordinator.keep_alives,
        o.coordinator.keys_read,
        o.coordinator.expired,
        o.held_at_end,
    )
}

/// Stamps a log line with the simulated time since the run began (tokio's paused clock).
struct SimulatedTime(tokio::time::Instant);

impl tracing_subscriber::fmt::time::FormatTime for SimulatedTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        write!(w, "{:>10.3?}", self.0.elapsed())
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(filter) = &args.log {
        let filter = tracing_subscriber::EnvFilter::try_new(filter).with_context(|| {
            format!("--log {filter:?}: write a filter such as warn or snowdrift_store=debug")
        })?;
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_timer(SimulatedTime(tokio::time::Instant::now()))
            .init();
    }
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    if let Some(bits) = args.bits
        && !(1..=10).contains(&bits)
    {
        bail!("--bits {bits}: use 1 to 10 worker ID bits");
    }
    if args.segments
        && (args.bits.is_some()
            || args.layout_switch.is_some()
            || args.far
            || args.no_rolling_restart
            || args.ttl.is_some()
            || args.window.is_some()
            || args.publish_every.is_some())
    {
        bail!(
            "--bits, --layout-switch, --far, --no-rolling-restart, --ttl, --window and --publish-every are the worker leases' (drop --segments)"
        );
    }
    if args.tso {
        if args.segments {
            bail!("--tso and --segments are two simulations: pick one");
        }
        if args.registry != Backend::Etcd || args.redis_crash_failover {
            bail!(
                "--tso simulates the timestamp oracle, which elects its leader and saves its window on etcd only: drop --registry and --redis-crash-failover"
            );
        }
        if args.bits.is_some()
            || args.layout_switch.is_some()
            || args.far
            || args.no_rolling_restart
            || args.ttl.is_some()
            || args.window.is_some()
            || args.publish_every.is_some()
            || args.only_faults.is_some()
        {
            bail!(
                "--bits, --layout-switch, --far, --no-rolling-restart, --ttl, --window, --publish-every and --only-faults are the worker leases' (drop --tso)"
            );
        }
        return seeds(&args, |seed| tso::run(tso_settings(&args, seed)));
    }
    if args.layout_switch.is_some() && args.no_rolling_restart {
        bail!("--layout-switch moves the fleet in its rolling restart: drop --no-rolling-restart");
    }
    if args.segments {
        seeds(&args, |seed| segment::run(segment_settings(&args, seed)))
    } else {
        seeds(&args, |seed| run(settings(&args, seed)))
    }
}

/// Runs the seeds `args` asks for with `one`, or the one seed, and reports.
fn seeds<O: Ran>(args: &Args, one: impl Fn(u64) -> O + Sync) -> anyhow::Result<()> {
    if let Some(seed) = args.seed {
        let started = Instant::now();
        let outcome = one(seed);
        println!("seed {seed}: {}", outcome.describe());
        for example in outcome.examples() {
            println!("  {example}");
        }
        println!(
            "digest {:016x}, {:?} of CPU",
            outcome.digest(),
            started.elapsed()
        );
        return report_failure(&outcome).context("the seed failed");
    }
    let next = AtomicU64::new(args.from);
    let done = AtomicU64::new(0);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let totals = Mutex::new((0f64, 0u64, Vec::<u64>::new()));
    let started = Instant::now();
    let last_print = Mutex::new(Instant::now());
    let end = (args.seeds > 0).then(|| args.from + args.seeds);
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if end.is_some_and(|end| seed >= end) {
                        return;
                    }
                    let outcome = one(seed);
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    let mut t = totals.lock().unwrap_or_else(|e| e.into_inner());
                    t.0 += outcome.node_hours();
                    t.1 += outcome.ids();
                    if !outcome.failures().is_empty() {
                        t.2.push(seed);
                        println!("seed {seed} FAILED: {}", outcome.describe());
                        let _ = report_failure(&outcome);
                        if args.fail_fast {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    let mut last = last_print.lock().unwrap_or_else(|e| e.into_inner());
                    if last.elapsed() >= Duration::from_secs(10) || end.is_some_and(|e| finished == e - args.from) {
                        *last = Instant::now();
                        println!(
                            "{finished} seeds, {:.1} simulated node-hours, {} IDs checked, {} failing, {:.0?} elapsed",
                            t.0,
                            t.1,
                            t.2.len(),
                            started.elapsed()
                        );
                    }
                }
            });
        }
    });
    let t = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    println!(
        "done: {} seeds from {}, {:.1} simulated node-hours, {} IDs checked in {:.0?}; failing seeds: {:?}",
        done.load(Ordering::Relaxed),
        args.from,
        t.0,
        t.1,
        started.elapsed(),
        t.2
    );
    if !t.2.is_empty() {
        bail!(
            "{} seeds failed (each printed with the command that replays it)",
            t.2.len()
        );
    }
    Ok(())
}

/// Prints a failing run's failures and the command that replays it, after checking that
/// it does replay.
fn report_failure<O: Ran>(outcome: &O) -> anyhow::Result<()> {
    let Some(first) = outcome.failures().first() else {
        return Ok(());
    };
    for f in outcome.failures().iter().take(5) {
        println!("  at {:?}: {}", f.at, f.what);
    }
    let again = outcome.again();
    let same = again.digest() == outcome.digest() && again.failures() == outcome.failures();
    println!(
        "  replay: {}   ({})",
        outcome.replay_command(),
        if same {
            "checked: it replays exactly"
        } else {
            "WARNING: a second run did not replay it exactly"
        }
    );
    bail!("{}", first.what)
}
