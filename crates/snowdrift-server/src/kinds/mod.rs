//! Every kind in its own folder, and the one registry that lists them.
//!
//! A kind's folder holds all of its behaviour: its `[[generator]]` keys and their checks and
//! its plan ([`KindPlan`]), how it starts, issues, decodes, describes itself and reports
//! readiness and gauges ([`IdSource`]). The [`kinds!`] line below makes [`Source`] and
//! [`SourcePlan`], enums whose every method delegates to the kind's types (enum dispatch: no
//! box, no virtual call on the hot path). Nothing outside these folders matches on a kind.
//!
//! Adding a kind: a folder with a plan type and a source type, its name in
//! `snowdrift_proto::Kind`, and one line below.

mod behaviour;
pub mod codec;
pub mod counter;
mod ids;
mod keys;
mod reach;
#[macro_use]
mod registry;
pub mod segment;
pub mod simple;
pub mod snowflake;
pub mod ticket;
pub mod tso;
pub mod uuid;
pub mod zk_version;

use std::sync::Arc;

use snowdrift_store::segment::SegmentService;

pub use behaviour::{
    Consecutive, IdSource, KindPlan, PlanError, StartContext, one_run_last, takes_no_input,
};
pub use ids::{IdRun, Ids};
pub use keys::check_keys;
pub use reach::{REACH_TIMEOUT, Reached};

kinds! {
    /// Snowflake IDs under a worker lease.
    Snowflake(snowflake::SnowflakeSource, snowflake::SnowflakePlan),
    /// A segment tag under its own name.
    Segment(segment::SegmentSource, segment::SegmentPlan),
    /// Ticket servers.
    Ticket(ticket::TicketSource, ticket::TicketPlan),
    /// A Redis counter.
    Counter(counter::CounterSource, counter::CounterPlan),
    /// UUID v1, v2, v3, v5, v6.
    Uuid(uuid::UuidSource, uuid::UuidPlan),
    /// UUID v4/v7, ULID, ObjectId.
    Simple(simple::SimpleSource, simple::SimplePlan),
    /// A timestamp oracle.
    Tso(tso::TsoSource, tso::TsoPlan),
    /// A ZooKeeper znode's data version.
    ZkVersion(zk_version::ZkVersionSource, zk_version::ZkVersionPlan),
}

impl Source {
    /// The snowflake generator this is, for Leaf's snowflake routes, which serve only
    /// that kind.
    pub fn snowflake(&self) -> Option<&snowflake::SnowflakeSource> {
        match self {
            Source::Snowflake(s) => Some(s),
            _ => None,
        }
    }

    /// The tag `tag` of `segments`, served under its own name.
    pub fn tag(segments: Arc<SegmentService>, tag: String) -> Self {
        Source::Segment(segment::SegmentSource::new(segments, tag))
    }
}
