//! `snowdrift next --registry URL`: snowflake IDs under a leased worker ID, from one or more
//! threads, until the count is reached.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use snowdrift_core::codec::Codec;
use snowdrift_core::generator::{MastodonTail, SnowflakeGenerator};
use snowdrift_core::layout::Layout;
use snowdrift_store::worker::{LeaseConfig, WorkerNode, WorkerSource};

use crate::store_args::runtime;

/// The registry namespace without --namespace.
const DEFAULT_NAMESPACE: &str = "snowdrift_workers";

/// Where a worker ID comes from (`--worker-source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Source {
    /// The lowest ID no live node holds, from the registry.
    Lowest,
    /// The ID given with --worker.
    Static,
    /// Derived from the host name (can collide; the registry refuses a second holder).
    Hostname,
    /// Derived from the host's IP address's low bits (can collide likewise).
    Ip,
    /// The Kubernetes StatefulSet ordinal: the host name's `-N` suffix.
    Ordinal,
}

/// Options for running `next` under a worker-ID lease.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaseArgs {
    /// Hold the worker ID under a lease on this registry while generating:
    /// file://DIR (lock files on this machine), etcd://HOST:2379 (or http://HOST:2379, or
    /// https://HOST:2379?ca=FILE&cert=FILE&key=FILE for TLS), zookeeper://HOST:2181 (etcd and
    /// ZooKeeper take USER:PASSWORD@ before the host), sqlite://FILE, postgres://...,
    /// mysql://..., redis://HOST:6379.
    #[arg(long, value_name = "URL")]
    pub registry: Option<String>,
    /// Where the worker ID comes from. Default: static when --worker is given, else lowest.
    #[arg(long, value_enum, value_name = "SOURCE", requires = "registry")]
    pub worker_source: Option<Source>,
    /// With --registry: the table, key prefix, root znode or file prefix on the registry
    /// (default snowdrift_workers). With --kind uuid3 or uuid5: the namespace the name is
    /// hashed under: dns, url, oid, x500 or a UUID.
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Lease length, e.g. 10s or 1500ms. Issuing stops at the last renewal + ttl - ttl/5.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_duration,
        requires = "registry"
    )]
    pub ttl: Duration,
    /// How far ahead the high-water mark is written.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "3s",
        value_parser = parse_duration,
        requires = "registry"
    )]
    pub window: Duration,
    /// The longest wait at start for the clock to pass the worker ID's high-water mark;
    /// beyond it, refuse to start.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_duration,
        requires = "registry"
    )]
    pub max_mark_wait: Duration,
    /// How often to publish this node's clock and compare it with the peers'.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "3s",
        value_parser = parse_duration,
        requires = "registry"
    )]
    pub publish_every: Duration,
    /// Generate from this many threads at once (under a lease only).
    #[arg(long, default_value_t = 1, value_name = "N", requires = "registry")]
    pub threads: u64,
    /// Prefix each ID with `THREAD WORKER EPOCH ` (under a lease only), so a checker can
    /// tell which worker epoch issued it: within one thread and epoch, IDs strictly
    /// increase.
    #[arg(long, requires = "registry")]
    pub annotate: bool,
}

/// Parses `1500ms`, `10s`, `2m`, or a bare number of milliseconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration; use e.g. 1500ms, 10s or 2m"))?;
    let ms = match unit.trim() {
        "" | "ms" => n,
        "s" => n.saturating_mul(1000),
        "m" => n.saturating_mul(60_000),
        other => return Err(format!("unknown unit {other:?} in {s:?}; use ms, s or m")),
    };
    Ok(Duration::from_millis(ms))
}

/// IDs per call to the generator, so threads interleave and output starts early.
const CHUNK: u64 = 4096;

