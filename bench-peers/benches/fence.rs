//! What a worker-lease fence costs the generator's hot path: the same wide layout as
//! `hot_path` in peers.rs, with and without a fence (lease deadline and durable window
//! checked on every call, both far ahead so nothing is refused).
//!
//! `cargo bench -p bench-peers --bench fence -- --warm-up-time 1 --measurement-time 3`

use std::sync::Arc;

use bench_peers::{cached_clock, run_threads, wall_ms, wide_layout};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::{Fence, SnowflakeGenerator};

/// A fence open for an hour with a window an hour long: the checks run, never refuse.
fn open_fence() -> Arc<Fence> {
    let fence = Arc::new(Fence::new());
    let hour = 3_600_000;
    fence.extend_window(wall_ms() + hour);
    fence.open_until(wall_ms() + hour);
    fence
}

fn fence_cost(c: &mut Criterion) {
    for threads in [1usize, 2] {
        let mut g = c.benchmark_group(format!("fence/{threads}t"));
        g.throughput(Throughput::Elements(threads as u64));
        let (clock, ticker) = cached_clock();
        let plain = SnowflakeGenerator::builder(wide_layout())
            .node_id(1)
            .and_then(|b| b.build(clock.clone()))
            .expect("snowdrift wide generator");
        g.bench_function("cached/no fence", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| plain.next().unwrap()))
        });
        let fenced = SnowflakeGenerator::builder(wide_layout())
            .node_id(1)
            .map(|b| b.fence(open_fence()))
            .and_then(|b| b.build(clock))
            .expect("snowdrift wide generator");
        g.bench_function("cached/fence", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| fenced.next().unwrap()))
        });
        drop(ticker);
        let mono_plain = SnowflakeGenerator::builder(wide_layout())
            .node_id(1)
            .and_then(|b| b.build(MonotonicClock::new()))
            .expect("snowdrift wide generator");
        g.bench_function("monotonic/no fence", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| mono_plain.next().unwrap()))
        });
        let mono_fenced = SnowflakeGenerator::builder(wide_layout())
            .node_id(1)
            .map(|b| b.fence(open_fence()))
            .and_then(|b| b.build(MonotonicClock::new()))
            .expect("snowdrift wide generator");
        g.bench_function("monotonic/fence", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| mono_fenced.next().unwrap()))
        });
        g.finish();
    }
}

criterion_group!(benches, fence_cost);
criterion_main!(benches);
