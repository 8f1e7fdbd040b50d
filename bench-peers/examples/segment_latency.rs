//! Segment mode: rates and tail latencies that criterion's means do not show.
//!
//! ```text
//! cargo run --release -p bench-peers --example segment_latency -- take [SECONDS]
//! cargo run --release -p bench-peers --example segment_latency -- pg-delay [DELAY_MS] [IDS_PER_S] [SECONDS] [STEP]
//! cargo run --release -p bench-peers --example segment_latency -- pg-max [SECONDS] [STEP]
//! ```
//!
//! - `take`: `SegmentChain::take(1)` on a warm chain (1 and 2 threads): IDs/s from an
//!   untimed loop, then the latency of every single call, read with `rdtsc` fenced by
//!   `lfence` and kept in an HDR histogram. Each reading includes the cost of the two
//!   stamps; that cost alone (two stamps around nothing) is printed beside it. The same
//!   again with a `LocalSegment` per thread (default blocks, 8 doubling to 64), which
//!   takes its blocks from the same kind of warm chain.
//! - `pg-delay`: `SegmentBuffer::next(1)` on PostgreSQL through a `FaultProxy` that adds
//!   the delay to every statement, at a steady rate below what the refill can claim; the
//!   latency of every call (`Instant`, ~37 ns per read on the reference VM), starved calls,
//!   and claims per ID. One claim through the proxy is timed first, to show the refill
//!   rate (`STEP` IDs per claim time) that the load stays under; the first second is a
//!   warm-up, not recorded.
//! - `pg-max`: `next(1)` on PostgreSQL directly, as fast as one task can call it: IDs/s and
//!   claims per ID, to set beside pgbench's `nextval` rate.
//!
//! PostgreSQL is `SNOWDRIFT_TEST_POSTGRES` or `postgres://root:root@127.0.0.1:5432/test`.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use bench_peers::WarmChain;
use hdrhistogram::Histogram;
use snowdrift_core::segment::{LocalSegment, LocalTake, Take};
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentBuffer, SqlSegmentStore};
use snowdrift_testkit::{FaultProxy, urls};

/// Leaf's largest dynamic step.
const SEGMENT_LEN: u64 = 1_000_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: u64| {
        args.get(i)
            .map(|a| a.parse().expect("a number"))
            .unwrap_or(default)
    };
    match args.first().map(String::as_str) {
        Some("take") => take(arg(1, 3)),
        Some("pg-delay") => pg(
            Some(Duration::from_millis(arg(1, 50))),
            arg(2, 20_000),
            arg(3, 10),
            arg(4, 10_000),
        ),
        Some("pg-max") => pg(None, 0, arg(1, 10), arg(2, 1000)),
        _ => eprintln!("usage: segment_latency take|pg-delay|pg-max [...] (see the source)"),
    }
}

/// A fenced timestamp counter read: earlier loads and stores finish before it, later ones
/// start after it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stamp() -> u64 {
    use std::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: lfence needs SSE2, which every x86_64 CPU has; rdtsc has no precondition.
    unsafe {
        _mm_lfence();
        let t = _rdtsc();
        _mm_lfence();
        t
    }
}

