//! Model check of the lock-free generator: every interleaving of 2-3 threads, no duplicate
//! and no reordering within a thread.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p snowdrift-core --test loom --release`
//! (scripts/test does).
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use snowdrift_core::clock::ManualClock;
use snowdrift_core::generator::{Attempt, SnowflakeGenerator};
use snowdrift_core::layout::Layout;

const T0: u64 = 1_700_000_000_000;

fn generator(lead_ms: u64) -> SnowflakeGenerator<ManualClock> {
    // 2 sequence bits: 4 IDs per tick, so the threads also race over tick boundaries.
    let layout = Layout::from_spec("time:41,worker:2,seq:2", 1, T0 - 1_000).unwrap();
    SnowflakeGenerator::builder(layout)
        .node_id(1)
        .unwrap()
        .max_lead(Duration::from_millis(lead_ms))
        .build(ManualClock::new(T0))
        .unwrap()
}

fn take(g: &SnowflakeGenerator<ManualClock>, block: u64) -> Vec<u64> {
    match g.try_next_block(block).unwrap() {
        Attempt::Ready(b) => b.iter().collect(),
        Attempt::RetryAfter(_) => Vec::new(),
    }
}

fn check(per_thread: Vec<Vec<u64>>) {
    let mut all: Vec<u64> = Vec::new();
    for ids in &per_thread {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread saw IDs out of order: {ids:?}"
        );
        all.extend(ids);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate IDs: {per_thread:?}");
}

#[test]
fn two_threads_blocks_and_singles() {
    loom::model(|| {
        let g = Arc::new(generator(1));
        let hs: Vec<_> = (0..2u64)
            .map(|i| {
                let g = g.clone();
                thread::spawn(move || {
                    let mut ids = take(&g, 1 + i);
                    ids.extend(take(&g, 3 - i));
                    ids
                })
            })
            .collect();
        let mut per_thread: Vec<Vec<u64>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        per_thread.push(take(&g, 8));
        check(per_thread);
    });
}

#[test]
fn three_threads_over_a_tick_boundary() {
    loom::model(|| {
        let g = Arc::new(generator(1));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let g = g.clone();
                thread::spawn(move || take(&g, 2))
            })
            .collect();
        check(hs.into_iter().map(|h| h.join().unwrap()).collect());
    });
}
