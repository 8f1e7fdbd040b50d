//! Model checks of the lock-free code: the snowflake generator and the segment chain. Every
//! interleaving of 2-3 threads: no duplicate and no reordering within a thread.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p snowdrift-core --test loom --release`
//! (scripts/test does).
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use snowdrift_core::clock::ManualClock;
use snowdrift_core::generator::{Attempt, SnowflakeGenerator};
use snowdrift_core::layout::{Layout, Role};
use snowdrift_core::segment::{ChainConfig, IdRange, SegmentChain, Take};

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

/// Two threads racing `calls` single IDs each (`try_next`, so no waiting): the IDs each
/// got, in order.
fn singles_on_two_threads(g: &Arc<SnowflakeGenerator<ManualClock>>, calls: usize) -> Vec<Vec<u64>> {
    let hs: Vec<_> = (0..2)
        .map(|_| {
            let g = g.clone();
            thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..calls {
                    if let Attempt::Ready(id) = g.try_next().unwrap() {
                        ids.push(id);
                    }
                }
                ids
            })
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
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

/// A 10 ms unit (Sonyflake's): the reading becomes a tick by a multiply and a shift, on the
/// inlined path and the slow one. Two threads race for the 4 IDs of the tick that holds the
/// reading (7 ms into it), the second call of each finding the first's state: no duplicate,
/// each thread's IDs increasing, and every ID in the reading's own tick.
#[test]
fn two_threads_at_a_10_ms_unit() {
    loom::model(|| {
        let epoch = T0 - 1_000;
        let layout = Layout::from_spec("time:41,worker:2,seq:2", 10, epoch).unwrap();
        let g = Arc::new(
            SnowflakeGenerator::builder(layout)
                .node_id(1)
                .unwrap()
                .build(ManualClock::new(T0 + 7))
                .unwrap(),
        );
        let per_thread = singles_on_two_threads(&g, 2);
        for id in per_thread.iter().flatten() {
            assert_eq!(
                g.layout().decode(*id).unwrap().time_ms,
                T0,
                "ID {id} outside the reading's 10 ms tick: {per_thread:?}"
            );
        }
        check(per_thread);
    });
}

/// The node field below the sequence (Sonyflake's shape): the stored state is the last ID,
/// whose next sequence number is `1 << 2` above it, not `+ 1`. Two threads race single IDs
/// over the tick's 4 sequence numbers into the next tick (1 ms of lead), then a block
/// starts from whatever they left: no duplicate, each thread's IDs increasing, and every
/// ID still carries node 3 in its low bits.
#[test]
fn two_threads_with_the_node_below_the_sequence() {
    loom::model(|| {
        let layout = Layout::from_spec("time:41,seq:2,machine:2", 1, T0 - 1_000).unwrap();
        let g = Arc::new(
            SnowflakeGenerator::builder(layout)
                .node_id(3)
                .unwrap()
                .max_lead(Duration::from_millis(1))
                .build(ManualClock::new(T0))
                .unwrap(),
        );
        let mut per_thread = singles_on_two_threads(&g, 3);
        per_thread.push(take(&g, 8));
        for id in per_thread.iter().flatten() {
            assert_eq!(id & 3, 3, "ID {id} lost its node bits: {per_thread:?}");
        }
        assert_eq!(
            per_thread.iter().map(Vec::len).sum::<usize>(),
            8,
            "two ticks of 4 IDs, all issued: {per_thread:?}"
        );
        check(per_thread);
    });
}

/// The generator reads the clock before it loads the state, so a thread can find a state
/// that another thread stored from a later reading than its own. That must read the clock
/// again, never be taken for a clock that stepped back: with no wait allowed, a step back
/// would bump the extension bit, which no ID may carry here since the clock only moves
/// forward. The same holds for a thread whose CAS lost and that goes on with its reading.
#[test]
fn a_later_reading_stored_first_is_not_a_step_back() {
    loom::model(|| {
        let clock = ManualClock::new(T0);
        let layout = Layout::from_spec("ext:1,time:41,worker:1,seq:2", 1, T0 - 1_000).unwrap();
        let g = Arc::new(
            SnowflakeGenerator::builder(layout)
                .backward_wait(Duration::ZERO)
                .build(clock.clone())
                .unwrap(),
        );
        let ahead = {
            let (g, clock) = (g.clone(), clock.clone());
            thread::spawn(move || {
                // A scheduling point first, so the other thread may read the clock before
                // it moves (the clock's atomic is not one of loom's).
                thread::yield_now();
                clock.advance(1);
                take(&g, 1)
            })
        };
        let behind = {
            let g = g.clone();
            thread::spawn(move || {
                let mut ids = take(&g, 1);
                ids.extend(take(&g, 1));
                ids
            })
        };
        let per_thread = vec![ahead.join().unwrap(), behind.join().unwrap()];
        for id in per_thread.iter().flatten() {
            let ext = g
                .layout()
                .decode(*id)
                .unwrap()
                .value_of(g.layout(), Role::Extension);
            assert_eq!(
                ext,
                Some(0),
                "a race was taken for a step back: {per_thread:?}"
            );
        }
        check(per_thread);
    });
}

fn chain_take(c: &SegmentChain, n: u64) -> Vec<u64> {
    match c.take(n) {
        Take::Ready { ids, .. } => ids.iter().collect(),
        Take::Empty => Vec::new(),
    }
}

/// Two takers race a refiller that reuses the slot of a used-up segment: whatever a taker
/// read from a slot being rewritten, it hands out only IDs of pushed segments, each once.
#[test]
fn segment_chain_takers_race_a_refiller_reusing_a_slot() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let config = ChainConfig {
            capacity: 2,
            max_ahead: 1,
            ..ChainConfig::default()
        };
        let c = Arc::new(SegmentChain::new(config).unwrap());
        c.push(IdRange::new(0, 2)).unwrap();
        c.push(IdRange::new(10, 12)).unwrap();
        let refiller = {
            let c = c.clone();
            // Succeeds only once segment 0 is used up and its slot is free.
            thread::spawn(move || c.push(IdRange::new(20, 22)).is_ok())
        };
        let takers: Vec<_> = [2u64, 1]
            .into_iter()
            .map(|n| {
                let c = c.clone();
                thread::spawn(move || {
                    let mut ids = chain_take(&c, n);
                    ids.extend(chain_take(&c, n));
                    ids
                })
            })
            .collect();
        let mut per_thread: Vec<Vec<u64>> = takers.into_iter().map(|h| h.join().unwrap()).collect();
        let pushed_third = refiller.join().unwrap();
        per_thread.push(chain_take(&c, 2));
        per_thread.push(chain_take(&c, 2));
        let all: Vec<u64> = per_thread.iter().flatten().copied().collect();
        let allowed: Vec<u64> = if pushed_third {
            vec![0, 1, 10, 11, 20, 21]
        } else {
            vec![0, 1, 10, 11]
        };
        assert!(all.iter().all(|id| allowed.contains(id)), "{per_thread:?}");
        check(per_thread);
    });
}

