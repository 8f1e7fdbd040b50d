//! The run cache alone, without a server: batches in, takes out, expiry, overflow, and
//! every ID handed out once across threads.

use std::collections::HashSet;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;

fn drain(runs: &Runs, n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    while let Some(got) = runs.take(n) {
        out.extend(got.ids.iter());
    }
    out
}

#[test]
fn serves_every_run_in_order_and_counts() {
    let runs = Runs::new(0.8, Duration::from_secs(10));
    assert!(runs.take(1).is_none());
    runs.push([(10, 3, 1), (100, 3, 5)], false);
    assert_eq!(runs.cached(), 6);
    assert_eq!(drain(&runs, 2), [10, 11, 12, 100, 105, 110]);
    assert_eq!((runs.cached(), runs.pushed_ids(), runs.wasted()), (0, 6, 0));
}

#[test]
fn prefetch_is_signalled_once_in_the_newest_batch() {
    let runs = Runs::new(0.8, Duration::from_secs(10));
    runs.push([(0, 10, 1)], false);
    let signals: Vec<bool> = (0..10).map(|_| runs.take(1).unwrap().prefetch).collect();
    // Taking the 9th ID (offset 8 = 80% of 10) crosses the point.
    assert_eq!(signals.iter().filter(|s| **s).count(), 1, "{signals:?}");
    assert!(signals[8], "{signals:?}");
    // With a newer batch queued, crossings in the older one do not ask for a third.
    runs.push([(100, 10, 1)], false);
    runs.push([(200, 10, 1)], false);
    let first: Vec<bool> = (0..10).map(|_| runs.take(1).unwrap().prefetch).collect();
    assert!(first.iter().all(|s| !s), "{first:?}");
    let second: Vec<bool> = (0..10).map(|_| runs.take(1).unwrap().prefetch).collect();
    assert_eq!(second.iter().filter(|s| **s).count(), 1, "{second:?}");
}

#[test]
fn snowflake_runs_past_max_age_are_dropped_and_counted_not_served() {
    let runs = Runs::new(0.8, Duration::from_millis(30));
    runs.push([(1000, 50, 1)], true);
    assert_eq!(runs.take(10).unwrap().ids.start, 1000);
    std::thread::sleep(Duration::from_millis(60));
    assert!(runs.take(1).is_none(), "an expired run was served");
    assert_eq!(runs.wasted(), 40);
    // A fresh batch after an old one: the old is skipped, the new served.
    runs.push([(2000, 5, 1)], true);
    assert_eq!(drain(&runs, 1), [2000, 2001, 2002, 2003, 2004]);
    // Segment IDs carry no time: they never expire.
    let seg = Runs::new(0.8, Duration::from_millis(1));
    seg.push([(7, 2, 1)], false);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(drain(&seg, 1), [7, 8]);
}

#[test]
fn more_runs_than_the_chain_holds_wait_and_are_all_served() {
    let runs = Runs::new(0.8, Duration::from_secs(10));
    let many: Vec<_> = (0..300u64).map(|i| (i * 10, 2, 1)).collect();
    runs.push(many, false);
    assert!(runs.has_pending());
    assert_eq!(runs.cached(), 600);
    // Takes move the waiting runs in as the chain empties: no caller waits for a fetch
    // (which used to be what moved them) while IDs are cached.
    let got = drain(&runs, 7);
    let want: Vec<u64> = (0..300u64).flat_map(|i| [i * 10, i * 10 + 1]).collect();
    assert_eq!(got, want);
    assert!(!runs.has_pending());
}

#[test]
fn runs_reaching_u64_max_keep_what_fits() {
    let wasted = AtomicU64::new(0);
    let r = split(u64::MAX - 2, 5, 1, &wasted);
    let ids: Vec<u64> = r.iter().flat_map(|r| r.iter()).collect();
    assert_eq!(ids, [u64::MAX - 2, u64::MAX - 1]);
    assert_eq!(wasted.load(Ordering::Relaxed), 3);
    let long = split(0, MAX_SEGMENT_LEN + 5, 2, &wasted);
    assert_eq!(long.len(), 2);
    assert_eq!(long[0].len() + long[1].len(), MAX_SEGMENT_LEN + 5);
    assert_eq!(long[1].start, MAX_SEGMENT_LEN * 2);
    // A stride so large that the step past a run that fits overflows in the multiply.
    let wasted = AtomicU64::new(0);
    let r = split(0, 2, 1 << 63, &wasted);
    let ids: Vec<u64> = r.iter().flat_map(|r| r.iter()).collect();
    assert_eq!(ids, [0, 1 << 63]);
    assert_eq!(wasted.load(Ordering::Relaxed), 0);
}

proptest! {
    /// Runs pushed while threads take: every ID of every run comes out exactly once.
    #[test]
    fn every_id_is_taken_once_across_threads(
        batches in prop::collection::vec(prop::collection::vec((0u64..50, 1u64..40, 1u64..4), 1..8), 1..12),
        n in 1u64..9,
    ) {
        let runs = Arc::new(Runs::new(0.8, Duration::from_secs(10)));
        // Disjoint runs: each batch's runs live in their own stretch of numbers.
        let mut want = Vec::new();
        let mut base = 0u64;
        let mut plan = Vec::new();
        for batch in &batches {
            let mut b = Vec::new();
            for &(gap, count, stride) in batch {
                let first = base + gap;
                b.push((first, count, stride));
                want.extend((0..count).map(|i| first + i * stride));
                base = first + count * stride;
            }
            plan.push(b);
        }
        let done = Arc::new(AtomicBool::new(false));
        let takers: Vec<_> = (0..3).map(|_| {
            let (runs, done) = (runs.clone(), done.clone());
            std::thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    let finished = done.load(Ordering::Acquire);
                    match runs.take(n) {
                        Some(g) => got.extend(g.ids.iter()),
                        None if finished && !runs.has_pending() => break,
                        None => {
                            runs.flush();
                            std::thread::yield_now();
                        }
                    }
                }
                got
            })
        }).collect();
        for b in plan {
            runs.push(b, false);
        }
        done.store(true, Ordering::Release);
        let mut seen = HashSet::new();
        for t in takers {
            for id in t.join().unwrap() {
                prop_assert!(seen.insert(id), "{} twice", id);
            }
        }
        let want: HashSet<u64> = want.into_iter().collect();
        prop_assert_eq!(seen, want);
    }
}
