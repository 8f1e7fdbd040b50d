//! The snowflake generator in this process: threads share one generator and call it in a
//! loop; latency is timed on every 64th call (timing each call would cost as much as the
//! call), throughput counts every ID, and each thread checks that its IDs strictly increase.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use snowdrift_core::clock::{CachedClock, Clock, SystemClock};
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::Layout;

use crate::Error;
use crate::report::{group_digits, latency_histogram};

/// Which clock the generator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ClockKind {
    /// Monotonic clock anchored to the wall clock (one vDSO call per read).
    Monotonic,
    /// An atomic refreshed by a ticker thread every 100 µs (one load per read).
    Cached,
    /// The wall clock, read on every call.
    System,
}

/// How hard to call the generator: checked when made, so a run starts only with options
/// that make sense.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    threads: usize,
    block: u64,
    clock: ClockKind,
}

impl Options {
    /// `threads` threads (1 to 1024) sharing the generator, each call reserving `block` IDs
    /// (at least 1; 1 calls `next()`, more `next_block()`), reading `clock`.
    pub fn new(threads: usize, block: u64, clock: ClockKind) -> Result<Self, Error> {
        if threads == 0 || threads > 1024 {
            return Err(Error::Options(
                "--threads must be between 1 and 1024".into(),
            ));
        }
        if block == 0 {
            return Err(Error::Options("--block must be at least 1".into()));
        }
        Ok(Self {
            threads,
            block,
            clock,
        })
    }
}

/// Runs the generator of `layout` (shown as `name`) for `duration` and prints IDs/s, calls,
/// latency percentiles and order violations. `base` is the monotonic clock the generator
/// reads with [`ClockKind::Monotonic`], and the source of [`ClockKind::Cached`].
pub fn run<C: Clock + 'static>(
    options: &Options,
    duration: Duration,
    layout: &Layout,
    name: &str,
    base: C,
) -> Result<(), Error> {
    println!(
        "bench: layout {name}, {} thread(s), block {}, clock {:?}, {:?}",
        options.threads, options.block, options.clock, duration
    );
    let report = match options.clock {
        ClockKind::Monotonic => measure(layout, base, options, duration)?,
        ClockKind::System => measure(layout, SystemClock, options, duration)?,
        ClockKind::Cached => {
            let (clock, _ticker) = cached_clock(base, Duration::from_micros(100));
            measure(layout, clock, options, duration)?
        }
    };
    println!("{report}");
    Ok(())
}

/// A thread that keeps a [`CachedClock`] current; stops when dropped.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A clock costing one atomic load per read, refreshed every `period` by a ticker thread.
fn cached_clock<C: Clock + 'static>(source: C, period: Duration) -> (CachedClock, Ticker) {
    let (clock, driver) = CachedClock::new(source);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("snowdrift-clock".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                driver.tick();
                std::thread::sleep(period);
            }
        })
        .ok();
    (clock, Ticker { stop, thread })
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
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

fn measure<C: Clock>(
    layout: &Layout,
    clock: C,
    options: &Options,
    duration: Duration,
) -> Result<Report, Error> {
    let generator = SnowflakeGenerator::builder(layout.clone()).build(clock)?;
    let stop = AtomicBool::new(false);
    let issued = AtomicU64::new(0);
    let bar = ProgressBar::new(duration.as_millis() as u64).with_style(
        ProgressStyle::with_template("{bar:40} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let start = Instant::now();
    let results = std::thread::scope(|s| -> Result<Vec<(u64, u64, Histogram<u64>)>, Error> {
        let workers: Vec<_> = (0..options.threads)
            .map(|_| s.spawn(|| worker(&generator, options.block, &stop, &issued)))
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
            .map(|w| w.join().map_err(|_| Error::Panicked)?)
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
) -> Result<(u64, u64, Histogram<u64>), Error> {
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
