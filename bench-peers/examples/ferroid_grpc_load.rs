//! Load on a running `ferroid-tonic-server` over its `StreamIds` gRPC method, measured the
//! way `snowdrift bench --target URL --grpc NAME` measures snowdrift's `Stream`: N
//! connections (one HTTP/2 connection each), each asking for one stream of `PER_STREAM` IDs
//! after another for `SECONDS`, printing streams/s, IDs/s, messages and per-stream latency.
//!
//! ```text
//! cargo run --release -p bench-peers --features ferroid-grpc --example ferroid_grpc_load -- \
//!     [URL (http://127.0.0.1:50051)] [CONNECTIONS (2)] [PER_STREAM (1000000)] [SECONDS (10)]
//! ```
//!
//! ferroid packs each ID as 8 little-endian bytes, so the client counts IDs from the chunk
//! length; like the snowdrift client (which keeps runs packed), it does not look at each ID.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ferroid_tonic_core::proto::StreamIdsRequest;
use ferroid_tonic_core::proto::id_generator_client::IdGeneratorClient;
use ferroid_tonic_core::types::SNOWFLAKE_ID_SIZE;
use hdrhistogram::Histogram;
use tonic::transport::{Channel, Endpoint};

// The same report code as `snowdrift bench --grpc`, so the load scripts read both alike.
use snowdrift_bench::report::{StreamCounts, latency_histogram, stream_lines};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One connection's counts, or all connections' together.
struct Totals {
    streams: u64,
    ids: u64,
    messages: u64,
    bytes: u64,
    errors: u64,
    first_error: Option<String>,
    latency: Histogram<u64>,
}

impl Totals {
    fn new() -> Result<Self, BoxError> {
        Ok(Self {
            streams: 0,
            ids: 0,
            messages: 0,
            bytes: 0,
            errors: 0,
            first_error: None,
            // Fixed bounds (1 ns to an hour): an auto-resizing histogram clamps on
            // saturating_record instead of growing.
            latency: latency_histogram()?,
        })
    }

    fn add(&mut self, c: Totals) -> Result<(), BoxError> {
        self.streams += c.streams;
        self.ids += c.ids;
        self.messages += c.messages;
        self.bytes += c.bytes;
        self.errors += c.errors;
        if self.first_error.is_none() {
            self.first_error = c.first_error;
        }
        self.latency.add(c.latency)?;
        Ok(())
    }
}

fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:50051".into());
    let number = |arg: Option<String>, what: &str, default: u64| -> Result<u64, BoxError> {
        match arg {
            Some(n) => n
                .parse()
                .map_err(|e| format!("{what} {n:?} is not a whole number: {e}").into()),
            None => Ok(default),
        }
    };
    let connections = number(args.next(), "CONNECTIONS", 2)?;
    let per_stream = number(args.next(), "PER_STREAM", 1_000_000)?;
    let seconds = number(args.next(), "SECONDS", 10)?;
    if connections == 0 || per_stream == 0 || seconds == 0 {
        return Err("CONNECTIONS, PER_STREAM and SECONDS must be at least 1".into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!(
        "bench: ferroid StreamIds({per_stream} IDs) on {url} with {connections} connection(s), {seconds}s"
    );
    let duration = Duration::from_secs(seconds);
    let totals = runtime.block_on(drive(&url, connections, per_stream, duration))?;
    let secs = duration.as_secs_f64();
    let counts = StreamCounts {
        streams: totals.streams,
        errors: totals.errors,
        first_error: totals.first_error.as_deref(),
        ids: totals.ids,
        messages: totals.messages,
        bytes: totals.bytes,
        bytes_of: "IDs",
        latency: &totals.latency,
    };
    println!("{}", stream_lines(&counts, secs));
    Ok(())
}

async fn drive(
    url: &str,
    connections: u64,
    per_stream: u64,
    duration: Duration,
) -> Result<Totals, BoxError> {
    let endpoint = Endpoint::from_shared(url.to_string())?;
    let mut channels = Vec::new();
    for _ in 0..connections {
        // One stream per connection before timing opens the connection and shows a refused
        // call before any numbers.
        let channel = endpoint
            .connect()
            .await
            .map_err(|e| format!("cannot reach {url}: {e}; is ferroid-tonic-server running?"))?;
        let mut stream = IdGeneratorClient::new(channel.clone())
            .stream_ids(StreamIdsRequest { count: per_stream })
            .await?
            .into_inner();
        while stream.message().await?.is_some() {}
        channels.push(channel);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = channels
        .into_iter()
        .map(|channel| tokio::spawn(connection(channel, per_stream, stop.clone())))
        .collect();
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut totals = Totals::new()?;
    for task in tasks {
        totals.add(task.await??)?;
    }
    Ok(totals)
}

/// One connection's loop: a stream read to its end, then the next. Chunks that arrive after
/// the stop are not counted.
async fn connection(
    channel: Channel,
    per_stream: u64,
    stop: Arc<AtomicBool>,
) -> Result<Totals, BoxError> {
    let mut client = IdGeneratorClient::new(channel);
    let mut c = Totals::new()?;
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let outcome = async {
            let mut stream = client
                .stream_ids(StreamIdsRequest { count: per_stream })
                .await?
                .into_inner();
            while let Some(chunk) = stream.message().await? {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                let bytes = chunk.packed_ids.len();
                if bytes % SNOWFLAKE_ID_SIZE != 0 {
                    return Err(tonic::Status::data_loss(format!(
                        "a chunk of {bytes} bytes is not whole {SNOWFLAKE_ID_SIZE}-byte IDs"
                    )));
                }
                c.ids += (bytes / SNOWFLAKE_ID_SIZE) as u64;
                c.messages += 1;
                c.bytes += bytes as u64;
            }
            Ok::<bool, tonic::Status>(true)
        }
        .await;
        match outcome {
            Ok(true) => {
                c.latency
                    .saturating_record(start.elapsed().as_nanos() as u64);
                c.streams += 1;
            }
            Ok(false) => break,
            Err(status) => {
                c.errors += 1;
                c.first_error
                    .get_or_insert_with(|| format!("{:?}: {}", status.code(), status.message()));
            }
        }
    }
    Ok(c)
}
