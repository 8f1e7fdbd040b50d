//! snowdrift's generator beside its peers, in one criterion run.
//!
//! Groups (see BENCHMARKS.md for the results and how to read them):
//!
//! - `hot_path/{1,2}t`: ns per call on a layout wide enough that nobody waits. With 2
//!   threads both call the same generator; the time is per call on each thread, so the
//!   aggregate rate is 2 / time (criterion's `thrpt` line shows it). For contention use
//!   `examples/contention.rs` instead: ns per ID over all threads, pinned threads, the
//!   interleaving shown, ferroid in the same rounds (BENCHMARKS.md §1b says why).
//! - `hot_path_burst/{1,2}t`: peers whose layout is fixed at 12 sequence bits (snowflaked,
//!   rs-snowflake), plus snowdrift and ferroid at the Twitter layout as a cross-check.
//!   Only bursts that start right after a millisecond boundary and stay under 4096 IDs are
//!   timed, so again nobody waits.
//! - `hot_path_burst_sonyflake/1t`: the same for Sonyflake (bursts of 200 per 10 ms tick).
//! - `next_block_1000`: snowdrift's `next_block(1000)`, every ID of the block consumed.
//! - `sustained_twitter`: one generator, the real clock, a Twitter-like layout; the
//!   `thrpt` line is IDs/s against the 4,096,000/s cap (Sonyflake: 25,600/s).
//! - `clock_read`: the cost of one read of each clock used above.
//! - `codec/*`: encode and decode of one ID per format.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use bench_peers::{
    FerroidWideId, cached_clock, recent_epoch_ms, run_bursts, run_threads, wall_ms, wide_layout,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferroid::generator::{AtomicSnowflakeGenerator, LockSnowflakeGenerator};
use ferroid::id::SnowflakeTwitterId;
use ferroid::time::{MonotonicClock as FerroidClock, TWITTER_EPOCH, TimeSource};
use idgenerator::{IdGeneratorOptions, IdInstance};
use snowdrift_core::clock::{Clock, MonotonicClock};
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::Layout;

const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;

/// ferroid's process-wide 1 ms ticker clock.
type FClock = FerroidClock<1>;

fn spin(_: u64) {
    std::hint::spin_loop();
}

fn idgenerator_init(worker_bits: u8, seq_bits: u8) {
    IdInstance::init(
        IdGeneratorOptions::new()
            .worker_id(1)
            .worker_id_bit_len(worker_bits)
            .seq_bit_len(seq_bits),
    )
    .expect("idgenerator options are valid");
}

fn hot_path(c: &mut Criterion) {
    let ferroid_epoch = Duration::from_millis(recent_epoch_ms());
    for threads in [1usize, 2] {
        let mut g = c.benchmark_group(format!("hot_path/{threads}t"));
        g.throughput(Throughput::Elements(threads as u64));

        let gen_mono = SnowflakeGenerator::builder(wide_layout())
            .node_id(1)
            .and_then(|b| b.build(MonotonicClock::new()))
            .expect("snowdrift wide generator");
        g.bench_function("snowdrift/monotonic", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| gen_mono.next().unwrap()))
        });

        let (clock, ticker) = cached_clock();
        let gen_cached = SnowflakeGenerator::builder(wide_layout())
            .node_id(1)
            .and_then(|b| b.build(clock))
            .expect("snowdrift wide generator");
        g.bench_function("snowdrift/cached", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| gen_cached.next().unwrap()))
        });
        drop(ticker);

        let atomic: AtomicSnowflakeGenerator<FerroidWideId, _> =
            AtomicSnowflakeGenerator::new(1, FClock::with_epoch(ferroid_epoch));
        g.bench_function("ferroid/atomic", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| atomic.next_id(spin)))
        });

        let lock: LockSnowflakeGenerator<FerroidWideId, _> =
            LockSnowflakeGenerator::new(1, FClock::with_epoch(ferroid_epoch));
        g.bench_function("ferroid/lock", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &|| lock.try_next_id(spin).unwrap()))
        });

        // Yitter's drift algorithm: 1 worker bit + 21 sequence bits (its widest), 2M/ms.
        // (Configured on first use: its setup sleeps 1 s, wasted when a filter skips it.)
        let mut configured = false;
        g.bench_function("idgenerator/IdInstance", |b| {
            if !std::mem::replace(&mut configured, true) {
                idgenerator_init(1, 21);
            }
            b.iter_custom(|iters| run_threads(threads, iters, &IdInstance::next_id))
        });

        g.bench_function("uuid/now_v7", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &uuid::Uuid::now_v7))
        });

        let ulid_gen = Mutex::new(ulid::Generator::new());
        g.bench_function("ulid/Generator(Mutex)", |b| {
            b.iter_custom(|iters| {
                run_threads(threads, iters, &|| {
                    ulid_gen.lock().unwrap().generate().unwrap()
                })
            })
        });

        g.bench_function("bson/ObjectId::new", |b| {
            b.iter_custom(|iters| run_threads(threads, iters, &bson::oid::ObjectId::new))
        });
        g.finish();
    }
}

