//! `snowdrift bench`: an in-process benchmark of the snowflake generator, or (with
//! `--target`) load on a running server.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use snowdrift_core::clock::{Clock, SystemClock};
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::{Layout, parse_unit};

use crate::layout_args::LayoutArgs;
use snowdrift::report::{group_digits, latency_histogram};

/// Which clock the generator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ClockKind {
    /// Monotonic clock anchored to the wall clock (one vDSO call per read).
    Monotonic,
    /// An atomic refreshed by a ticker thread every 100 µs (one load per read).
    Cached,
    /// The wall clock, read on every call.
    System,
}

/// Measure the generator in this process, or a running server with --target.
///
/// In process: threads share one generator and call it in a loop for --duration. Latency is
/// timed on every 64th call (timing each call would cost as much as the call); throughput
/// counts every ID. Each thread also checks that its IDs strictly increase.
///
/// With --target URL: --connections connections GET the URL for --duration, each with one
/// request in flight (closed loop), or at --rate requests/s in total (latency then counts
/// from when each request was due, and the client's one thread polls without sleeping: give
/// it a CPU of its own with taskset). Prints requests/s, IDs/s and p50/p99/p99.9 latency.
/// With --target redis://HOST:PORT --incr KEY the requests are `INCR KEY`, to compare with
/// Redis or to load snowdrift's RESP listener with the same client. https:// and rediss://
/// targets speak TLS (each connection's handshake is made before timing starts; --ca FILE
/// trusts a private CA or a self-signed certificate); --token sends a token, so a server is
/// measured as it is deployed.
///
/// With --target URL --grpc NAME: --connections connections call the gRPC `Stream` method
/// for NAME (--per-stream IDs each, --batch IDs per message) one stream after another, for
/// --duration. Prints streams/s, IDs/s, messages and per-stream latency.
///
/// With --target URL[,URL...] --client NAME: --threads threads take IDs of NAME through one
/// snowdrift-client (the cache an application would use) for --duration.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift bench                       # Twitter layout, 1 thread: the 4,096,000/s cap\n  snowdrift bench --threads 2 --block 1000\n  snowdrift bench --bits time:20,worker:1,seq:42 --clock cached   # hot path, nobody waits\n  snowdrift bench --target 'http://127.0.0.1:8080/v1/ids/snowflake?count=1' --connections 50\n  snowdrift bench --target 'http://127.0.0.1:8080/v1/ids/snowflake?count=10000' --connections 4\n  snowdrift bench --target http://127.0.0.1:8080/api/segment/get/order --rate 20000\n  snowdrift bench --target redis://127.0.0.1:6379 --incr order --rate 20000\n  snowdrift bench --target 'https://ids.example:8443/v1/ids/snowflake?count=1' --ca ca.pem --token \"$SNOWDRIFT_TOKEN\"\n  snowdrift bench --target http://127.0.0.1:8080 --grpc snowflake --connections 2 --per-stream 1000000\n  snowdrift bench --target http://10.0.0.1:8080,http://10.0.0.2:8080 --client order --threads 8"
)]
pub struct Args {
    #[command(flatten)]
    layout: LayoutArgs,
    /// Threads sharing the generator.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// How long to run, e.g. 3s or 500ms.
    #[arg(long, default_value = "3s")]
    duration: String,
    /// IDs reserved per call (next_block); 1 calls next().
    #[arg(long, default_value_t = 1)]
    block: u64,
    /// Clock the generator reads.
    #[arg(long, value_enum, default_value_t = ClockKind::Monotonic)]
    clock: ClockKind,
    /// Load a running server instead: the URL to GET.
    #[arg(long, value_name = "URL")]
    target: Option<String>,
    /// With --target: concurrent connections.
    #[arg(long, default_value_t = 50, requires = "target")]
    connections: usize,
    /// With --target: total requests per second (default: as fast as answers come); with
    /// --client, the IDs per second all threads take together.
    #[arg(long, value_name = "N", requires = "target", conflicts_with = "grpc")]
    rate: Option<f64>,
    /// With a redis://HOST:PORT --target: send `INCR KEY` instead of HTTP GETs, to Redis or
    /// to snowdrift's RESP listener (where KEY is a segment tag).
    #[arg(long, value_name = "KEY", requires = "target", conflicts_with = "grpc")]
    incr: Option<String>,
    /// With --target: the token to send, as `Authorization: Bearer TOKEN` over HTTP and
    /// gRPC, or as `AUTH TOKEN` once per RESP connection (also a Redis password). Ignored
    /// without --target, so an exported SNOWDRIFT_TOKEN does not get in the way.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "SNOWDRIFT_TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// With an https:// or rediss:// --target: trust the CA certificate(s) in this PEM file
    /// (a private CA, or the server's self-signed certificate) instead of the system's roots.
    #[arg(long, value_name = "FILE", requires = "target", conflicts_with_all = ["grpc", "client"])]
    ca: Option<std::path::PathBuf>,
    /// With --target: call the gRPC `Stream` method for this generator or tag instead of
    /// HTTP GETs; --target is then the server's URL (http://HOST:PORT).
    #[arg(long, value_name = "NAME", requires = "target")]
    grpc: Option<String>,
    /// With --grpc: IDs each `Stream` call asks for.
    #[arg(long, value_name = "N", default_value_t = 1_000_000, requires = "grpc")]
    per_stream: u64,
    /// With --grpc: most IDs per message (default: the server's `limits.max_count`).
    #[arg(long, value_name = "N", requires = "grpc")]
    batch: Option<u64>,
    /// With --target URL[,URL...]: take IDs of this generator or tag through
    /// snowdrift-client in this process, --threads threads sharing one client, as an
    /// application would; prints IDs/s, next() latency and the cache's counts.
    #[arg(long, value_name = "NAME", requires = "target", conflicts_with_all = ["grpc", "incr"])]
    client: Option<String>,
    /// With --client: the client's batch bounds MIN,MAX (default 100,1000000); 1,1 makes
    /// every next() one gRPC call, for comparison.
    #[arg(long, value_name = "MIN,MAX", requires = "client", value_parser = parse_bounds)]
    client_batch: Option<(u64, u64)>,
}

