//! `zk-version`: a ZooKeeper znode's data version after an unconditional `setData`, one
//! quorum write per ID.

mod plan;
mod source;

pub use plan::ZkVersionPlan;
pub use source::ZkVersionSource;
