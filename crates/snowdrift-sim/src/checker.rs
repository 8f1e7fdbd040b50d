//! The checker: every range of IDs any node issued, checked as it is issued. Under each
//! worker ID, IDs must only rise across every holder, in the order they were issued (the
//! next holder starts above the last one's mark); an ID's node bits must be the worker ID
//! its node held. Since a layout's fields are disjoint bits, an ID names its worker ID, so
//! these two checks mean that no two ranges anywhere in the fleet overlap.

use std::collections::{BTreeMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use snowdrift_core::layout::{Layout, Role};

/// How many of a worker ID's latest ranges are kept to name the one a bad range meets.
const RECENT: usize = 64;

/// One range of IDs one node issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    /// The node (slot) that issued it.
    pub node: usize,
    /// Which process of the node (1 for the first, counting restarts).
    pub incarnation: u64,
    /// The keeper's epoch it was issued in.
    pub epoch: u64,
    /// The worker ID the node held.
    pub worker_id: u64,
    /// The smallest ID.
    pub first: u64,
    /// The largest ID.
    pub last: u64,
    /// How many IDs.
    pub count: u64,
    /// When, in simulated time since the run began.
    pub at: Duration,
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} IDs {}..={} under worker ID {} by node {} (process {}, epoch {}) at {:?}",
            self.count,
            self.first,
            self.last,
            self.worker_id,
            self.node,
            self.incarnation,
            self.epoch,
            self.at
        )
    }
}

/// A broken guarantee, as the checker found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// When, in simulated time.
    pub at: Duration,
    /// What broke, naming both ranges.
    pub what: String,
}

/// An ID's place in its worker ID's order: extension value, tick, sequence.
type Key = (u64, u64, u64);

#[derive(Debug, Default)]
struct History {
    last: Option<Key>,
    recent: VecDeque<Range>,
}

/// Checks ranges as they are issued.
#[derive(Debug)]
pub struct Checker {
    layout: Layout,
    workers: BTreeMap<u64, History>,
    /// What broke, in order.
    pub failures: Vec<Failure>,
    /// Ranges checked.
    pub ranges: u64,
    /// IDs checked.
    pub ids: u64,
    digest: DefaultHasher,
}

impl Checker {
    /// A checker of IDs of `layout`.
    pub fn new(layout: Layout) -> Self {
        Self {
            layout,
            workers: BTreeMap::new(),
            failures: Vec::new(),
            ranges: 0,
            ids: 0,
            digest: DefaultHasher::new(),
        }
    }

    /// A hash of every range in the order checked: two runs that issued the same IDs in the
    /// same order, at the same simulated times, have the same digest.
    pub fn digest(&self) -> u64 {
        self.digest.clone().finish()
    }

    /// Takes an ID apart: its worker ID (the node fields, high to low) and its key.
    fn split(&self, id: u64) -> Option<(u64, Key)> {
        let d = self.layout.decode(id).ok()?;
        let (mut node, mut ext, mut tick, mut seq) = (0u64, 0, 0, 0);
        for (f, v) in self.layout.fields().iter().zip(&d.values) {
            match f.role() {
                Role::Node => node = (node << f.bits()) | v,
                Role::Extension => ext = *v,
                Role::Time => tick = *v,
                Role::Sequence => seq = *v,
                _ => {}
            }
        }
        Some((node, (ext, tick, seq)))
    }

    /// Checks and records one range.
    pub fn record(&mut self, range: Range) {
        range.hash(&mut self.digest);
        self.ranges += 1;
        self.ids += range.count;
        let (Some((w_first, k_first)), Some((w_last, k_last))) =
            (self.split(range.first), self.split(range.last))
        else {
            self.fail(
                range.at,
                format!("{range}: an ID does not decode under the layout"),
            );
            return;
        };
        if w_first != range.worker_id || w_last != range.worker_id {
            self.fail(
                range.at,
                format!("{range}: the IDs carry worker ID {w_first}, not the one held"),
            );
        }
        let history = self.workers.entry(range.worker_id).or_default();
        let bad = history.last.filter(|last| k_first <= *last);
        let earlier: Option<Range> = bad.and_then(|_| {
            history
                .recent
                .iter()
                .rev()
                .find(|r| r.first <= range.last && range.first <= r.last)
                .or_else(|| history.recent.iter().max_by_key(|r| r.last))
                .copied()
        });
        history.last = Some(history.last.map_or(k_last, |l| l.max(k_last)));
        history.recent.push_back(range);
        if history.recent.len() > RECENT {
            history.recent.pop_front();
        }
        if bad.is_some() {
            let what = match earlier {
                Some(e) if e.first <= range.last && range.first <= e.last => {
                    format!("DUPLICATE IDs: {range} overlaps {e}")
                }
                Some(e) => format!(
                    "IDs went back under one worker ID: {range} is not above {e} (issued before it)"
                ),
                None => format!("IDs went back under one worker ID: {range}"),
            };
            self.fail(range.at, what);
        }
    }

    fn fail(&mut self, at: Duration, what: String) {
        self.failures.push(Failure { at, what });
    }
}
