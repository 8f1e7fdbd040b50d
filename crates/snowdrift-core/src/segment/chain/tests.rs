use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use proptest::prelude::*;

use super::*;

fn chain() -> SegmentChain {
    SegmentChain::new(ChainConfig::default()).unwrap()
}

fn ready(t: Take) -> (IdRange, bool) {
    match t {
        Take::Ready { ids, refill } => (ids, refill),
        Take::Empty => panic!("expected IDs"),
    }
}

#[test]
fn serves_segments_in_order_and_moves_on() {
    let c = chain();
    assert_eq!(c.take(1), Take::Empty);
    c.push(IdRange::new(1, 11)).unwrap();
    c.push(IdRange::new(101, 111)).unwrap();
    assert_eq!(ready(c.take(4)).0, IdRange::new(1, 5));
    // A take never spans segments: the rest of the first one comes back short.
    assert_eq!(ready(c.take(100)).0, IdRange::new(5, 11));
    assert_eq!(ready(c.take(3)).0, IdRange::new(101, 104));
    assert_eq!(ready(c.take(7)).0, IdRange::new(104, 111));
    assert_eq!(c.take(1), Take::Empty);
    let st = c.status();
    assert_eq!((st.current_left, st.segments_ahead, st.pushed), (0, 0, 2));
    assert_eq!(st.starved, 2);
}

/// A segment whose last ID is a stride below 2^64 (what a client keeps of a run that reaches
/// the end): each take ends where the segment does, without overflowing on the way.
#[test]
fn a_segment_that_ends_a_stride_below_the_top_is_served_whole() {
    let c = chain();
    let top = IdRange {
        start: u64::MAX - 5,
        end: u64::MAX,
        stride: 2,
    };
    c.push(top).unwrap();
    let (ids, _) = ready(c.take(2));
    assert_eq!(ids.iter().collect::<Vec<_>>(), [u64::MAX - 5, u64::MAX - 3]);
    let (ids, _) = ready(c.take(5));
    assert_eq!(ids.iter().collect::<Vec<_>>(), [u64::MAX - 1]);
    assert_eq!(c.take(1), Take::Empty);
}

#[test]
fn leaf_double_buffer_prefetch_at_ten_percent() {
    let c = chain();
    assert_eq!(c.wanted(), 1, "an empty chain wants its first segment");
    c.push(IdRange::new(0, 1000)).unwrap();
    assert_eq!(c.wanted(), 0, "below 10% used, one segment is enough");
    let (_, refill) = ready(c.take(99));
    assert!(!refill);
    assert_eq!(c.wanted(), 0);
    let (ids, refill) = ready(c.take(2));
    assert_eq!(ids, IdRange::new(99, 101));
    assert!(refill, "this take crossed the 10% point");
    assert_eq!(c.wanted(), 1);
    let (_, refill) = ready(c.take(500));
    assert!(!refill, "each crossing is seen once");
    c.push(IdRange::new(1000, 2000)).unwrap();
    assert_eq!(c.wanted(), 0);
    let st = c.status();
    assert_eq!(
        (st.current_left, st.segments_ahead, st.ids_ahead),
        (399, 1, 1000)
    );
    // Leaf's monitor view: the current segment's next value, end and step; the next one's.
    let view = |value, max, step| Some(SegmentView { value, max, step });
    assert_eq!(st.segment, 0);
    assert_eq!(st.current, view(601, 1000, 1000));
    assert_eq!(st.next, view(1000, 2000, 1000));
    ready(c.take(399));
    ready(c.take(1));
    let st = c.status();
    assert_eq!(
        (st.segment, st.current, st.next),
        (1, view(1001, 2000, 1000), None)
    );
}

#[test]
fn starvation_grows_the_safe_distance_and_calm_shrinks_it() {
    let config = ChainConfig {
        relax_after: 3,
        ..ChainConfig::default()
    };
    let c = SegmentChain::new(config).unwrap();
    let mut next = 0;
    let mut push = |c: &SegmentChain| {
        c.push(IdRange::new(next, next + 10)).unwrap();
        next += 10;
    };
    for expected in [2, 3, 4] {
        assert_eq!(c.take(1), Take::Empty);
        push(&c);
        assert_eq!(c.status().target_ahead, expected);
        assert_eq!(ready(c.take(10)).0.len(), 10, "drained without starving");
    }
    // Calm refills: no one starved between them.
    assert_eq!(c.wanted(), 4);
    for _ in 0..3 {
        push(&c);
    }
    assert_eq!(c.status().target_ahead, 3);
    assert!(c.status().target_ahead >= u64::from(config.min_ahead));
}

