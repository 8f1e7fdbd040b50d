//! Many `LocalSegment` handles over one `SegmentChain`: no ID is served twice, and what the
//! handles served plus what they hold is exactly what left the chain.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use proptest::prelude::*;
use snowdrift_core::segment::{
    ChainConfig, IdRange, LocalConfig, LocalSegment, LocalTake, SegmentChain,
};

#[derive(Debug, Clone)]
enum Op {
    /// Handle `i % handles` asks for one ID.
    Next(usize),
    /// The refiller pushes a segment of this many IDs, striped by the second value.
    Push(u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..64).prop_map(Op::Next),
        1 => (1u64..120, 1u64..4).prop_map(|(len, stride)| Op::Push(len, stride)),
    ]
}

fn config() -> impl Strategy<Value = LocalConfig> {
    (1u64..20, 0u64..50).prop_map(|(first, extra)| LocalConfig {
        first_block: first,
        max_block: first + extra,
    })
}

/// Everything left in the chain, drained with plain takes.
fn drain(chain: &SegmentChain) -> Vec<u64> {
    let mut left = Vec::new();
    while let snowdrift_core::segment::Take::Ready { ids, .. } = chain.take(1000) {
        left.extend(ids.iter());
    }
    left
}

proptest! {
    /// Handles and a refiller interleaved in every order proptest finds. Each handle's IDs
    /// increase (the segments are pushed increasing); no ID appears twice across handles,
    /// their held blocks and the chain; and served + held + left in the chain is exactly
    /// the set pushed.
    #[test]
    fn handles_never_share_an_id_and_cover_what_was_taken(
        handles in 1usize..7,
        config in config(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let chain = SegmentChain::new(ChainConfig { capacity: 4, max_ahead: 3, ..ChainConfig::default() }).unwrap();
        let mut locals: Vec<LocalSegment> = (0..handles).map(|_| LocalSegment::new(config).unwrap()).collect();
        let mut served: Vec<Vec<u64>> = vec![Vec::new(); handles];
        let mut pushed = Vec::new();
        let mut next = 1u64;
        for op in ops {
            match op {
                Op::Next(i) => {
                    let h = i % handles;
                    match locals[h].next(&chain) {
                        LocalTake::Ready { id, .. } => served[h].push(id),
                        LocalTake::Empty => prop_assert!(locals[h].held().is_empty()),
                    }
                }
                Op::Push(len, stride) => {
                    let ids = IdRange::residues(next, next + len, stride, next);
                    if !ids.is_empty() && chain.push(ids).is_ok() {
                        pushed.extend(ids.iter());
                    }
                    next += len + 5;
                }
            }
        }
        let mut seen = HashSet::new();
        for (h, ids) in served.iter().enumerate() {
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "handle {} out of order: {:?}", h, ids);
            let held = locals[h].held();
            prop_assert_eq!(locals[h].served(), ids.len() as u64);
            prop_assert_eq!(locals[h].taken(), ids.len() as u64 + held.len());
            if let (Some(last), false) = (ids.last(), held.is_empty()) {
                prop_assert!(*last < held.start, "held IDs come after the served ones");
            }
            for id in ids.iter().copied().chain(held.iter()) {
                prop_assert!(seen.insert(id), "{} given out twice", id);
            }
        }
        for id in drain(&chain) {
            prop_assert!(seen.insert(id), "{} both taken and still in the chain", id);
        }
        let pushed: HashSet<u64> = pushed.into_iter().collect();
        prop_assert_eq!(seen, pushed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Real threads, each with its own handle, racing a refiller thread: the same
    /// accounting as above, with whatever interleaving the scheduler produces.
    #[test]
    fn threads_with_handles_never_share_an_id(
        threads in 2usize..5,
        config in config(),
        segment in 50u64..400,
    ) {
        const SEGMENTS: u64 = 200;
        let chain = Arc::new(SegmentChain::new(ChainConfig::default()).unwrap());
        let done = Arc::new(AtomicBool::new(false));
        let refiller = {
            let (chain, done) = (chain.clone(), done.clone());
            std::thread::spawn(move || {
                let mut pushed = 0;
                while pushed < SEGMENTS {
                    if chain.wanted() > 0 {
                        // Gaps between segments, as a database with other nodes leaves.
                        let start = 1 + pushed * 1000;
                        chain.push(IdRange::new(start, start + segment)).unwrap();
                        pushed += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
                done.store(true, Ordering::SeqCst);
            })
        };
        let barrier = Arc::new(Barrier::new(threads));
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let (chain, done, barrier) = (chain.clone(), done.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let mut local = LocalSegment::new(config).unwrap();
                    let mut ids = Vec::new();
                    barrier.wait();
                    loop {
                        match local.next(&chain) {
                            LocalTake::Ready { id, .. } => ids.push(id),
                            // Only stop once the refiller has finished and a take after
                            // that still finds nothing.
                            LocalTake::Empty if done.load(Ordering::SeqCst) => {
                                match local.next(&chain) {
                                    LocalTake::Ready { id, .. } => ids.push(id),
                                    LocalTake::Empty => break,
                                }
                            }
                            LocalTake::Empty => std::thread::yield_now(),
                        }
                    }
                    (ids, local)
                })
            })
            .collect();
        refiller.join().unwrap();
        let mut seen = HashSet::new();
        for w in workers {
            let (ids, local) = w.join().unwrap();
            prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "a thread's IDs increase");
            prop_assert!(local.held().is_empty(), "a finished handle holds nothing");
            prop_assert_eq!(local.taken(), ids.len() as u64);
            for id in ids {
                prop_assert!((id - 1) % 1000 < segment, "{} was never pushed", id);
                prop_assert!(seen.insert(id), "{} given out twice", id);
            }
        }
        prop_assert_eq!(seen.len() as u64, SEGMENTS * segment, "every pushed ID served once");
    }
}
