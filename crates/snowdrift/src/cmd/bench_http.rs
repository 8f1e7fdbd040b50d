//! `snowdrift bench --target URL`: load on a running server over HTTP, with N connections,
//! closed-loop (as fast as answers come) or at a fixed total rate.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HOST, HeaderValue};
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;

use crate::cmd::report::{count_line, latency_histogram, outcome_line, percentiles};

/// What to load and how hard.
pub struct Load {
    /// The URL every request GETs, e.g. `http://127.0.0.1:8080/v1/ids/snowflake?count=1`.
    pub target: String,
    /// Concurrent connections, each with one request in flight.
    pub connections: usize,
    /// Total requests per second across connections; `None`: as fast as possible.
    pub rate: Option<f64>,
    /// How long to load after the warm-up.
    pub duration: Duration,
}

struct Totals {
    requests: u64,
    ids: u64,
    errors: u64,
    first_error: Option<String>,
    latency: Histogram<u64>,
}

/// Runs the load and prints throughput and latency percentiles.
pub fn run(load: Load) -> Result<()> {
    if !load.target.starts_with("http://") {
        bail!(
            "--target must be an http:// URL, e.g. http://127.0.0.1:8080/v1/ids/snowflake?count=1"
        );
    }
    if load.connections == 0 || load.connections > 10_000 {
        bail!("--connections must be between 1 and 10000");
    }
    if load.rate.is_some_and(|r| r.is_nan() || r <= 0.0) {
        bail!("--rate must be above 0 requests per second");
    }
    // At a fixed rate, one thread does it all: with several, a thread that has a request
    // to send or an answer to read can wait milliseconds for a CPU behind the others, and
    // that wait would count as the server's latency.
    let runtime = match load.rate {
        Some(_) => tokio::runtime::Builder::new_current_thread(),
        None => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .context("starting the async runtime")?;
    println!(
        "bench: GET {} with {} connection(s), {}, {:?}",
        load.target,
        load.connections,
        load.rate.map_or("closed loop".to_string(), |r| format!(
            "{} requests/s in total",
            r as u64
        )),
        load.duration
    );
    let totals = runtime.block_on(drive(&load))?;
    let secs = load.duration.as_secs_f64();
    println!(
        "{}",
        outcome_line(
            "requests",
            totals.requests,
            secs,
            "requests",
            totals.errors,
            totals.first_error.as_deref()
        )
    );
    println!("{}", count_line("ids", totals.ids, secs, "IDs"));
    println!("latency    {}", percentiles(&totals.latency));
    Ok(())
}

async fn drive(load: &Load) -> Result<Totals> {
    let target: Uri = load
        .target
        .parse()
        .with_context(|| format!("--target {} is not a valid URL", load.target))?;
    // A warm-up request checks the target before timing.
    let mut probe = Connection::open(&target).await.with_context(|| {
        format!(
            "cannot reach {}; is `snowdrift serve` running?",
            load.target
        )
    })?;
    let (status, body) = probe.get().await?;
    if !status.is_success() {
        bail!(
            "{} answered {status}: {}",
            load.target,
            String::from_utf8_lossy(&body)
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let due = load.rate.map(|rate| {
        let (send, receive) = flume::unbounded();
        let every = Duration::from_secs_f64(1.0 / rate);
        let stop = stop.clone();
        tokio::spawn(async move { pace(every, &stop, &send).await });
        receive
    });
    let mut tasks = Vec::with_capacity(load.connections);
    for _ in 0..load.connections {
        let (target, stop) = (target.clone(), stop.clone());
        let (errors, due) = (errors.clone(), due.clone());
        tasks.push(tokio::spawn(async move {
            connection(target, stop, errors, due).await
        }));
    }
    tokio::time::sleep(load.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut totals = Totals {
        requests: 0,
        ids: 0,
        errors: 0,
        first_error: None,
        latency: latency_histogram()?,
    };
    for task in tasks {
        let (requests, ids, first_error, latency) = task.await??;
        totals.requests += requests;
        totals.ids += ids;
        totals.latency.add(latency)?;
        if totals.first_error.is_none() {
            totals.first_error = first_error;
        }
    }
    totals.errors = errors.load(Ordering::Relaxed);
    Ok(totals)
}

/// At a fixed rate: the time each request is due, one every `every`, until `stop`. Whichever
/// connection is free takes the next (wrk2's open model), and its latency counts from that
/// time, not from when it was sent, so a stalled server is not hidden (coordinated omission).
/// tokio's timer works in whole milliseconds, which would add up to a millisecond to every
/// request, so the pacer sleeps only while the next due time is further off than that and
/// otherwise yields to the connections until it comes: the client's CPU is busy, but a
/// request goes out within microseconds of its time. Give the client its own CPU
/// (`taskset`) when measuring latency at a fixed rate.
async fn pace(every: Duration, stop: &AtomicBool, due: &flume::Sender<Instant>) {
    let mut next = Instant::now() + every;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while next <= now {
            if due.send(next).is_err() {
                return;
            }
            next += every;
        }
        if next - now > Duration::from_millis(2) {
            tokio::time::sleep_until((next - Duration::from_millis(1)).into()).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

/// One connection's loop: closed (as fast as answers come), or taking due times from
/// [`pace`].
async fn connection(
    target: Uri,
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
    due: Option<flume::Receiver<Instant>>,
) -> Result<(u64, u64, Option<String>, Histogram<u64>)> {
    let mut hist = latency_histogram()?;
    let (mut requests, mut ids) = (0u64, 0u64);
    let mut first_error = None;
    let mut connection = None;
    while !stop.load(Ordering::Relaxed) {
        let start = match &due {
            // The pacer hangs up once the run is over.
            Some(due) => match due.recv_async().await {
                Ok(due) => due,
                Err(_) => break,
            },
            None => Instant::now(),
        };
        let outcome = match connection.take() {
            Some(open) => Ok(open),
            None => Connection::open(&target).await,
        };
        let outcome = match outcome {
            Ok(mut open) => match open.get().await {
                Ok((status, body)) => {
                    connection = Some(open);
                    if status.is_success() {
                        Ok(body)
                    } else {
                        Err(format!("status {status}"))
                    }
                }
                // The connection is dropped; the next request opens another.
                Err(e) => Err(format!("{e:#}")),
            },
            Err(e) => Err(format!("{e:#}")),
        };
        hist.saturating_record(start.elapsed().as_nanos() as u64);
        requests += 1;
        match outcome {
            Ok(body) => ids += count_ids(&body),
            Err(e) => {
                errors.fetch_add(1, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
        }
    }
    Ok((requests, ids, first_error, hist))
}

/// One keep-alive HTTP/1.1 connection sending GETs of one URL. hyper's connection API, not a
/// pooled client: a pool's lock, URL parsing and header building per request cost the
/// client more CPU than the server spends answering.
struct Connection {
    sender: SendRequest<Empty<Bytes>>,
    path: Uri,
    host: HeaderValue,
}

impl Connection {
    async fn open(target: &Uri) -> Result<Self> {
        let authority = target.authority().context("the URL names no host")?.clone();
        let tcp = tokio::net::TcpStream::connect(authority.as_str()).await?;
        tcp.set_nodelay(true)?;
        let (sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(driver);
        Ok(Self {
            sender,
            path: target
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .parse()?,
            host: HeaderValue::from_str(authority.as_str())?,
        })
    }

    /// One GET, with a 10 s limit: its status and body.
    async fn get(&mut self) -> Result<(StatusCode, Bytes)> {
        let request = Request::get(self.path.clone())
            .header(HOST, self.host.clone())
            .body(Empty::new())?;
        let answer = async {
            let response = self.sender.send_request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, body))
        };
        tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .context("no answer within 10 s")?
    }
}

/// IDs in a response: the entries of a JSON `ids` array, or 1 for a text/plain answer
/// (Leaf's routes). Counted by commas so the client spends little time per response.
fn count_ids(body: &[u8]) -> u64 {
    match body.first() {
        Some(b'{') => {
            let Some(start) = body.windows(7).position(|w| w == b"\"ids\":[") else {
                return 0;
            };
            let rest = &body[start + 7..];
            if rest.first() == Some(&b']') {
                return 0;
            }
            1 + rest
                .iter()
                .take_while(|&&b| b != b']')
                .filter(|&&b| b == b',')
                .count() as u64
        }
        Some(_) => 1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::count_ids;

    #[test]
    fn counts_ids_in_both_answer_shapes() {
        assert_eq!(count_ids(br#"{"name":"a","ids":["1","2","3"]}"#), 3);
        assert_eq!(count_ids(br#"{"name":"a","ids":["1"]}"#), 1);
        assert_eq!(count_ids(br#"{"name":"a","ids":[]}"#), 0);
        assert_eq!(count_ids(b"123456"), 1);
        assert_eq!(count_ids(b""), 0);
    }
}
