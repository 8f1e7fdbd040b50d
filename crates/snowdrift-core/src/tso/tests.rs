use proptest::prelude::*;

use super::*;
use crate::Error;
use crate::clock::{Clock, ManualClock};
use crate::segment::IdRange;

const T0: u64 = 1_700_000_000_000;

fn config() -> TsoConfig {
    TsoConfig::default()
}

/// An oracle leading a fresh cluster, its first window saved.
fn leader(config: TsoConfig, clock: &ManualClock) -> TimestampOracle<ManualClock> {
    let mut oracle = TimestampOracle::new(config, clock.clone()).unwrap();
    oracle.start_term(None);
    let save = oracle.window_wanted().unwrap();
    oracle.window_saved(save).unwrap();
    oracle
}

fn issued(a: Allocation) -> IdRange {
    match a {
        Allocation::Issued(r) => r,
        other => panic!("expected IDs, got {other:?}"),
    }
}

#[test]
fn ids_are_consecutive_in_a_millisecond_and_decode_to_the_clock() {
    let clock = ManualClock::new(T0);
    let mut o = leader(config(), &clock);
    let a = issued(o.allocate(3).unwrap());
    let b = issued(o.allocate(5).unwrap());
    assert_eq!(a.len(), 3);
    assert_eq!(b.start, a.end, "the next batch follows on");
    assert_eq!(a.start, T0 << 18);
    let parts = o.config().decode(b.start).unwrap();
    assert_eq!(
        parts,
        TsoParts {
            physical_ms: T0,
            logical: 3
        }
    );
    clock.advance(1);
    let c = issued(o.allocate(1).unwrap());
    assert_eq!(
        c.start,
        (T0 + 1) << 18,
        "a new millisecond starts at logical 0"
    );
}

#[test]
fn the_first_id_of_a_term_waits_for_a_saved_window() {
    let clock = ManualClock::new(T0);
    let mut o = TimestampOracle::new(config(), clock.clone()).unwrap();
    assert_eq!(o.allocate(1), Err(Error::NotLeading));
    let term = o.start_term(None);
    let Allocation::SaveWindow(save) = o.allocate(1).unwrap() else {
        panic!("no ID before a saved window")
    };
    assert_eq!(
        save,
        WindowSave {
            term,
            up_to_ms: T0 + 3_000
        }
    );
    // Asking again without saving still issues nothing.
    assert_eq!(o.allocate(1).unwrap(), Allocation::SaveWindow(save));
    o.window_saved(save).unwrap();
    issued(o.allocate(1).unwrap());
    assert_eq!(o.status().window_end_ms, Some(T0 + 3_000));
}

#[test]
fn crossing_the_window_asks_for_a_save_and_issues_nothing() {
    let clock = ManualClock::new(T0);
    let mut o = leader(config(), &clock);
    clock.advance(3_000); // the last millisecond the window covers
    issued(o.allocate(1).unwrap());
    clock.advance(1);
    let Allocation::SaveWindow(save) = o.allocate(1).unwrap() else {
        panic!("past the window")
    };
    assert_eq!(save.up_to_ms, T0 + 3_001 + 3_000);
    o.window_saved(save).unwrap();
    let r = issued(o.allocate(1).unwrap());
    assert_eq!(o.config().decode(r.start).unwrap().physical_ms, T0 + 3_001);
}

#[test]
fn window_wanted_asks_ahead_when_half_the_window_is_used() {
    let clock = ManualClock::new(T0);
    let mut o = leader(config(), &clock);
    assert_eq!(o.window_wanted(), None);
    clock.advance(1_500);
    assert_eq!(o.window_wanted(), None, "exactly half left");
    clock.advance(1);
    let save = o.window_wanted().unwrap();
    assert_eq!(save.up_to_ms, T0 + 1_501 + 3_000);
    o.window_saved(save).unwrap();
    assert_eq!(o.window_wanted(), None);
    // An older, smaller save completing late never lowers the window.
    o.window_saved(WindowSave {
        term: save.term,
        up_to_ms: T0,
    })
    .unwrap();
    assert_eq!(o.status().window_end_ms, Some(save.up_to_ms));
}

