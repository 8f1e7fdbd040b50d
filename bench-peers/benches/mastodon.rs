//! The `mastodon` layout beside the plain Twitter one (BENCHMARKS.md, "The mastodon layout").
//! No Rust crate makes Mastodon's IDs (Mastodon makes them in PostgreSQL), so the comparison
//! is snowdrift's own generator with and without the hash on the low bits.
//!
//! Groups:
//!
//! - `mastodon/next`: one ID per call, `MonotonicClock` and `CachedClock`. Timed as
//!   `hot_path_burst` is: bursts of 1,000 right after a millisecond starts, so neither
//!   layout's tick (4,096 and 1,024 IDs) runs out and nobody waits.
//! - `mastodon/next_block_1000`: a block of 1,000 IDs, each consumed: through the block's
//!   iterator, `MastodonTail::ids`, or runs (`IdBlock::runs`, `MastodonTail::runs`, which the
//!   server sends), one offset per tick and one add per ID.
//! - `mastodon/tail`: the hash alone: `apply` while the millisecond's offset is cached, and
//!   the MD5 of a new millisecond (what the first ID of each millisecond pays).

use std::hint::black_box;
use std::time::Duration;

use bench_peers::{cached_clock, run_bursts};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use snowdrift_core::clock::{Clock, MonotonicClock};
use snowdrift_core::generator::{IdBlock, MastodonTail, SnowflakeGenerator};
use snowdrift_core::layout::Layout;

const SECRET: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";

fn generator<C: Clock>(preset: &str, clock: C) -> SnowflakeGenerator<C> {
    SnowflakeGenerator::builder(Layout::preset(preset).unwrap())
        .node_id(1)
        .and_then(|b| b.build(clock))
        .expect("a preset generator")
}

fn tail() -> MastodonTail {
    MastodonTail::new(&Layout::preset("mastodon").unwrap(), "statuses", SECRET).unwrap()
}

fn next(c: &mut Criterion) {
    let mut g = c.benchmark_group("mastodon/next");
    g.throughput(Throughput::Elements(1))
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30);
    let tail = tail();
    let clock = MonotonicClock::new();
    let twitter = generator("twitter", clock);
    let mastodon = generator("mastodon", clock);
    let now = || clock.now_ms();
    g.bench_function("twitter, monotonic", |b| {
        b.iter_custom(|iters| run_bursts(1, iters, 1000, &now, &|| twitter.next().unwrap()))
    });
    g.bench_function("mastodon, monotonic", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 1000, &now, &|| {
                tail.apply(mastodon.next().unwrap())
            })
        })
    });
    let (cached, ticker) = cached_clock();
    let twitter = generator("twitter", cached.clone());
    let mastodon = generator("mastodon", cached.clone());
    let now = || cached.now_ms();
    g.bench_function("twitter, cached", |b| {
        b.iter_custom(|iters| run_bursts(1, iters, 1000, &now, &|| twitter.next().unwrap()))
    });
    g.bench_function("mastodon, cached", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 1000, &now, &|| {
                tail.apply(mastodon.next().unwrap())
            })
        })
    });
    drop(ticker);
    g.finish();
}

fn next_block(c: &mut Criterion) {
    let mut g = c.benchmark_group("mastodon/next_block_1000");
    g.throughput(Throughput::Elements(1000))
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30);
    let tail = tail();
    let clock = MonotonicClock::new();
    let twitter = generator("twitter", clock);
    let mastodon = generator("mastodon", clock);
    let now = || clock.now_ms();
    let plain = |block: IdBlock| {
        for id in block {
            black_box(id);
        }
    };
    // One block per burst: a fresh millisecond each time, so neither layout waits.
    g.bench_function("twitter", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 1, &now, &|| {
                plain(twitter.next_block(1000).unwrap())
            })
        })
    });
    g.bench_function("mastodon, MastodonTail::ids", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 1, &now, &|| {
                for id in tail.ids(&mastodon.next_block(1000).unwrap()) {
                    black_box(id);
                }
            })
        })
    });
    // As the server takes them: runs of (first, count, stride), one add per ID.
    g.bench_function("mastodon, MastodonTail::runs", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 1, &now, &|| {
                for (first, count, stride) in tail.runs(&mastodon.next_block(1000).unwrap()) {
                    let mut id = first;
                    for _ in 0..count {
                        black_box(id);
                        id += stride;
                    }
                }
            })
        })
    });
    g.bench_function("twitter, IdBlock::runs", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 1, &now, &|| {
                for (first, count, stride) in twitter.next_block(1000).unwrap().runs() {
                    let mut id = first;
                    for _ in 0..count {
                        black_box(id);
                        id += stride;
                    }
                }
            })
        })
    });
    g.finish();
}

fn hash(c: &mut Criterion) {
    let mut g = c.benchmark_group("mastodon/tail");
    g.throughput(Throughput::Elements(1));
    let tail = tail();
    let id = (1_700_000_000_000u64 << 16) | (1 << 10);
    g.bench_function("apply, offset cached", |b| {
        b.iter(|| tail.apply(black_box(id)))
    });
    // Each call a new millisecond: the cache misses and MD5 runs.
    let mut ms = 1_700_000_000_000u64;
    g.bench_function("apply, new millisecond (MD5)", |b| {
        b.iter(|| {
            ms += 1;
            tail.apply(black_box(ms << 16))
        })
    });
    g.finish();
}

criterion_group!(mastodon, next, next_block, hash);
criterion_main!(mastodon);
