//! `snowdrift bench`: the flags, checked and handed to `snowdrift-bench`, which runs the
//! generator in process or loads a running server (`--target`).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use snowdrift_bench::generator::{self, ClockKind};
use snowdrift_bench::{client, grpc, load};
use snowdrift_core::layout::parse_unit;

use crate::layout_args::LayoutArgs;

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
/// snowdrift-client (the cache an application would use) for --duration; with --tasks N,
/// N async tasks on --threads runtime threads instead.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift bench                       # Twitter layout, 1 thread: the 4,096,000/s cap\n  snowdrift bench --threads 2 --block 1000\n  snowdrift bench --bits time:20,worker:1,seq:42 --clock cached   # hot path, nobody waits\n  snowdrift bench --target 'http://127.0.0.1:8080/v1/ids/snowflake?count=1' --connections 50\n  snowdrift bench --target 'http://127.0.0.1:8080/v1/ids/snowflake?count=10000' --connections 4\n  snowdrift bench --target http://127.0.0.1:8080/api/segment/get/order --rate 20000\n  snowdrift bench --target redis://127.0.0.1:6379 --incr order --rate 20000\n  snowdrift bench --target 'https://ids.example:8443/v1/ids/snowflake?count=1' --ca ca.pem --token \"$SNOWDRIFT_TOKEN\"\n  snowdrift bench --target http://127.0.0.1:8080 --grpc snowflake --connections 2 --per-stream 1000000\n  snowdrift bench --target http://10.0.0.1:8080,http://10.0.0.2:8080 --client order --threads 8\n  snowdrift bench --target http://127.0.0.1:8080 --client ts --tasks 64   # async callers"
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
    /// With --client: N async tasks share one handle of the async client
    /// (`client.ids(NAME)`, `next().await`) on a runtime of --threads worker threads,
    /// instead of --threads threads calling the blocking client.
    #[arg(long, value_name = "N", requires = "client")]
    tasks: Option<usize>,
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
            return Ok(client::run(client::Load {
                endpoints: target.split(',').map(str::to_string).collect(),
                name,
                threads: args.threads,
                tasks: args.tasks,
                batch: args.client_batch,
                rate: args.rate,
                duration,
                token: args.token,
            })?);
        }
        if let Some(name) = args.grpc {
            return Ok(grpc::run(grpc::Load {
                target,
                name,
                connections: args.connections,
                per_stream: args.per_stream,
                batch: args.batch,
                duration,
                token: args.token,
            })?);
        }
        return Ok(load::run(load::Load {
            target,
            incr: args.incr,
            token: args.token,
            ca: args.ca,
            connections: args.connections,
            rate: args.rate,
            duration,
        })?);
    }
    let options = generator::Options::new(args.threads, args.block, args.clock)?;
    let duration = Duration::from_millis(parse_unit(&args.duration).context("--duration")?);
    let (layout, name) = args.layout.resolve(None)?;
    let base = crate::clock::process_clock()?;
    Ok(generator::run(&options, duration, &layout, &name, base)?)
}
