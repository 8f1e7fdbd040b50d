//! The segment checker: every range of IDs a node's buffer handed to a caller, checked as
//! it is handed out. It must (1) share no ID with any range handed out before it, by any
//! node ([`Issued`]), and (2) lie within a claim the database committed for the same
//! process: a segment is durable before any ID of it is served, and a process serves only
//! its own segments.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use super::db::{Committed, Owner};
use crate::checker::Failure;
use crate::issued::{Issued, Run};

/// IDs one node's buffer handed to a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handout {
    /// The node (slot).
    pub node: usize,
    /// Which process of the node (1 for the first, counting restarts).
    pub incarnation: u64,
    /// The smallest ID.
    pub first: u64,
    /// How many IDs, consecutive.
    pub count: u64,
    /// When, in simulated time since the run began.
    pub at: Duration,
}

impl Handout {
    /// The largest ID.
    pub fn last(&self) -> u64 {
        self.first + (self.count - 1)
    }
}

impl std::fmt::Display for Handout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} IDs {}..={} by node {} (process {}) at {:?}",
            self.count,
            self.first,
            self.last(),
            self.node,
            self.incarnation,
            self.at
        )
    }
}

/// Checks handouts as they happen.
#[derive(Debug, Default)]
pub struct Checker {
    handouts: Vec<Handout>,
    issued: Issued,
    /// Claims committed, by their first ID: `(end, owner)`, `[first, end)`.
    committed: BTreeMap<u64, (u64, Owner)>,
    /// IDs in committed claims.
    pub claimed_ids: u64,
    /// What broke, in order.
    pub failures: Vec<Failure>,
    /// Handouts checked.
    pub handed_out: u64,
    /// IDs handed out.
    pub ids: u64,
    digest: DefaultHasher,
}

impl Checker {
    /// Records a claim the database committed.
    pub fn committed(&mut self, claim: Committed) {
        let (Ok(from), Ok(to)) = (u64::try_from(claim.from), u64::try_from(claim.to)) else {
            return;
        };
        self.claimed_ids += to.saturating_sub(from);
        self.committed.insert(from, (to, claim.owner));
    }

    /// A hash of every handout in order: equal for two runs of the same settings.
    pub fn digest(&self) -> u64 {
        self.digest.clone().finish()
    }

    /// Checks and records one handout.
    pub fn record(&mut self, h: Handout) {
        h.hash(&mut self.digest);
        self.handed_out += 1;
        self.ids += h.count;
        let index = self.handouts.len();
        self.handouts.push(h);
        let run = Run {
            first: h.first,
            count: h.count,
            stride: 1,
        };
        if let Some((id, earlier)) = self.issued.record(run, index) {
            let e = self.handouts[earlier];
            self.fail(
                h.at,
                format!("DUPLICATE IDs: {h} overlaps {e} (both handed out ID {id})"),
            );
        }
        let owner = (h.node, h.incarnation);
        let claim = self
            .committed
            .range(..=h.first)
            .next_back()
            .map(|(first, (end, who))| (*first, *end, *who));
        match claim {
            Some((_, end, who)) if h.last() < end && who == owner => {}
            Some((first, end, who)) if h.last() < end => self.fail(
                h.at,
                format!(
                    "HANDED OUT ANOTHER PROCESS'S SEGMENT: {h} lies in [{first}, {end}), which the database committed for node {} (process {})",
                    who.0, who.1
                ),
            ),
            _ => self.fail(
                h.at,
                format!("HANDED OUT WITHOUT A COMMITTED CLAIM: {h} lies in no segment the database committed"),
            ),
        }
    }

    fn fail(&mut self, at: Duration, what: String) {
        self.failures.push(Failure { at, what });
    }
}
