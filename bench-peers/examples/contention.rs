//! One generator shared by several threads, timed with a plain loop that cannot hide
//! contention: snowdrift beside ferroid's `AtomicSnowflakeGenerator`, in the same run.
//!
//! ```text
//! cargo run --release -p bench-peers --example contention -- [--calls N] [--rounds R]
//!     [--threads 1,2,4] [--tick-us US] [--only NAME,...] [--no-pin] [--unpinned] [--check]
//! ```
//!
//! Each measurement starts `threads` threads on one fresh generator, releases them together
//! with a barrier, and has each call it `N` times (default 2,000,000), writing every ID into
//! a buffer touched beforehand. The time is from the first thread's start to the last
//! thread's end, divided by all the IDs: ns per ID, aggregate. Afterwards every thread's IDs
//! must be strictly increasing and all of them distinct, or the program stops with an
//! error, so a fast but wrong generator cannot report a number.
//!
//! Rounds alternate the generators (in a rotating order), so each round compares them under
//! the same load of a shared machine. The table shows, per generator and thread count, the
//! median and min–max of the rounds, the ratio of medians to ferroid, and the median and
//! min–max of the per-round ratios (each against ferroid in the same round), and the median
//! share of IDs interleaved with another thread's: near 0% with several threads means they
//! hardly ran at the same time, and the round measured no contention.
//!
//! With several threads, thread `i` is pinned to CPU `i % CPUs` (`--no-pin` leaves them to
//! the scheduler, which on a busy machine often runs both on one CPU in turn). 4 threads
//! oversubscribe a 2-CPU machine on purpose.
//!
//! `--unpinned` is the shape of a user's program (issue 30): threads not pinned, 1 and 2
//! threads (unless `--threads` says otherwise), and every measurement in a fresh process of
//! its own, so the only ticker running beside the two threads is the measured generator's:
//! ferroid's clock starts a process-wide 1 ms ticker thread that never stops, and in one
//! process it would wake up through every snowdrift measurement after the first ferroid
//! one, beside snowdrift's own ticker. (`--child NAME`, with one thread count, is how it
//! starts them: one measurement, printed as `ns-per-ID interleaved-share`.)
//!
//! Rows: ferroid's atomic generator (the reference); the floor, a bare `AtomicU64` load and
//! compare-and-swap of the next value (what any generator that takes one CAS per ID pays at
//! least); snowdrift's `next()` with `CachedClock`, the same in Twitter's shape
//! (`time:31,worker:10,seq:22`: node bits between time and sequence, so the stored state is
//! not a plain counter), the same behind a `Fence` that never refuses, with `MonotonicClock` (a
//! vDSO read per call), and `next_block(1000)` with `CachedClock`, every ID of each block
//! written out. Two more rows time `next()` with `CachedClock` at Sonyflake's 10 ms unit,
//! whose readings are turned into ticks without a division (issue 30): `time:41,seq:22`
//! at 10 ms (only the unit differs), and Sonyflake's shape, `time:39,seq:22,machine:2`
//! (the node field below the sequence; its sequence widened from 8 bits so the loop never
//! waits for the clock). A second table gives their ratio to the 1 ms row.
//!
//! The layout is `time:41,seq:22` (ferroid: 1 reserved bit, 41 timestamp, 0 machine, 22
//! sequence): 4M IDs per ms, so nobody waits for the clock and the code is what is timed.
//! snowdrift's `CachedClock` is driven by a ticker thread every `--tick-us` µs (default
//! 1000, like ferroid's own 1 ms ticker).
//!
//! `--only` takes names or parts of names: an entry that is a whole name selects that
//! generator alone (`--only "ferroid atomic,snowdrift CachedClock"`), any other entry every
//! generator whose name contains it.
//!
//! `--check` runs 20,000 calls per thread, one round: a quick correctness pass (well
//! under a second) whose timings mean little. Nothing asserts on time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use bench_peers::{Ticker, recent_epoch_ms, wall_ms};
use ferroid::generator::AtomicSnowflakeGenerator;
use ferroid::time::MonotonicClock as FerroidClock;
use snowdrift_core::clock::{CachedClock, MonotonicClock};
use snowdrift_core::generator::{Fence, SnowflakeGenerator};
use snowdrift_core::layout::Layout;

