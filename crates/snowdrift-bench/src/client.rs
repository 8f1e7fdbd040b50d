//! Threads in this process taking IDs of one name through one shared `snowdrift-client`, as
//! an application would (`snowdrift bench --target URL[,URL...] --client NAME`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::error::{Context, Error};
use crate::report::{count_line, group_digits, latency_histogram, percentiles};

/// What to take and how hard.
pub struct Load {
    /// The servers, as the client's endpoints.
    pub endpoints: Vec<String>,
    /// The generator or tag.
    pub name: String,
    /// Threads sharing the client.
    pub threads: usize,
    /// The client's batch bounds; `None`: its defaults.
    pub batch: Option<(u64, u64)>,
    /// IDs per second all threads take together; `None`: as fast as they can.
    pub rate: Option<f64>,
    /// How long to take IDs after the warm-up.
    pub duration: Duration,
    /// A bearer token, for servers with auth on.
    pub token: Option<String>,
}

/// Runs the load and prints IDs/s, `next()` latency and the cache's counts.
pub fn run(load: Load) -> Result<(), Error> {
    if load.threads == 0 || load.threads > 1024 {
        return Err(Error::Options(
            "--threads must be between 1 and 1024".into(),
        ));
    }
    if load.rate.is_some_and(|r| r.is_nan() || r < 1.0) {
        return Err(Error::Options(
            "--rate must be at least 1 ID per second".into(),
        ));
    }
    let per_thread = load.rate.map(|r| r / load.threads as f64);
    let mut builder =
        snowdrift_client::blocking::Client::builder().endpoints(load.endpoints.clone());
    if let Some(token) = &load.token {
        builder = builder.token(token.clone());
    }
    if let Some((min, max)) = load.batch {
        builder = builder.with(|b| b.batch(min, max));
    }
    let client = builder.build().context("the client's settings")?;
    println!(
        "bench: snowdrift-client next({}) on {} with {} thread(s), {:?}",
        load.name,
        load.endpoints.join(","),
        load.threads,
        load.duration
    );
    // Warm-up: the first fetch, and the batch size settling to the rate.
    client
        .next(&load.name)
        .with_context(|| format!("the first ID of {:?}", load.name))?;
    let warm = Instant::now() + Duration::from_millis(500).min(load.duration / 4);
    let stop = AtomicBool::new(false);
    let errors = AtomicU64::new(0);
    let first_error = std::sync::Mutex::new(None::<String>);
    let (ids, latency, start) =
        std::thread::scope(|s| -> Result<(u64, Histogram<u64>, Instant), Error> {
            let workers: Vec<_> = (0..load.threads)
                .map(|_| {
                    s.spawn(|| {
                        worker(
                            &client,
                            &load.name,
                            per_thread,
                            warm,
                            &stop,
                            &errors,
                            &first_error,
                        )
                    })
                })
                .collect();
            std::thread::sleep(warm.saturating_duration_since(Instant::now()));
            let start = Instant::now();
            std::thread::sleep(load.duration);
            stop.store(true, Ordering::Relaxed);
            let mut total = 0;
            let mut latency = latency_histogram()?;
            for w in workers {
                let (n, h) = w.join().map_err(|_| Error::Panicked)??;
                total += n;
                latency.add(h)?;
            }
            Ok((total, latency, start))
        })?;
    let secs = start.elapsed().as_secs_f64();
    println!("{}", count_line("ids", ids, secs, "IDs"));
    println!(
        "per call   {:.2} ns per ID per thread",
        1e9 * secs * load.threads as f64 / ids.max(1) as f64
    );
    println!(
        "latency    {} (every 64th next() timed)",
        percentiles(&latency)
    );
    let errors = errors.load(Ordering::Relaxed);
    let first = first_error
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .map(|e| format!(", first: {e}"))
        .unwrap_or_default();
    println!("errors     {errors}{first}");
    if let Some(st) = client.stats(&load.name) {
        println!(
            "cache      {} fetches, batch now {}, {} cached, {} wasted, {} batches refused",
            group_digits(st.fetches),
            group_digits(st.batch),
            group_digits(st.cached),
            group_digits(st.wasted),
            group_digits(st.refused)
        );
    }
    Ok(())
}

/// One thread: `next()` in a loop (64 at a time, paced to `rate` IDs/s if set), every 64th
/// call timed; counts only after `warm`.
#[allow(clippy::too_many_arguments)]
fn worker(
    client: &snowdrift_client::blocking::Client,
    name: &str,
    rate: Option<f64>,
    warm: Instant,
    stop: &AtomicBool,
    errors: &AtomicU64,
    first_error: &std::sync::Mutex<Option<String>>,
) -> Result<(u64, Histogram<u64>), Error> {
    let mut hist = latency_histogram()?;
    let mut counted = 0u64;
    let mut warming = true;
    let (start, mut taken) = (Instant::now(), 0u64);
    while !stop.load(Ordering::Relaxed) {
        // At a set rate: wait until the schedule is 64 IDs ahead of what was taken.
        if let Some(rate) = rate
            && (start.elapsed().as_secs_f64() * rate) < (taken + 64) as f64
        {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        if warming && Instant::now() >= warm {
            warming = false;
            hist.reset();
        }
        let mut ok = 0u64;
        for i in 0..64u32 {
            let t = (i == 0).then(Instant::now);
            match client.next(name) {
                Ok(id) => {
                    std::hint::black_box(id);
                    ok += 1;
                }
                Err(e) => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    let mut first = first_error
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    first.get_or_insert_with(|| e.to_string());
                }
            }
            if let Some(t) = t {
                hist.saturating_record(t.elapsed().as_nanos() as u64);
            }
        }
        taken += 64;
        if !warming {
            counted += ok;
        }
    }
    Ok((counted, hist))
}
