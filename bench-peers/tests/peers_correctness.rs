//! Correctness of snowdrift beside its peers, under the same tests.
//!
//! Every check runs on snowdrift and on each peer. snowdrift's results are asserted: these
//! tests fail if snowdrift duplicates, goes backwards, or issues an ID under a clock that
//! stepped back. Peers' results are only printed (run with `--nocapture` to see the
//! tables that BENCHMARKS.md quotes):
//!
//! ```text
//! cargo test -p bench-peers --release --test peers_correctness -- --nocapture --test-threads 1
//! ```

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, UNIX_EPOCH};

use bench_peers::wall_ms;
use ferroid::generator::{AtomicSnowflakeGenerator, LockSnowflakeGenerator, Poll};
use ferroid::id::SnowflakeTwitterId;
use ferroid::time::{MonotonicClock as FerroidClock, TWITTER_EPOCH, TimeSource};
use idgenerator::{CoreIdGenerator, IdGeneratorOptions};
use snowdrift_core::Error;
use snowdrift_core::clock::{Clock, ManualClock, MonotonicClock};
use snowdrift_core::generator::{Attempt, SnowflakeGenerator};
use snowdrift_core::layout::Layout;

const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;

/// What two threads sharing one generator produced.
#[derive(Debug, Default)]
struct SharedRun {
    ids: usize,
    duplicates: usize,
    non_increasing: usize,
    elapsed: Duration,
}

impl SharedRun {
    fn ok(&self) -> bool {
        self.duplicates == 0 && self.non_increasing == 0
    }
}

/// `threads` threads call `f` `per_thread` times each on one shared generator. Counts IDs
/// that repeat (across all threads) and IDs not greater than the same thread's previous one.
fn shared_run(threads: usize, per_thread: usize, f: impl Fn() -> u128 + Sync) -> SharedRun {
    let start = Instant::now();
    let per: Vec<Vec<u128>> = thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut v = Vec::with_capacity(per_thread);
                    for _ in 0..per_thread {
                        v.push(f());
                    }
                    v
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();
    let non_increasing = per
        .iter()
        .map(|v| v.windows(2).filter(|w| w[1] <= w[0]).count())
        .sum();
    let mut all: Vec<u128> = per.into_iter().flatten().collect();
    all.sort_unstable();
    let duplicates = all.windows(2).filter(|w| w[0] == w[1]).count();
    SharedRun {
        ids: all.len(),
        duplicates,
        non_increasing,
        elapsed,
    }
}

fn twitter() -> Layout {
    Layout::preset("twitter").unwrap()
}

fn print_row(name: &str, r: &SharedRun) {
    println!(
        "| {name} | {} | {} | {} | {:.0} ms |",
        r.ids,
        r.duplicates,
        r.non_increasing,
        r.elapsed.as_secs_f64() * 1e3
    );
}