ferroid::define_snowflake_id!(
    /// ferroid's copy of `time:41,seq:22`.
    FerroidId, u64,
    reserved: 1,
    timestamp: 41,
    machine_id: 0,
    sequence: 22
);

const SPEC: &str = "time:41,seq:22";
/// Sonyflake's field order (the node field below the sequence), its sequence widened so the
/// loop never waits for the clock.
const SONYFLAKE_SHAPE: &str = "time:39,seq:22,machine:2";

/// Twitter's field order (node bits between time and sequence), its sequence widened and its
/// time narrowed (24 days from a recent epoch) so the loop never waits for the clock.
const TWITTER_SHAPE: &str = "time:31,worker:10,seq:22";

/// Who is timed. The first is the reference for the ratios.
const CONTENDERS: [&str; 9] = [
    "ferroid atomic",
    "bare load + CAS (the floor)",
    "snowdrift CachedClock",
    "snowdrift CachedClock, Twitter shape",
    "snowdrift CachedClock + fence",
    "snowdrift MonotonicClock",
    "snowdrift next_block(1000)",
    "snowdrift CachedClock, 10 ms unit",
    "snowdrift CachedClock, Sonyflake shape 10 ms",
];

/// The 1 ms row the 10 ms rows are compared with.
const UNIT_REFERENCE: &str = "snowdrift CachedClock";

