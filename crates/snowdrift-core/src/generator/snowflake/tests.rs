//! Scenario tests for every policy, with a manual clock.

use std::collections::HashSet;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::clock::{ManualClock, MonotonicClock};

const T0: u64 = 1_700_000_000_000;

fn layout(spec: &str) -> Layout {
    Layout::from_spec(spec, 1, T0 - 10_000_000).unwrap()
}

fn gen_with(
    spec: &str,
    f: impl FnOnce(Builder) -> Builder,
) -> (SnowflakeGenerator<ManualClock>, ManualClock) {
    let clock = ManualClock::new(T0);
    let g = f(SnowflakeGenerator::builder(layout(spec)))
        .build(clock.clone())
        .unwrap();
    (g, clock)
}

fn ready<T: std::fmt::Debug>(a: Attempt<T>) -> T {
    match a {
        Attempt::Ready(v) => v,
        other => panic!("expected IDs, got {other:?}"),
    }
}

fn field(g: &SnowflakeGenerator<ManualClock>, id: u64, name: &str) -> u64 {
    let l = g.layout();
    l.decode(id).unwrap().values[l.field_index(name).unwrap()]
}

#[test]
fn ids_carry_time_node_and_sequence() {
    let (g, _) = gen_with("time:41,datacenter:5,worker:5,seq:12", |b| {
        b.node("datacenter", 3).unwrap().node("worker", 17).unwrap()
    });
    let a = g.next().unwrap();
    let b = g.next().unwrap();
    assert!(b > a);
    let d = g.layout().decode(a).unwrap();
    assert_eq!(d.time_ms, T0);
    assert_eq!(d.values[1..], [3, 17, 0]);
    assert_eq!(field(&g, b, "seq"), 1);
    assert_eq!(g.last_id(), Some(b));
}

#[test]
fn node_id_splits_over_node_fields() {
    let (g, _) = gen_with("time:41,datacenter:5,worker:5,seq:12", |b| {
        b.node_id((3 << 5) | 17).unwrap()
    });
    let id = g.next().unwrap();
    assert_eq!(
        (field(&g, id, "datacenter"), field(&g, id, "worker")),
        (3, 17)
    );
}

#[test]
fn node_values_are_validated() {
    let b = || SnowflakeGenerator::builder(layout("time:41,datacenter:5,worker:5,seq:12"));
    assert!(matches!(
        b().node("worker", 32),
        Err(Error::FieldOutOfRange { max: 31, .. })
    ));
    assert!(matches!(
        b().node_id(1024),
        Err(Error::FieldOutOfRange { max: 1023, .. })
    ));
    assert!(matches!(b().node("seq", 1), Err(Error::InvalidConfig(_))));
    assert!(matches!(
        b().node("shard", 1),
        Err(Error::UnknownField { .. })
    ));
    let bad = b().random_sequence_start(1, 0).build(ManualClock::new(T0));
    assert!(matches!(bad, Err(Error::InvalidConfig(_))));
}

