//! Steps the wall clock back under every generator, including the peers whose clock cannot
//! be injected (they read `SystemTime` or chrono's `Utc::now` themselves), by running the
//! whole process under libfaketime and rewriting its offset file while the generators run.
//!
//! ```text
//! apt-get install faketime
//! cargo build --release -p bench-peers --example clock_step_faketime
//! echo +0 > /tmp/snowdrift-faketime
//! LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
//!   FAKETIME_TIMESTAMP_FILE=/tmp/snowdrift-faketime FAKETIME_NO_CACHE=1 DONT_FAKE_MONOTONIC=1 \
//!   target/release/examples/clock_step_faketime /tmp/snowdrift-faketime
//! ```
//!
//! `DONT_FAKE_MONOTONIC=1` leaves `Instant` alone, as an NTP step would. Every clock read
//! re-reads the offset file (`FAKETIME_NO_CACHE=1`), so generators run far below their
//! normal rate here; this is a correctness check, not a benchmark.
//!
//! For each generator and each step (2 ms, 1 s): issue IDs for `step + 20 ms` at the real
//! time, step the wall clock back, issue IDs for 20 ms more (each call timed, panics
//! caught), and compare.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use idgenerator::{CoreIdGenerator, IdGeneratorOptions};
use snowdrift_core::clock::{MonotonicClock, SystemClock};
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::Layout;

type Next = Box<dyn FnMut() -> Result<u128, String>>;
type Maker = Box<dyn Fn() -> Next>;

fn set_offset(file: &str, spec: &str) {
    std::fs::write(file, format!("{spec}\n")).expect("write the faketime offset file");
}

fn now_ms() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i128)
}

/// Runs one case and describes what the generator did after the step.
fn case(file: &str, step: Duration, next: &mut Next) -> String {
    set_offset(file, "+0");
    let mut before = Vec::new();
    let start = Instant::now();
    while start.elapsed() < step + Duration::from_millis(20) {
        match next() {
            Ok(id) => before.push(id),
            Err(e) => return format!("error before the step: {e}"),
        }
    }
    let last = *before.last().expect("IDs before the step");
    set_offset(file, &format!("-{}", step.as_secs_f64()));
    let mut after = Vec::new();
    let (mut panicked, mut refused, mut slowest) = (false, 0usize, Duration::ZERO);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(20) && after.len() < 20_000 {
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(&mut *next));
        slowest = slowest.max(t.elapsed());
        match r {
            Err(_) => {
                panicked = true;
                break;
            }
            Ok(Ok(id)) => after.push(id),
            Ok(Err(_)) => refused += 1,
        }
    }
    set_offset(file, "+0");
    let mut prev = last;
    let mut backwards = 0;
    for &id in &after {
        if id <= prev {
            backwards += 1;
        }
        prev = id;
    }
    let mut all: Vec<u128> = before.iter().chain(&after).copied().collect();
    all.sort_unstable();
    let duplicates = all.windows(2).filter(|w| w[0] == w[1]).count();
    let mut v = Vec::new();
    if duplicates > 0 {
        v.push(format!("**{duplicates} DUPLICATES**"));
    }
    if backwards > 0 {
        v.push(format!("**{backwards} WENT BACKWARDS**"));
    }
    if panicked {
        v.push("**PANICS**".to_string());
    }
    if refused > 0 {
        v.push(format!("refuses ({refused} errors)"));
    }
    if v.is_empty() {
        v.push("increasing, unique".to_string());
    }
    // The longest call shows waiting; on a busy machine anything up to a few ms can also
    // be the scheduler.
    format!(
        "{}; {} IDs in 20 ms after the step, longest call {:.1} ms",
        v.join(", "),
        after.len(),
        slowest.as_secs_f64() * 1e3
    )
}

