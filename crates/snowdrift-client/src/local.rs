//! Per-thread blocks of a name's 64-bit IDs, so that threads sharing one client do not all
//! hit the cache's one shared word on every `next()`: each thread takes a block of up to
//! 64 IDs with one compare-and-swap and serves it from memory no other thread touches
//! (snowdrift-core's [`LocalSegment`], as the server's worker threads do).
//!
//! The price: IDs a thread holds when it ends, or when its entry is pushed out by other
//! names, are skipped (never served by anyone), and IDs of different threads interleave.
//! An entry keeps its name's cache in memory until the thread lets go of it: at its next
//! call after the client is dropped, or when newer names push it out ([`MOST`] per thread).
//! Snowflake names are not served this way: their IDs must be checked for age on every
//! take, which the shared cache does.

use std::cell::RefCell;
use std::sync::Arc;

use snowdrift_core::segment::{LocalSegment, LocalTake, Take};

use crate::cache::NameCache;

/// Names (of all clients) a thread keeps blocks for; the oldest is dropped beyond this.
const MOST: usize = 8;

struct Held {
    client: u64,
    name: Box<str>,
    cache: Arc<NameCache>,
    block: LocalSegment,
}

thread_local! {
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// The next ID of `name` from this thread's block, refilled from `cache` when used up;
/// `None` when the cache is empty too, or for a name whose IDs expire. `prefetch` runs
/// when the block taken crossed the cache's prefetch point.
#[inline]
pub(crate) fn next(
    client: u64,
    name: &str,
    lookup: impl FnOnce() -> Option<Arc<NameCache>>,
    prefetch: impl FnOnce(&Arc<NameCache>),
) -> Option<u64> {
    HELD.with(|held| {
        // Re-entered from a recorder or a drop on this thread: use the shared path.
        let mut held = held.try_borrow_mut().ok()?;
        let at = match held
            .iter()
            .position(|h| h.client == client && &*h.name == name)
        {
            Some(at) => at,
            None => {
                let cache = lookup()?;
                if cache.runs.expires() {
                    return None;
                }
                if held.len() >= MOST {
                    held.remove(0);
                }
                held.push(Held {
                    client,
                    name: name.into(),
                    cache,
                    block: LocalSegment::default(),
                });
                held.len() - 1
            }
        };
        let h = &mut held[at];
        if h.cache.runs.expires() || h.cache.is_closed() {
            // The name turned out to be snowflake after the entry was made, or its client
            // is gone (a new client never matches this entry: ids are not reused).
            held.remove(at);
            return None;
        }
        let cache = &h.cache;
        let taken = h.block.next_with(|n| match cache.runs.take(n) {
            Some(got) => Take::Ready {
                ids: got.ids,
                refill: got.prefetch,
            },
            None => Take::Empty,
        });
        match taken {
            LocalTake::Ready { id, refill } => {
                if refill {
                    prefetch(cache);
                }
                Some(id)
            }
            LocalTake::Empty => None,
        }
    })
}