/// Elsewhere: nanoseconds from a monotonic clock (then "cycles" below are ns).
#[cfg(not(target_arch = "x86_64"))]
fn stamp() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Stamp ticks per nanosecond, measured against `Instant` over 200 ms.
fn ticks_per_ns() -> f64 {
    let (t0, c0) = (Instant::now(), stamp());
    std::thread::sleep(Duration::from_millis(200));
    let (c1, t1) = (stamp(), Instant::now());
    (c1 - c0) as f64 / (t1 - t0).as_nanos() as f64
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

fn print_quantiles(what: &str, h: &Histogram<u64>, per_ns: f64) {
    let q = |p: f64| h.value_at_quantile(p) as f64 / per_ns;
    println!(
        "{what}: n={} p50={:.1} ns p99={:.1} ns p99.9={:.1} ns p99.99={:.1} ns max={:.1} ns",
        h.len(),
        q(0.5),
        q(0.99),
        q(0.999),
        q(0.9999),
        h.max() as f64 / per_ns
    );
}

fn take(seconds: u64) {
    let per_ns = ticks_per_ns();
    println!("stamp ticks per ns: {per_ns:.3}");
    let run = Duration::from_secs(seconds);

    // The cost of reading the time twice, alone.
    let mut empty = histogram();
    for _ in 0..10_000_000 {
        let a = stamp();
        let b = stamp();
        empty.record(b - a).expect("in bounds");
    }
    print_quantiles("two stamps, nothing between", &empty, per_ns);

    for threads in [1usize, 2] {
        measure(
            "take(1)",
            threads,
            run,
            per_ns,
            || (),
            |(), warm| warm.next_id(),
        );
        measure(
            "LocalSegment",
            threads,
            run,
            per_ns,
            LocalSegment::default,
            |local, warm| match local.next_with(|n| Take::Ready {
                ids: warm.next_ids(n),
                refill: false,
            }) {
                LocalTake::Ready { id, .. } => id,
                LocalTake::Empty => unreachable!("next_ids waits for IDs"),
            },
        );
    }
}

/// Rate, then latency of every call, of `threads` threads taking IDs from one warm chain:
/// each thread makes its own state with `init` (its handle, if any) and gets one ID with
/// `next(&mut state, &chain)`.
fn measure<S>(
    what: &str,
    threads: usize,
    run: Duration,
    per_ns: f64,
    init: impl Fn() -> S + Sync,
    next: impl Fn(&mut S, &WarmChain) -> u64 + Sync,
) {
    // Rate: untimed calls, checking the clock every 64K IDs.
    let warm = WarmChain::start(SEGMENT_LEN);
    let barrier = Barrier::new(threads);
    let counts: Vec<(u64, Duration)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut state = init();
                    barrier.wait();
                    let start = Instant::now();
                    let mut n = 0u64;
                    while start.elapsed() < run {
                        for _ in 0..65_536 {
                            black_box(next(&mut state, &warm));
                        }
                        n += 65_536;
                    }
                    (n, start.elapsed())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect()
    });
    let total: u64 = counts.iter().map(|c| c.0).sum();
    let span = counts.iter().map(|c| c.1).max().unwrap_or_default();
    let status = warm.status();
    println!(
        "{what}, {threads} thread(s): {:.1} M IDs/s in total ({} IDs in {:.2} s; {} segments pushed, {} starved calls)",
        total as f64 / span.as_secs_f64() / 1e6,
        total,
        span.as_secs_f64(),
        status.pushed,
        status.starved
    );
    drop(warm);

    // Latency: every call timed.
    let warm = WarmChain::start(SEGMENT_LEN);
    let barrier = Barrier::new(threads);
    let merged = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut state = init();
                    let mut h = histogram();
                    barrier.wait();
                    let start = Instant::now();
                    while start.elapsed() < run {
                        for _ in 0..65_536 {
                            let a = stamp();
                            black_box(next(&mut state, &warm));
                            let b = stamp();
                            h.record(b - a).expect("in bounds");
                        }
                    }
                    h
                })
            })
            .collect();
        let mut all = histogram();
        for w in workers {
            all.add(w.join().expect("worker")).expect("same bounds");
        }
        all
    });
    print_quantiles(
        &format!("{what} latency, {threads} thread(s), stamps included"),
        &merged,
        per_ns,
    );
}