fn main() {
    let file = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/snowdrift-faketime".into());
    set_offset(&file, "+0");
    let t0 = now_ms();
    set_offset(&file, "-10");
    let t1 = now_ms();
    set_offset(&file, "+0");
    if !(9_000..11_000).contains(&(t0 - t1)) {
        eprintln!(
            "the wall clock did not move with {file}: run this under libfaketime (see the doc comment)"
        );
        std::process::exit(2);
    }

    let twitter = || Layout::preset("twitter").unwrap();
    let twitter_epoch = UNIX_EPOCH + Duration::from_millis(1_288_834_974_657);
    let makers: Vec<(&str, Maker)> = vec![
        (
            "snowdrift, `SystemClock` (sees the step)",
            Box::new(move || {
                let g = SnowflakeGenerator::builder(twitter())
                    .build(SystemClock)
                    .unwrap();
                Box::new(move || g.next().map(u128::from).map_err(|e| e.to_string()))
            }),
        ),
        (
            "snowdrift, `MonotonicClock`",
            Box::new(move || {
                let g = SnowflakeGenerator::builder(twitter())
                    .build(MonotonicClock::new())
                    .unwrap();
                Box::new(move || g.next().map(u128::from).map_err(|e| e.to_string()))
            }),
        ),
        (
            "ferroid `AtomicSnowflakeGenerator`, its `MonotonicClock`",
            Box::new(|| {
                use ferroid::generator::AtomicSnowflakeGenerator;
                use ferroid::id::SnowflakeTwitterId;
                use ferroid::time::{MonotonicClock as FerroidClock, TWITTER_EPOCH};
                let g: AtomicSnowflakeGenerator<SnowflakeTwitterId, _> =
                    AtomicSnowflakeGenerator::new(1, FerroidClock::<1>::with_epoch(TWITTER_EPOCH));
                Box::new(move || Ok(u128::from(g.next_id(|_| std::hint::spin_loop()).to_raw())))
            }),
        ),
        (
            "snowflaked `sync::Generator`",
            Box::new(|| {
                let g = snowflaked::sync::Generator::new(1);
                Box::new(move || Ok(u128::from(g.generate::<u64>())))
            }),
        ),
        (
            "rs-snowflake `real_time_generate`",
            Box::new(move || {
                let mut g = rs_snowflake::SnowflakeIdGenerator::with_epoch(1, 1, twitter_epoch);
                Box::new(move || Ok(g.real_time_generate().cast_unsigned().into()))
            }),
        ),
        (
            "idgenerator (drift, 10 + 12 bits)",
            Box::new(|| {
                let mut g = CoreIdGenerator::default();
                g.init(
                    IdGeneratorOptions::new()
                        .worker_id(1)
                        .worker_id_bit_len(10)
                        .seq_bit_len(12),
                )
                .unwrap();
                Box::new(move || Ok(g.next_id().cast_unsigned().into()))
            }),
        ),
        (
            "sonyflake",
            Box::new(|| {
                let machine = || Ok(1);
                let g = sonyflake::Sonyflake::builder()
                    .machine_id(&machine)
                    .finalize()
                    .unwrap();
                Box::new(move || {
                    g.next_id()
                        .map(|id| u128::from(id.to_u64()))
                        .map_err(|e| e.to_string())
                })
            }),
        ),
        (
            "uuid `now_v7`",
            Box::new(|| Box::new(|| Ok(uuid::Uuid::now_v7().as_u128()))),
        ),
        (
            "ulid `Generator::generate`",
            Box::new(|| {
                let g = Mutex::new(ulid::Generator::new());
                Box::new(move || {
                    g.lock()
                        .unwrap()
                        .generate()
                        .map(|u| u.0)
                        .map_err(|e| format!("{e:?}"))
                })
            }),
        ),
        (
            "bson `ObjectId::new`",
            Box::new(|| {
                Box::new(|| {
                    let mut b = [0u8; 16];
                    b[4..].copy_from_slice(&bson::oid::ObjectId::new().bytes());
                    Ok(u128::from_be_bytes(b))
                })
            }),
        ),
    ];

    // Panics are caught and reported; keep their messages out of the table.
    std::panic::set_hook(Box::new(|info| eprintln!("(caught panic: {info})")));
    println!("| generator (wall clock stepped by libfaketime) | step back 2 ms | step back 1 s |");
    println!("|---|---|---|");
    for (name, make) in &makers {
        let small = case(&file, Duration::from_millis(2), &mut make());
        let large = case(&file, Duration::from_secs(1), &mut make());
        println!("| {name} | {small} | {large} |");
    }
}