fn parse_bounds(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("{s:?}: give MIN,MAX, e.g. 100,1000000");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if let Some(target) = args.target {
        let duration = Duration::from_millis(parse_unit(&args.duration).context("--duration")?);
        if (args.client.is_some() || args.grpc.is_some()) && target.contains("https://") {
            bail!(
                "--grpc and --client load plain-text servers only for now; https:// targets are for HTTP GETs (without --grpc or --client)"
            );
        }
        if let Some(name) = args.client {
            return crate::cmd::bench_client::run(crate::cmd::bench_client::Load {
                endpoints: target.split(',').map(str::to_string).collect(),
                name,
                threads: args.threads,
                batch: args.client_batch,
                rate: args.rate,
                duration,
                token: args.token,
            });
        }
        if let Some(name) = args.grpc {
            return crate::cmd::bench_grpc::run(crate::cmd::bench_grpc::Load {
                target,
                name,
                connections: args.connections,
                per_stream: args.per_stream,
                batch: args.batch,
                duration,
                token: args.token,
            });
        }
        return crate::cmd::bench_load::run(crate::cmd::bench_load::Load {
            target,
            incr: args.incr,
            token: args.token,
            ca: args.ca,
            connections: args.connections,
            rate: args.rate,
            duration,
        });
    }
    if args.threads == 0 || args.threads > 1024 {
        bail!("--threads must be between 1 and 1024");
    }
    if args.block == 0 {
        bail!("--block must be at least 1");
    }
    let duration = Duration::from_millis(parse_unit(&args.duration).context("--duration")?);
    let (layout, name) = args.layout.resolve(None)?;
    let base = crate::clock::process_clock()?;
    println!(
        "bench: layout {name}, {} thread(s), block {}, clock {:?}, {:?}",
        args.threads, args.block, args.clock, duration
    );
    let report = match args.clock {
        ClockKind::Monotonic => measure(&layout, base, &args, duration)?,
        ClockKind::System => measure(&layout, SystemClock, &args, duration)?,
        ClockKind::Cached => {
            let (clock, _ticker) = crate::clock::cached_clock(base, Duration::from_micros(100));
            measure(&layout, clock, &args, duration)?
        }
    };
    println!("{report}");
    Ok(())
}