/// Two threads, one generator, real clocks: duplicates and per-thread order, every peer.
#[test]
fn shared_generator_two_threads() {
    const N: usize = 500_000;
    println!(
        "\n| generator (2 threads share one) | IDs | duplicates | non-increasing (per thread) | time |"
    );
    println!("|---|---|---|---|---|");

    // snowdrift: asserted.
    let mono = SnowflakeGenerator::builder(twitter())
        .node_id(1)
        .and_then(|b| b.build(MonotonicClock::new()))
        .unwrap();
    let r = shared_run(2, N, || u128::from(mono.next().unwrap()));
    print_row("snowdrift, Twitter layout, MonotonicClock", &r);
    assert!(r.ok(), "snowdrift (monotonic) misbehaved: {r:?}");

    let (clock, ticker) = bench_peers::cached_clock();
    let cached = SnowflakeGenerator::builder(twitter())
        .node_id(1)
        .and_then(|b| b.build(clock))
        .unwrap();
    let r = shared_run(2, N, || u128::from(cached.next().unwrap()));
    drop(ticker);
    print_row("snowdrift, Twitter layout, CachedClock", &r);
    assert!(r.ok(), "snowdrift (cached) misbehaved: {r:?}");

    let wide = SnowflakeGenerator::builder(bench_peers::wide_layout())
        .node_id(1)
        .and_then(|b| b.build(MonotonicClock::new()))
        .unwrap();
    let r = shared_run(2, N, || {
        let block = wide.next_block(10).unwrap();
        assert_eq!(block.len(), 10);
        u128::from(block.last())
    });
    print_row(
        "snowdrift, wide layout, next_block(10) (last ID of each)",
        &r,
    );
    assert!(r.ok(), "snowdrift (blocks) misbehaved: {r:?}");

    // Peers: reported.
    let atomic: AtomicSnowflakeGenerator<SnowflakeTwitterId, _> =
        AtomicSnowflakeGenerator::new(1, FerroidClock::<1>::with_epoch(TWITTER_EPOCH));
    let r = shared_run(2, N, || {
        u128::from(atomic.next_id(|_| std::hint::spin_loop()).to_raw())
    });
    print_row("ferroid AtomicSnowflakeGenerator, Twitter", &r);

    let lock: LockSnowflakeGenerator<SnowflakeTwitterId, _> =
        LockSnowflakeGenerator::new(1, FerroidClock::<1>::with_epoch(TWITTER_EPOCH));
    let r = shared_run(2, N, || {
        u128::from(
            lock.try_next_id(|_| std::hint::spin_loop())
                .unwrap()
                .to_raw(),
        )
    });
    print_row("ferroid LockSnowflakeGenerator, Twitter", &r);

    let sf = snowflaked::sync::Generator::new(1);
    let r = shared_run(2, N, || u128::from(sf.generate::<u64>()));
    print_row("snowflaked sync::Generator", &r);

    let rs = Mutex::new(rs_snowflake::SnowflakeIdGenerator::with_epoch(
        1,
        1,
        UNIX_EPOCH + Duration::from_millis(TWITTER_EPOCH_MS),
    ));
    let r = shared_run(2, N, || {
        rs.lock()
            .unwrap()
            .real_time_generate()
            .cast_unsigned()
            .into()
    });
    print_row("rs-snowflake real_time_generate (in a Mutex)", &r);

    let mut core = CoreIdGenerator::default();
    core.init(
        IdGeneratorOptions::new()
            .worker_id(1)
            .worker_id_bit_len(10)
            .seq_bit_len(12),
    )
    .unwrap();
    let idg = Mutex::new(core);
    let r = shared_run(2, N, || {
        idg.lock().unwrap().next_id().cast_unsigned().into()
    });
    print_row(
        "idgenerator (drift, 10 worker + 12 seq bits, in a Mutex)",
        &r,
    );

    let machine = || Ok(1);
    let sony = sonyflake::Sonyflake::builder()
        .machine_id(&machine)
        .finalize()
        .unwrap();
    let r = shared_run(2, 5_000, || u128::from(sony.next_id().unwrap().to_u64()));
    print_row("sonyflake (10,000 IDs: its cap is 25,600/s)", &r);

    let r = shared_run(2, N, || uuid::Uuid::now_v7().as_u128());
    print_row("uuid now_v7", &r);

    let ulid_gen = Mutex::new(ulid::Generator::new());
    let r = shared_run(2, N, || ulid_gen.lock().unwrap().generate().unwrap().0);
    print_row("ulid Generator (in a Mutex)", &r);

    let r = shared_run(2, N, || oid_u128(bson::oid::ObjectId::new()));
    print_row("bson ObjectId::new", &r);

    // ferroid's own benchmark layout: 0 timestamp bits, 63 sequence bits. ferroid masks
    // the timestamp to its width in release builds and trips a `debug_assert!` in debug
    // builds, so the panic is caught and reported too.
    let bench: AtomicSnowflakeGenerator<FerroidBenchId, _> =
        AtomicSnowflakeGenerator::new(0, FerroidClock::<1>::with_epoch(TWITTER_EPOCH));
    let name = "ferroid atomic, ferroid's bench layout (timestamp: 0, sequence: 63)";
    match catch_unwind(AssertUnwindSafe(|| {
        shared_run(2, 1000, || {
            u128::from(bench.next_id(|_| std::hint::spin_loop()).to_raw())
        })
    })) {
        Ok(r) => print_row(name, &r),
        Err(_) => println!(
            "| {name} | - | panics (debug build: ferroid's `timestamp overflow` debug_assert) | - | - |"
        ),
    }
}

