//! What the client checks in a server's answer before it holds a single ID of it.
//!
//! A server (or whatever answers at its address) is not trusted to be right: a batch is
//! refused when its shape is broken (no ID, more IDs than asked, a run of 0 IDs, a run of
//! several IDs with stride 0, a run whose last ID `first + (count - 1) * stride` passes
//! `u64::MAX`, an empty or repeated text ID), when a run reaches 2^63 or above (no snowdrift
//! kind issues such an ID: segments, counters and tickets stop at `i64::MAX`, layouts have at
//! most 63 bits), or when any of its IDs is one this client already received for the same
//! name, or appears twice in the batch.
//!
//! The rule for "already received": every 64-bit kind snowdrift issues (snowflake,
//! segment, ticket, counter, tso) gives each ID of a name once across all of its servers,
//! so a batch that shares even one ID with an earlier batch of that name, from any
//! endpoint, is a repeat. A per-endpoint "strictly above the last" rule would be cheaper
//! but wrong: an endpoint may be a load balancer over several servers whose segments
//! interleave, and concurrent `tso` fetches may come back out of order.
//!
//! So each name keeps the ranges it received as disjoint arithmetic progressions, grouped
//! by `(stride, first mod stride)`: within a group they are sorted intervals (adjacent ones
//! merged, so one server's consecutive batches stay one entry), and an overlap is one
//! `BTreeMap` lookup. A run is also checked against groups of other strides (a striped
//! segment tag's residue classes, or single IDs against strided snowflake runs) with the
//! Chinese remainder theorem, only where the intervals meet. The check runs once per fetched
//! batch, never per ID; the warm `next()` never touches it. Memory is bounded: past
//! [`MAX_ENTRIES`] disjoint ranges per name the lowest are forgotten first (the oldest for
//! every increasing kind): only a repeat of a run it has forgotten can pass.
//!
//! Text IDs (UUIDs, ULIDs, ObjectIds, Nano IDs, templated counters...) have no order to
//! keep as ranges, so each name remembers the newest [`MAX_TEXTS`] it received, exactly, in
//! a set beside their order of arrival: a batch holding one of them is refused like a
//! repeated run. The IDs of `next_named` (uuid3 and uuid5, the same UUID for the same input
//! by design) are not remembered.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::cache::Batch;

/// Disjoint ranges a name remembers; about 40 bytes each, so at most a few MB.
pub(crate) const MAX_ENTRIES: usize = 1 << 16;
/// Progressions `(stride, first mod stride)` a name's IDs may come in. Honest servers use
/// a handful (one per store of a striped tag, one per worker of a layout whose sequence sits
/// above the worker bits); the bound keeps a hostile answer from making every check slow.
pub(crate) const MAX_CLASSES: usize = 1024;
/// Text IDs a name remembers, the newest: 65,536, a few MB for UUIDs.
pub(crate) const MAX_TEXTS: usize = 1 << 16;
/// The largest ID any snowdrift kind issues: 2^63 - 1.
pub(crate) const MAX_ID: u64 = i64::MAX as u64;

/// Why a batch was refused: what the endpoint answered, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(pub(crate) String);

/// A run as the check sees it: `first, first + stride, ..., last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    first: u64,
    last: u64,
    /// At least 1; 1 for a single ID.
    stride: u64,
}

impl Run {
    fn class(&self) -> (u64, u64) {
        (self.stride, self.first % self.stride)
    }

    fn describe(&self) -> String {
        match (self.first == self.last, self.stride) {
            (true, _) => format!("ID {}", self.first),
            (false, 1) => format!("IDs {}..={}", self.first, self.last),
            (false, s) => format!("IDs {}..={} step {s}", self.first, self.last),
        }
    }
}

/// Checks the shape of a batch asked for with `asked` IDs (every kind), and returns its
/// runs as the overlap check sees them (none for text).
fn shape(batch: &Batch, asked: u64) -> Result<Vec<Run>, String> {
    match batch {
        Batch::Text { ids, .. } => {
            if ids.is_empty() {
                return Err("no ID".into());
            }
            if ids.len() as u64 > asked {
                return Err(format!("{} IDs where {asked} were asked for", ids.len()));
            }
            let mut seen = HashSet::with_capacity(ids.len());
            for id in ids {
                if id.is_empty() {
                    return Err("an empty text ID".into());
                }
                if !seen.insert(id.as_str()) {
                    return Err(format!("the text ID {id:?} twice in one batch"));
                }
            }
            Ok(Vec::new())
        }
        Batch::Runs { runs, .. } => {
            if runs.is_empty() {
                return Err("no ID".into());
            }
            let mut total = 0u64;
            let mut out = Vec::with_capacity(runs.len());
            for &(first, count, stride) in runs {
                if count == 0 {
                    return Err(format!("a run of 0 IDs from {first}"));
                }
                if count > 1 && stride == 0 {
                    return Err(format!(
                        "a run of {count} IDs from {first} with stride 0 (the same ID {count} times)"
                    ));
                }
                let last = (count - 1)
                    .checked_mul(stride)
                    .and_then(|span| first.checked_add(span))
                    .ok_or_else(|| {
                        format!(
                            "a run of {count} IDs from {first} with stride {stride}, which passes \
                             2^64 - 1 (it would wrap around to 0)"
                        )
                    })?;
                if last > MAX_ID {
                    return Err(if first > MAX_ID {
                        format!(
                            "a run from {first}, at or above 2^63 (no snowdrift kind issues an ID \
                             that does not fit 63 bits)"
                        )
                    } else {
                        format!(
                            "a run of {count} IDs from {first} with stride {stride}, whose last ID \
                             {last} passes 2^63 - 1 (no snowdrift kind issues an ID that does not \
                             fit 63 bits)"
                        )
                    });
                }
                total = total.saturating_add(count);
                let stride = if count == 1 { 1 } else { stride };
                out.push(Run {
                    first,
                    last,
                    stride,
                });
            }
            if total > asked {
                return Err(format!("{total} IDs where {asked} were asked for"));
            }
            Ok(out)
        }
    }
}