#[test]
fn a_clock_step_back_keeps_the_physical_part_and_is_counted() {
    let clock = ManualClock::new(T0);
    let mut o = leader(config(), &clock);
    clock.advance(10);
    let before = issued(o.allocate(2).unwrap());
    clock.step_back(500);
    let after = issued(o.allocate(2).unwrap());
    assert!(after.start > before.start);
    assert_eq!(after.start, before.end, "same millisecond, logical goes on");
    let status = o.status();
    assert_eq!(status.clock_steps_back, 1);
    assert_eq!(status.largest_step_back_ms, 500);
    assert_eq!(status.physical_ms, T0 + 10);
    // While the clock is behind, using up the millisecond moves on to the next without
    // waiting for the clock, consecutively.
    let rest = o.config().logical_capacity() - 4;
    let last = issued(o.allocate(rest).unwrap());
    let next = issued(o.allocate(1).unwrap());
    assert_eq!(next.start, (T0 + 11) << 18);
    assert_eq!(next.start, last.end);
    assert_eq!(o.status().clock_steps_back, 1, "a step is counted once");
    assert_eq!(o.status().physical_ms, T0 + 11);
}

#[test]
fn ahead_of_the_clock_the_physical_part_moves_on_but_not_past_the_window() {
    let clock = ManualClock::new(T0);
    let cfg = TsoConfig {
        logical_bits: 2,
        window_ms: 5,
        ..config()
    };
    let mut o = TimestampOracle::new(cfg, clock.clone()).unwrap();
    // A new term above a window saved 100 ms ahead of this clock.
    o.start_term(Some(T0 + 100));
    let save = o.window_wanted().unwrap();
    assert_eq!(save.up_to_ms, T0 + 106);
    o.window_saved(save).unwrap();
    let mut last = None;
    for ms in 101..=106 {
        let r = issued(o.allocate(4).unwrap());
        assert_eq!(o.config().decode(r.start).unwrap().physical_ms, T0 + ms);
        if let Some(prev) = last {
            assert_eq!(r.start, prev, "consecutive across milliseconds");
        }
        last = Some(r.end);
    }
    // The next millisecond is past the saved window: save first, then go on.
    let Allocation::SaveWindow(save) = o.allocate(1).unwrap() else {
        panic!("past the window")
    };
    assert_eq!(save.up_to_ms, T0 + 107 + 5);
    o.window_saved(save).unwrap();
    let r = issued(o.allocate(1).unwrap());
    assert_eq!(o.config().decode(r.start).unwrap().physical_ms, T0 + 107);
    assert_eq!(o.status().clock_steps_back, 0, "the clock never went back");
}

#[test]
fn a_used_up_millisecond_waits_for_the_next() {
    let clock = ManualClock::new(T0);
    let cfg = TsoConfig {
        logical_bits: 3,
        ..config()
    };
    let mut o = leader(cfg, &clock);
    let a = issued(o.allocate(6).unwrap());
    // 2 values left: a group of 3 does not fit and is not split.
    assert_eq!(
        o.allocate(3).unwrap(),
        Allocation::Wait { until_ms: T0 + 1 }
    );
    let b = issued(o.allocate(2).unwrap());
    assert_eq!(b.start, a.end);
    assert_eq!(
        o.allocate(1).unwrap(),
        Allocation::Wait { until_ms: T0 + 1 }
    );
    clock.advance(1);
    let c = issued(o.allocate(8).unwrap());
    assert_eq!(c.start, b.end, "the next millisecond follows on, no gap");
}

#[test]
fn counts_out_of_range_are_refused() {
    let clock = ManualClock::new(T0);
    let mut o = leader(config(), &clock);
    assert!(matches!(o.allocate(0), Err(Error::InvalidCount { .. })));
    let too_many = o.config().logical_capacity() + 1;
    let err = o.allocate(too_many).unwrap_err();
    assert!(err.to_string().contains("1..=262144"), "{err}");
    issued(o.allocate(1 << 18).unwrap());
}