fn hot_path_burst(c: &mut Criterion) {
    for threads in [1usize, 2] {
        let chunk = 4000 / threads as u64;
        let mut g = c.benchmark_group(format!("hot_path_burst/{threads}t"));
        g.throughput(Throughput::Elements(threads as u64))
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_millis(800))
            .sample_size(20);

        let clock = MonotonicClock::new();
        let generator = SnowflakeGenerator::builder(Layout::preset("twitter").unwrap())
            .node_id(1)
            .and_then(|b| b.build(clock))
            .expect("snowdrift twitter generator");
        g.bench_function("snowdrift/monotonic(twitter)", |b| {
            b.iter_custom(|iters| {
                run_bursts(threads, iters, chunk, &|| clock.now_ms(), &|| {
                    generator.next().unwrap()
                })
            })
        });

        let fclock = FClock::with_epoch(TWITTER_EPOCH);
        let atomic: AtomicSnowflakeGenerator<SnowflakeTwitterId, _> =
            AtomicSnowflakeGenerator::new(1, fclock.clone());
        g.bench_function("ferroid/atomic(twitter)", |b| {
            b.iter_custom(|iters| {
                run_bursts(
                    threads,
                    iters,
                    chunk,
                    &|| TimeSource::<u64>::current_millis(&fclock),
                    &|| atomic.next_id(spin),
                )
            })
        });

        let sf = snowflaked::sync::Generator::new(1);
        g.bench_function("snowflaked/sync", |b| {
            b.iter_custom(|iters| {
                run_bursts(threads, iters, chunk, &wall_ms, &|| sf.generate::<u64>())
            })
        });

        let rs = Mutex::new(rs_snowflake::SnowflakeIdGenerator::new(1, 1));
        g.bench_function("rs-snowflake/real_time(Mutex)", |b| {
            b.iter_custom(|iters| {
                run_bursts(threads, iters, chunk, &wall_ms, &|| {
                    rs.lock().unwrap().real_time_generate()
                })
            })
        });
        g.finish();
    }

    let mut g = c.benchmark_group("hot_path_burst_sonyflake/1t");
    g.throughput(Throughput::Elements(1))
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(200))
        .sample_size(10);
    let machine = || Ok(1);
    let sony = sonyflake::Sonyflake::builder()
        .machine_id(&machine)
        .finalize()
        .expect("sonyflake");
    g.bench_function("sonyflake", |b| {
        b.iter_custom(|iters| {
            run_bursts(1, iters, 200, &|| wall_ms() / 10, &|| {
                sony.next_id().unwrap()
            })
        })
    });
    g.finish();
}

fn next_block(c: &mut Criterion) {
    let mut g = c.benchmark_group("next_block_1000");
    g.throughput(Throughput::Elements(1000));
    let consume = |block: snowdrift_core::generator::IdBlock| {
        for id in block {
            black_box(id);
        }
    };
    let gen_mono = SnowflakeGenerator::builder(wide_layout())
        .node_id(1)
        .and_then(|b| b.build(MonotonicClock::new()))
        .expect("snowdrift wide generator");
    g.bench_function("snowdrift/monotonic", |b| {
        b.iter(|| consume(gen_mono.next_block(1000).unwrap()))
    });
    let (clock, ticker) = cached_clock();
    let gen_cached = SnowflakeGenerator::builder(wide_layout())
        .node_id(1)
        .and_then(|b| b.build(clock))
        .expect("snowdrift wide generator");
    g.bench_function("snowdrift/cached", |b| {
        b.iter(|| consume(gen_cached.next_block(1000).unwrap()))
    });
    drop(ticker);
    // The same blocks consumed through `IdBlock::runs()`: within a tick, consecutive IDs
    // differ by a constant stride, so one add per ID instead of a repack.
    g.bench_function("snowdrift/monotonic, consumed via runs()", |b| {
        b.iter(|| {
            let block = gen_mono.next_block(1000).unwrap();
            for (first, len, stride) in block.runs() {
                let mut id = first;
                for _ in 0..len {
                    black_box(id);
                    id += stride;
                }
            }
        })
    });
    // The floor: black_box on 1000 counter values, no generator at all.
    g.bench_function("floor: 1000 black_box(u64)", |b| {
        b.iter(|| {
            for id in 0..1000u64 {
                black_box(id);
            }
        })
    });
    g.finish();
}