/// The refusal of a batch whose shape is broken, for callers with no name cache (a uuid3
/// or uuid5 `next_named`).
pub(crate) fn check_shape(
    endpoint: &str,
    name: &str,
    batch: &Batch,
    asked: u64,
) -> Result<(), Refusal> {
    shape(batch, asked)
        .map(drop)
        .map_err(|what| broken(endpoint, name, &what))
}

fn broken(endpoint: &str, name: &str, what: &str) -> Refusal {
    Refusal(format!(
        "endpoint {endpoint} answered {what} for {name:?}: a broken answer is refused"
    ))
}

/// One name's record of the IDs it received, and how many batches it refused.
#[derive(Debug, Default)]
pub(crate) struct Guard {
    seen: Mutex<Seen>,
    texts: Mutex<SeenTexts>,
    refused: AtomicU64,
}

impl Guard {
    /// Checks a batch `endpoint` answered for `name` (asked for `asked` IDs) and, when it
    /// passes, records its IDs as received. Check and record are one step, so concurrent
    /// fetches of a name cannot both pass with the same IDs.
    pub(crate) fn admit(
        &self,
        endpoint: &str,
        name: &str,
        batch: &Batch,
        asked: u64,
    ) -> Result<(), Refusal> {
        let runs = shape(batch, asked).map_err(|what| broken(endpoint, name, &what))?;
        if let Batch::Text { ids, .. } = batch {
            return self.admit_texts(endpoint, name, ids);
        }
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        // The batch against itself first, so a repeat inside one answer is caught too.
        let mut fresh = Seen::default();
        for run in &runs {
            if let Some(old) = fresh.overlap(run) {
                return Err(Refusal(format!(
                    "endpoint {endpoint} answered {} and {} for {name:?} in one batch, which \
                     overlap: a server that repeats IDs is refused",
                    old.describe(),
                    run.describe()
                )));
            }
            if let Some(old) = seen.overlap(run) {
                return Err(Refusal(format!(
                    "endpoint {endpoint} answered {} for {name:?}, which overlap IDs this client \
                     already received ({}): a server that repeats IDs is refused",
                    run.describe(),
                    old.describe()
                )));
            }
            fresh.insert(*run);
        }
        let new_classes = fresh
            .classes
            .keys()
            .filter(|c| !seen.classes.contains_key(c))
            .count();
        if seen.classes.len() + new_classes > MAX_CLASSES {
            return Err(broken(
                endpoint,
                name,
                &format!(
                    "runs in {} progressions (stride and remainder) where snowdrift's \
                     generators use a handful (at most {MAX_CLASSES} are followed)",
                    seen.classes.len() + new_classes
                ),
            ));
        }
        for run in runs {
            seen.insert(run);
        }
        Ok(())
    }

    /// [`Guard::admit`] for a text batch whose shape passed: refused when it holds an ID
    /// of the newest [`MAX_TEXTS`] the name received, else remembered.
    fn admit_texts(&self, endpoint: &str, name: &str, ids: &[String]) -> Result<(), Refusal> {
        let mut texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(id) = ids.iter().find(|id| texts.set.contains(id.as_str())) {
            return Err(Refusal(format!(
                "endpoint {endpoint} answered the text ID {id:?} for {name:?}, which this client \
                 already received: a server that repeats IDs is refused"
            )));
        }
        for id in ids {
            texts.insert(id);
        }
        Ok(())
    }

    /// Counts a refused batch.
    pub(crate) fn count_refusal(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Batches refused so far.
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Text IDs remembered now.
    #[cfg(test)]
    fn texts_remembered(&self) -> usize {
        let texts = self.texts.lock().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(texts.set.len(), texts.order.len());
        texts.order.len()
    }

    /// Disjoint ranges remembered now.
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
    }
}

/// The newest text IDs received: a set to look them up, their order to forget the oldest.
#[derive(Debug, Default)]
struct SeenTexts {
    set: HashSet<Arc<str>>,
    order: VecDeque<Arc<str>>,
}