ferroid::define_snowflake_id!(
    /// The layout ferroid's `benches/bench.rs` uses "to avoid pending".
    FerroidBenchId, u64,
    reserved: 1,
    timestamp: 0,
    machine_id: 0,
    sequence: 63
);

fn oid_u128(oid: bson::oid::ObjectId) -> u128 {
    let mut b = [0u8; 16];
    b[4..].copy_from_slice(&oid.bytes());
    u128::from_be_bytes(b)
}

/// bson's counter is 24 bits and wraps silently: more than 2^24 ObjectIds in one second of
/// one process repeat. Release builds only (a debug build is too slow to wrap in a second).
#[test]
fn bson_counter_wrap() {
    if cfg!(debug_assertions) {
        println!("bson_counter_wrap: skipped in debug builds");
        return;
    }
    let n = (1usize << 24) + 4_000_000;
    let start = Instant::now();
    let ids: Vec<u128> = (0..n)
        .map(|_| oid_u128(bson::oid::ObjectId::new()))
        .collect();
    let secs = start.elapsed().as_secs_f64();
    let non_increasing = ids.windows(2).filter(|w| w[1] <= w[0]).count();
    let mut per_second: BTreeMap<u32, usize> = BTreeMap::new();
    for id in &ids {
        *per_second.entry((id >> 64) as u32).or_default() += 1;
    }
    let mut sorted = ids;
    sorted.sort_unstable();
    let duplicates = sorted.windows(2).filter(|w| w[0] == w[1]).count();
    println!(
        "\nbson ObjectId::new, one thread: {n} IDs in {secs:.2} s ({:.1} M/s); IDs per timestamp second: {:?}; duplicates: {duplicates}; non-increasing: {non_increasing}",
        n as f64 / secs / 1e6,
        per_second.values().collect::<Vec<_>>()
    );
}

/// A ferroid time source set by hand (milliseconds since the layout's epoch).
#[derive(Clone)]
struct ManualTime(Arc<AtomicU64>);

