//! Merging of concurrent calls for one ordered (`tso`) name into one fetch, as PD's client
//! does (its `tsoDispatcher` and batch controller): while a fetch for the name is in flight,
//! the calls that arrive wait together; when it returns, the next fetch asks for all of them
//! at once, and its answer is split among them, each getting a contiguous part in the order
//! they arrived.
//!
//! Why this keeps the oracle's promise (an ID handed out after another was handed out is
//! larger, on any client): every call merged into a fetch was already waiting when the
//! fetch was sent, and gets its IDs only after the answer came back, so the IDs were
//! allocated by the leader between the call's start and its end, as if it had asked alone.
//! A call never joins a fetch already sent (its IDs could have been allocated before the
//! call began), and nothing is kept for a later call.
//!
//! Bounds: a fetch asks for at most [`MAX_MERGED`] IDs; calls that would pass it wait for
//! the next fetch. A call waits for at most the fetch in flight when it arrived, then its
//! own: never longer than one extra round trip (while fewer than [`MAX_MERGED`] IDs wait).
//!
//! Gathering: the callers a fetch answers call again at once, but they wake one by one
//! (tasks behind the dispatcher in its runtime's queue, threads a futex wake away), so a
//! dispatcher that sent the next fetch at once would send it for the first of them alone,
//! and the rest would wait for the one after: two fetches per round, of 1 and of k - 1
//! IDs. So after a fetch that served k > 1 calls, the dispatcher waits for k calls to be
//! waiting again, for at most half that fetch's round trip (and at most
//! [`GATHER_MOST`]), yielding to the runtime meanwhile ([`Merge::gather`]). A call that
//! waits there waits less than half a round trip more.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::{Error, ErrorKind};

/// The most IDs one merged fetch asks for: what one `Next` call may carry by the servers'
/// default `limits.max_count`. A call for more is fetched alone (streamed).
pub(crate) const MAX_MERGED: u64 = crate::fetch::NEXT_MAX;

/// What a call gets: its IDs, or the error of the fetch it was merged into.
pub(crate) type Answer = Result<Vec<u64>, Error>;

/// The longest a dispatcher gathers callers before a fetch ([`Merge::gather`]).
pub(crate) const GATHER_MOST: Duration = Duration::from_micros(200);

/// One name's waiting calls.
#[derive(Debug, Default)]
pub(crate) struct Merge {
    state: Mutex<State>,
    /// How many calls wait (`state.waiting.len()`), read without the lock while gathering.
    calls: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    /// Calls waiting for the next fetch, in arrival order.
    waiting: Vec<Waiter>,
    /// The IDs they ask for together.
    total: u64,
    /// A dispatcher is running: a fetch is in flight, or about to be sent.
    dispatching: bool,
}

#[derive(Debug)]
struct Waiter {
    n: u64,
    reply: oneshot::Sender<Answer>,
}

/// The calls one fetch is for: taken from the queue the moment before it is sent.
#[derive(Debug)]
pub(crate) struct Group {
    waiters: Vec<Waiter>,
    total: u64,
}

/// A call's place in the queue.
pub(crate) struct Ticket {
    /// Where its IDs will come.
    pub(crate) answer: oneshot::Receiver<Answer>,
    /// No dispatcher was running: the caller must start one ([`Merge::take`] in a loop).
    pub(crate) dispatch: bool,
}

impl Merge {
    /// Queues a call for `n` IDs (1 to [`MAX_MERGED`]).
    pub(crate) fn join(&self, n: u64) -> Ticket {
        debug_assert!((1..=MAX_MERGED).contains(&n));
        let (reply, answer) = oneshot::channel();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.waiting.push(Waiter { n, reply });
        state.total += n;
        self.calls.store(state.waiting.len(), Ordering::Release);
        let dispatch = !std::mem::replace(&mut state.dispatching, true);
        Ticket { answer, dispatch }
    }

    /// The calls the next fetch is for: every waiting call, in arrival order, up to
    /// [`MAX_MERGED`] IDs (the first always, the rest wait for the next fetch). `None`
    /// when nothing waits; the dispatcher then ends, and the next call starts another.
    pub(crate) fn take(&self) -> Option<Group> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.waiting.is_empty() {
            state.dispatching = false;
            return None;
        }
        if state.total <= MAX_MERGED {
            let total = std::mem::take(&mut state.total);
            self.calls.store(0, Ordering::Release);
            return Some(Group {
                waiters: std::mem::take(&mut state.waiting),
                total,
            });
        }
        let mut total = 0;
        let fit = state
            .waiting
            .iter()
            .take_while(|w| {
                total += w.n;
                total <= MAX_MERGED
            })
            .count()
            .max(1);
        let waiters: Vec<Waiter> = state.waiting.drain(..fit).collect();
        let total = waiters.iter().map(|w| w.n).sum();
        state.total -= total;
        self.calls.store(state.waiting.len(), Ordering::Release);
        Some(Group { waiters, total })
    }

    /// Waits, yielding to the runtime, until `calls` calls wait or `within` has passed
    /// (see the module docs): called by the dispatcher between fetches, never by a caller.
    pub(crate) async fn gather(&self, calls: usize, within: Duration) {
        let until = Instant::now() + within.min(GATHER_MOST);
        // At least one yield, however late this thread ran: the callers the runtime has
        // ready run then.
        while self.calls.load(Ordering::Acquire) < calls {
            tokio::task::yield_now().await;
            if Instant::now() >= until {
                break;
            }
        }
    }
}

impl Group {
    /// How many IDs the fetch must ask for.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// How many calls it serves.
    pub(crate) fn calls(&self) -> usize {
        self.waiters.len()
    }

    /// Hands each call its contiguous part of `ids` (the fetch's answer, exactly
    /// [`total`](Self::total) IDs in the order the server issued them), or the fetch's
    /// error to every call. Returns the IDs no call took (their callers gave up waiting).
    pub(crate) fn answer(self, ids: Result<Vec<u64>, Error>) -> u64 {
        let ids = match ids {
            Ok(ids) if ids.len() as u64 == self.total => ids,
            Ok(ids) => {
                let e = Error::new(
                    ErrorKind::Unavailable,
                    format!(
                        "asked for {} IDs, the server answered {}",
                        self.total,
                        ids.len()
                    ),
                );
                for w in self.waiters {
                    let _ = w.reply.send(Err(e.clone()));
                }
                return ids.len() as u64;
            }
            Err(e) => {
                for w in self.waiters {
                    let _ = w.reply.send(Err(e.clone()));
                }
                return 0;
            }
        };
        let mut at = 0;
        let mut unclaimed = 0;
        for w in self.waiters {
            let end = at + w.n as usize;
            if w.reply.send(Ok(ids[at..end].to_vec())).is_err() {
                unclaimed += w.n;
            }
            at = end;
        }
        unclaimed
    }
}

#[cfg(test)]
mod tests;
