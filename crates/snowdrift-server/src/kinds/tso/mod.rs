//! `tso`: a timestamp oracle (TiKV PD's TSO), strictly increasing across every node, from
//! one leader elected on etcd; followers forward to it.

pub mod oracle;
mod plan;
mod source;
mod status;

pub use plan::{DEFAULT_TSO_TTL, TSO_NAMESPACE, TsoPlan};
pub use source::TsoSource;
