//! The warm path of the client's ID handle beside a bare shared counter, in one run with
//! alternating rounds (BENCHMARKS.md, "The clients"; `bench-peers/scripts/client_handle.sh`
//! starts a server and runs this).
//!
//! Against a running `snowdrift serve` with a segment tag (and its default `snowflake`
//! generator), each round measures, in an order that rotates from round to round:
//!
//! - `fetch_add`: a loop of `AtomicU64::fetch_add(1)` on one shared counter, on 1 and on 2
//!   threads (the cost of the simplest shared counter);
//! - `thread-local counter`: a `Cell<u64>` in a `thread_local!` incremented, on 1 and 2
//!   threads (what the handle aims at, and what a second thread adds on this machine when
//!   nothing is shared);
//! - `thread-local block`: a block's `next` and `end` in a `thread_local!`, taken the way the
//!   handle takes from its block (compare, store, a new block every 1,024), on 1 and 2
//!   threads: the handle's warm path without the client, sharing nothing, so what a second
//!   thread costs a loop that reads and writes memory per ID on this machine;
//! - `handle`: `orders.next()` on a blocking handle (`client.ids(tag)`), on 1 thread and on
//!   2 threads sharing the one handle;
//! - `handle, blocks of 64` and `blocks of 8192`: the same on clients built with
//!   `thread_block(64)` and `thread_block(8192)` (the default is 1,024; smaller blocks
//!   take more compare-and-swaps on the cache's shared word), 1 and 2 threads;
//! - `next(name)`: `client.next(tag)` on 1 and 2 threads;
//! - `async handle`: `orders.next().await` on the async client, 1 thread;
//! - `snowflake handle`: a handle on the `snowflake` generator (IDs checked per ID against
//!   `max_age` on the coarse clock), 1 thread. A server issues at most 4,096 IDs per ms
//!   with the Twitter layout, so this one is timed over bursts of [`FLAKE_BURST`] IDs from
//!   a cache that holds them (waiting for the cache to fill before each burst), not flat
//!   out;
//! - `server max_count 10 M` (with `--large-endpoint URL`, a second server with
//!   `limits.max_count = 10000000`): the handle on 1 and 2 threads against it. The client
//!   streams its batches of up to 100 M in messages of the server's `max_count`: 10,000 by
//!   default, 10,000 messages per batch, each an issue and an encode for the server, which
//!   runs on the same two CPUs as the timed threads; 10 per batch here.
//!
//! Threads are not pinned. Each case runs `--seconds` per round; the rate is IDs over wall
//! time. The summary gives the median and range of the rounds, and the median of each
//! round's ratios.
//!
//! ```text
//! cargo run --release -p snowdrift-client --example handle_bench -- \
//!     --endpoint http://127.0.0.1:8080 --tag order [--rounds 7] [--seconds 0.5] \
//!     [--large-endpoint http://127.0.0.1:8081]
//! ```

use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// IDs taken between two looks at the clock.
const CHUNK: u64 = 1 << 20;
/// Snowflake IDs per timed burst, and the batch the snowflake client fetches (twice that).
const FLAKE_BURST: u64 = 1 << 20;

struct Args {
    endpoint: String,
    /// A second server, with a larger `limits.max_count`, for the `server messages` cases.
    large: Option<String>,
    tag: String,
    snowflake: String,
    rounds: usize,
    seconds: f64,
    /// Only the cases whose label starts with this.
    only: Option<String>,
}

fn args() -> Result<Args> {
    let mut a = Args {
        endpoint: "http://127.0.0.1:8080".into(),
        large: None,
        tag: "order".into(),
        snowflake: "snowflake".into(),
        rounds: 7,
        seconds: 0.5,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--endpoint" => a.endpoint = value()?,
            "--large-endpoint" => a.large = Some(value()?),
            "--tag" => a.tag = value()?,
            "--snowflake" => a.snowflake = value()?,
            "--rounds" => a.rounds = value()?.parse()?,
            "--seconds" => a.seconds = value()?.parse()?,
            "--only" => a.only = Some(value()?),
            _ => {
                return Err(format!(
                    "unknown flag {flag}; flags: --endpoint URL [--large-endpoint URL] --tag NAME \
                     --snowflake NAME --rounds N --seconds S --only LABEL_PART"
                )
                .into());
            }
        }
    }
    if a.rounds == 0 || a.seconds <= 0.0 {
        return Err("--rounds and --seconds must be above 0".into());
    }
    Ok(a)
}

