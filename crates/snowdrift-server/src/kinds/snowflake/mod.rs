//! `snowflake`: 64-bit time-ordered IDs under any bit layout, issued only under this node's
//! worker-ID lease.

mod decode;
pub mod lease;
mod plan;
mod source;
mod status;

pub use decode::{fields, unreversed};
pub use plan::{SnowflakeOptions, SnowflakePlan};
pub use source::SnowflakeSource;