#[test]
fn bad_segments_and_overfilling_are_refused() {
    let c = SegmentChain::new(ChainConfig {
        capacity: 2,
        max_ahead: 1,
        ..ChainConfig::default()
    })
    .unwrap();
    assert!(c.push(IdRange::new(5, 5)).is_err());
    assert!(c.push(IdRange::new(0, MAX_SEGMENT_LEN + 1)).is_err());
    c.push(IdRange::new(0, 10)).unwrap();
    c.push(IdRange::new(10, 20)).unwrap();
    let err = c.push(IdRange::new(20, 30)).unwrap_err().to_string();
    assert!(err.contains("at most 2 segments"), "{err}");
    let _ = c.take(10);
    let _ = c.take(1); // moves to the second segment, freeing the first slot
    c.push(IdRange::new(20, 30)).unwrap();
    for bad in [
        ChainConfig {
            capacity: 1,
            ..ChainConfig::default()
        },
        ChainConfig {
            prefetch_percent: 101,
            ..ChainConfig::default()
        },
        ChainConfig {
            min_ahead: 0,
            ..ChainConfig::default()
        },
        ChainConfig {
            max_ahead: 16,
            ..ChainConfig::default()
        },
    ] {
        assert!(SegmentChain::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn threads_with_a_refiller_never_share_an_id() {
    let c = Arc::new(chain());
    let done = Arc::new(AtomicBool::new(false));
    const SEGMENTS: u64 = 300;
    let refiller = {
        let (c, done) = (c.clone(), done.clone());
        std::thread::spawn(move || {
            let mut pushed = 0;
            while pushed < SEGMENTS {
                if c.wanted() > 0 {
                    // Segments as a database would hand them out, with gaps between them.
                    c.push(IdRange::new(pushed * 1000, pushed * 1000 + 500))
                        .unwrap();
                    pushed += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };
    let takers: Vec<_> = (0..3)
        .map(|i| {
            let (c, done) = (c.clone(), done.clone());
            std::thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    match c.take(1 + i * 7) {
                        Take::Ready { ids, .. } => got.extend(ids.iter()),
                        Take::Empty if done.load(std::sync::atomic::Ordering::SeqCst) => {
                            // The refiller is finished: drain what is left, then stop.
                            if c.take(1) == Take::Empty {
                                break;
                            }
                        }
                        Take::Empty => std::thread::yield_now(),
                    }
                }
                got
            })
        })
        .collect();
    refiller.join().unwrap();
    let mut all = HashSet::new();
    for t in takers {
        let ids = t.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "each taker sees increasing IDs"
        );
        for id in ids {
            assert!(id % 1000 < 500, "{id} is not in a pushed segment");
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    // Every pushed ID was handed out exactly once.
    let st = c.status();
    assert_eq!((st.current_left, st.ids_ahead), (0, 0));
    assert_eq!(all.len() as u64, SEGMENTS * 500);
}

#[derive(Debug, Clone)]
enum Op {
    Take(u64),
    Push(u64),
}

proptest! {
    /// One caller and one refiller: IDs come out exactly as pushed, in order, none twice.
    #[test]
    fn hands_out_exactly_what_was_pushed(ops in prop::collection::vec(
        prop_oneof![(1u64..50).prop_map(Op::Take), (1u64..40).prop_map(Op::Push)], 1..150)
    ) {
        let c = SegmentChain::new(ChainConfig { capacity: 4, max_ahead: 3, ..ChainConfig::default() }).unwrap();
        let mut expected = Vec::new();
        let mut got = Vec::new();
        let mut next = 7;
        for op in ops {
            match op {
                Op::Take(n) => match c.take(n) {
                    Take::Ready { ids, .. } => {
                        prop_assert!(!ids.is_empty() && ids.len() <= n);
                        got.extend(ids.iter());
                    }
                    Take::Empty => {}
                },
                Op::Push(len) => {
                    if c.push(IdRange::new(next, next + len)).is_ok() {
                        expected.extend(next..next + len);
                    }
                    next += len + 3;
                }
            }
        }
        prop_assert_eq!(&got[..], &expected[..got.len()]);
        let st = c.status();
        prop_assert_eq!(got.len() as u64 + st.current_left + st.ids_ahead, expected.len() as u64);
    }
}

#[test]
fn take_numbered_names_the_segment_the_ids_came_from() {
    let c = chain();
    assert_eq!(c.take_numbered(1), (Take::Empty, 0));
    c.push(IdRange::new(1, 3)).unwrap();
    c.push(IdRange::new(10, 12)).unwrap();
    let (t, n) = c.take_numbered(5);
    assert_eq!((ready(t).0, n), (IdRange::new(1, 3), 0));
    let (t, n) = c.take_numbered(1);
    assert_eq!((ready(t).0, n), (IdRange::new(10, 11), 1));
    let (t, n) = c.take_numbered(1);
    assert_eq!((ready(t).0, n), (IdRange::new(11, 12), 1));
    assert_eq!(c.take_numbered(1).0, Take::Empty);
}
