//! Segment mode (Leaf's segments served from CosId's chain), in-process.
//!
//! Groups (see the "Segment mode" section of BENCHMARKS.md for results):
//!
//! - `segment_take/{1,2}t`: `SegmentChain::take(1)` from a chain that a refiller thread
//!   keeps full (segments of 1,000,000 IDs, Leaf's largest step), so no call waits. With 2
//!   threads both take from the same chain; `thrpt` is the aggregate rate.
//! - `segment_take/2t_take64`: the same two threads taking 64 IDs per call, consumed one
//!   by one, to show what batching does to the shared word's contention (time is per ID).
//! - `segment_take/{1,2}t_local`: one ID at a time through a `LocalSegment` per thread
//!   (default blocks: 8 doubling to 64 IDs), which takes its blocks from the same warm
//!   chain; the per-thread handle the 2-thread `take(1)` case is compared with.
//! - `segment_take/floor_fetch_add_1t`: one uncontended `AtomicU64::fetch_add(1)`, the
//!   cost of the one atomic read-modify-write any shared counter pays per take.
//! - `segment_buffer_next/sqlite{,_2t}`: the full async path, `SegmentBuffer::next(1)`, on
//!   a SQLite file, called from `block_on` on 1 or 2 threads while the refill task runs on
//!   a 2-worker runtime.
//! - `segment_buffer_next/sqlite_handle{,_2t}`: the same through a `SegmentHandle` per
//!   thread (`SegmentBuffer::handle`).
//!
//! Tail latencies (p99.99) are not something criterion reports: they come from
//! `examples/segment_latency.rs`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bench_peers::{WarmChain, run_threads};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use snowdrift_core::segment::{LocalSegment, LocalTake, Take};
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentBuffer, SqlSegmentStore};

/// Leaf's largest dynamic step: at ~100 M IDs/s a segment lasts ~10 ms.
const SEGMENT_LEN: u64 = 1_000_000;

fn segment_take(c: &mut Criterion) {
    let mut g = c.benchmark_group("segment_take");
    for threads in [1usize, 2] {
        g.throughput(Throughput::Elements(threads as u64));
        let warm = WarmChain::start(SEGMENT_LEN);
        g.bench_function(format!("{threads}t"), |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| warm.next_id()))
        });
    }
    // Per thread: `iters` IDs through the thread's own handle; blocks come from the shared
    // chain through `next_ids`, which wakes the refiller as the store's buffer does.
    for threads in [1usize, 2] {
        g.throughput(Throughput::Elements(threads as u64));
        let warm = WarmChain::start(SEGMENT_LEN);
        g.bench_function(format!("{threads}t_local"), |b| {
            b.iter_custom(|iters| {
                run_threads(threads, 1, &|| {
                    let mut local = LocalSegment::default();
                    for _ in 0..iters {
                        let taken = local.next_with(|n| Take::Ready {
                            ids: warm.next_ids(n),
                            refill: false,
                        });
                        match taken {
                            LocalTake::Ready { id, .. } => black_box(id),
                            LocalTake::Empty => unreachable!("next_ids waits for IDs"),
                        };
                    }
                })
            })
        });
    }
    g.throughput(Throughput::Elements(1));
    let counter = AtomicU64::new(0);
    g.bench_function("floor_fetch_add_1t", |b| {
        b.iter(|| counter.fetch_add(1, Ordering::AcqRel))
    });
    // Per ID: each "iteration" below is one ID, taken 64 at a time.
    g.throughput(Throughput::Elements(2));
    let warm = WarmChain::start(SEGMENT_LEN);
    g.bench_function("2t_take64", |b| {
        b.iter_custom(|iters| {
            run_threads(2, 1, &|| {
                let mut left = iters;
                while left > 0 {
                    let ids = warm.next_ids(left.min(64));
                    left -= ids.len();
                    for id in ids.iter() {
                        black_box(id);
                    }
                }
            })
        })
    });
    g.finish();
}

fn segment_buffer_next(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = std::env::temp_dir().join(format!("snowdrift-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let url = format!("sqlite://{}/segments.db", dir.display());
    let buffer = rt.block_on(async {
        let store = SqlSegmentStore::connect(&url, "leaf_alloc")
            .await
            .expect("SQLite store");
        store
            .create_tag(&NewTag {
                tag: "bench".into(),
                step: 1000,
                description: None,
                template: None,
            })
            .await
            .expect("tag");
        SegmentBuffer::start(store, "bench", BufferConfig::default())
            .await
            .expect("buffer")
    });
    let mut g = c.benchmark_group("segment_buffer_next");
    for threads in [1usize, 2] {
        let suffix = if threads == 1 { "" } else { "_2t" };
        g.throughput(Throughput::Elements(threads as u64));
        g.bench_function(format!("sqlite{suffix}"), |b| {
            b.iter_custom(|iters| {
                run_threads(threads, 1, &|| {
                    rt.block_on(async {
                        for _ in 0..iters {
                            black_box(buffer.next(1).await.expect("an ID"));
                        }
                    })
                })
            })
        });
        g.bench_function(format!("sqlite_handle{suffix}"), |b| {
            b.iter_custom(|iters| {
                run_threads(threads, 1, &|| {
                    rt.block_on(async {
                        let mut ids = buffer.handle();
                        for _ in 0..iters {
                            black_box(ids.next().await.expect("an ID"));
                        }
                    })
                })
            })
        });
    }
    g.finish();
    let status = buffer.status();
    eprintln!(
        "segment_buffer_next/sqlite: {} segments claimed, {} starved calls",
        status.pushed, status.starved
    );
    drop(buffer);
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = segment;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = segment_take, segment_buffer_next
}
criterion_main!(segment);