/// Runs `f` `iters` times on this thread; `f` may wait for the clock.
fn seq<R>(iters: u64, f: impl Fn() -> R + Sync) -> Duration {
    run_threads(1, iters, &f)
}

fn sustained(c: &mut Criterion) {
    let mut g = c.benchmark_group("sustained_twitter");
    g.throughput(Throughput::Elements(1));
    let twitter = || Layout::preset("twitter").unwrap();

    let gen_mono = SnowflakeGenerator::builder(twitter())
        .node_id(1)
        .and_then(|b| b.build(MonotonicClock::new()))
        .expect("snowdrift twitter generator");
    g.bench_function("snowdrift/monotonic next", |b| {
        b.iter_custom(|iters| seq(iters, || gen_mono.next().unwrap()))
    });
    g.bench_function("snowdrift/monotonic next_block(1000)", |b| {
        b.iter_custom(|iters| {
            let start = std::time::Instant::now();
            let mut left = iters;
            while left > 0 {
                let block = gen_mono.next_block(left.min(1000)).unwrap();
                left -= block.len();
                for id in block {
                    black_box(id);
                }
            }
            start.elapsed()
        })
    });

    let (clock, ticker) = cached_clock();
    let gen_cached = SnowflakeGenerator::builder(twitter())
        .node_id(1)
        .and_then(|b| b.build(clock))
        .expect("snowdrift twitter generator");
    g.bench_function("snowdrift/cached next", |b| {
        b.iter_custom(|iters| seq(iters, || gen_cached.next().unwrap()))
    });
    drop(ticker);

    let atomic: AtomicSnowflakeGenerator<SnowflakeTwitterId, _> =
        AtomicSnowflakeGenerator::new(1, FClock::with_epoch(TWITTER_EPOCH));
    g.bench_function("ferroid/atomic", |b| {
        b.iter_custom(|iters| seq(iters, || atomic.next_id(spin)))
    });
    let lock: LockSnowflakeGenerator<SnowflakeTwitterId, _> =
        LockSnowflakeGenerator::new(1, FClock::with_epoch(TWITTER_EPOCH));
    g.bench_function("ferroid/lock", |b| {
        b.iter_custom(|iters| seq(iters, || lock.try_next_id(spin).unwrap()))
    });

    let sf: snowflaked::sync::Generator = snowflaked::sync::Generator::builder()
        .instance(1)
        .epoch(std::time::UNIX_EPOCH + Duration::from_millis(TWITTER_EPOCH_MS))
        .build();
    g.bench_function("snowflaked/sync", |b| {
        b.iter_custom(|iters| seq(iters, || sf.generate::<u64>()))
    });

    let rs = Mutex::new(rs_snowflake::SnowflakeIdGenerator::with_epoch(
        1,
        1,
        std::time::UNIX_EPOCH + Duration::from_millis(TWITTER_EPOCH_MS),
    ));
    g.bench_function("rs-snowflake/real_time(Mutex)", |b| {
        b.iter_custom(|iters| seq(iters, || rs.lock().unwrap().real_time_generate()))
    });

    // Twitter-like: 10 worker bits, 12 sequence bits (sequence values 5..=4095 usable).
    let mut configured = false;
    g.bench_function("idgenerator/IdInstance", |b| {
        if !std::mem::replace(&mut configured, true) {
            idgenerator_init(10, 12);
        }
        b.iter_custom(|iters| seq(iters, IdInstance::next_id))
    });

    // Sonyflake's own layout: 256 IDs per 10 ms tick, a cap of 25,600 IDs/s.
    let machine = || Ok(1);
    let sony = sonyflake::Sonyflake::builder()
        .machine_id(&machine)
        .finalize()
        .expect("sonyflake");
    g.bench_function("sonyflake(own layout, cap 25600/s)", |b| {
        b.iter_custom(|iters| seq(iters, || sony.next_id().unwrap()))
    });
    g.finish();
}

/// What one clock read costs: most of the difference between the hot paths above.
fn clock_read(c: &mut Criterion) {
    use snowdrift_core::clock::SystemClock;
    let mut g = c.benchmark_group("clock_read");
    g.throughput(Throughput::Elements(1));
    let mono = MonotonicClock::new();
    g.bench_function("snowdrift/MonotonicClock", |b| b.iter(|| mono.now_ms()));
    g.bench_function("snowdrift/SystemClock", |b| b.iter(|| SystemClock.now_ms()));
    let (cached, ticker) = cached_clock();
    g.bench_function("snowdrift/CachedClock", |b| b.iter(|| cached.now_ms()));
    drop(ticker);
    let fclock = FClock::with_epoch(TWITTER_EPOCH);
    g.bench_function("ferroid/MonotonicClock", |b| {
        b.iter(|| TimeSource::<u64>::current_millis(&fclock))
    });
    g.finish();
}