/// Runs `take` flat out on `threads` threads for `seconds`; IDs per second over the wall
/// time from the barrier to the last thread's end. `take` returns a value that must not be
/// optimized away.
fn rate<F>(threads: usize, seconds: f64, take: F) -> f64
where
    F: Fn() -> u64 + Send + Sync + 'static,
{
    let take = Arc::new(take);
    let start = Arc::new(Barrier::new(threads + 1));
    let budget = Duration::from_secs_f64(seconds);
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (take, start) = (take.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let begun = Instant::now();
                let mut n = 0u64;
                while begun.elapsed() < budget {
                    for _ in 0..CHUNK {
                        black_box(take());
                    }
                    n += CHUNK;
                }
                n
            })
        })
        .collect();
    start.wait();
    let begun = Instant::now();
    let total: u64 = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    total as f64 / begun.elapsed().as_secs_f64()
}

thread_local! {
    static COUNTER: Cell<u64> = const { Cell::new(0) };
}

/// A block as the handle's warm path sees it, sharing nothing: `next` up to `end`.
struct MemBlock {
    next: Cell<u64>,
    end: Cell<u64>,
}

thread_local! {
    static BLOCK: MemBlock = const {
        MemBlock {
            next: Cell::new(0),
            end: Cell::new(0),
        }
    };
}

fn thread_local_block_next() -> u64 {
    BLOCK.with(|b| {
        // Through a pointer the compiler cannot see: a load and a store per ID, as the
        // handle's table in memory, not a register it could keep the count in.
        let b = black_box(b);
        let id = b.next.get();
        if id == b.end.get() {
            // A new block, as the handle takes one every 1,024 IDs (here from nothing
            // shared, so only the warm path's shape is measured).
            b.end.set(black_box(id + 1024));
        }
        b.next.set(id + 1);
        id
    })
}