impl TimeSource<u64> for ManualTime {
    fn current_millis(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a generator did when its clock stepped back.
fn verdict(issued: usize, dup: bool, back: bool, waited: bool, refused: bool) -> String {
    let mut v = Vec::new();
    if dup {
        v.push("DUPLICATE");
    }
    if back {
        v.push("WENT BACKWARDS");
    }
    if waited {
        v.push("waits");
    }
    if refused {
        v.push("refuses (error)");
    }
    if v.is_empty() {
        v.push("keeps issuing, increasing");
    }
    format!("{} ({issued} IDs issued while behind)", v.join(", "))
}

/// Steps of the injected clock, in ms, applied after 100 IDs at a fixed time.
const STEPS: [(&str, u64); 2] = [("2 ms", 2), ("1 s", 1_000)];

/// Issues 100 IDs at `t0`, steps the clock back by `back`, then tries 100 more IDs (each a
/// single non-blocking attempt). `attempt` returns Ok(Some(id)), Ok(None) for "wait", or
/// Err for a refusal.
fn step_back_case(
    set: &dyn Fn(u64),
    t0: u64,
    back: u64,
    attempt: &mut dyn FnMut() -> Result<Option<u128>, String>,
) -> (String, bool) {
    set(t0);
    let mut seen = Vec::new();
    for _ in 0..100 {
        if let Ok(Some(id)) = attempt() {
            seen.push(id);
        }
    }
    let last = *seen.last().expect("issued IDs before the step");
    set(t0 - back);
    let (mut issued, mut dup, mut backwards, mut waited, mut refused) =
        (0, false, false, false, false);
    let mut prev = last;
    for _ in 0..100 {
        match catch_unwind(AssertUnwindSafe(&mut *attempt)) {
            Err(_) => return ("PANICS".into(), false),
            Ok(Ok(Some(id))) => {
                issued += 1;
                dup |= seen.contains(&id);
                backwards |= id <= prev;
                prev = id;
                seen.push(id);
            }
            Ok(Ok(None)) => waited = true,
            Ok(Err(_)) => refused = true,
        }
    }
    let safe = !dup && !backwards;
    (verdict(issued, dup, backwards, waited, refused), safe)
}

/// Injected clock steps back: snowdrift (asserted), ferroid, uuid's ContextV7, ulid.
#[test]
fn clock_step_back_injected() {
    let now = wall_ms();
    println!("\n| generator (injected clock) | step back 2 ms | step back 1 s |");
    println!("|---|---|---|");
    let row = |name: &str, results: Vec<String>| {
        println!("| {name} | {} |", results.join(" | "));
    };

    // snowdrift, Twitter layout (no extension bits), default 5 ms wait bound.
    let mut results = Vec::new();
    for (_, back) in STEPS {
        let clock = ManualClock::new(now);
        let g = SnowflakeGenerator::builder(twitter())
            .node_id(1)
            .and_then(|b| b.build(clock.clone()))
            .unwrap();
        let (v, safe) = step_back_case(&|t| clock.set(t), now, back, &mut || match g.try_next() {
            Ok(Attempt::Ready(id)) => Ok(Some(id.into())),
            Ok(Attempt::RetryAfter(_)) => Ok(None),
            Err(e) => Err(e.to_string()),
        });
        assert!(
            safe,
            "snowdrift issued a repeated or smaller ID after a {back} ms step: {v}"
        );
        results.push(v);
    }
    row("snowdrift (Twitter layout, `try_next`)", results);

    // snowdrift with 2 extension bits: a large step is absorbed by bumping the extension.
    let mut results = Vec::new();
    for (_, back) in STEPS {
        let clock = ManualClock::new(now);
        let layout =
            Layout::from_spec("ext:2,time:39,worker:10,seq:12", 1, TWITTER_EPOCH_MS).unwrap();
        let g = SnowflakeGenerator::builder(layout)
            .node_id(1)
            .and_then(|b| b.build(clock.clone()))
            .unwrap();
        let (v, safe) = step_back_case(&|t| clock.set(t), now, back, &mut || match g.try_next() {
            Ok(Attempt::Ready(id)) => Ok(Some(id.into())),
            Ok(Attempt::RetryAfter(_)) => Ok(None),
            Err(e) => Err(e.to_string()),
        });
        assert!(
            safe,
            "snowdrift (ext bits) repeated or went back after a {back} ms step: {v}"
        );
        results.push(v);
    }
    row("snowdrift (`ext:2,time:39,worker:10,seq:12`)", results);

    // ferroid atomic and lock, with a hand-set TimeSource.
    let mut results = Vec::new();
    for (_, back) in STEPS {
        let t = ManualTime(Arc::new(AtomicU64::new(0)));
        let g: AtomicSnowflakeGenerator<SnowflakeTwitterId, _> =
            AtomicSnowflakeGenerator::new(1, t.clone());
        let (v, _) = step_back_case(
            &|ms| t.0.store(ms - TWITTER_EPOCH_MS, Ordering::SeqCst),
            now,
            back,
            &mut || match g.poll_id() {
                Poll::Ready { id } => Ok(Some(id.to_raw().into())),
                Poll::Pending { .. } => Ok(None),
            },
        );
        results.push(v);
    }
    row("ferroid AtomicSnowflakeGenerator (`poll_id`)", results);

    let mut results = Vec::new();
    for (_, back) in STEPS {
        let t = ManualTime(Arc::new(AtomicU64::new(0)));
        let g: LockSnowflakeGenerator<SnowflakeTwitterId, _> =
            LockSnowflakeGenerator::new(1, t.clone());
        let (v, _) = step_back_case(
            &|ms| t.0.store(ms - TWITTER_EPOCH_MS, Ordering::SeqCst),
            now,
            back,
            &mut || match g.try_poll_id() {
                Ok(Poll::Ready { id }) => Ok(Some(id.to_raw().into())),
                Ok(Poll::Pending { .. }) => Ok(None),
                Err(e) => Err(format!("{e:?}")),
            },
        );
        results.push(v);
    }
    row("ferroid LockSnowflakeGenerator (`try_poll_id`)", results);

    // uuid v7: the same algorithm as `now_v7`, with a ContextV7 of our own and our times.
    let mut results = Vec::new();
    for (_, back) in STEPS {
        let t = Arc::new(AtomicU64::new(0));
        let ctx = uuid::ContextV7::new();
        let (v, _) = step_back_case(&|ms| t.store(ms, Ordering::SeqCst), now, back, &mut || {
            let ms = t.load(Ordering::SeqCst);
            let ts = uuid::Timestamp::from_unix(&ctx, ms / 1000, (ms % 1000) as u32 * 1_000_000);
            Ok(Some(uuid::Uuid::new_v7(ts).as_u128()))
        });
        results.push(v);
    }
    row("uuid v7 (`ContextV7`, as `now_v7` uses)", results);

    // ulid's monotonic generator, fed the times.
    let mut results = Vec::new();
    for (_, back) in STEPS {
        let t = Arc::new(AtomicU64::new(0));
        let mut g = ulid::Generator::new();
        let (v, _) = step_back_case(&|ms| t.store(ms, Ordering::SeqCst), now, back, &mut || {
            let at = UNIX_EPOCH + Duration::from_millis(t.load(Ordering::SeqCst));
            g.generate_from_datetime(at)
                .map(|u| Some(u.0))
                .map_err(|_| "overflow".to_string())
        });
        results.push(v);
    }
    row("ulid `Generator::generate_from_datetime`", results);
}

/// Blocking calls after a step back: snowdrift's `next` must wait (a ManualClock moves
/// itself forward when waited on) for a small step, refuse a large one, and never return
/// an ID at or below the last one.
#[test]
fn snowdrift_blocking_next_after_step_back() {
    let now = wall_ms();
    let clock = ManualClock::new(now);
    let g = SnowflakeGenerator::builder(twitter())
        .node_id(1)
        .and_then(|b| b.build(clock.clone()))
        .unwrap();
    let last = (0..100).map(|_| g.next().unwrap()).max().unwrap();
    clock.step_back(2);
    let after = g.next().unwrap();
    assert!(
        after > last,
        "snowdrift issued {after} after {last} on a 2 ms step back"
    );
    assert!(
        clock.now_ms() >= now,
        "next() must have waited the clock forward"
    );

    clock.set(now - 1_000);
    match g.next() {
        Err(Error::ClockBehind { .. }) => {}
        other => panic!("a 1 s step back must be refused, got {other:?}"),
    }
    match g.next_block(1000) {
        Err(Error::ClockBehind { .. }) => {}
        other => panic!("a 1 s step back must be refused for blocks too, got {other:?}"),
    }
    clock.set(now + 1);
    assert!(g.next().unwrap() > after);
}

/// Two threads share a generator while a third moves a ManualClock back and forth.
#[test]
fn snowdrift_two_threads_with_jittering_clock() {
    let now = wall_ms();
    let clock = ManualClock::new(now);
    let g = SnowflakeGenerator::builder(twitter())
        .node_id(1)
        .and_then(|b| b.build(clock.clone()))
        .unwrap();
    let stop = AtomicBool::new(false);
    let per: Vec<Vec<u64>> = thread::scope(|s| {
        let jitter = s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // Back 3 ms, forward 4 ms, now and then back a whole second.
                if i % 50 == 49 {
                    clock.step_back(1_000);
                    thread::sleep(Duration::from_micros(200));
                    clock.advance(1_001);
                } else {
                    clock.step_back(3);
                    thread::yield_now();
                    clock.advance(4);
                }
                i += 1;
                thread::sleep(Duration::from_micros(50));
            }
        });
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut v = Vec::new();
                    while v.len() < 200_000 {
                        match g.next() {
                            Ok(id) => v.push(id),
                            Err(Error::ClockBehind { .. }) => thread::yield_now(),
                            Err(e) => panic!("unexpected error {e}"),
                        }
                    }
                    v
                })
            })
            .collect();
        let out = workers.into_iter().map(|w| w.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        jitter.join().unwrap();
        out
    });
    for v in &per {
        assert!(
            v.windows(2).all(|w| w[1] > w[0]),
            "a thread saw a non-increasing ID"
        );
    }
    let mut all: Vec<u64> = per.concat();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate IDs under a jittering clock");
}

