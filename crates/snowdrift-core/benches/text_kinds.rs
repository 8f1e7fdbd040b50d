//! xid, Nano ID and cuid2 beside the best Rust crate for each, one thread, ns per ID as the
//! text a caller gets (a `String`), and for xid also the 12-byte value.
//!
//! ```text
//! cargo bench -p snowdrift-core --bench text_kinds -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! snowdrift's generators run as the server runs them: the clock read per ID
//! (`MonotonicClock`), the randomness from the OS CSPRNG through a per-thread pool.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::kinds::cuid2::Cuid2Generator;
use snowdrift_core::kinds::nanoid::Nanoid;
use snowdrift_core::kinds::os_random;
use snowdrift_core::kinds::xid::XidGenerator;

const ALPHABET_36: &str = "0123456789abcdefghijklmnopqrstuvwxyz";

fn xid(c: &mut Criterion) {
    let mut g = c.benchmark_group("xid/1t");
    let ours = XidGenerator::for_this_process(MonotonicClock::new(), None).unwrap();
    g.bench_function("snowdrift/next (value)", |b| {
        b.iter(|| black_box(ours.next().unwrap()))
    });
    g.bench_function("snowdrift/next (String)", |b| {
        b.iter(|| black_box(ours.next().unwrap().to_string()))
    });
    g.bench_function("xid crate/new (value)", |b| {
        b.iter(|| black_box(xid::new()))
    });
    g.bench_function("xid crate/new (String)", |b| {
        b.iter(|| black_box(xid::new().to_string()))
    });
    g.finish();
}

fn nanoid(c: &mut Criterion) {
    let mut g = c.benchmark_group("nanoid/1t");
    let default = Nanoid::default_shape();
    g.bench_function("snowdrift/default (21 of A-Za-z0-9_-)", |b| {
        b.iter(|| black_box(default.generate(&mut os_random::fill).unwrap()))
    });
    g.bench_function("nanoid crate/nanoid!() (21 of A-Za-z0-9_-)", |b| {
        b.iter(|| black_box(nanoid::nanoid!()))
    });
    let ours = Nanoid::new(ALPHABET_36, 21).unwrap();
    let chars: Vec<char> = ALPHABET_36.chars().collect();
    g.bench_function("snowdrift/21 of 0-9a-z", |b| {
        b.iter(|| black_box(ours.generate(&mut os_random::fill).unwrap()))
    });
    g.bench_function("nanoid crate/nanoid!(21, 0-9a-z)", |b| {
        b.iter(|| black_box(nanoid::nanoid!(21, &chars)))
    });
    g.finish();
}

fn cuid2(c: &mut Criterion) {
    let mut g = c.benchmark_group("cuid2/1t");
    let ours = Cuid2Generator::for_this_process(MonotonicClock::new(), 24).unwrap();
    g.bench_function("snowdrift/next (24)", |b| {
        b.iter(|| black_box(ours.next_with(&mut os_random::u32).unwrap()))
    });
    g.bench_function("cuid2 crate/create_id (24)", |b| {
        b.iter(|| black_box(cuid2::create_id()))
    });
    g.finish();
}

criterion_group!(text_kinds, xid, nanoid, cuid2);
criterion_main!(text_kinds);