/// A Twitter-layout ID issued now, so every codec sees a realistic 61-bit value.
fn sample_id() -> u64 {
    SnowflakeGenerator::builder(Layout::preset("twitter").unwrap())
        .node_id(0b10_1011)
        .and_then(|b| b.build(MonotonicClock::new()))
        .and_then(|g| g.next())
        .expect("a sample ID")
}

fn codecs(c: &mut Criterion) {
    use ferroid::base32::Base32SnowExt;
    use snowdrift_core::codec::{Format, base62, crockford32};
    use snowdrift_core::obfuscate::Obfuscator;

    let id = sample_id();
    let twitter = Layout::preset("twitter").unwrap();
    let sd_sqids = snowdrift_core::codec::sqids::Sqids::new();
    let raw_sqids = sqids::Sqids::default();
    let harsh = harsh::Harsh::default();
    let obf = Obfuscator::new(*b"bench-peers-key!", 63).expect("obfuscator");
    let fid = SnowflakeTwitterId::from_raw(id);

    let mut g = c.benchmark_group("codec/encode");
    g.throughput(Throughput::Elements(1));
    g.bench_function("snowdrift/base62::encode_to", |b| {
        let mut buf = [0u8; base62::MAX_LEN];
        b.iter(|| black_box(base62::encode_to(black_box(id), &mut buf).len()))
    });
    g.bench_function("snowdrift/crockford32::encode_to", |b| {
        let mut buf = [0u8; crockford32::MAX_LEN];
        b.iter(|| black_box(crockford32::encode_to(black_box(id), &mut buf).len()))
    });
    for format in Format::ALL {
        let codec = format.codec(&twitter);
        g.bench_function(format!("snowdrift/Format::{format:?} (String)"), |b| {
            b.iter(|| codec.encode(black_box(id)).unwrap())
        });
    }
    g.bench_function("snowdrift/sqids::Sqids::encode", |b| {
        b.iter(|| sd_sqids.encode(black_box(id)).unwrap())
    });
    g.bench_function("snowdrift/Obfuscator::encode (63 bits)", |b| {
        b.iter(|| obf.encode(black_box(id)).unwrap())
    });
    g.bench_function("ferroid/base32 encode_to_buf", |b| {
        let mut buf = SnowflakeTwitterId::base32_array();
        b.iter(|| {
            let f = black_box(fid).encode_to_buf(&mut buf);
            black_box(f.as_str().len())
        })
    });
    g.bench_function("sqids crate/encode", |b| {
        b.iter(|| raw_sqids.encode(&[black_box(id)]).unwrap())
    });
    g.bench_function("harsh/encode", |b| {
        b.iter(|| harsh.encode(&[black_box(id)]))
    });
    g.finish();

    let mut g = c.benchmark_group("codec/decode");
    g.throughput(Throughput::Elements(1));
    let b62 = base62::encode(id);
    g.bench_function("snowdrift/base62::decode", |b| {
        b.iter(|| base62::decode(black_box(&b62)).unwrap())
    });
    let c32 = crockford32::encode(id);
    g.bench_function("snowdrift/crockford32::decode", |b| {
        b.iter(|| crockford32::decode(black_box(&c32)).unwrap())
    });
    for format in Format::ALL {
        let codec = format.codec(&twitter);
        let text = codec.encode(id).unwrap();
        g.bench_function(format!("snowdrift/Format::{format:?}"), |b| {
            b.iter(|| codec.decode(black_box(&text)).unwrap())
        });
    }
    let sq = sd_sqids.encode(id).unwrap();
    g.bench_function("snowdrift/sqids::Sqids::decode", |b| {
        b.iter(|| sd_sqids.decode(black_box(&sq)).unwrap())
    });
    let hidden = obf.encode(id).unwrap();
    g.bench_function("snowdrift/Obfuscator::decode (63 bits)", |b| {
        b.iter(|| obf.decode(black_box(hidden)).unwrap())
    });
    let f32 = fid.encode().as_string();
    g.bench_function("ferroid/base32 decode", |b| {
        b.iter(|| SnowflakeTwitterId::decode(black_box(&f32)).unwrap())
    });
    let raw = raw_sqids.encode(&[id]).unwrap();
    g.bench_function("sqids crate/decode", |b| {
        b.iter(|| raw_sqids.decode(black_box(&raw)))
    });
    let hs = harsh.encode(&[id]);
    g.bench_function("harsh/decode", |b| {
        b.iter(|| harsh.decode(black_box(&hs)).unwrap())
    });
    g.finish();
}

criterion_group!(
    generators,
    hot_path,
    hot_path_burst,
    next_block,
    sustained,
    clock_read
);
criterion_group!(codec, codecs);
criterion_main!(generators, codec);
