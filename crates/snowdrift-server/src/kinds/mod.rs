//! Every kind in its own folder, and the one registry that lists them.
//!
//! A kind's folder holds all of its behaviour: its `[[generator]]` keys and their checks and
//! its plan ([`KindPlan`]), how it starts, issues, decodes, describes itself and reports
//! readiness and gauges ([`IdSource`]). The [`kinds!`] line below makes [`Source`] and
//! [`SourcePlan`], enums whose every method delegates to the kind's types (enum dispatch: no
//! box, no virtual call on the hot path). Nothing outside these folders matches on a kind.
//!
//! Adding a kind: a folder with a plan type and a source type, its name in
//! `snowdrift_proto::Kind`, and one line below (its folder, its variant, its source and plan types).

mod behaviour;
pub mod codec;
pub mod collision;
mod ids;
mod keys;
mod reach;
#[macro_use]
mod registry;

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
    snowflake: Snowflake(SnowflakeSource, SnowflakePlan),
    /// A segment tag under its own name.
    segment: Segment(SegmentSource, SegmentPlan),
    /// Ticket servers.
    ticket: Ticket(TicketSource, TicketPlan),
    /// A Redis counter.
    counter: Counter(CounterSource, CounterPlan),
    /// UUID v1, v2, v3, v5, v6.
    uuid: Uuid(UuidSource, UuidPlan),
    /// UUID v4/v7, ULID, ObjectId.
    simple: Simple(SimpleSource, SimplePlan),
    /// A timestamp oracle.
    tso: Tso(TsoSource, TsoPlan),
    /// A ZooKeeper znode's data version.
    zk_version: ZkVersion(ZkVersionSource, ZkVersionPlan),
    /// TypeIDs of one prefix.
    typeid: Typeid(TypeidSource, TypeidPlan),
    /// KSUIDs.
    ksuid: Ksuid(KsuidSource, KsuidPlan),
    /// rs/xid's IDs.
    xid: Xid(XidSource, XidPlan),
    /// Nano IDs.
    nanoid: Nanoid(NanoidSource, NanoidPlan),
    /// cuid2s.
    cuid2: Cuid2(Cuid2Source, Cuid2Plan),
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

    /// The segment tag this serves, for Leaf's segment route, which serves only tags.
    pub fn segment(&self) -> Option<&segment::SegmentSource> {
        match self {
            Source::Segment(s) => Some(s),
            _ => None,
        }
    }

    /// The tag `tag` of `segments`, served under its own name.
    pub fn tag(segments: Arc<SegmentService>, tag: String) -> Self {
        Source::Segment(segment::SegmentSource::new(segments, tag))
    }
}