fn thread_local_next() -> u64 {
    COUNTER.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> Result<()> {
    let a = args()?;
    let client = snowdrift_client::blocking::Client::builder()
        .endpoints([a.endpoint.clone()])
        // Batches of up to 100 M (the servers' default `limits.max_stream`), so that at
        // hundreds of millions of IDs per second a fetch is needed a few times a second.
        .with(|b| b.batch(100_000, 100_000_000))
        .build()?;
    let orders = client.ids(&a.tag);
    let big_client = snowdrift_client::blocking::Client::builder()
        .endpoints([a.endpoint.clone()])
        .with(|b| b.batch(100_000, 100_000_000).thread_block(64))
        .build()?;
    let big = big_client.ids(&a.tag);
    let wide_client = snowdrift_client::blocking::Client::builder()
        .endpoints([a.endpoint.clone()])
        .with(|b| b.batch(100_000, 100_000_000).thread_block(8192))
        .build()?;
    let wide = wide_client.ids(&a.tag);
    let large_client = match &a.large {
        Some(url) => Some(
            snowdrift_client::blocking::Client::builder()
                .endpoints([url.clone()])
                .with(|b| b.batch(100_000, 100_000_000))
                .build()?,
        ),
        None => None,
    };
    let large = large_client.as_ref().map(|c| c.ids(&a.tag));
    let flake_client = snowdrift_client::blocking::Client::builder()
        .endpoints([a.endpoint.clone()])
        .with(|b| b.batch(2 * FLAKE_BURST, 2 * FLAKE_BURST))
        .build()?;
    let flakes = flake_client.ids(&a.snowflake);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let async_client = {
        let _entered = runtime.enter();
        snowdrift_client::Client::builder()
            .endpoints([a.endpoint.clone()])
            .batch(100_000, 100_000_000)
            .build()?
    };
    let async_orders = async_client.ids(&a.tag);

    // Warm up: the first fetches, and the batch size grown to the rate.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(2) {
        for _ in 0..CHUNK {
            black_box(orders.next()?);
        }
    }
    for h in [&big, &wide].into_iter().chain(large.as_ref()) {
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_secs(1) {
            for _ in 0..CHUNK {
                black_box(h.next()?);
            }
        }
    }
    for _ in 0..1000 {
        black_box(flakes.next()?);
        black_box(client.next(&a.tag)?);
    }
    runtime.block_on(async { async_orders.next().await })?;

    let counter = Arc::new(AtomicU64::new(0));
    type Case = (&'static str, Box<dyn Fn(f64) -> f64>);
    let mut cases: Vec<Case> = vec![
        ("fetch_add, 1 thread", {
            let c = counter.clone();
            Box::new(move |s| {
                let c = c.clone();
                rate(1, s, move || c.fetch_add(1, Ordering::Relaxed))
            })
        }),
        ("fetch_add, 2 threads", {
            let c = counter.clone();
            Box::new(move |s| {
                let c = c.clone();
                rate(2, s, move || c.fetch_add(1, Ordering::Relaxed))
            })
        }),
        (
            "thread-local counter, 1 thread",
            Box::new(|s| rate(1, s, thread_local_next)),
        ),
        (
            "thread-local counter, 2 threads",
            Box::new(|s| rate(2, s, thread_local_next)),
        ),
        (
            "thread-local block, 1 thread",
            Box::new(|s| rate(1, s, thread_local_block_next)),
        ),
        (
            "thread-local block, 2 threads",
            Box::new(|s| rate(2, s, thread_local_block_next)),
        ),
        ("handle next(), 1 thread", {
            let h = orders.clone();
            Box::new(move |s| {
                let h = h.clone();
                rate(1, s, move || h.next().unwrap_or(0))
            })
        }),
        ("handle next(), 2 threads", {
            let h = orders.clone();
            Box::new(move |s| {
                let h = h.clone();
                rate(2, s, move || h.next().unwrap_or(0))
            })
        }),
        ("handle, blocks of 64, 1 thread", {
            let h = big.clone();
            Box::new(move |s| {
                let h = h.clone();
                rate(1, s, move || h.next().unwrap_or(0))
            })
        }),
        ("handle, blocks of 64, 2 threads", {
            let h = big.clone();
            Box::new(move |s| {
                let h = h.clone();
                rate(2, s, move || h.next().unwrap_or(0))
            })
        }),
        ("handle, blocks of 8192, 1 thread", {
            let h = wide.clone();
            Box::new(move |s| {
                let h = h.clone();
                rate(1, s, move || h.next().unwrap_or(0))
            })
        }),
        ("handle, blocks of 8192, 2 threads", {
            let h = wide.clone();
            Box::new(move |s| {
                let h = h.clone();
                rate(2, s, move || h.next().unwrap_or(0))
            })
        }),
        ("next(name), 1 thread", {
            let (c, tag) = (client.clone(), a.tag.clone());
            Box::new(move |s| {
                let (c, tag) = (c.clone(), tag.clone());
                rate(1, s, move || c.next(&tag).unwrap_or(0))
            })
        }),
        ("next(name), 2 threads", {
            let (c, tag) = (client.clone(), a.tag.clone());
            Box::new(move |s| {
                let (c, tag) = (c.clone(), tag.clone());
                rate(2, s, move || c.next(&tag).unwrap_or(0))
            })
        }),
        ("async handle next().await, 1 thread", {
            let h = async_orders.clone();
            let handle = runtime.handle().clone();
            Box::new(move |s| {
                let h = h.clone();
                let budget = Duration::from_secs_f64(s);
                // One task on the client's runtime, polled by this thread: the future
                // of each `next()` is awaited in the loop, as an application would.
                std::thread::scope(|scope| {
                    scope
                        .spawn(|| {
                            handle.block_on(async {
                                let begun = Instant::now();
                                let mut n = 0u64;
                                while begun.elapsed() < budget {
                                    for _ in 0..CHUNK {
                                        black_box(h.next().await.unwrap_or(0));
                                    }
                                    n += CHUNK;
                                }
                                n as f64 / begun.elapsed().as_secs_f64()
                            })
                        })
                        .join()
                        .unwrap_or(0.0)
                })
            })
        }),
        ("snowflake handle next(), 1 thread", {
            let h = flakes.clone();
            Box::new(move |s| {
                let budget = Duration::from_secs_f64(s);
                let (mut n, mut spent) = (0u64, Duration::ZERO);
                while spent < budget {
                    // A full cache first: this times the client, not the server.
                    let waiting = Instant::now();
                    while h.stats().cached < FLAKE_BURST + 64
                        && waiting.elapsed() < Duration::from_secs(10)
                    {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let begun = Instant::now();
                    for _ in 0..FLAKE_BURST {
                        black_box(h.next().unwrap_or(0));
                    }
                    spent += begun.elapsed();
                    n += FLAKE_BURST;
                }
                n as f64 / spent.as_secs_f64()
            })
        }),
    ];
    if let Some(large) = &large {
        for threads in [1, 2] {
            let h = large.clone();
            let label = if threads == 1 {
                "handle, server max_count 10 M, 1 thread"
            } else {
                "handle, server max_count 10 M, 2 threads"
            };
            cases.push((
                label,
                Box::new(move |s| {
                    let h = h.clone();
                    rate(threads, s, move || h.next().unwrap_or(0))
                }),
            ));
        }
    }

    println!(
        "# {} rounds of {} s per case, endpoint {}, tag {:?}, snowflake {:?}",
        a.rounds, a.seconds, a.endpoint, a.tag, a.snowflake
    );
    let mut results = vec![Vec::new(); cases.len()];
    for round in 0..a.rounds {
        let mut line = Vec::new();
        for k in 0..cases.len() {
            let i = (round + k) % cases.len();
            if a.only
                .as_ref()
                .is_some_and(|o| !cases[i].0.starts_with(o.as_str()))
            {
                results[i].push(f64::NAN);
                continue;
            }
            let r = (cases[i].1)(a.seconds);
            results[i].push(r);
            line.push(format!("{}: {:.1} M/s", cases[i].0, r / 1e6));
        }
        println!("round {}: {}", round + 1, line.join(" | "));
    }

    println!("\n| case | median M IDs/s | range |");
    println!("|---|---|---|");
    for (i, (name, _)) in cases.iter().enumerate() {
        let v = &results[i];
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        println!(
            "| {name} | {:.1} | {:.1} - {:.1} |",
            median(v) / 1e6,
            lo / 1e6,
            hi / 1e6
        );
    }
    let ratio = |a: usize, b: usize| -> (f64, f64, f64) {
        let r: Vec<f64> = results[a]
            .iter()
            .zip(&results[b])
            .map(|(x, y)| x / y)
            .collect();
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(0.0, f64::max);
        (median(&r), lo, hi)
    };
    println!("\n| ratio (per round) | median | range |");
    println!("|---|---|---|");
    let large_ratios = [
        ("server max_count 10 M: 2 threads / 1 thread", 17, 16),
        ("server max_count 10 M / default, 2 threads", 17, 7),
        ("server max_count 10 M / default, 1 thread", 16, 6),
    ];
    let large_ratios = if large.is_some() {
        &large_ratios[..]
    } else {
        &[]
    };
    for &(label, x, y) in [
        ("handle 1 thread / fetch_add 1 thread", 6, 0),
        ("handle 2 threads / handle 1 thread", 7, 6),
        ("handle 1 thread / thread-local counter 1 thread", 6, 2),
        ("thread-local counter 2 threads / 1 thread", 3, 2),
        ("thread-local block 2 threads / 1 thread", 5, 4),
        ("handle 1 thread / thread-local block 1 thread", 6, 4),
        ("handle 2 threads / thread-local block 2 threads", 7, 5),
        ("fetch_add 2 threads / fetch_add 1 thread", 1, 0),
        ("handle 2 threads / fetch_add 2 threads", 7, 1),
        ("handle blocks of 64: 2 threads / 1 thread", 9, 8),
        ("handle 1 thread / handle blocks of 64 1 thread", 6, 8),
        ("handle blocks of 8192: 2 threads / 1 thread", 11, 10),
        ("handle blocks of 8192 2 threads / handle 2 threads", 11, 7),
        ("next(name) 1 thread / fetch_add 1 thread", 12, 0),
        ("next(name) 2 threads / next(name) 1 thread", 13, 12),
    ]
    .iter()
    .chain(large_ratios)
    {
        let (m, lo, hi) = ratio(x, y);
        println!("| {label} | {m:.2}x | {lo:.2} - {hi:.2} |");
    }
    let s = orders.stats();
    println!(
        "\n# tag cache: fetches {}, batch {}, served {}",
        s.fetches, s.batch, s.served
    );
    drop(async_orders);
    drop(async_client);
    Ok(())
}
