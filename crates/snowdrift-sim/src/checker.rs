//! The checker: every range of IDs any node issued, checked as it is issued. No ID may be
//! issued twice anywhere in the fleet: every range's IDs, as integers, against every range
//! before it ([`Issued`]), whatever layout issued them (after a layout switch, two worker
//! IDs of different layouts can make the same 64 bits). Under each worker ID, IDs must
//! only rise across every holder, in the order they were issued (the next holder starts
//! above the last one's mark); an ID's node bits, decoded by the layout that issued it,
//! must be the worker ID its node held.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use snowdrift_core::layout::{Layout, Role};

use crate::issued::{Issued, Run};

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
    /// Which of the run's layouts issued it (0: the one the fleet starts on).
    pub layout: usize,
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
            "{} IDs {}..={} under worker ID {}{} by node {} (process {}, epoch {}) at {:?}",
            self.count,
            self.first,
            self.last,
            self.worker_id,
            if self.layout > 0 {
                format!(" of layout {}", self.layout)
            } else {
                String::new()
            },
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

/// Checks ranges as they are issued.
#[derive(Debug)]
pub struct Checker {
    layouts: Vec<Layout>,
    /// Every range checked, in order: what [`Issued`]'s owners index.
    ranges_seen: Vec<Range>,
    issued: Issued,
    /// Under each worker ID, the index of the range that issued its largest ID so far.
    highest: BTreeMap<u64, usize>,
    /// What broke, in order.
    pub failures: Vec<Failure>,
    /// Ranges checked.
    pub ranges: u64,
    /// Ranges checked, by the layout that issued them.
    pub ranges_by_layout: Vec<u64>,
    /// IDs checked.
    pub ids: u64,
    digest: DefaultHasher,
}

impl Checker {
    /// A checker of IDs of `layouts` (the fleet's first layout, then any it moves to).
    pub fn new(layouts: Vec<Layout>) -> Self {
        Self {
            ranges_by_layout: vec![0; layouts.len()],
            layouts,
            ranges_seen: Vec::new(),
            issued: Issued::default(),
            highest: BTreeMap::new(),
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

    /// The worker ID an ID's node fields (high to low) name under `layout`.
    fn worker_of(layout: &Layout, id: u64) -> Option<u64> {
        let d = layout.decode(id).ok()?;
        Some(
            layout
                .fields()
                .iter()
                .zip(&d.values)
                .filter(|(f, _)| f.role() == Role::Node)
                .fold(0, |node, (f, v)| (node << f.bits()) | v),
        )
    }

    /// Checks and records one range, made of `runs` (the block's runs of IDs).
    pub fn record(&mut self, range: Range, runs: &[Run]) {
        range.hash(&mut self.digest);
        self.ranges += 1;
        self.ids += range.count;
        if let Some(n) = self.ranges_by_layout.get_mut(range.layout) {
            *n += 1;
        }
        let index = self.ranges_seen.len();
        self.ranges_seen.push(range);
        let total: u64 = runs.iter().map(|r| r.count).sum();
        if runs.first().map(|r| r.first) != Some(range.first)
            || runs.last().map(Run::last) != Some(range.last)
            || total != range.count
        {
            self.fail(
                range.at,
                format!("{range}: its runs {runs:?} are not its IDs"),
            );
        }
        // No ID twice, fleet-wide, on the integers.
        let mut duplicate = false;
        for run in runs {
            if let Some((id, earlier)) = self.issued.record(*run, index) {
                let e = self.ranges_seen[earlier];
                self.fail(
                    range.at,
                    format!("DUPLICATE IDs: {range} overlaps {e} (both issued ID {id})"),
                );
                duplicate = true;
                break;
            }
        }
        let decoded = self.layouts.get(range.layout).and_then(|l| {
            Some((
                Self::worker_of(l, range.first)?,
                Self::worker_of(l, range.last)?,
            ))
        });
        match decoded {
            None => self.fail(
                range.at,
                format!("{range}: an ID does not decode under its layout"),
            ),
            Some((w_first, w_last)) if w_first != range.worker_id || w_last != range.worker_id => {
                self.fail(
                    range.at,
                    format!("{range}: the IDs carry worker ID {w_first}, not the one held"),
                );
            }
            Some(_) => {}
        }
        // Under one worker ID, IDs only rise (for a fixed worker ID the integers' order is
        // the order of extension, tick and sequence, in any layout a switch allows).
        let before = self
            .highest
            .get(&range.worker_id)
            .map(|i| self.ranges_seen[*i]);
        match before {
            Some(b) if range.first <= b.last => {
                if !duplicate {
                    self.fail(
                        range.at,
                        format!(
                            "IDs went back under one worker ID: {range} is not above {b} (issued before it)"
                        ),
                    );
                }
                if range.last > b.last {
                    self.highest.insert(range.worker_id, index);
                }
            }
            _ => {
                self.highest.insert(range.worker_id, index);
            }
        }
    }

    fn fail(&mut self, at: Duration, what: String) {
        self.failures.push(Failure { at, what });
    }
}
