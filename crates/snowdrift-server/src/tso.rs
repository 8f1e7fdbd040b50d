//! The timestamp oracle's server side, now in the `tso` kind's folder
//! ([`crate::kinds::tso::oracle`]); kept at this path for code written against it.

pub use crate::kinds::tso::oracle::*;
