//! Atomics and locks, switched to loom's under `--cfg loom` so the model checker sees every
//! access of the lock-free code.

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
