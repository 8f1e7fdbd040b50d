//! `uuid4`, `uuid7`, `ulid` and `objectid`: kinds whose IDs are unique by construction
//! (time plus randomness), with nothing to connect.

mod decode;
mod plan;
mod source;

pub use plan::SimplePlan;
pub use source::SimpleSource;
