//! The former home of the kinds' sources, kept so code written against these paths still
//! builds: each kind now lives in its own folder under [`crate::kinds`].

pub use crate::kinds::counter::CounterSource;
pub use crate::kinds::segment::SegmentSource;
pub use crate::kinds::simple::SimpleSource;
pub use crate::kinds::snowflake::SnowflakeSource;
pub use crate::kinds::ticket::TicketSource;
pub use crate::kinds::tso::TsoSource;
pub use crate::kinds::uuid::{UuidSource, needs_input};
pub use crate::kinds::zk_version::ZkVersionSource;
pub use crate::kinds::{IdRun, IdSource, Ids, Source, takes_no_input};
