//! A name's cached text IDs (UUID, ULID, ObjectId, templated counters): a queue of fetched
//! strings behind a mutex. Text kinds cost a string per ID anyway, so a lock-free take
//! would not pay here.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

#[derive(Debug, Default)]
struct Queue {
    ids: VecDeque<String>,
    /// Size of the newest batch: the prefetch point is a share of it.
    newest: usize,
    taken: u64,
    pushed: u64,
}

/// One name's text IDs.
#[derive(Debug)]
pub(crate) struct Texts {
    queue: Mutex<Queue>,
    /// Prefetch once no more than this share of the newest batch is left.
    left_share: f64,
}

impl Texts {
    pub(crate) fn new(prefetch_at: f64) -> Self {
        Self {
            queue: Mutex::default(),
            left_share: 1.0 - prefetch_at,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A queue and counters, whole after every step.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Up to `n` IDs into `out`, and whether the cache is low enough to fetch the next batch.
    pub(crate) fn take(&self, n: usize, out: &mut Vec<String>) -> bool {
        let mut q = self.lock();
        let k = n.min(q.ids.len());
        out.extend(q.ids.drain(..k));
        q.taken += k as u64;
        k > 0 && q.ids.len() as f64 <= q.newest as f64 * self.left_share
    }

    pub(crate) fn push(&self, ids: Vec<String>) {
        let mut q = self.lock();
        q.newest = ids.len();
        q.pushed += ids.len() as u64;
        q.ids.extend(ids);
    }

    pub(crate) fn cached(&self) -> u64 {
        self.lock().ids.len() as u64
    }

    pub(crate) fn taken(&self) -> u64 {
        self.lock().taken
    }
}
