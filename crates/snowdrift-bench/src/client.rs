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
    /// Threads sharing the client: each calls the blocking client's `next()`, or, with
    /// [`tasks`](Self::tasks), the async runtime's worker threads.
    pub threads: usize,
    /// Async tasks calling `next().await` on one handle of the async client, on a runtime of
    /// `threads` worker threads; `None`: blocking threads.
    pub tasks: Option<usize>,
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
    if let Some(tasks) = load.tasks {
        return run_tasks(load, tasks);
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
    let outcome = Outcome {
        ids,
        secs,
        callers: load.threads,
        latency,
        errors: errors.load(Ordering::Relaxed),
        first_error: first_error
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    };
    outcome.print(client.stats(&load.name));
    Ok(())
}

/// What a run measured.
struct Outcome {
    ids: u64,
    secs: f64,
    /// Threads or tasks calling `next()`.
    callers: usize,
    latency: Histogram<u64>,
    errors: u64,
    first_error: Option<String>,
}

impl Outcome {
    fn print(&self, stats: Option<snowdrift_client::Stats>) {
        let Outcome {
            ids, secs, callers, ..
        } = *self;
        println!("{}", count_line("ids", ids, secs, "IDs"));
        println!(
            "per call   {:.2} ns per ID per caller",
            1e9 * secs * callers as f64 / ids.max(1) as f64
        );
        println!(
            "latency    {} (every 64th next() timed)",
            percentiles(&self.latency)
        );
        let first = self
            .first_error
            .as_ref()
            .map(|e| format!(", first: {e}"))
            .unwrap_or_default();
        println!("errors     {}{first}", self.errors);
        if let Some(st) = stats {
            print_stats(&st);
        }
    }
}

fn print_stats(st: &snowdrift_client::Stats) {
    println!(
        "cache      {} fetches, batch now {}, {} cached, {} wasted, {} batches refused",
        group_digits(st.fetches),
        group_digits(st.batch),
        group_digits(st.cached),
        group_digits(st.wasted),
        group_digits(st.refused)
    );
}

/// The load as `tasks` async tasks sharing one handle of the async client, on a runtime of
/// `load.threads` worker threads: what an async application does, without a thread
/// switch per blocking call.
fn run_tasks(load: Load, tasks: usize) -> Result<(), Error> {
    if tasks == 0 || tasks > 100_000 {
        return Err(Error::Options(
            "--tasks must be between 1 and 100000".into(),
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(load.threads)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut builder = snowdrift_client::Client::builder().endpoints(load.endpoints.clone());
        if let Some(token) = &load.token {
            builder = builder.token(token.clone());
        }
        if let Some((min, max)) = load.batch {
            builder = builder.batch(min, max);
        }
        let client = builder.build().context("the client's settings")?;
        println!(
            "bench: snowdrift-client ids({}).next().await on {} with {tasks} task(s) on {} \
             thread(s), {:?}",
            load.name,
            load.endpoints.join(","),
            load.threads,
            load.duration
        );
        let ids = client.ids(&load.name);
        ids.next()
            .await
            .with_context(|| format!("the first ID of {:?}", load.name))?;
        let warm = Instant::now() + Duration::from_millis(500).min(load.duration / 4);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let per_task = load.rate.map(|r| r / tasks as f64);
        let handles: Vec<_> = (0..tasks)
            .map(|_| tokio::spawn(task(ids.clone(), per_task, warm, stop.clone())))
            .collect();
        tokio::time::sleep_until((warm + load.duration).into()).await;
        stop.store(true, Ordering::Relaxed);
        let start = warm;
        let mut outcome = Outcome {
            ids: 0,
            secs: 0.0,
            callers: tasks,
            latency: latency_histogram()?,
            errors: 0,
            first_error: None,
        };
        for h in handles {
            let t = h.await.map_err(|_| Error::Panicked)??;
            outcome.ids += t.counted;
            outcome.errors += t.errors;
            outcome.latency.add(t.hist)?;
            if outcome.first_error.is_none() {
                outcome.first_error = t.first_error;
            }
        }
        outcome.secs = start.elapsed().as_secs_f64();
        outcome.print(Some(ids.stats()));
        Ok(())
    })
}

/// What one task counted.
struct Counted {
    counted: u64,
    hist: Histogram<u64>,
    errors: u64,
    first_error: Option<String>,
}

/// One task: [`worker`]'s loop on `ids.next().await`.
async fn task(
    ids: snowdrift_client::Ids,
    rate: Option<f64>,
    warm: Instant,
    stop: std::sync::Arc<AtomicBool>,
) -> Result<Counted, Error> {
    let mut c = Counted {
        counted: 0,
        hist: latency_histogram()?,
        errors: 0,
        first_error: None,
    };
    let mut warming = true;
    let (start, mut taken) = (Instant::now(), 0u64);
    while !stop.load(Ordering::Relaxed) {
        if let Some(rate) = rate
            && (start.elapsed().as_secs_f64() * rate) < (taken + 64) as f64
        {
            tokio::time::sleep(Duration::from_micros(200)).await;
            continue;
        }
        if warming && Instant::now() >= warm {
            warming = false;
            c.hist.reset();
        }
        let mut ok = 0u64;
        for i in 0..64u32 {
            let t = (i == 0).then(Instant::now);
            match ids.next().await {
                Ok(id) => {
                    std::hint::black_box(id);
                    ok += 1;
                }
                Err(e) => {
                    c.errors += 1;
                    c.first_error.get_or_insert_with(|| e.to_string());
                }
            }
            if let Some(t) = t {
                c.hist.saturating_record(t.elapsed().as_nanos() as u64);
            }
        }
        taken += 64;
        if !warming {
            c.counted += ok;
        }
        // A warm cache answers without a wait: let the other tasks run.
        tokio::task::yield_now().await;
    }
    Ok(c)
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
