//! What a run tells an operator planning capacity (docs/src/operations/capacity.md): the
//! coordinator's load over the run's second half, what each change of a worker ID's
//! holder skips, and how long a node cut off past its lease takes to issue again.
//!
//! Everything here is read off what the run did (the ranges the checker saw, the faults
//! the driver injected, the coordinator's own counts); nothing here changes the run.

use std::collections::BTreeMap;
use std::time::Duration;

use snowdrift_core::layout::Layout;

use crate::checker::Range;
use crate::coordinator::Stats;

/// One change of a worker ID's holder: the next holder's first range after the last
/// range of the one before (a restart, a regain after a lost lease, another node taking
/// a freed ID).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handover {
    /// Of the worker ID's time, ms: from the last ID of the one before to the first ID of
    /// the next (the part of the mark's window never used, plus the time nobody held it).
    pub skipped_ms: u64,
    /// Simulated time from the one range to the other.
    pub gap: Duration,
    /// The same node slot (its next process, or its keeper regaining the ID).
    pub same_node: bool,
}

/// The capacity figures of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capacity {
    layouts: Vec<Layout>,
    /// Under each worker ID, the last range issued: (node, incarnation, epoch, its last
    /// ID's time in ms, when).
    last: BTreeMap<u64, (usize, u64, u64, u64, Duration)>,
    /// Each node's partition of at least a ttl that ended, waiting for its next range.
    pending: BTreeMap<usize, Duration>,
    /// Every change of holder, in order.
    pub handovers: Vec<Handover>,
    /// For each partition of at least a ttl: from its end to the node's next range.
    pub after_partition: Vec<Duration>,
    /// The coordinator's counts at the middle of the run, and when (the load of the
    /// second half is the end's counts minus these).
    pub half: Option<(Duration, Stats)>,
}

impl Capacity {
    /// Figures of a run issuing under `layouts`.
    pub fn new(layouts: Vec<Layout>) -> Self {
        Self {
            layouts,
            ..Self::default()
        }
    }

    /// Notes a range as the checker records it.
    pub fn range(&mut self, range: &Range) {
        if let Some(end) = self.pending.get(&range.node).copied()
            && range.at >= end
        {
            self.pending.remove(&range.node);
            self.after_partition.push(range.at - end);
        }
        let time_ms = |id| {
            self.layouts
                .get(range.layout)
                .and_then(|l| l.decode(id).ok())
                .map_or(0, |d| d.time_ms)
        };
        let (first_ms, last_ms) = (time_ms(range.first), time_ms(range.last));
        let who = (range.node, range.incarnation, range.epoch);
        if let Some(&(node, incarnation, epoch, before_ms, at)) = self.last.get(&range.worker_id)
            && (node, incarnation, epoch) != who
        {
            self.handovers.push(Handover {
                skipped_ms: first_ms.saturating_sub(before_ms),
                gap: range.at.saturating_sub(at),
                same_node: node == range.node,
            });
        }
        self.last.insert(
            range.worker_id,
            (
                range.node,
                range.incarnation,
                range.epoch,
                last_ms,
                range.at,
            ),
        );
    }

    /// Node `node` is cut off from the coordinator until `end` (simulated time since the
    /// run began), for at least a ttl: its lease runs out meanwhile.
    pub fn cut_past_lease(&mut self, node: usize, end: Duration) {
        let e = self.pending.entry(node).or_default();
        *e = (*e).max(end);
    }

    /// The coordinator's load over the run's second half: seconds and counts.
    pub fn second_half(&self, end: Duration, at_end: Stats) -> Option<(Duration, Stats)> {
        let (at, half) = self.half?;
        Some((
            end.saturating_sub(at),
            Stats {
                requests: at_end.requests - half.requests,
                writes: at_end.writes - half.writes,
                keep_alives: at_end.keep_alives - half.keep_alives,
                keys_read: at_end.keys_read - half.keys_read,
                expired: at_end.expired - half.expired,
            },
        ))
    }

    /// The report's lines about it, for a run that simulated `simulated` and whose
    /// coordinator counted `at_end`.
    pub fn lines(&self, simulated: Duration, at_end: Stats) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((secs, s)) = self.second_half(simulated, at_end) {
            let per = |n: u64| n as f64 / secs.as_secs_f64().max(1e-9);
            out.push(format!(
                "capacity: over the second half ({:.0}s): {:.1} requests/s, {:.1} writes/s, {:.1} keep-alives or pings/s, {:.0} keys read/s",
                secs.as_secs_f64(),
                per(s.requests),
                per(s.writes),
                per(s.keep_alives),
                per(s.keys_read),
            ));
        }
        let same = self.handovers.iter().filter(|h| h.same_node).count();
        let mut skipped: Vec<u64> = self.handovers.iter().map(|h| h.skipped_ms).collect();
        let mut gaps: Vec<Duration> = self.handovers.iter().map(|h| h.gap).collect();
        if !skipped.is_empty() {
            out.push(format!(
                "capacity: {} changes of a worker ID's holder ({same} to the same node); the worker ID's time skipped at each, ms: {}; simulated time between the two ranges: {}",
                skipped.len(),
                spread(&mut skipped, |ms| format!("{ms}")),
                spread(&mut gaps, |d| format!("{d:.1?}")),
            ));
        }
        let mut taken: Vec<Duration> = self
            .handovers
            .iter()
            .filter(|h| !h.same_node)
            .map(|h| h.gap)
            .collect();
        if !taken.is_empty() {
            out.push(format!(
                "capacity: {} worker IDs taken by another node; simulated time from the last range of the one before to the first of the next: {}",
                taken.len(),
                spread(&mut taken, |d| format!("{d:.1?}")),
            ));
        }
        let mut after = self.after_partition.clone();
        if !after.is_empty() {
            out.push(format!(
                "capacity: {} partitions of a ttl or more ended; from the end to the node's next range: {}",
                after.len(),
                spread(&mut after, |d| format!("{d:.2?}")),
            ));
        }
        out
    }
}

/// `median m, 90th percentile p, max x` of `values` (sorted here).
fn spread<T: Ord + Copy>(values: &mut [T], show: impl Fn(T) -> String) -> String {
    values.sort_unstable();
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {}, 90th percentile {}, max {}",
        show(at(0.5)),
        show(at(0.9)),
        show(at(1.0))
    )
}
