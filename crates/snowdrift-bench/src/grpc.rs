//! Load on a running server over gRPC `Stream`, with N connections, each asking for one
//! stream after another (`snowdrift bench --target URL --grpc NAME`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use prost::Message;
use snowdrift_proto::grpc::StreamRequest;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::{Channel, Endpoint};

use crate::error::{Context, Error};
use crate::report::{StreamCounts, group_digits, latency_histogram, stream_lines};

/// What to stream and how hard.
pub struct Load {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    pub target: String,
    /// The generator or tag to stream from.
    pub name: String,
    /// Connections (one HTTP/2 connection each), each with one stream open at a time.
    pub connections: usize,
    /// IDs each `Stream` call asks for.
    pub per_stream: u64,
    /// Most IDs per message; `None`: the server's `limits.max_count`.
    pub batch: Option<u64>,
    /// How long to load after the warm-up.
    pub duration: Duration,
    /// A bearer token for every call, for a server with auth on.
    pub token: Option<String>,
}

/// Runs the load and prints throughput and per-stream latency percentiles.
pub fn run(load: Load) -> Result<(), Error> {
    let refuse = |why: &str| Err(Error::Options(why.into()));
    if !load.target.starts_with("http://") {
        return refuse(
            "with --grpc, --target must be the server's http:// URL, e.g. http://127.0.0.1:8080",
        );
    }
    if load.connections == 0 || load.connections > 10_000 {
        return refuse("--connections must be between 1 and 10000");
    }
    if load.per_stream == 0 {
        return refuse("--per-stream must be at least 1");
    }
    if load.batch == Some(0) {
        return refuse("--batch must be at least 1");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    println!(
        "bench: gRPC Stream({}, {} IDs{}) on {} with {} connection(s), {:?}",
        load.name,
        group_digits(load.per_stream),
        load.batch
            .map(|b| format!(", batch {}", group_digits(b)))
            .unwrap_or_default(),
        load.target,
        load.connections,
        load.duration
    );
    let totals = runtime.block_on(drive(&load))?;
    let secs = load.duration.as_secs_f64();
    let counts = StreamCounts {
        streams: totals.streams,
        errors: totals.errors,
        first_error: totals.first_error.as_deref(),
        ids: totals.ids,
        messages: totals.messages,
        bytes: totals.bytes,
        bytes_of: "messages",
        latency: &totals.latency,
    };
    println!("{}", stream_lines(&counts, secs));
    println!("order      {} violation(s)", totals.order_violations);
    Ok(())
}

async fn drive(load: &Load) -> Result<Totals, Error> {
    let endpoint = Endpoint::from_shared(load.target.clone())
        .with_context(|| format!("{} is not a valid URL", load.target))?;
    let auth = load
        .token
        .as_deref()
        .map(|t| format!("Bearer {t}").parse::<MetadataValue<Ascii>>())
        .transpose()
        .context("--token is not a valid header value")?;
    let mut channels = Vec::with_capacity(load.connections);
    for _ in 0..load.connections {
        // One stream per connection before timing: opens the connection and the server's
        // generator, and shows a wrong name or a refused call before any numbers.
        let channel = endpoint.connect().await.with_context(|| {
            format!(
                "cannot reach {}; is `snowdrift serve` running?",
                load.target
            )
        })?;
        let mut client = IdServiceClient::new(channel.clone());
        let mut stream = client
            .stream(call(&request(load), auth.as_ref()))
            .await
            .with_context(|| format!("Stream({}) was refused", load.name))?
            .into_inner();
        while stream
            .message()
            .await
            .with_context(|| format!("Stream({}) failed", load.name))?
            .is_some()
        {}
        channels.push(channel);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(load.connections);
    for channel in channels {
        let (stop, auth) = (stop.clone(), auth.clone());
        let req = request(load);
        tasks.push(tokio::spawn(async move {
            connection(channel, req, auth, stop).await
        }));
    }
    tokio::time::sleep(load.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut totals = Totals::new()?;
    for task in tasks {
        totals.add(task.await??)?;
    }
    Ok(totals)
}

fn request(load: &Load) -> StreamRequest {
    StreamRequest {
        name: load.name.clone(),
        count: load.per_stream,
        batch: load.batch,
        format: None,
        input: None,
    }
}

/// One call of `req`, with the bearer token if there is one.
fn call(req: &StreamRequest, auth: Option<&MetadataValue<Ascii>>) -> tonic::Request<StreamRequest> {
    let mut call = tonic::Request::new(req.clone());
    if let Some(auth) = auth {
        call.metadata_mut().insert("authorization", auth.clone());
    }
    call
}

/// One connection's loop: a stream, read to its end, then the next. Only IDs that arrive
/// before the stop count, so a stream cut by the stop adds its part, not its request.
async fn connection(
    channel: Channel,
    req: StreamRequest,
    auth: Option<MetadataValue<Ascii>>,
    stop: Arc<AtomicBool>,
) -> Result<Totals, Error> {
    let mut client = IdServiceClient::new(channel);
    let mut c = Totals::new()?;
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let outcome = async {
            let mut stream = client.stream(call(&req, auth.as_ref())).await?.into_inner();
            let mut last: Option<u64> = None;
            while let Some(batch) = stream.message().await? {
                if stop.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                c.ids += batch.count;
                c.messages += 1;
                c.bytes += batch.encoded_len() as u64;
                // IDs of one stream strictly increase: check each run's ends, which
                // costs nothing per ID, as a client that keeps runs packed would.
                for run in &batch.runs {
                    c.order_violations += u64::from(last.is_some_and(|l| run.first <= l));
                    let end = run
                        .first
                        .saturating_add(run.count.saturating_sub(1).saturating_mul(run.stride));
                    c.order_violations += u64::from(run.count > 1 && run.stride == 0);
                    last = Some(end);
                }
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

/// One connection's counts, or all connections' together.
struct Totals {
    streams: u64,
    ids: u64,
    messages: u64,
    bytes: u64,
    order_violations: u64,
    errors: u64,
    first_error: Option<String>,
    latency: Histogram<u64>,
}

impl Totals {
    fn new() -> Result<Self, Error> {
        Ok(Self {
            streams: 0,
            ids: 0,
            messages: 0,
            bytes: 0,
            order_violations: 0,
            errors: 0,
            first_error: None,
            latency: latency_histogram()?,
        })
    }

    fn add(&mut self, c: Totals) -> Result<(), Error> {
        self.streams += c.streams;
        self.ids += c.ids;
        self.messages += c.messages;
        self.bytes += c.bytes;
        self.order_violations += c.order_violations;
        self.errors += c.errors;
        if self.first_error.is_none() {
            self.first_error = c.first_error;
        }
        self.latency.add(c.latency)?;
        Ok(())
    }
}
