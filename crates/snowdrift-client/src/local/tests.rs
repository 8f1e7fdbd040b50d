//! Per-thread blocks without a server: a block is served only for the slot tag it was taken
//! for, names are told apart by client and name, and snowflake blocks stop at their
//! deadline.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::cache::{Batch, Policy};

fn cache(max_age: Duration) -> Arc<NameCache> {
    Arc::new(NameCache::new(Policy {
        prefetch_at: 0.8,
        hold: Duration::from_secs(1),
        min_batch: 100,
        max_batch: 50_000,
        max_age,
        generate_locally: false,
        thread_block: crate::local::MAX_BLOCK,
    }))
}

fn with(cache: Arc<NameCache>, first: u64, count: u64, expires: bool) -> Arc<NameCache> {
    cache.install(
        "n",
        Batch::Runs {
            runs: vec![(first, count, 1)],
            expires,
            ordered: false,
        },
    );
    cache
}

fn segment(first: u64, count: u64) -> Arc<NameCache> {
    with(cache(Duration::from_secs(10)), first, count, false)
}

/// The next ID of `cache` on this thread, as a handle takes it.
fn next_of(cache: &NameCache) -> Option<u64> {
    next(cache.slot.index, cache.slot.tag).or_else(|| refill(cache).map(|(id, _)| id))
}

#[test]
fn a_block_serves_only_the_slot_it_was_taken_for() {
    let a = segment(1000, 500);
    let b = segment(5000, 500);
    let mut block = Block::EMPTY;
    assert_eq!(block.refill(a.slot.tag, &a), Some((1000, false)));
    assert_eq!(block.take(a.slot.tag), Some(1001));
    // The block sits where a later cache's slot points once `a` is gone: that cache's tag
    // gets nothing from it, and its first take drops the block for one of its own.
    assert_eq!(block.take(b.slot.tag), None);
    assert_eq!(block.refill(b.slot.tag, &b), Some((5000, false)));
    assert_eq!(block.take(b.slot.tag), Some(5001));
    assert_eq!(block.take(a.slot.tag), None);
}

#[test]
fn slots_are_reused_with_tags_never_seen_before() {
    let first = Slot::new();
    let (index, tag) = (first.index, first.tag);
    drop(first);
    let mut seen = vec![tag];
    let mut reused = false;
    for _ in 0..64 {
        let s = Slot::new();
        assert!(!seen.contains(&s.tag), "tag {} given twice", s.tag);
        seen.push(s.tag);
        reused |= s.index == index;
        // Dropped at once: its index is the next one handed out.
    }
    assert!(reused, "index {index} was never handed out again");
}

#[test]
fn a_thread_takes_blocks_in_order_and_stale_blocks_are_skipped() {
    let a = segment(1000, 500);
    let got: Vec<u64> = (0..100).map(|_| next_of(&a).unwrap()).collect();
    assert_eq!(got, (1000..1100).collect::<Vec<_>>());
    // Blocks of 8, 16, 32, 64, 64...: 120 IDs left the cache for 100 served.
    assert_eq!(a.stats().served, 120);
    // Another tag at `a`'s index finds nothing there.
    let stranger = TAGS.fetch_add(1, Ordering::Relaxed);
    assert_eq!(next(a.slot.index, stranger), None);
    // next_n takes what the block holds first.
    let mut out = Vec::new();
    drain(&a, 5, &mut out);
    assert_eq!(out, [1100, 1101, 1102, 1103, 1104]);
    // Other threads take their own blocks: no ID twice across them.
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let a = a.clone();
            std::thread::spawn(move || (0..80).filter_map(|_| next_of(&a)).collect::<Vec<_>>())
        })
        .collect();
    let mut all: Vec<u64> = out;
    all.extend(got);
    for t in threads {
        let ids = t.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        all.extend(ids);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "an ID was served twice");
}

#[test]
fn names_are_told_apart_by_client_and_name() {
    let (x1, y1, x2) = (segment(100, 50), segment(200, 50), segment(300, 50));
    let (c1, c2) = (u64::MAX - 1, u64::MAX - 2);
    remember(c1, "x", &x1);
    remember(c1, "y", &y1);
    remember(c2, "x", &x2);
    let none = |_: &Arc<NameCache>| {};
    // The name as another string with the same text: found by its text.
    let x = String::from("x");
    assert_eq!(next_named(c1, &x, none), Some(100));
    assert_eq!(next_named(c1, "y", none), Some(200));
    assert_eq!(next_named(c2, "x", none), Some(300));
    assert_eq!(next_named(c1, "x", none), Some(101));
    assert_eq!(next_named(c1, "z", none), None);
    assert_eq!(next_named(u64::MAX - 3, "x", none), None);
    // A handle on `x1` shares the thread's block with next(name).
    assert_eq!(next_of(&x1), Some(102));
}

#[test]
fn snowflake_blocks_stop_at_their_deadline() {
    // 400 ms leaves 100 ms for the coarse clock's lag.
    let c = with(cache(Duration::from_millis(400)), 7_000, 1_000, true);
    assert_eq!(next_of(&c), Some(7_000));
    assert_eq!(next_of(&c), Some(7_001));
    std::thread::sleep(Duration::from_millis(600));
    // The block still holds 6 IDs and the cache 992: all too old now.
    assert_eq!(next_of(&c), None, "an ID past max_age was served");
    let s = c.stats();
    assert_eq!(s.wasted, 998, "{s:?}");
    assert_eq!(s.served, 2, "{s:?}");
    // A fresh batch is served at once.
    c.install(
        "n",
        Batch::Runs {
            runs: vec![(9_000, 10, 1)],
            expires: true,
            ordered: false,
        },
    );
    assert_eq!(next_of(&c), Some(9_000));
    // Segment IDs carry no time: never dropped.
    let seg = with(cache(Duration::from_millis(1)), 10, 5, false);
    assert_eq!(next_of(&seg), Some(10));
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(next_of(&seg), Some(11));
}

#[test]
fn names_are_compared_by_every_byte() {
    let names = [
        "",
        "a",
        "ab",
        "abc",
        "abcd",
        "abcde",
        "order",
        "orders",
        "abcdefg",
        "abcdefgh",
        "abcdefghi",
        "order-2026-11",
        "abcdefghijklmnop",
        "abcdefghijklmnopq",
        "é",
        "éa",
    ];
    for a in names {
        assert!(same(a, &String::from(a)), "{a:?}");
        for b in names {
            assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
        }
        // Each byte changed in turn.
        for i in 0..a.len() {
            let mut c = a.as_bytes().to_vec();
            c[i] ^= 1;
            let c = String::from_utf8_lossy(&c).into_owned();
            assert_eq!(same(a, &c), a == c, "{a:?} {c:?}");
        }
    }
}