struct Report {
    ids: u64,
    calls: u64,
    elapsed: Duration,
    latency: Histogram<u64>,
    order_violations: u64,
    cap: f64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        let rate = self.ids as f64 / secs;
        let q = |p: f64| self.latency.value_at_quantile(p);
        writeln!(f, "ids        {}", group_digits(self.ids))?;
        writeln!(
            f,
            "rate       {} IDs/s ({:.1}% of the layout's {} IDs/s cap per node), {:.2} ns/ID",
            group_digits(rate as u64),
            100.0 * rate / self.cap,
            group_digits(self.cap as u64),
            1e9 / rate
        )?;
        writeln!(
            f,
            "calls      {} ({} calls/s)",
            group_digits(self.calls),
            group_digits((self.calls as f64 / secs) as u64)
        )?;
        writeln!(
            f,
            "latency    p50 {} ns  p99 {} ns  p99.9 {} ns  p99.99 {} ns  max {} ns  ({} samples)",
            q(0.5),
            q(0.99),
            q(0.999),
            q(0.9999),
            self.latency.max(),
            self.latency.len()
        )?;
        write!(f, "order      {} violation(s)", self.order_violations)
    }
}

fn measure<C: Clock>(layout: &Layout, clock: C, args: &Args, duration: Duration) -> Result<Report> {
    let generator = SnowflakeGenerator::builder(layout.clone()).build(clock)?;
    let stop = AtomicBool::new(false);
    let issued = AtomicU64::new(0);
    let bar = ProgressBar::new(duration.as_millis() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let results = std::thread::scope(|s| -> Result<Vec<(u64, u64, Histogram<u64>)>> {
        let workers: Vec<_> = (0..args.threads)
            .map(|_| s.spawn(|| worker(&generator, args.block, &stop, &issued)))
            .collect();
        while start.elapsed() < duration {
            std::thread::sleep(Duration::from_millis(100));
            bar.set_position(start.elapsed().as_millis() as u64);
            bar.set_message(format!(
                "{} IDs",
                group_digits(issued.load(Ordering::Relaxed))
            ));
        }
        stop.store(true, Ordering::Relaxed);
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| anyhow::anyhow!("a bench thread panicked"))?
            })
            .collect()
    })?;
    let elapsed = start.elapsed();
    bar.finish_and_clear();
    let mut latency = latency_histogram()?;
    let (mut calls, mut violations) = (0, 0);
    for (c, v, h) in results {
        calls += c;
        violations += v;
        latency.add(h)?;
    }
    Ok(Report {
        ids: issued.load(Ordering::Relaxed),
        calls,
        elapsed,
        latency,
        order_violations: violations,
        cap: layout.max_ids_per_second(),
    })
}

/// One thread's loop: returns (calls, order violations, sampled latencies).
fn worker<C: Clock>(
    generator: &SnowflakeGenerator<C>,
    block: u64,
    stop: &AtomicBool,
    issued: &AtomicU64,
) -> Result<(u64, u64, Histogram<u64>)> {
    let mut hist = latency_histogram()?;
    let (mut calls, mut violations, mut local) = (0u64, 0u64, 0u64);
    let mut last: Option<u64> = None;
    while !stop.load(Ordering::Relaxed) {
        for i in 0..64u32 {
            let t = (i == 0).then(Instant::now);
            let (first, last_id, n) = if block == 1 {
                let id = generator.next()?;
                (id, id, 1)
            } else {
                let b = generator.next_block(block)?;
                (b.first(), b.last(), b.len())
            };
            if let Some(t) = t {
                hist.saturating_record(t.elapsed().as_nanos() as u64);
            }
            violations += u64::from(last.is_some_and(|l| first <= l));
            last = Some(last_id);
            local += n;
        }
        calls += 64;
        issued.fetch_add(local, Ordering::Relaxed);
        local = 0;
    }
    Ok((calls, violations, hist))
}