/// Prints `count` IDs of `layout` issued under a lease, written by `codec`, from
/// `args.threads` threads.
pub fn print(
    args: &LeaseArgs,
    worker: Option<u64>,
    layout: Layout,
    tail: Option<&MastodonTail>,
    codec: &Codec,
    count: u64,
) -> Result<()> {
    init_logs();
    let Some(url) = &args.registry else {
        bail!("--registry URL is needed to run under a lease");
    };
    if args.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let source = match (args.worker_source, worker) {
        (Some(Source::Static) | None, Some(id)) => WorkerSource::Static(id),
        (Some(Source::Static), None) => bail!("--worker-source static needs --worker N"),
        (Some(_), Some(_)) => bail!("--worker N goes with --worker-source static only"),
        (None | Some(Source::Lowest), None) => WorkerSource::Lowest,
        (Some(Source::Hostname), None) => WorkerSource::Hostname,
        (Some(Source::Ip), None) => WorkerSource::Ip(None),
        (Some(Source::Ordinal), None) => WorkerSource::StatefulSetOrdinal,
    };
    let mut config = LeaseConfig::new(url.clone(), source);
    config.namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    config.ttl = args.ttl;
    config.window = args.window;
    config.max_mark_wait = args.max_mark_wait;
    config.publish_every = args.publish_every;
    let rt = runtime()?;
    let clock = crate::clock::process_clock()?;
    let builder = SnowflakeGenerator::builder(layout.clone());
    let node = rt
        .block_on(WorkerNode::start(config, builder, clock))
        .with_context(|| {
            format!(
                "taking a worker ID on {}",
                snowdrift_server::config::mask_url(url)
            )
        })?;
    let node = Arc::new(node);
    eprintln!(
        "snowdrift: worker ID {} leased as {}",
        node.epoch().worker_id(),
        node.holder()
    );
    let left = AtomicU64::new(count);
    let result = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads)
            .map(|t| {
                let (node, left) = (&node, &left);
                s.spawn(move || issue(node, t, left, tail, codec, args.annotate))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a generating thread panicked")))
            })
            .collect::<Result<Vec<()>>>()
    });
    let node = Arc::into_inner(node).context("generating threads still hold the node")?;
    let shutdown = rt.block_on(node.shutdown());
    result?;
    shutdown.context("releasing the worker ID")?;
    Ok(())
}

/// One thread's loop: takes chunks of the count until none is left. A refusal (lease lost,
/// window not extended, clock behind) is reported once and waited out.
fn issue<C: snowdrift_core::clock::Clock + Clone + 'static>(
    node: &WorkerNode<C>,
    thread: u64,
    left: &AtomicU64,
    tail: Option<&MastodonTail>,
    codec: &Codec,
    annotate: bool,
) -> Result<()> {
    let stdout = std::io::stdout();
    let mut buf = Vec::with_capacity(64 * CHUNK as usize);
    // The kind of the latest refusal, so a long one is reported once, not every retry.
    let mut refused: Option<std::mem::Discriminant<snowdrift_core::Error>> = None;
    loop {
        let want = match left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| {
            l.checked_sub(l.min(CHUNK)).filter(|_| l > 0)
        }) {
            Ok(before) => before.min(CHUNK),
            Err(_) => return Ok(()),
        };
        let mut got = 0;
        while got < want {
            let epoch = node.epoch();
            match epoch.generator().next_block(want - got) {
                Ok(block) => {
                    if refused.take().is_some() {
                        eprintln!(
                            "snowdrift: issuing again with worker ID {} (epoch {})",
                            epoch.worker_id(),
                            epoch.number()
                        );
                    }
                    let ids: Box<dyn Iterator<Item = u64>> = match tail {
                        Some(tail) => Box::new(tail.ids(&block)),
                        None => Box::new(block.iter()),
                    };
                    for id in ids {
                        if annotate {
                            write!(buf, "{thread} {} {} ", epoch.worker_id(), epoch.number())?;
                        }
                        buf.extend_from_slice(codec.encode(id)?.as_bytes());
                        buf.push(b'\n');
                    }
                    got += block.len();
                }
                Err(e) => {
                    let kind = std::mem::discriminant(&e);
                    if refused != Some(kind) {
                        eprintln!("snowdrift: thread {thread}: {e}");
                        refused = Some(kind);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        let mut out = stdout.lock();
        out.write_all(&buf)?;
        out.flush()?;
        buf.clear();
    }
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SNOWDRIFT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(crate::cmd::colour_logs())
        .with_writer(std::io::stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("10h").is_err());
        assert!(parse_duration("s").is_err());
    }
}
