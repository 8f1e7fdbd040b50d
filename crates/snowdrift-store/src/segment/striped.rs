//! One tag across several stores, Didi Tinyid's delta/remainder: no store is a single point
//! of failure, and their IDs never collide.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use snowdrift_core::segment::IdRange;

use super::SegmentStore;
use super::tag::{Claim, NewTag, Tag, TagUpdate, validate_claim};
use crate::backoff::Backoff;
use crate::error::{Error, Result};

/// Several stores serving the same tags, striped: with `n` stores, store `k` serves only
/// the IDs `≡ k (mod n)` of each range it hands out (Tinyid's `delta = n`,
/// `remainder = k`).
///
/// Each store keeps its own `max_id` per tag, so their ranges overlap as numbers, but the
/// residue classes never do: the stores never need to talk to each other. A claim goes to
/// the stores in turn; one that fails goes to the back of the queue for a back-off (1 s
/// doubling to 30 s) and the next one serves, so the tag stays available while any store
/// is up (a failed store is still tried when all others fail too). The price is
/// that a range of `step` numbers yields `step / n` IDs, and IDs from different stores
/// interleave rather than increase together.
///
/// The order of the stores is part of the data: store `k` must stay at position `k` (and
/// `n` must not change) for as long as the tags are used.
#[derive(Debug)]
pub struct StripedStore {
    stores: Vec<SegmentStore>,
    next: AtomicUsize,
    down: Vec<Mutex<Down>>,
}

/// When a failed store may be tried again.
#[derive(Debug, Default, Clone, Copy)]
struct Down {
    until: Option<Instant>,
    failures: u32,
}

/// How long a failed store sits out: 1 s after one failure, doubling up to 30 s.
const SIT_OUT: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));

impl StripedStore {
    /// Stripes `stores`: the `k`-th serves the residue class `k` modulo their number.
    pub fn new(stores: Vec<SegmentStore>) -> Result<Self> {
        if stores.len() < 2 {
            return Err(Error::InvalidInput(format!(
                "striping needs at least 2 stores, got {}",
                stores.len()
            )));
        }
        for store in &stores {
            store.leaf()?;
        }
        let down = stores.iter().map(|_| Mutex::default()).collect();
        Ok(Self {
            stores,
            next: AtomicUsize::new(0),
            down,
        })
    }

    /// The stores, in the order of their residue classes.
    pub fn stores(&self) -> &[SegmentStore] {
        &self.stores
    }

    /// The number of stores (Tinyid's `delta`).
    pub fn delta(&self) -> u64 {
        self.stores.len() as u64
    }

    fn is_down(&self, k: usize) -> bool {
        let down = self.down[k].lock().unwrap_or_else(|e| e.into_inner());
        down.until.is_some_and(|t| Instant::now() < t)
    }

    fn mark(&self, k: usize, ok: bool) {
        let mut down = self.down[k].lock().unwrap_or_else(|e| e.into_inner());
        *down = if ok {
            Down::default()
        } else {
            let failures = down.failures.saturating_add(1);
            Down {
                until: Some(Instant::now() + SIT_OUT.after(failures)),
                failures,
            }
        };
    }

    /// The stores in the order to try now: the next in turn first, stores backing off last.
    fn order(&self) -> Vec<usize> {
        let n = self.stores.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let mut order: Vec<usize> = (0..n).map(|i| (first + i) % n).collect();
        order.sort_by_key(|&k| self.is_down(k));
        order
    }

    /// Claims the next segment of `tag` from one store, as the IDs of that store's class.
    /// A step given here is raised to at least the number of stores, so every segment holds
    /// an ID; stored steps are kept at least that large by `create_tag` and `update_tag`.
    pub async fn claim(&self, tag: &str, step: Option<i64>) -> Result<Claim> {
        validate_claim(tag, step)?;
        let delta = self.delta();
        let mut errors = Vec::new();
        for k in self.order() {
            let step = step.map(|s| s.max(delta as i64));
            match self.stores[k].leaf()?.claim(tag, step).await {
                Ok(claim) => {
                    self.mark(k, true);
                    let ids = IdRange::residues(claim.ids.start, claim.ids.end, delta, k as u64);
                    if ids.is_empty() {
                        // A stored step below `delta`, set in one store by hand.
                        return Err(self.step_too_small(claim.step));
                    }
                    return Ok(Claim { ids, ..claim });
                }
                // The tag's own state, not the store's health: the same everywhere.
                Err(e @ (Error::TagNotFound(_) | Error::InvalidInput(_))) => return Err(e),
                Err(e) => {
                    self.mark(k, false);
                    errors.push(format!("store {k} ({}): {e}", self.stores[k].backend()));
                }
            }
        }
        Err(Error::Unavailable(
            format!("every striped store failed: {}", errors.join("; ")).into(),
        ))
    }

    /// Creates the tag in every store; fails (naming the stores) unless all have it after.
    /// A store that already has the tag counts as done, so a failed create can be re-run.
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        new.validate()?;
        self.check_step(Some(new.step))?;
        let mut created = None;
        for (k, store) in self.stores.iter().enumerate() {
            match store.leaf()?.create_tag(new).await {
                Ok(tag) => created = Some(tag),
                Err(Error::TagExists(_)) => {}
                Err(e) => {
                    return Err(Error::Unavailable(
                        format!("creating {:?} in store {k}: {e}; re-run to finish", new.tag)
                            .into(),
                    ));
                }
            }
        }
        created.ok_or_else(|| Error::TagExists(new.tag.clone()))
    }

    /// Changes the tag in every store.
    pub async fn update_tag(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        self.check_step(update.step)?;
        let mut last = None;
        for store in &self.stores {
            last = Some(store.leaf()?.update_tag(tag, update).await?);
        }
        last.ok_or_else(|| Error::TagNotFound(tag.to_string()))
    }

    fn check_step(&self, step: Option<i64>) -> Result<()> {
        match step {
            Some(step) if step < self.delta() as i64 => Err(self.step_too_small(step)),
            _ => Ok(()),
        }
    }

    fn step_too_small(&self, step: i64) -> Error {
        Error::InvalidInput(format!(
            "step {step} is too small for {} striped stores: a segment yields step / {} IDs; use a step of at least {}",
            self.delta(),
            self.delta(),
            self.delta()
        ))
    }

    /// All tags, as the first reachable store has them.
    pub async fn list_tags(&self) -> Result<Vec<Tag>> {
        self.first_answer(|s| async move { s.leaf()?.list_tags().await })
            .await
    }

    /// One tag, as the first reachable store has it.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        self.first_answer(|s| async move { s.leaf()?.get_tag(tag).await })
            .await
    }

    async fn first_answer<'a, T, F>(&'a self, call: impl Fn(&'a SegmentStore) -> F) -> Result<T>
    where
        F: Future<Output = Result<T>> + 'a,
    {
        let mut last = None;
        for store in &self.stores {
            match call(store).await {
                Ok(v) => return Ok(v),
                Err(e @ (Error::TagNotFound(_) | Error::InvalidInput(_))) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::InvalidInput("no stores".into())))
    }
}