#[test]
fn a_new_leader_starts_above_the_previous_window_even_with_its_clock_behind() {
    let old_clock = ManualClock::new(T0);
    let mut old = leader(config(), &old_clock);
    old_clock.advance(2_000);
    let last_old = issued(old.allocate(100).unwrap());
    let saved = old.status().window_end_ms.unwrap();
    old.end_term();
    assert_eq!(old.allocate(1), Err(Error::NotLeading));

    // The new leader's clock is a minute behind the old one's.
    let new_clock = ManualClock::new(T0 - 60_000);
    let mut new = TimestampOracle::new(config(), new_clock.clone()).unwrap();
    new.start_term(Some(saved));
    let save = new.window_wanted().unwrap();
    assert_eq!(
        save.up_to_ms,
        saved + 1 + 3_000,
        "the window runs from the floor"
    );
    new.window_saved(save).unwrap();
    let first_new = issued(new.allocate(1).unwrap());
    assert!(first_new.start > last_old.end);
    assert_eq!(
        new.config().decode(first_new.start).unwrap(),
        TsoParts {
            physical_ms: saved + 1,
            logical: 0
        }
    );
}

#[test]
fn a_save_from_an_ended_term_is_refused() {
    let clock = ManualClock::new(T0);
    let mut o = TimestampOracle::new(config(), clock.clone()).unwrap();
    let first = o.start_term(None);
    let save = o.window_wanted().unwrap();
    o.end_term();
    assert_eq!(
        o.window_saved(save),
        Err(Error::StaleTerm {
            term: first,
            current: 0
        })
    );
    let second = o.start_term(Some(save.up_to_ms));
    assert!(second > first);
    assert_eq!(
        o.window_saved(save),
        Err(Error::StaleTerm {
            term: first,
            current: second
        })
    );
    assert!(matches!(o.allocate(1), Ok(Allocation::SaveWindow(_))));
}

#[test]
fn a_full_physical_part_is_an_error_never_a_wrap() {
    // 23 logical bits leave 40 physical bits; put their end 5 ms from now.
    let cfg = TsoConfig {
        logical_bits: 23,
        epoch_ms: T0 + 5 - (1 << 40),
        ..config()
    };
    assert_eq!(cfg.max_physical_ms(), T0 + 4);
    let clock = ManualClock::new(T0);
    let mut o = leader(cfg, &clock);
    clock.advance(4);
    let last = issued(o.allocate(1).unwrap());
    assert!(last.start < 1 << 63);
    clock.advance(1);
    let err = o.allocate(1).unwrap_err();
    assert!(matches!(err, Error::TimeExhausted { .. }), "{err:?}");
    // A new term above the end cannot issue either.
    o.start_term(Some(T0 + 10));
    assert!(matches!(o.allocate(1), Err(Error::TimeExhausted { .. })));
    // Nor can an oracle be built on a clock past the end.
    assert!(matches!(
        TimestampOracle::new(cfg, ManualClock::new(T0 + 5)),
        Err(Error::TimeExhausted { .. })
    ));
}

#[test]
fn bad_options_and_clocks_are_refused() {
    let clock = ManualClock::new(T0);
    for logical_bits in [0, 33] {
        let cfg = TsoConfig {
            logical_bits,
            ..config()
        };
        assert!(matches!(
            TimestampOracle::new(cfg, clock.clone()),
            Err(Error::InvalidConfig(_))
        ));
    }
    let cfg = TsoConfig {
        window_ms: 0,
        ..config()
    };
    assert!(matches!(
        TimestampOracle::new(cfg, clock.clone()),
        Err(Error::InvalidConfig(_))
    ));
    let cfg = TsoConfig {
        epoch_ms: T0 + 1,
        ..config()
    };
    assert!(matches!(
        TimestampOracle::new(cfg, clock.clone()),
        Err(Error::EpochInFuture { .. })
    ));
    let cfg = TsoConfig {
        epoch_ms: T0 - 1_000,
        ..config()
    };
    let mut o = leader(cfg, &clock);
    clock.set(T0 - 2_000);
    assert!(matches!(o.allocate(1), Err(Error::ClockBeforeEpoch { .. })));
}

#[test]
fn compose_and_decode_are_inverse_and_checked() {
    let cfg = config();
    let id = cfg.compose(T0, 7).unwrap();
    assert_eq!(
        cfg.decode(id).unwrap(),
        TsoParts {
            physical_ms: T0,
            logical: 7
        }
    );
    assert!(matches!(
        cfg.compose(T0, 1 << 18),
        Err(Error::FieldOutOfRange { .. })
    ));
    assert!(matches!(cfg.decode(1 << 63), Err(Error::InvalidId { .. })));
}