impl SeenTexts {
    /// Remembers `id` (not remembered yet), forgetting the oldest past [`MAX_TEXTS`].
    fn insert(&mut self, id: &str) {
        let id: Arc<str> = Arc::from(id);
        self.set.insert(id.clone());
        self.order.push_back(id);
        while self.order.len() > MAX_TEXTS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }
}

/// Received IDs: per `(stride, residue)`, disjoint intervals `first -> last`.
#[derive(Debug, Default)]
struct Seen {
    classes: HashMap<(u64, u64), BTreeMap<u64, u64>>,
    entries: usize,
}

impl Seen {
    /// A remembered range `run` shares an ID with, if any.
    fn overlap(&self, run: &Run) -> Option<Run> {
        let own = run.class();
        for (&(stride, residue), ranges) in &self.classes {
            if (stride, residue) == own {
                // Same progression: the intervals meet exactly when they share an ID.
                if let Some((&first, &last)) = ranges.range(..=run.last).next_back()
                    && last >= run.first
                {
                    return Some(Run {
                        first,
                        last,
                        stride,
                    });
                }
                continue;
            }
            if stride == run.stride {
                // Same stride, other residue: never one ID in common.
                continue;
            }
            let Some((base, period)) = crt(run.first, run.stride, residue, stride) else {
                continue;
            };
            // The intervals of this class meeting [run.first, run.last], newest first; they
            // are disjoint and sorted, so the walk stops at the first that ends below.
            for (&first, &last) in ranges.range(..=run.last).rev() {
                if last < run.first {
                    break;
                }
                let lo = first.max(run.first);
                let hi = last.min(run.last);
                if common_in(base, period, lo, hi) {
                    return Some(Run {
                        first,
                        last,
                        stride,
                    });
                }
            }
        }
        None
    }

    /// Records `run` (which overlaps nothing here), merging it with its neighbours in its
    /// progression, and forgets the lowest ranges past [`MAX_ENTRIES`].
    fn insert(&mut self, run: Run) {
        let (stride, _) = run.class();
        let ranges = self.classes.entry(run.class()).or_default();
        let (mut first, mut last) = (run.first, run.last);
        self.entries += 1;
        if let Some((&before, &end)) = ranges.range(..first).next_back()
            && end.checked_add(stride) == Some(first)
        {
            ranges.remove(&before);
            first = before;
            self.entries -= 1;
        }
        if let Some(next) = last.checked_add(stride)
            && let Some(after) = ranges.remove(&next)
        {
            last = after;
            self.entries -= 1;
        }
        ranges.insert(first, last);
        while self.entries > MAX_ENTRIES {
            self.forget_lowest();
        }
    }

    fn forget_lowest(&mut self) {
        let lowest = self
            .classes
            .iter()
            .filter_map(|(class, ranges)| Some((*ranges.keys().next()?, *class)))
            .min();
        let Some((first, class)) = lowest else {
            self.entries = 0;
            return;
        };
        if let Some(ranges) = self.classes.get_mut(&class) {
            ranges.remove(&first);
            if ranges.is_empty() {
                self.classes.remove(&class);
            }
        }
        self.entries -= 1;
    }
}

/// The IDs `x ≡ a (mod m)` and `x ≡ b (mod n)` have in common, as `x ≡ base (mod period)`,
/// or `None` when they have none.
fn crt(a: u64, m: u64, b: u64, n: u64) -> Option<(u128, u128)> {
    let (m, n) = (u128::from(m), u128::from(n));
    let (a, b) = (u128::from(a) % m, u128::from(b) % n);
    let g = gcd(m, n);
    let diff = (b + n - a % n) % n;
    if diff % g != 0 {
        return None;
    }
    // a + m*k ≡ b (mod n)  <=>  (m/g) k ≡ diff/g (mod n/g).
    let (mg, ng) = (m / g, n / g);
    let k = if ng == 1 {
        0
    } else {
        mul_mod(diff / g % ng, inverse(mg % ng, ng)?, ng)
    };
    let period = m * ng;
    Some(((a + m * k) % period, period))
}

/// Whether some `x ≡ base (mod period)` lies in `lo..=hi`.
fn common_in(base: u128, period: u128, lo: u64, hi: u64) -> bool {
    let (lo, hi) = (u128::from(lo), u128::from(hi));
    let r = lo % period;
    let up = if base >= r {
        base - r
    } else {
        period - (r - base)
    };
    lo.checked_add(up).is_some_and(|x| x <= hi)
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `a * b mod m` without overflow (every operand below 2^64 here, so the product fits).
fn mul_mod(a: u128, b: u128, m: u128) -> u128 {
    (a % m) * (b % m) % m
}

/// The inverse of `a` modulo `m` (coprime, `m` > 1), by the extended Euclidean algorithm.
fn inverse(a: u128, m: u128) -> Option<u128> {
    let (mut r0, mut r1) = (i128::try_from(m).ok()?, i128::try_from(a).ok()?);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    if r0 != 1 {
        return None;
    }
    let m = i128::try_from(m).ok()?;
    u128::try_from(t0.rem_euclid(m)).ok()
}

#[cfg(test)]
mod tests;
