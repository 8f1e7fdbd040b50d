//! TypeID and KSUID, one thread: snowdrift's generators beside the Rust crates people use for
//! them, each at its fastest documented path, every ID made and written as text (what a
//! server answers and an application stores). Run with
//! `cargo bench -p snowdrift-core --bench typeid_ksuid`; BENCHMARKS.md has the numbers.
//!
//! - `typeid/new`: a new TypeID of prefix `user` with a UUID v7, as a string. snowdrift:
//!   `TypeIdGenerator::next` (monotonic within the generator). `mti`:
//!   `MagicTypeId::new(prefix, TypeIdSuffix::new::<V7>())` with the prefix checked once
//!   (the type holds its text; `Uuid::now_v7`, monotonic per process). `type-safe-id`:
//!   `TypeSafeId::<User>::new().to_string()` (a static prefix; not monotonic, random bits
//!   from `rand`'s thread RNG).
//! - `typeid/parse`: the text back to prefix and UUID.
//! - `ksuid/new`: a new KSUID as its 27 characters. snowdrift: `KsuidGenerator::next` and
//!   `to_string`. `svix-ksuid`: `Ksuid::new(None, None).to_string()`. `ksuid`:
//!   `Ksuid::generate().to_base62()`.
//! - `ksuid/parse`: the 27 characters back to the 20 bytes.

use std::hint::black_box;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::kinds::{Ksuid, KsuidGenerator, TypeId, TypeIdGenerator};

#[derive(Default)]
struct User;

impl type_safe_id::StaticType for User {
    const TYPE: &'static str = "user";
}

fn typeid(c: &mut Criterion) {
    let mut group = c.benchmark_group("typeid/new");
    let ours = TypeIdGenerator::new("user", MonotonicClock::new()).expect("a good prefix");
    group.bench_function("snowdrift", |b| {
        b.iter(|| black_box(ours.next().expect("in range")))
    });
    let prefix = mti::prelude::TypeIdPrefix::try_from("user").expect("a good prefix");
    group.bench_function("mti", |b| {
        b.iter(|| {
            black_box(mti::prelude::MagicTypeId::new(
                prefix.clone(),
                mti::prelude::TypeIdSuffix::new::<mti::prelude::V7>(),
            ))
        })
    });
    group.bench_function("type-safe-id", |b| {
        b.iter(|| black_box(type_safe_id::TypeSafeId::<User>::new().to_string()))
    });
    group.finish();

    let text = ours.next().expect("in range");
    let mut group = c.benchmark_group("typeid/parse");
    group.bench_function("snowdrift", |b| {
        b.iter(|| black_box(TypeId::from_str(black_box(&text)).expect("valid")))
    });
    group.bench_function("mti", |b| {
        b.iter(|| black_box(mti::prelude::MagicTypeId::from_str(black_box(&text)).expect("valid")))
    });
    group.bench_function("type-safe-id", |b| {
        b.iter(|| {
            black_box(type_safe_id::TypeSafeId::<User>::from_str(black_box(&text)).expect("valid"))
        })
    });
    group.finish();
}

fn ksuid(c: &mut Criterion) {
    let mut group = c.benchmark_group("ksuid/new");
    let ours = KsuidGenerator::new(MonotonicClock::new());
    group.bench_function("snowdrift", |b| {
        b.iter(|| black_box(ours.next().expect("in range").to_string()))
    });
    group.bench_function("svix-ksuid", |b| {
        use svix_ksuid::KsuidLike;
        b.iter(|| black_box(svix_ksuid::Ksuid::new(None::<SystemTime>, None).to_string()))
    });
    group.bench_function("ksuid", |b| {
        b.iter(|| black_box(ksuid::Ksuid::generate().to_base62()))
    });
    group.finish();

    let text = ours.next().expect("in range").to_string();
    let mut group = c.benchmark_group("ksuid/parse");
    group.bench_function("snowdrift", |b| {
        b.iter(|| black_box(Ksuid::from_str(black_box(&text)).expect("valid")))
    });
    group.bench_function("svix-ksuid", |b| {
        b.iter(|| black_box(svix_ksuid::Ksuid::from_str(black_box(&text)).expect("valid")))
    });
    group.bench_function("ksuid", |b| {
        b.iter(|| black_box(ksuid::Ksuid::from_base62(black_box(&text)).expect("valid")))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = typeid, ksuid
}
criterion_main!(benches);
