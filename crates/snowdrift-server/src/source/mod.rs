//! Where a generator's IDs come from: one type per kind behind one [`IdSource`] interface, so
//! the HTTP handlers serve every kind the same way.

mod counter;
mod segment;
mod simple;
mod snowflake;
mod ticket;
mod tso;
mod uuid;
mod zk_version;

use std::future::Future;

pub use counter::CounterSource;
pub use segment::SegmentSource;
pub use simple::SimpleSource;
pub use snowflake::SnowflakeSource;
pub use ticket::TicketSource;
pub use tso::TsoSource;
pub use uuid::{UuidSource, needs_input, takes_no_input};
pub use zk_version::ZkVersionSource;

use crate::config::Kind;
use crate::error::Error;

/// IDs `first, first + stride, ...` (`count` of them): how 64-bit IDs travel, so a batch of a
/// million consecutive IDs is a few words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRun {
    /// The first ID.
    pub first: u64,
    /// How many IDs (at least 1).
    pub count: u64,
    /// The difference between neighbours (1 unless striped or interleaved).
    pub stride: u64,
}

impl IdRun {
    /// The IDs in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + use<> {
        let IdRun {
            first,
            count,
            stride,
        } = *self;
        (0..count).map(move |k| first + k * stride)
    }
}

/// A batch of IDs from one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ids {
    /// 64-bit integer IDs as runs (snowflake, segment, ticket, plain counters, tso).
    Runs(Vec<IdRun>),
    /// IDs whose standard form is text (UUID, ULID, ObjectId, templated counters).
    Text(Vec<String>),
}

impl Ids {
    /// How many IDs.
    pub fn len(&self) -> u64 {
        match self {
            Ids::Runs(runs) => runs.iter().map(|r| r.count).sum(),
            Ids::Text(t) => t.len() as u64,
        }
    }

    /// True when there are none (never for a successful request).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs made of single values, merging neighbours one apart.
    pub fn from_values(values: impl IntoIterator<Item = u64>) -> Self {
        let mut runs: Vec<IdRun> = Vec::new();
        for v in values {
            match runs.last_mut() {
                Some(r) if r.stride == 1 && r.first + r.count == v => r.count += 1,
                _ => runs.push(IdRun {
                    first: v,
                    count: 1,
                    stride: 1,
                }),
            }
        }
        Ids::Runs(runs)
    }
}

/// Something that hands out IDs: every kind implements it.
pub trait IdSource: Send + Sync {
    /// The kind of IDs.
    fn kind(&self) -> Kind;

    /// `count` IDs (1 to the server's limit), all new.
    fn next(&self, count: u64) -> impl Future<Output = Result<Ids, Error>> + Send;
}

/// One configured generator: a source of any kind.
#[derive(Debug)]
pub enum Source {
    /// Snowflake IDs.
    Snowflake(SnowflakeSource),
    /// A segment tag under its own name.
    Segment(SegmentSource),
    /// Ticket servers.
    Ticket(TicketSource),
    /// A Redis counter.
    Counter(CounterSource),
    /// UUID v1, v2, v3, v5, v6.
    Uuid(UuidSource),
    /// UUID v4/v7, ULID, ObjectId.
    Simple(SimpleSource),
    /// A timestamp oracle.
    Tso(TsoSource),
    /// A ZooKeeper znode's data version.
    ZkVersion(ZkVersionSource),
}

impl IdSource for Source {
    fn kind(&self) -> Kind {
        match self {
            Source::Snowflake(s) => s.kind(),
            Source::Segment(s) => s.kind(),
            Source::Ticket(s) => s.kind(),
            Source::Counter(s) => s.kind(),
            Source::Uuid(s) => s.kind(),
            Source::Simple(s) => s.kind(),
            Source::Tso(s) => s.kind(),
            Source::ZkVersion(s) => s.kind(),
        }
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        match self {
            Source::Snowflake(s) => s.next(count).await,
            Source::Segment(s) => s.next(count).await,
            Source::Ticket(s) => s.next(count).await,
            Source::Counter(s) => s.next(count).await,
            Source::Uuid(s) => s.next(count).await,
            Source::Simple(s) => s.next(count).await,
            Source::Tso(s) => s.next(count).await,
            Source::ZkVersion(s) => s.next(count).await,
        }
    }
}