struct Options {
    pin: bool,
    /// Each measurement in a child process of its own (`--unpinned`).
    isolate: bool,
    /// Set in a child process: measure this generator once and print the result.
    child: Option<String>,
    calls: usize,
    rounds: usize,
    threads: Vec<usize>,
    tick: Duration,
    only: Option<Vec<String>>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        pin: true,
        isolate: false,
        child: None,
        calls: 2_000_000,
        rounds: 5,
        threads: vec![1, 2, 4],
        tick: Duration::from_millis(1),
        only: None,
    };
    let mut threads_given = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{a} {v}: {e}"));
        match a.as_str() {
            "--calls" => o.calls = number(value()?)?,
            "--rounds" => o.rounds = number(value()?)?,
            "--tick-us" => o.tick = Duration::from_micros(number(value()?)? as u64),
            "--threads" => {
                threads_given = true;
                o.threads = value()?
                    .split(',')
                    .map(|t| {
                        t.parse::<usize>()
                            .map_err(|e| format!("--threads {t}: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--only" => o.only = Some(value()?.split(',').map(str::to_string).collect()),
            "--no-pin" => o.pin = false,
            "--unpinned" => {
                o.pin = false;
                o.isolate = true;
            }
            "--child" => o.child = Some(value()?),
            "--check" => {
                o.calls = 20_000;
                o.rounds = 1;
            }
            _ => return Err(format!("unknown argument {a} (see the source's header)")),
        }
    }
    if o.isolate && !threads_given {
        o.threads = vec![1, 2];
    }
    if o.calls == 0 || o.rounds == 0 || o.threads.contains(&0) || o.tick.is_zero() {
        return Err("--calls, --rounds, --threads and --tick-us must be at least 1".into());
    }
    Ok(o)
}

/// Pins the calling thread to one CPU. Left to itself, the scheduler of a busy 2-CPU
/// machine often runs both threads on one CPU in turn, and the run then measures no
/// contention at all.
fn pin_to(cpu: usize) {
    // SAFETY: `set` is a plain bit set on the stack, passed with its own size, and only
    // the calling thread (pid 0) is changed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Runs `fill` on `threads` threads released together, each filling its own buffer; returns
/// the wall time from the first start to the last end. With several threads and `pin`,
/// thread `i` runs on CPU `i % CPUs`.
fn timed(bufs: &mut [Vec<u64>], pin: bool, fill: &(impl Fn(&mut [u64]) + Sync)) -> Duration {
    let threads = bufs.len();
    let barrier = Barrier::new(threads);
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let spans: Vec<(Instant, Instant)> = thread::scope(|s| {
        let workers: Vec<_> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, buf)| {
                let barrier = &barrier;
                s.spawn(move || {
                    // One thread is left to the scheduler: pinned, it cannot leave a CPU
                    // that another process is using.
                    if pin && threads > 1 {
                        pin_to(i % cpus);
                    }
                    barrier.wait();
                    let start = Instant::now();
                    fill(buf);
                    (start, Instant::now())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a contention thread panicked"))
            .collect()
    });
    let start = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("one thread at least");
    let end = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("one thread at least");
    end.duration_since(start)
}

/// Every thread's IDs strictly increasing, and no ID twice across threads (a k-way merge of
/// the sorted per-thread lists). Returns the share of IDs after which the same thread's
/// next ID is not the next one (`step` above): another thread took IDs in between (or, once a
/// millisecond, the tick changed). Near 0 with several threads means they hardly ran at
/// the same time, and the run measured no contention.
fn check(name: &str, bufs: &[Vec<u64>], step: u64) -> Result<f64, String> {
    for (t, ids) in bufs.iter().enumerate() {
        if let Some(i) = ids.windows(2).position(|w| w[0] >= w[1]) {
            return Err(format!(
                "{name}: thread {t} got {} then {} (call {i})",
                ids[i],
                ids[i + 1]
            ));
        }
    }
    let gaps: usize = bufs
        .iter()
        .map(|ids| ids.windows(2).filter(|w| w[1] != w[0] + step).count())
        .sum();
    let interleaved = gaps as f64 / bufs.iter().map(Vec::len).sum::<usize>() as f64;
    let mut heads = vec![0usize; bufs.len()];
    let mut last: Option<u64> = None;
    loop {
        let next = (0..bufs.len())
            .filter(|&t| heads[t] < bufs[t].len())
            .min_by_key(|&t| bufs[t][heads[t]]);
        let Some(t) = next else {
            return Ok(interleaved);
        };
        let id = bufs[t][heads[t]];
        if last == Some(id) {
            return Err(format!("{name}: ID {id} issued twice"));
        }
        last = Some(id);
        heads[t] += 1;
    }
}

/// One measurement of `name` with as many threads as `bufs`: ns per ID, and the share of
/// IDs interleaved with another thread's (see [`check`]).
fn measure(
    name: &str,
    bufs: &mut [Vec<u64>],
    tick: Duration,
    pin: bool,
) -> Result<(f64, f64), String> {
    let epoch_ms = recent_epoch_ms();
    let (spec, unit_ms) = match name {
        "snowdrift CachedClock, Twitter shape" => (TWITTER_SHAPE, 1),
        "snowdrift CachedClock, 10 ms unit" => (SPEC, 10),
        "snowdrift CachedClock, Sonyflake shape 10 ms" => (SONYFLAKE_SHAPE, 10),
        _ => (SPEC, 1),
    };
    let layout = || Layout::from_spec(spec, unit_ms, epoch_ms).map_err(|e| e.to_string());
    let elapsed = match name {
        "ferroid atomic" => {
            let clock = FerroidClock::<1>::with_epoch(Duration::from_millis(epoch_ms));
            let g: AtomicSnowflakeGenerator<FerroidId, _> = AtomicSnowflakeGenerator::new(0, clock);
            timed(bufs, pin, &|buf: &mut [u64]| {
                for slot in buf {
                    *slot = g.next_id(|_| std::hint::spin_loop()).to_raw();
                }
            })
        }
        "bare load + CAS (the floor)" => {
            // What any generator that takes one compare-and-swap per ID pays at least: no
            // clock, no fields, the counter's next value.
            let counter = AtomicU64::new(0);
            timed(bufs, pin, &|buf: &mut [u64]| {
                for slot in buf {
                    let mut cur = counter.load(Ordering::Acquire);
                    *slot = loop {
                        match counter.compare_exchange_weak(
                            cur,
                            cur + 1,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => break cur + 1,
                            Err(now) => {
                                std::hint::spin_loop();
                                cur = now;
                            }
                        }
                    };
                }
            })
        }
        "snowdrift CachedClock"
        | "snowdrift CachedClock, Twitter shape"
        | "snowdrift CachedClock + fence"
        | "snowdrift next_block(1000)"
        | "snowdrift CachedClock, 10 ms unit"
        | "snowdrift CachedClock, Sonyflake shape 10 ms" => {
            let (clock, driver) = CachedClock::new(MonotonicClock::new());
            let _ticker = Ticker::start(tick, move || {
                driver.tick();
            });
            let mut builder = SnowflakeGenerator::builder(layout()?);
            if spec == TWITTER_SHAPE {
                builder = builder.node_id(0x2A5).map_err(|e| e.to_string())?;
            }
            if name.ends_with("fence") {
                // A lease and a durable window an hour ahead: checked on every call, never
                // refusing.
                let fence = Arc::new(Fence::new());
                fence.extend_window(wall_ms() + 3_600_000);
                fence.open_until(wall_ms() + 3_600_000);
                builder = builder.fence(fence);
            }
            let g = builder.build(clock).map_err(|e| e.to_string())?;
            if name != "snowdrift next_block(1000)" {
                timed(bufs, pin, &|buf: &mut [u64]| {
                    for slot in buf {
                        *slot = g.next().expect("snowdrift next");
                    }
                })
            } else {
                timed(bufs, pin, &|buf: &mut [u64]| {
                    let mut at = 0;
                    while at < buf.len() {
                        let want = (buf.len() - at).min(1000) as u64;
                        for id in g.next_block(want).expect("snowdrift next_block") {
                            buf[at] = id;
                            at += 1;
                        }
                    }
                })
            }
        }
        "snowdrift MonotonicClock" => {
            let g = SnowflakeGenerator::builder(layout()?)
                .build(MonotonicClock::new())
                .map_err(|e| e.to_string())?;
            timed(bufs, pin, &|buf: &mut [u64]| {
                for slot in buf {
                    *slot = g.next().expect("snowdrift next");
                }
            })
        }
        _ => return Err(format!("unknown generator {name:?}")),
    };
    // Consecutive IDs of one tick are `step` apart: Sonyflake's shape has 2 node bits below
    // the sequence.
    let step = if spec == SONYFLAKE_SHAPE { 4 } else { 1 };
    let interleaved = check(name, bufs, step)?;
    let ids = bufs.iter().map(Vec::len).sum::<usize>();
    Ok((elapsed.as_nanos() as f64 / ids as f64, interleaved))
}

/// An `--only` entry selects the generator it names exactly, or else every generator whose
/// name contains it.
fn selects(entry: &str, name: &str) -> bool {
    if CONTENDERS.contains(&entry) {
        entry == name
    } else {
        name.contains(entry)
    }
}

/// [`measure`] in a fresh process (`--unpinned`): the child prints `ns mixed`.
fn measure_isolated(name: &str, threads: usize, o: &Options) -> Result<(f64, f64), String> {
    let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
    let out = std::process::Command::new(exe)
        .args(["--child", name, "--threads", &threads.to_string()])
        .args(["--calls", &o.calls.to_string()])
        .args(["--tick-us", &o.tick.as_micros().to_string()])
        .output()
        .map_err(|e| format!("{name}: starting a child process: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{name}: child process {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut parts = text.split_whitespace().map(str::parse::<f64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(ns)), Some(Ok(mixed))) => Ok((ns, mixed)),
        _ => Err(format!("{name}: child process printed {text:?}")),
    }
}

/// `--child NAME`: one measurement, printed for the parent.
fn child(name: &str, o: &Options) -> Result<(), String> {
    let [threads] = o.threads[..] else {
        return Err("--child takes one thread count".into());
    };
    let mut bufs: Vec<Vec<u64>> = (0..threads).map(|_| vec![1u64; o.calls]).collect();
    let (ns, mixed) = measure(name, &mut bufs, o.tick, o.pin)?;
    println!("{ns} {mixed}");
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("contention: {e}");
            std::process::exit(2);
        }
    };
    if let Some(name) = &o.child {
        if let Err(e) = child(name, &o) {
            eprintln!("contention: INCORRECT: {e}");
            std::process::exit(1);
        }
        return;
    }
    let names: Vec<&str> = CONTENDERS
        .iter()
        .copied()
        .filter(|n| {
            o.only
                .as_ref()
                .is_none_or(|only| only.iter().any(|x| selects(x, n)))
        })
        .collect();
    println!(
        "contention: {} calls per thread, {} rounds, threads {:?}{}, CachedClock ticker every {:?}, layout {SPEC}",
        o.calls,
        o.rounds,
        o.threads,
        if o.pin {
            " (2 or more pinned to CPUs in turn)"
        } else if o.isolate {
            " (not pinned, a process per measurement)"
        } else {
            " (not pinned)"
        },
        o.tick
    );
    // (threads, name) -> ns per ID, one per round
    let mut results: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    let mut interleaving: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for round in 0..o.rounds {
        for &threads in &o.threads {
            // Buffers written once beforehand, so no page fault lands in a timed loop.
            let mut bufs: Vec<Vec<u64>> = if o.isolate {
                Vec::new()
            } else {
                (0..threads).map(|_| vec![1u64; o.calls]).collect()
            };
            let mut line = format!("round {} threads {threads}:", round + 1);
            for k in 0..names.len() {
                let i = (k + round) % names.len();
                let result = if o.isolate {
                    measure_isolated(names[i], threads, &o)
                } else {
                    measure(names[i], &mut bufs, o.tick, o.pin)
                };
                match result {
                    Ok((ns, mixed)) => {
                        line += &format!(" {} {ns:.2} ({:.0}%)", names[i], mixed * 100.0);
                        results.entry((threads, i)).or_default().push(ns);
                        interleaving.entry((threads, i)).or_default().push(mixed);
                    }
                    Err(e) => {
                        eprintln!("contention: INCORRECT: {e}");
                        std::process::exit(1);
                    }
                }
            }
            println!("{line}");
        }
    }
    let reference = names.iter().position(|n| *n == CONTENDERS[0]);
    println!();
    println!(
        "| threads | generator | ns per ID, median | min–max | ratio to ferroid (medians) | per-round ratios, median (min–max) | interleaved IDs, median |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &threads in &o.threads {
        let base = reference.map(|r| results[&(threads, r)].clone());
        for (i, name) in names.iter().enumerate() {
            let runs = &results[&(threads, i)];
            let (lo, hi) = range(runs);
            let med = median(&mut runs.clone());
            let (ratio, ratios) = match &base {
                Some(b) => {
                    let mut per_round: Vec<f64> = runs.iter().zip(b).map(|(x, y)| x / y).collect();
                    let (rlo, rhi) = range(&per_round);
                    (
                        format!("{:.2}×", med / median(&mut b.clone())),
                        format!("{:.2}× ({rlo:.2}–{rhi:.2}×)", median(&mut per_round)),
                    )
                }
                None => ("–".into(), "–".into()),
            };
            let mixed = median(&mut interleaving[&(threads, i)].clone()) * 100.0;
            println!(
                "| {threads} | {name} | {med:.2} | {lo:.2}–{hi:.2} | {ratio} | {ratios} | {mixed:.1}% |"
            );
        }
    }
    if let Some(one_ms) = names.iter().position(|n| *n == UNIT_REFERENCE) {
        let ten_ms: Vec<usize> = (0..names.len())
            .filter(|&i| names[i].contains("10 ms"))
            .collect();
        if !ten_ms.is_empty() {
            println!("\nThe 10 ms rows against the 1 ms row ({UNIT_REFERENCE}), same rounds:\n");
            println!(
                "| threads | generator | ratio of medians | per-round ratios, median | min–max |"
            );
            println!("|---|---|---|---|---|");
            for &threads in &o.threads {
                let base = &results[&(threads, one_ms)];
                for &i in &ten_ms {
                    let runs = &results[&(threads, i)];
                    let mut per_round: Vec<f64> =
                        runs.iter().zip(base).map(|(x, y)| x / y).collect();
                    let (rlo, rhi) = range(&per_round);
                    println!(
                        "| {threads} | {} | {:.3}× | {:.3}× | {rlo:.2}–{rhi:.2}× |",
                        names[i],
                        median(&mut runs.clone()) / median(&mut base.clone()),
                        median(&mut per_round),
                    );
                }
            }
        }
    }
    println!("\nall IDs checked: strictly increasing per thread, no duplicates");
}
