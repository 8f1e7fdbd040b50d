//! Shared pieces of the peer benchmarks (`benches/peers.rs`, `benches/segment.rs`) and the
//! correctness checks (`tests/peers_correctness.rs`): the wide "nobody waits" layouts, a
//! ticker thread for snowdrift's [`CachedClock`], the thread/burst timing loops, and a
//! segment chain kept warm by a refiller thread.
//!
//! Nothing here is published; see `BENCHMARKS.md` at the workspace root for the results.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowdrift_core::clock::{CachedClock, MonotonicClock};
use snowdrift_core::layout::Layout;
use snowdrift_core::segment::{ChainConfig, ChainStatus, IdRange, SegmentChain, Take};

/// The hot-path layout for snowdrift: 30 time bits (12 days of ms from an epoch set when
/// the bench starts), 1 worker bit, 32 sequence bits. Four billion IDs per millisecond: no
/// generator can exhaust a tick, so nobody ever waits and the bench measures the code.
pub const WIDE_SPEC: &str = "time:30,worker:1,seq:32";

ferroid::define_snowflake_id!(
    /// ferroid's copy of [`WIDE_SPEC`]: 1 reserved bit, 30 timestamp, 1 machine, 32 sequence.
    ///
    /// ferroid's own benches use 0 timestamp bits and 63 sequence bits; with a zero-width
    /// timestamp every rollover packs the same ID, so this bench keeps a real time field.
    FerroidWideId, u64,
    reserved: 1,
    timestamp: 30,
    machine_id: 1,
    sequence: 32
);

/// Wall-clock milliseconds since 1970 (read through `SystemTime`).
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// An epoch one second before now, for the wide layouts (their time fields are short).
pub fn recent_epoch_ms() -> u64 {
    wall_ms() - 1_000
}

/// snowdrift's wide hot-path layout with an epoch one second ago.
pub fn wide_layout() -> Layout {
    Layout::from_spec(WIDE_SPEC, 1, recent_epoch_ms()).expect("the wide layout is valid")
}

/// A thread that calls `tick` every `period` until the `Ticker` is dropped. It stands for
/// the ticker a server would run above snowdrift-core to feed a [`CachedClock`].
#[derive(Debug)]
pub struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts calling `tick` every `period` (a sleep, so in practice a little longer).
    pub fn start(period: Duration, tick: impl Fn() + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                tick();
                thread::sleep(period);
            }
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// How often the bench's ticker refreshes a [`CachedClock`].
pub const TICK_PERIOD: Duration = Duration::from_micros(100);

/// A [`CachedClock`] over a [`MonotonicClock`], with a [`Ticker`] driving it every
/// [`TICK_PERIOD`]. Keep the ticker alive as long as the clock is used.
pub fn cached_clock() -> (CachedClock, Ticker) {
    let (clock, driver) = CachedClock::new(MonotonicClock::new());
    let ticker = Ticker::start(TICK_PERIOD, move || {
        driver.tick();
    });
    (clock, ticker)
}

/// Runs `f` `iters` times on each of `threads` threads (released together by a barrier)
/// and returns the wall time from the first thread's start to the last thread's end. With one
/// thread it runs on the calling thread, with no spawn.
pub fn run_threads<R>(threads: usize, iters: u64, f: &(impl Fn() -> R + Sync)) -> Duration {
    if threads <= 1 {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(f());
        }
        return start.elapsed();
    }
    let barrier = Barrier::new(threads);
    thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(f());
                    }
                    (start, Instant::now())
                })
            })
            .collect();
        let spans: Vec<_> = workers
            .into_iter()
            .map(|w| w.join().expect("bench thread panicked"))
            .collect();
        let start = spans
            .iter()
            .map(|s| s.0)
            .min()
            .expect("at least one thread");
        let end = spans
            .iter()
            .map(|s| s.1)
            .max()
            .expect("at least one thread");
        end.duration_since(start)
    })
}

