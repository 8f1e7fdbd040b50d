//! `snowdrift bench --target URL`: load on a running server over HTTP, with N connections,
//! closed-loop (as fast as answers come) or at a fixed total rate.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;

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
    let runtime = tokio::runtime::Builder::new_multi_thread()
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
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(load.connections)
        .timeout(Duration::from_secs(10))
        .build()?;
    // A warm-up pass opens the connections and the server's buffers before timing.
    for _ in 0..load.connections.min(50) {
        let r = client.get(&load.target).send().await.with_context(|| {
            format!(
                "cannot reach {}; is `snowdrift serve` running?",
                load.target
            )
        })?;
        if !r.status().is_success() {
            bail!(
                "{} answered {}: {}",
                load.target,
                r.status(),
                r.text().await.unwrap_or_default()
            );
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let due = load.rate.map(|rate| {
        let (send, receive) = flume::unbounded();
        let every = Duration::from_secs_f64(1.0 / rate);
        let stop = stop.clone();
        std::thread::spawn(move || pace(every, &stop, &send));
        receive
    });
    let mut tasks = Vec::with_capacity(load.connections);
    for _ in 0..load.connections {
        let (client, target, stop) = (client.clone(), load.target.clone(), stop.clone());
        let (errors, due) = (errors.clone(), due.clone());
        tasks.push(tokio::spawn(async move {
            connection(client, target, stop, errors, due).await
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
/// A thread keeps the time because tokio's timer rounds sleeps up to whole milliseconds,
/// which would add up to a millisecond to every request; a thread's sleep overshoots by
/// tens of microseconds.
fn pace(every: Duration, stop: &AtomicBool, due: &flume::Sender<Instant>) {
    let mut next = Instant::now() + every;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        while next <= now {
            if due.send(next).is_err() {
                return;
            }
            next += every;
        }
        std::thread::sleep(next - now);
    }
}

/// One connection's loop: closed (as fast as answers come), or taking due times from
/// [`pace`].
async fn connection(
    client: reqwest::Client,
    target: String,
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
    due: Option<flume::Receiver<Instant>>,
) -> Result<(u64, u64, Option<String>, Histogram<u64>)> {
    let mut hist = latency_histogram()?;
    let (mut requests, mut ids) = (0u64, 0u64);
    let mut first_error = None;
    while !stop.load(Ordering::Relaxed) {
        let start = match &due {
            // The pacer hangs up once the run is over.
            Some(due) => match due.recv_async().await {
                Ok(due) => due,
                Err(_) => break,
            },
            None => Instant::now(),
        };
        let outcome = match client.get(&target).send().await {
            Ok(r) if r.status().is_success() => r.bytes().await.map_err(|e| e.to_string()),
            Ok(r) => Err(format!("status {}", r.status())),
            Err(e) => Err(e.to_string()),
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