fn pg(delay: Option<Duration>, rate: u64, seconds: u64, step: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let base = urls::postgres();
        let (proxy, url) = match delay {
            Some(_) => {
                let (p, u) = FaultProxy::start_for_url(&base).await.expect("proxy");
                (Some(p), u)
            }
            None => (None, base),
        };
        let table = format!("bench_segment_{}", std::process::id());
        let store = SqlSegmentStore::connect(&url, &table)
            .await
            .expect("PostgreSQL store");
        for tag in ["bench", "probe"] {
            store
                .create_tag(&NewTag {
                    tag: tag.into(),
                    step: i64::try_from(step).expect("step fits i64"),
                    description: None,
                    template: None,
                })
                .await
                .expect("tag");
        }
        let first_max = store.get_tag("bench").await.expect("tag").max_id;
        if let (Some(p), Some(d)) = (&proxy, delay) {
            p.delay(d);
            let t = Instant::now();
            store.claim("probe", None).await.expect("probe claim");
            let took = t.elapsed();
            println!(
                "one claim through the proxy: {:.0} ms, so the refill brings at least {:.0} IDs/s at step {step}; load {rate} IDs/s",
                took.as_secs_f64() * 1e3,
                step as f64 / took.as_secs_f64()
            );
        }
        let buffer = SegmentBuffer::start(store.clone(), "bench", BufferConfig::default())
            .await
            .expect("buffer");
        let mut h = histogram();
        let mut ids = 0u64;
        let mut errors = 0u64;
        let run = Duration::from_secs(seconds);
        let mut start = Instant::now();
        let mut starved_before = 0;
        if rate == 0 {
            while start.elapsed() < run {
                for _ in 0..1024 {
                    match buffer.next(1).await {
                        Ok(r) => ids += r.len(),
                        Err(_) => errors += 1,
                    }
                }
            }
        } else {
            // `per_tick` calls every millisecond: steady, below the refill rate.
            let per_tick = (rate / 1000).max(1);
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // Warm-up at the same rate, not recorded.
            let warm = Instant::now();
            while warm.elapsed() < Duration::from_secs(1) {
                tick.tick().await;
                for _ in 0..per_tick {
                    let _ = buffer.next(1).await;
                }
            }
            starved_before = buffer.status().starved;
            start = Instant::now();
            while start.elapsed() < run {
                tick.tick().await;
                for _ in 0..per_tick {
                    let t = Instant::now();
                    let got = buffer.next(1).await;
                    h.record(t.elapsed().as_nanos() as u64).expect("in bounds");
                    match got {
                        Ok(r) => ids += r.len(),
                        Err(_) => errors += 1,
                    }
                }
            }
        }
        let elapsed = start.elapsed();
        let status = buffer.status();
        let claimed = store.get_tag("bench").await.expect("tag").max_id - first_max;
        drop(buffer);
        match delay {
            Some(d) => println!("PostgreSQL through FaultProxy, {} ms added per statement", d.as_millis()),
            None => println!("PostgreSQL, direct"),
        }
        // The first claim is made by start(); every claim is one transaction of four
        // statements (BEGIN, UPDATE, SELECT, COMMIT).
        println!(
            "{ids} IDs in {:.2} s = {:.0} IDs/s, {errors} errors, {} starved calls (+{starved_before} in the warm-up); {} claims ({} IDs claimed), {:.2e} claims per ID, {:.2e} statements per ID",
            elapsed.as_secs_f64(),
            ids as f64 / elapsed.as_secs_f64(),
            status.starved - starved_before,
            status.pushed,
            claimed,
            status.pushed as f64 / ids as f64,
            4.0 * status.pushed as f64 / ids as f64,
        );
        if rate > 0 {
            print_quantiles("next(1) latency", &h, 1.0);
        }
        store.close().await;
        let drop_url = urls::postgres();
        sqlx_drop(&drop_url, &table).await;
    });
}

/// Drops the bench's table through a fresh store connection's pool.
async fn sqlx_drop(url: &str, table: &str) {
    // The store API has no drop; a plain connection does it.
    use sqlx::Connection;
    if let Ok(mut c) = sqlx::postgres::PgConnection::connect(url).await {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {table}")))
            .execute(&mut c)
            .await;
        let _ = c.close().await;
    }
}