/// Times `f` only in bursts that cannot exhaust a tick: each thread waits for `tick()` to
/// change, then calls `f` at most `chunk` times, and only those calls are timed. For
/// fixed layouts (12 sequence bits, Sonyflake's 8) whose generators would otherwise spend
/// most of the time waiting for the clock. Returns the largest per-thread total.
///
/// With `threads` threads sharing one generator, pass a `chunk` of at most
/// `per_tick / threads` minus a margin, so a tick never holds more than `per_tick` IDs.
pub fn run_bursts<R>(
    threads: usize,
    iters: u64,
    chunk: u64,
    tick: &(impl Fn() -> u64 + Sync),
    f: &(impl Fn() -> R + Sync),
) -> Duration {
    let one = || {
        let mut left = iters;
        let mut busy = Duration::ZERO;
        while left > 0 {
            let t0 = tick();
            while tick() == t0 {
                std::hint::spin_loop();
            }
            let n = left.min(chunk);
            let start = Instant::now();
            for _ in 0..n {
                black_box(f());
            }
            busy += start.elapsed();
            left -= n;
        }
        busy
    };
    if threads <= 1 {
        return one();
    }
    thread::scope(|s| {
        let workers: Vec<_> = (0..threads).map(|_| s.spawn(one)).collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("bench thread panicked"))
            .max()
            .unwrap_or_default()
    })
}

/// A [`SegmentChain`] kept full by a refiller thread, for timing takes from a warm chain.
///
/// The refiller pushes consecutive segments of `segment_len` IDs whenever the chain wants
/// some, then parks; a take that crosses a prefetch point (or finds the chain empty)
/// unparks it, as the store's refill task is woken. Nothing is claimed from a database,
/// so what is timed is the chain alone.
#[derive(Debug)]
pub struct WarmChain {
    chain: Arc<SegmentChain>,
    stop: Arc<AtomicBool>,
    refiller: Option<JoinHandle<()>>,
}

impl WarmChain {
    /// A chain with the default [`ChainConfig`] except that it keeps at least 4 segments
    /// ahead, filled before this returns. At ~100 M IDs/s a segment of 1,000,000 lasts
    /// 10 ms, and on a busy 2-vCPU VM the refiller thread is not always scheduled that
    /// soon; 4 ahead keeps the takers from starving on the scheduler instead of the chain.
    pub fn start(segment_len: u64) -> Self {
        let config = ChainConfig {
            min_ahead: 4,
            ..ChainConfig::default()
        };
        let chain = Arc::new(SegmentChain::new(config).expect("valid chain config"));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (chain.clone(), stop.clone());
        let refiller = thread::spawn(move || {
            let mut next = 1u64;
            while !s.load(Ordering::Acquire) {
                while c.wanted() > 0 {
                    c.push(IdRange::new(next, next + segment_len))
                        .expect("the chain has room for what it wants");
                    next += segment_len;
                }
                thread::park();
            }
        });
        let warm = Self {
            chain,
            stop,
            refiller: Some(refiller),
        };
        while warm.chain.status().segments_ahead == 0 && warm.chain.status().current_len == 0 {
            thread::yield_now();
        }
        warm
    }

    fn wake(&self) {
        if let Some(r) = &self.refiller {
            r.thread().unpark();
        }
    }

    /// One ID: `take(1)`, waking the refiller when asked to; spins on an empty chain
    /// (counted in the chain's `starved`).
    #[inline]
    pub fn next_id(&self) -> u64 {
        loop {
            match self.chain.take(1) {
                Take::Ready { ids, refill } => {
                    if refill {
                        self.wake();
                    }
                    return ids.start;
                }
                Take::Empty => {
                    self.wake();
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// Up to `n` IDs from one segment, as [`next_id`](Self::next_id) does for one.
    #[inline]
    pub fn next_ids(&self, n: u64) -> IdRange {
        loop {
            match self.chain.take(n) {
                Take::Ready { ids, refill } => {
                    if refill {
                        self.wake();
                    }
                    return ids;
                }
                Take::Empty => {
                    self.wake();
                    std::hint::spin_loop();
                }
            }
        }
    }

    /// The chain's counters (segments pushed, callers starved).
    pub fn status(&self) -> ChainStatus {
        self.chain.status()
    }
}

impl Drop for WarmChain {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(r) = self.refiller.take() {
            r.thread().unpark();
            let _ = r.join();
        }
    }
}