/// When the time field runs out: snowdrift refuses (asserted); ferroid's ID types mask
/// the timestamp to its width (printed).
#[test]
fn time_field_overflow() {
    // 20 time bits of 1 ms: the field holds 2^20 ms (about 17.5 minutes) from the epoch.
    let epoch = wall_ms() - 60_000;
    let layout = Layout::from_spec("time:20,worker:1,seq:42", 1, epoch).unwrap();
    let clock = ManualClock::new(epoch + (1 << 20) - 2);
    let g = SnowflakeGenerator::builder(layout)
        .node_id(1)
        .and_then(|b| b.build(clock.clone()))
        .unwrap();
    let before = g.next().unwrap();
    clock.advance(10);
    let after = g.next();
    assert!(
        matches!(after, Err(Error::TimeExhausted { .. })),
        "snowdrift must refuse once the time field is full, got {after:?} after {before}"
    );
    println!(
        "\nsnowdrift `time:20,worker:1,seq:42` past 2^20 ms: {}",
        after.unwrap_err()
    );

    ferroid::define_snowflake_id!(
        Narrow, u64,
        reserved: 1,
        timestamp: 20,
        machine_id: 1,
        sequence: 42
    );
    let t = ManualTime(Arc::new(AtomicU64::new((1 << 20) - 2)));
    let f: AtomicSnowflakeGenerator<Narrow, _> = AtomicSnowflakeGenerator::new(1, t.clone());
    let before = f.next_id(|_| ()).to_raw();
    t.0.fetch_add(10, Ordering::SeqCst);
    match catch_unwind(AssertUnwindSafe(|| f.next_id(|_| ()).to_raw())) {
        Ok(after) => println!(
            "ferroid atomic, 20 timestamp bits, past 2^20 ms: {before} then {after} ({})",
            if after <= before {
                "WENT BACKWARDS"
            } else {
                "increasing"
            }
        ),
        Err(_) => println!(
            "ferroid atomic, 20 timestamp bits, past 2^20 ms: panics (debug build: `timestamp overflow` debug_assert)"
        ),
    }
}