/// Two threads serve single IDs through their own `LocalSegment` while a refiller reuses a
/// slot: a block is taken with the chain's CAS and then owned by one thread, so across
/// every interleaving no ID is served or held twice, and a thread's IDs increase.
#[test]
fn local_segments_over_one_chain_race_a_refiller() {
    use snowdrift_core::segment::{LocalConfig, LocalSegment, LocalTake};
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let config = ChainConfig {
            capacity: 2,
            max_ahead: 1,
            ..ChainConfig::default()
        };
        let c = Arc::new(SegmentChain::new(config).unwrap());
        c.push(IdRange::new(0, 3)).unwrap();
        c.push(IdRange::new(10, 13)).unwrap();
        let refiller = {
            let c = c.clone();
            thread::spawn(move || c.push(IdRange::new(20, 23)).is_ok())
        };
        let local = LocalConfig {
            first_block: 2,
            max_block: 2,
        };
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || {
                    let mut l = LocalSegment::new(local).unwrap();
                    let mut ids = Vec::new();
                    for _ in 0..3 {
                        if let LocalTake::Ready { id, .. } = l.next(&c) {
                            ids.push(id);
                        }
                    }
                    (ids, l.held().iter().collect::<Vec<u64>>())
                })
            })
            .collect();
        let mut per_thread = Vec::new();
        let mut everything = Vec::new();
        for t in takers {
            let (served, held) = t.join().unwrap();
            everything.extend(served.iter().chain(&held).copied());
            per_thread.push(served);
        }
        let pushed_third = refiller.join().unwrap();
        let allowed: Vec<u64> = if pushed_third {
            vec![0, 1, 2, 10, 11, 12, 20, 21, 22]
        } else {
            vec![0, 1, 2, 10, 11, 12]
        };
        assert!(
            everything.iter().all(|id| allowed.contains(id)),
            "{per_thread:?}"
        );
        check(per_thread);
        let n = everything.len();
        everything.sort_unstable();
        everything.dedup();
        assert_eq!(everything.len(), n, "an ID both served and held");
    });
}

/// A keeper extends the window and then closes the fence while two threads take blocks:
/// no ID's tick passes the window a taker could have seen, no call that starts after the
/// close (as the taker observed it) issues anything, and nothing is issued twice.
#[test]
fn fence_extend_and_close_race_takers() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    use snowdrift_core::generator::{ClosedReason, Fence};

    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(|| {
        // The generator holds a std Arc; the fence's atomics are loom's all the same.
        let fence = std::sync::Arc::new(Fence::new());
        // Tick T0 only (4 IDs); the keeper's extension adds tick T0 + 1.
        fence.extend_window(T0 + 1);
        fence.open_until(T0 + 1_000);
        let layout = Layout::from_spec("time:41,worker:2,seq:2", 1, T0 - 1_000).unwrap();
        let g = Arc::new(
            SnowflakeGenerator::builder(layout)
                .max_lead(Duration::from_millis(5))
                .fence(fence.clone())
                .build(ManualClock::new(T0))
                .unwrap(),
        );
        let closed = Arc::new(AtomicBool::new(false));
        let keeper = {
            let (fence, closed) = (fence.clone(), closed.clone());
            thread::spawn(move || {
                fence.extend_window(T0 + 2);
                fence.close(ClosedReason::LeaseLost);
                closed.store(true, Ordering::Release);
            })
        };
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let (g, closed) = (g.clone(), closed.clone());
                thread::spawn(move || {
                    let mut ids = Vec::new();
                    for _ in 0..2 {
                        let was_closed = closed.load(Ordering::Acquire);
                        match g.try_next_block(3) {
                            Ok(Attempt::Ready(b)) => {
                                assert!(!was_closed, "issued after the fence was closed");
                                ids.extend(b.iter());
                            }
                            Ok(Attempt::RetryAfter(_)) => {}
                            Err(_) => {}
                        }
                    }
                    ids
                })
            })
            .collect();
        keeper.join().unwrap();
        let per_thread: Vec<Vec<u64>> = takers.into_iter().map(|h| h.join().unwrap()).collect();
        for id in per_thread.iter().flatten() {
            let t = g.layout().decode(*id).unwrap().time_ms;
            assert!(t < T0 + 2, "ID at {t} passes the window");
        }
        assert!(g.try_next().is_err(), "closed fence still issues");
        check(per_thread);
    });
}
