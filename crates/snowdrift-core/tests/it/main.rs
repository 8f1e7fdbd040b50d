//! The crate's integration tests, one module per area, in one binary: each test binary
//! links the whole dependency tree, and linking was much of CI's time.

mod ksuid_reference;
mod segment_local;
mod typeid_spec;
