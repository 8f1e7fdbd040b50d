//! A connection the fast path (`crate::fast`) hands to hyper: what wraps it between the two.
//! [`Rewind`] puts the bytes the fast path already read back in front of the connection, so
//! hyper reads the request the fast path did not take from its first byte; [`ErrorBodies`]
//! gives hyper's own empty-bodied refusals of a head (400, 431, 414) the contract's error
//! body, as the fast path gives its own.

mod automatic;
mod rewind;

pub(crate) use automatic::ErrorBodies;
pub(crate) use rewind::Rewind;