/// One step of the model in the property test.
#[derive(Debug, Clone)]
enum Step {
    Allocate(u64),
    Advance(u64),
    ClockBack(u64),
    /// Leadership moves to node `n % NODES`; the old leader ends its term first (it stops
    /// before its lease expires, so no two terms issue at once).
    NewLeader(usize),
    /// The driver saves ahead of need, as its ticker would.
    Tick,
    /// The store is unreachable for the next save.
    FailNextSave,
}

const NODES: usize = 3;

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (1u64..=16).prop_map(Step::Allocate),
        2 => (0u64..=2_500).prop_map(Step::Advance),
        1 => (0u64..=5_000).prop_map(Step::ClockBack),
        1 => (0usize..NODES).prop_map(Step::NewLeader),
        1 => Just(Step::Tick),
        1 => Just(Step::FailNextSave),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the clocks and leaders do, every ID is above every ID issued before it.
    #[test]
    fn ids_always_increase_across_clock_steps_and_leader_changes(
        offsets in proptest::collection::vec(-10_000i64..=10_000, NODES),
        steps in proptest::collection::vec(step(), 1..200),
    ) {
        // A small logical part so that waits happen too.
        let cfg = TsoConfig { logical_bits: 4, window_ms: 1_000, ..config() };
        let clocks: Vec<ManualClock> = offsets
            .iter()
            .map(|&o| ManualClock::new(T0.checked_add_signed(o).unwrap()))
            .collect();
        let mut nodes: Vec<TimestampOracle<ManualClock>> = clocks
            .iter()
            .map(|c| TimestampOracle::new(cfg, c.clone()).unwrap())
            .collect();
        // The store: the largest window end saved under a leadership.
        let mut stored: Option<u64> = None;
        let mut leader = 0;
        nodes[0].start_term(stored);
        let mut fail_next_save = false;
        let mut last: Option<u64> = None;
        let save = |stored: &mut Option<u64>, o: &mut TimestampOracle<ManualClock>, s: WindowSave, fail: &mut bool| {
            if std::mem::take(fail) {
                return;
            }
            *stored = Some(stored.map_or(s.up_to_ms, |v| v.max(s.up_to_ms)));
            o.window_saved(s).unwrap();
        };
        for step in steps {
            match step {
                Step::Allocate(n) => {
                    match nodes[leader].allocate(n).unwrap() {
                        Allocation::Issued(r) => {
                            prop_assert_eq!(r.len(), n);
                            if let Some(prev) = last {
                                prop_assert!(r.start > prev, "{} after {}", r.start, prev);
                            }
                            last = Some(r.end - 1);
                            // Never beyond what the store vouches for.
                            let physical = cfg.decode(r.end - 1).unwrap().physical_ms;
                            prop_assert!(stored.is_some_and(|s| physical <= s));
                        }
                        Allocation::SaveWindow(s) => {
                            save(&mut stored, &mut nodes[leader], s, &mut fail_next_save)
                        }
                        Allocation::Wait { until_ms } => {
                            let clock = &clocks[leader];
                            prop_assert!(until_ms > clock.now_ms());
                            clock.set(until_ms);
                        }
                    }
                }
                Step::Advance(ms) => clocks.iter().for_each(|c| c.advance(ms)),
                Step::ClockBack(ms) => clocks[leader].step_back(ms),
                Step::NewLeader(n) => {
                    nodes[leader].end_term();
                    leader = n % NODES;
                    nodes[leader].start_term(stored);
                }
                Step::Tick => {
                    if let Some(s) = nodes[leader].window_wanted() {
                        save(&mut stored, &mut nodes[leader], s, &mut fail_next_save)
                    }
                }
                Step::FailNextSave => fail_next_save = true,
            }
        }
    }
}

/// One step of the partition model: deposed leaders that never learn it keep issuing.
#[derive(Debug, Clone)]
enum PartitionStep {
    Allocate(u64),
    /// Node `n % NODES`, if it leads a term that has ended elsewhere (it was cut off and
    /// has not noticed), issues; the store refuses its saves.
    Deposed(usize, u64),
    Advance(u64),
    ClockBack(usize, u64),
    /// Leadership moves to node `n % NODES`; the old leader notices (ends its term) or not.
    NewLeader(usize, bool),
}