#[test]
fn exhausted_sequence_waits_for_next_tick() {
    let (g, clock) = gen_with("time:41,worker:10,seq:2", |b| b);
    let ids: Vec<u64> = (0..4).map(|_| ready(g.try_next().unwrap())).collect();
    assert_eq!(
        ids.iter().map(|&i| field(&g, i, "seq")).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert_eq!(
        g.try_next().unwrap(),
        Attempt::RetryAfter(Duration::from_millis(1))
    );
    // Nothing was reserved by the refused attempt.
    assert_eq!(g.last_id(), Some(ids[3]));
    // The blocking call waits through the clock and continues in the next tick.
    let next = g.next().unwrap();
    assert_eq!(clock.now_ms(), T0 + 1);
    assert!(next > ids[3]);
    assert_eq!(field(&g, next, "seq"), 0);
    assert_eq!(g.layout().decode(next).unwrap().time_ms, T0 + 1);
}

#[test]
fn lead_borrows_future_ticks_up_to_the_bound() {
    let (g, clock) = gen_with("time:41,worker:10,seq:2", |b| {
        b.max_lead(Duration::from_millis(2))
    });
    let ids: Vec<u64> = (0..12).map(|_| ready(g.try_next().unwrap())).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let last = g.layout().decode(ids[11]).unwrap();
    assert_eq!(last.time_ms, T0 + 2);
    assert_eq!(g.lead(), Duration::from_millis(2));
    assert_eq!(g.used_until_ms(), Some(T0 + 3));
    assert_eq!(
        g.try_next().unwrap(),
        Attempt::RetryAfter(Duration::from_millis(1))
    );
    clock.advance(1);
    let id = ready(g.try_next().unwrap());
    assert_eq!(g.layout().decode(id).unwrap().time_ms, T0 + 3);
}

#[test]
fn small_step_back_waits() {
    let (g, clock) = gen_with("time:41,worker:10,seq:12", |b| b);
    let a = g.next().unwrap();
    clock.step_back(3);
    assert_eq!(
        g.try_next().unwrap(),
        Attempt::RetryAfter(Duration::from_millis(3))
    );
    let b = g.next().unwrap();
    assert!(b > a);
    assert_eq!(clock.now_ms(), T0);
}

#[test]
fn large_step_back_without_extension_refuses() {
    let (g, clock) = gen_with("time:41,worker:10,seq:12", |b| b);
    let a = g.next().unwrap();
    clock.step_back(100);
    let err = g.try_next().unwrap_err();
    assert_eq!(
        err,
        Error::ClockBehind {
            behind: Duration::from_millis(100),
            bound: Duration::from_millis(5),
            ext_left: 0
        }
    );
    assert!(err.to_string().contains("100ms behind"), "{err}");
    assert!(
        g.next().is_err(),
        "the blocking call refuses too instead of waiting 100 ms"
    );
    assert_eq!(g.last_id(), Some(a));
    clock.advance(100);
    assert!(g.next().unwrap() > a);
}

#[test]
fn wait_bound_is_configurable() {
    let (g, clock) = gen_with("time:41,worker:10,seq:12", |b| {
        b.backward_wait(Duration::from_millis(200))
    });
    let a = g.next().unwrap();
    clock.step_back(100);
    assert_eq!(
        g.try_next().unwrap(),
        Attempt::RetryAfter(Duration::from_millis(100))
    );
    assert!(g.next().unwrap() > a);
}

#[test]
fn two_extension_bits_survive_three_large_steps_back() {
    let (g, clock) = gen_with("ext:2,time:39,worker:10,seq:12", |b| b);
    let mut ids = vec![g.next().unwrap()];
    for step in 1..=3 {
        clock.step_back(1_000);
        let id = g.next().unwrap();
        assert!(
            id > *ids.last().unwrap(),
            "IDs keep increasing across extension bumps"
        );
        assert_eq!(field(&g, id, "ext"), step);
        assert_eq!(g.layout().decode(id).unwrap().time_ms, clock.now_ms());
        ids.push(id);
        ids.push(g.next().unwrap());
    }
    clock.step_back(1_000);
    assert!(matches!(g.next(), Err(Error::ClockBehind { .. })));
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn wait_policy_refuses_a_large_step_back_though_extension_values_are_left() {
    let (g, clock) = gen_with("ext:2,time:39,worker:10,seq:12", |b| {
        b.on_backward(OnBackward::Wait)
    });
    let a = g.next().unwrap();
    clock.step_back(3);
    assert!(
        g.next().unwrap() > a,
        "a step within the bound is waited out"
    );
    clock.step_back(1_000);
    assert_eq!(
        g.try_next().unwrap_err(),
        Error::ClockBehind {
            behind: Duration::from_millis(1_000),
            bound: Duration::from_millis(5),
            ext_left: 3
        }
    );
    assert_eq!(g.extension(), 0);
}

#[test]
fn refuse_policy_never_waits() {
    let (g, clock) = gen_with("ext:2,time:39,worker:10,seq:12", |b| {
        b.on_backward(OnBackward::Refuse)
            .backward_wait(Duration::from_secs(1))
    });
    let a = g.next().unwrap();
    clock.step_back(1);
    assert!(matches!(g.try_next(), Err(Error::ClockBehind { .. })));
    assert!(matches!(g.next(), Err(Error::ClockBehind { .. })));
    clock.advance(1);
    assert!(g.next().unwrap() > a, "goes on once the clock is back");
}

#[test]
fn policies_read_from_their_names() {
    for p in [OnBackward::Extension, OnBackward::Wait, OnBackward::Refuse] {
        assert_eq!(p.name().parse::<OnBackward>().unwrap(), p);
    }
    let err = "later".parse::<OnBackward>().unwrap_err().to_string();
    assert!(err.contains("\"wait\"") && err.contains("later"), "{err}");
}

#[test]
fn a_starting_extension_value_puts_every_id_above_the_lower_values() {
    let spec = "ext:2,time:39,worker:10,seq:12";
    let (before, clock) = gen_with(spec, |b| b);
    let old = before.next().unwrap();
    // A restart with the clock a minute behind, under the next extension value.
    clock.step_back(60_000);
    let g = SnowflakeGenerator::builder(layout(spec))
        .extension(1)
        .build(clock.clone())
        .unwrap();
    assert_eq!(g.extension(), 1);
    assert_eq!(g.extension_max(), 3);
    let id = g.next().unwrap();
    assert!(id > old);
    assert_eq!(field(&g, id, "ext"), 1);
    assert_eq!(g.layout().decode(id).unwrap().time_ms, clock.now_ms());
    let err = SnowflakeGenerator::builder(layout(spec))
        .extension(4)
        .build(clock.clone())
        .unwrap_err();
    assert!(
        matches!(err, Error::FieldOutOfRange { max: 3, .. }),
        "{err}"
    );
    let none = SnowflakeGenerator::builder(layout("time:41,worker:10,seq:12")).extension(1);
    assert!(none.build(clock).is_err(), "no extension field, no value 1");
}

#[test]
fn time_field_full_is_an_error_not_a_wrap() {
    // 4 time bits at 1 ms: ticks 0..=15 after the epoch.
    let clock = ManualClock::new(T0 + 15);
    let l = Layout::from_spec("time:4,worker:2,seq:2", 1, T0).unwrap();
    let g = SnowflakeGenerator::builder(l)
        .max_lead(Duration::from_millis(5))
        .build(clock.clone())
        .unwrap();
    for _ in 0..4 {
        g.next().unwrap();
    }
    let err = g.try_next().unwrap_err();
    assert!(matches!(err, Error::TimeExhausted { .. }), "{err:?}");
    assert!(err.to_string().contains("ran out on"), "{err}");
    clock.advance(1);
    assert!(matches!(g.next(), Err(Error::TimeExhausted { .. })));
}

#[test]
fn clock_before_epoch_is_an_error() {
    let clock = ManualClock::new(T0 - 20_000_000);
    let g = SnowflakeGenerator::builder(layout("time:41,seq:12"))
        .build(clock)
        .unwrap();
    assert!(matches!(g.next(), Err(Error::ClockBeforeEpoch { .. })));
}

#[test]
fn clock_before_epoch_is_an_error_when_the_time_field_outlasts_u64_ms() {
    // 2^60 ticks of a second, or 2^62 of 4 ms, overflow a u64 of ms: the bound on readings
    // saturates, and a reading before the epoch, which `fast` wraps around, must still
    // fall outside it, whatever the epoch.
    for (spec, unit, epoch) in [
        ("time:60,seq:3", 1000, T0),
        ("time:62,seq:1", 4, (1 << 63) + T0),
    ] {
        let l = Layout::from_spec(spec, unit, epoch).unwrap();
        let clock = ManualClock::new(epoch);
        let g = SnowflakeGenerator::builder(l).build(clock.clone()).unwrap();
        let first = g.next().unwrap();
        assert_eq!(g.layout().decode(first).unwrap().time_ms, epoch);
        // With an ID issued, only the reading's check stands between it and a tick read
        // from the wrapped difference.
        clock.step_back(5);
        assert!(
            matches!(g.next(), Err(Error::ClockBeforeEpoch { .. })),
            "{spec}"
        );
        assert!(
            matches!(g.next_block(4), Err(Error::ClockBeforeEpoch { .. })),
            "{spec}"
        );
        assert_eq!(g.last_id(), Some(first));
    }
}

#[test]
fn zero_count_is_refused() {
    let (g, _) = gen_with("time:41,seq:12", |b| b);
    assert!(matches!(g.next_block(0), Err(Error::InvalidCount { .. })));
    assert_eq!(g.last_id(), None);
}

#[test]
fn blocks_are_contiguous_and_may_span_ticks() {
    let (g, _) = gen_with("time:41,worker:10,seq:4", |b| {
        b.node_id(5).unwrap().max_lead(Duration::from_millis(3))
    });
    let first = g.next_block(10).unwrap();
    assert_eq!(first.len(), 10);
    // 16 per tick, 4 ticks allowed (now + 3 ahead): 64 - 10 left.
    let second = ready(g.try_next_block(100).unwrap());
    assert_eq!(second.len(), 54);
    let ids: Vec<u64> = first.iter().chain(second.iter()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(second.first(), ids[10]);
    assert_eq!(second.last(), *ids.last().unwrap());
    assert_eq!(second.get(53), Some(second.last()));
    assert_eq!(second.get(54), None);
    assert!(ids.iter().all(|&id| field(&g, id, "worker") == 5));
    // Runs: one per tick touched, each a constant stride apart.
    let runs: Vec<_> = second.runs().collect();
    assert_eq!(runs.len(), 4);
    assert_eq!(runs.iter().map(|r| r.1).sum::<u64>(), 54);
    let expanded: Vec<u64> = runs
        .iter()
        .flat_map(|&(first, n, stride)| (0..n).map(move |i| first + i * stride))
        .collect();
    assert_eq!(expanded, second.iter().collect::<Vec<_>>());
    assert_eq!(second.iter().len(), 54);
}

#[test]
fn random_sequence_start_spreads_low_bits() {
    let (g, clock) = gen_with("time:41,worker:10,seq:12", |b| {
        b.random_sequence_start(42, 100)
    });
    let mut firsts = HashSet::new();
    let mut prev = 0;
    for _ in 0..200 {
        let id = g.next().unwrap();
        assert!(id > prev);
        prev = id;
        let seq = field(&g, id, "seq");
        assert!(seq < 100);
        firsts.insert(seq);
        clock.advance(1);
    }
    assert!(firsts.len() > 50, "starts should vary: {firsts:?}");
    assert!(firsts.iter().any(|s| s % 2 == 1), "some IDs are odd");
}

#[test]
fn start_after_continues_past_an_earlier_id() {
    let (g, clock) = gen_with("time:41,worker:10,seq:12", |b| b);
    let earlier = g.next().unwrap();
    // A restarted generator whose clock now reads earlier than what was issued.
    clock.step_back(2);
    let g2 = SnowflakeGenerator::builder(layout("time:41,worker:10,seq:12"))
        .start_after(earlier)
        .build(clock.clone())
        .unwrap();
    assert!(g2.next().unwrap() > earlier);
}

#[test]
fn threads_never_share_an_id() {
    let l = Layout::from_spec("time:41,worker:10,seq:12", 1, T0 - 1_000).unwrap();
    let g = SnowflakeGenerator::builder(l)
        .build(MonotonicClock::new())
        .unwrap();
    let per_thread: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let g = &g;
                s.spawn(move || {
                    (0..50_000)
                        .map(|j| {
                            if (i + j) % 7 == 0 {
                                g.next_block(3).unwrap().first()
                            } else {
                                g.next().unwrap()
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all = HashSet::new();
    for ids in &per_thread {
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "each thread sees increasing IDs"
        );
        for &id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Advance(u64),
    StepBack(u64),
    Next,
    Block(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..3).prop_map(Op::Advance),
        (0u64..40).prop_map(Op::StepBack),
        Just(Op::Next),
        (1u64..40).prop_map(Op::Block),
    ]
}

proptest! {
    /// Whatever the clock does, a generator's IDs strictly increase; it only ever waits,
    /// bumps the extension or refuses.
    #[test]
    fn ids_strictly_increase_under_any_clock(
        ops in prop::collection::vec(op(), 1..200),
        ext in 0u8..3,
        lead in 0u64..3,
        random in any::<bool>(),
    ) {
        let spec = if ext > 0 { format!("ext:{ext},time:30,worker:3,seq:3") } else { "time:30,worker:3,seq:3".into() };
        let (g, clock) = gen_with(&spec, |b| {
            let b = b.max_lead(Duration::from_millis(lead)).node_id(5).unwrap();
            if random { b.random_sequence_start(7, 5) } else { b }
        });
        let mut last = None;
        for op in ops {
            let got: Vec<u64> = match op {
                Op::Advance(ms) => { clock.advance(ms); vec![] }
                Op::StepBack(ms) => { clock.step_back(ms); vec![] }
                Op::Next => match g.try_next() {
                    Ok(Attempt::Ready(id)) => vec![id],
                    Ok(Attempt::RetryAfter(d)) => { prop_assert!(d > Duration::ZERO && d <= Duration::from_millis(5)); vec![] }
                    Err(Error::ClockBehind { .. }) => vec![],
                    Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
                },
                Op::Block(n) => match g.try_next_block(n) {
                    Ok(Attempt::Ready(b)) => { prop_assert!(!b.is_empty() && b.len() <= n); b.iter().collect() }
                    Ok(Attempt::RetryAfter(_)) | Err(Error::ClockBehind { .. }) => vec![],
                    Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
                },
            };
            for id in got {
                prop_assert!(last.is_none_or(|l| id > l), "{id} after {last:?}");
                prop_assert_eq!(field(&g, id, "worker"), 5);
                // Never further ahead of the clock than the lead allows.
                let t = g.layout().decode(id).unwrap().time_ms;
                prop_assert!(t <= clock.now_ms() + lead || ext > 0);
                last = Some(id);
            }
        }
    }
}

/// The tick of an ID issued at `reading` ms after the epoch: `next()` (the inlined path),
/// then a block from the same reading (the slow path, which starts from the state).
fn ticks_at(unit: u64, spec: &str, epoch: u64, reading: u64) -> (u64, u64) {
    let l = Layout::from_spec(spec, unit, epoch).unwrap();
    let clock = ManualClock::new(epoch + reading);
    let g = SnowflakeGenerator::builder(l).build(clock).unwrap();
    let tick = |id| field(&g, id, "time");
    let first = tick(g.next().unwrap());
    let block = tick(g.next_block(1).unwrap().first());
    (first, block)
}

proptest! {
    /// A unit other than 1 ms turns readings into ticks without a division (a multiply and
    /// a shift); the tick of every ID is the reading divided by the unit, on both sides of
    /// a tick's boundary.
    #[test]
    fn the_tick_is_the_reading_divided_by_the_unit(
        unit in prop_oneof![Just(10u64), Just(1_000), Just(7), 2u64..=86_400_000],
        q in 0u64..(1 << 30),
        off in -1i64..=1,
    ) {
        let reading = (q * unit).saturating_add_signed(off);
        let (first, block) = ticks_at(unit, "time:41,seq:12", T0 - 10_000_000, reading);
        prop_assert_eq!(first, reading / unit);
        prop_assert_eq!(block, reading / unit);
    }
}

/// Readings past the multiplier's exact range (2^63 ms and more, possible only with a time
/// field that outlasts a `u64` of ms) take the slow path, which divides.
#[test]
fn readings_past_the_exact_range_are_divided() {
    for unit in [7, 10, 1_000, 86_400_000] {
        let exact_max = super::super::ticks::UnitDivider::new(unit).exact_max();
        // The multiplier is first wrong at the end of the tick that holds `exact_max`.
        let tick_end = (exact_max / unit * unit).saturating_add(unit - 1);
        for reading in [
            exact_max,
            exact_max.saturating_add(1),
            tick_end,
            tick_end.saturating_add(unit),
            u64::MAX - 1,
        ] {
            let (first, block) = ticks_at(unit, "time:62,seq:1", 0, reading);
            assert_eq!(first, reading / unit, "unit {unit}, reading {reading}");
            assert_eq!(block, reading / unit, "unit {unit}, reading {reading}");
        }
    }
}
