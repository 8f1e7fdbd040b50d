//! Counter mode: Redis `INCRBY` counters, including ones that reset each day, month or year.
//!
//! A [`RedisCounter`] fetches values a batch at a time (one `INCRBY key batch` serves
//! `batch` IDs) and, given a [`CounterTemplate`](snowdrift_core::counter::CounterTemplate)
//! such as `ORD{date:%Y%m%d}{seq:08}`, keeps one key per period and renders order numbers
//! that start again from 1 each day. A counter that would pass its template's width (or
//! `i64::MAX`) fails with [`Error::CounterOverflow`](crate::Error::CounterOverflow) rather
//! than wrap.

mod batch;
mod redis;

pub use self::redis::{
    CounterBlock, CounterStats, DEFAULT_BATCH, DEFAULT_MAX_PER_CALL, DEFAULT_PREFIX, MAX_BATCH,
    MAX_NAME_LEN, MAX_PREFIX_LEN, RedisCounter, RedisCounterBuilder,
};