fn partition_step() -> impl Strategy<Value = PartitionStep> {
    prop_oneof![
        5 => (1u64..=16).prop_map(PartitionStep::Allocate),
        3 => (0usize..NODES, 1u64..=16).prop_map(|(n, c)| PartitionStep::Deposed(n, c)),
        2 => (0u64..=2_500).prop_map(PartitionStep::Advance),
        1 => (0usize..NODES, 0u64..=5_000).prop_map(|(n, ms)| PartitionStep::ClockBack(n, ms)),
        1 => (0usize..NODES, any::<bool>()).prop_map(|(n, e)| PartitionStep::NewLeader(n, e)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A leader cut off from the store may go on issuing within the window it saved; its
    /// IDs still never repeat, and every ID of a later term is above them. (Without the
    /// lease fencing above the oracle, real-time order across such a partition is lost;
    /// uniqueness and the order of terms are not.)
    #[test]
    fn deposed_leaders_never_collide_with_later_terms(
        offsets in proptest::collection::vec(-10_000i64..=10_000, NODES),
        steps in proptest::collection::vec(partition_step(), 1..200),
    ) {
        let cfg = TsoConfig { logical_bits: 4, window_ms: 1_000, ..config() };
        let clocks: Vec<ManualClock> = offsets
            .iter()
            .map(|&o| ManualClock::new(T0.checked_add_signed(o).unwrap()))
            .collect();
        let mut nodes: Vec<TimestampOracle<ManualClock>> = clocks
            .iter()
            .map(|c| TimestampOracle::new(cfg, c.clone()).unwrap())
            .collect();
        let mut stored: Option<u64> = None;
        let mut leader = 0;
        let mut generation = 0usize;
        // The generation each node's current term belongs to.
        let mut node_generation = [0usize; NODES];
        nodes[0].start_term(stored);
        // Every issued range with the generation of the term that issued it.
        let mut issued_ranges: Vec<(usize, IdRange)> = Vec::new();
        for step in steps {
            let (node, count) = match step {
                PartitionStep::Allocate(c) => (leader, c),
                PartitionStep::Deposed(n, c) if n % NODES != leader => (n % NODES, c),
                PartitionStep::Deposed(..) => continue,
                PartitionStep::Advance(ms) => {
                    clocks.iter().for_each(|c| c.advance(ms));
                    continue;
                }
                PartitionStep::ClockBack(n, ms) => {
                    clocks[n % NODES].step_back(ms);
                    continue;
                }
                PartitionStep::NewLeader(n, noticed) => {
                    if noticed {
                        nodes[leader].end_term();
                    }
                    leader = n % NODES;
                    generation += 1;
                    node_generation[leader] = generation;
                    nodes[leader].start_term(stored);
                    continue;
                }
            };
            match nodes[node].allocate(count) {
                Err(Error::NotLeading) => {}
                Err(e) => prop_assert!(false, "{e}"),
                Ok(Allocation::Issued(r)) => issued_ranges.push((node_generation[node], r)),
                Ok(Allocation::SaveWindow(s)) => {
                    // Only the leader's save passes the store's leadership condition.
                    if node == leader {
                        stored = Some(stored.map_or(s.up_to_ms, |v| v.max(s.up_to_ms)));
                        nodes[node].window_saved(s).unwrap();
                    }
                }
                Ok(Allocation::Wait { until_ms }) => clocks[node].set(until_ms),
            }
        }
        for (i, (g1, r1)) in issued_ranges.iter().enumerate() {
            for (g2, r2) in &issued_ranges[i + 1..] {
                prop_assert!(r1.end <= r2.start || r2.end <= r1.start, "{r1:?} and {r2:?} overlap");
                if g1 < g2 {
                    prop_assert!(r1.end <= r2.start, "term {g2} issued {r2:?} below {r1:?} of term {g1}");
                }
                if g2 < g1 {
                    prop_assert!(r2.end <= r1.start, "term {g1} issued {r1:?} below {r2:?} of term {g2}");
                }
            }
        }
    }
}