/// Cached clock sanity: the ticker keeps it within a few ms of the monotonic clock.
#[test]
fn cached_clock_follows_source() {
    let (clock, ticker) = bench_peers::cached_clock();
    thread::sleep(Duration::from_millis(20));
    let cached = clock.now_ms();
    let real = MonotonicClock::new().now_ms();
    drop(ticker);
    assert!(
        real.abs_diff(cached) <= 5,
        "cached {cached} vs monotonic {real}"
    );
}

/// IDs made by the `sonyflake` crate with Sonyflake v2's defaults (v1's bits from the start
/// time 2025-01-01) decode under the `sonyflake-v2` preset: the machine ID it was given and
/// the time it made them.
#[test]
fn sonyflake_v2_ids_decode_under_the_preset() {
    let start = chrono::DateTime::from_timestamp_millis(1_735_689_600_000).unwrap();
    let machine = || Ok(4242);
    let sony = sonyflake::Sonyflake::builder()
        .start_time(start)
        .machine_id(&machine)
        .finalize()
        .unwrap();
    let layout = Layout::preset("sonyflake-v2").unwrap();
    let machine_at = layout.field_index("machine").unwrap();
    let before = wall_ms();
    let ids: Vec<u64> = (0..100).map(|_| sony.next_id().unwrap().to_u64()).collect();
    let after = wall_ms();
    for id in ids {
        let d = layout.decode(id).unwrap();
        assert_eq!(d.values[machine_at], 4242, "{id}");
        // 10 ms ticks: the tick's start is at most 10 ms before the moment.
        assert!(
            d.time_ms + 10 > before && d.time_ms <= after,
            "{id}: {} not within {before}..={after}",
            d.time_ms
        );
        let ours = sonyflake::decompose(sonyflake::Id::from(id));
        assert_eq!(ours.machine_id, 4242);
    }
}
