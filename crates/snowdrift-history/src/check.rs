//! The checks of a history: uniqueness, consecutive answers, real-time order.

use std::fmt;

use super::{History, Op};

/// How many violations of each kind are kept in full; the rest are only counted.
const KEPT: usize = 100;

/// What [`History::check_with`] checks beyond uniqueness and real-time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckOptions {
    /// The IDs of one answer must be `n, n+1, n+2, ...` (default true). Turn off for kinds
    /// whose batches skip numbers, such as snowflake blocks that span ticks.
    pub consecutive: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self { consecutive: true }
    }
}

/// An operation as a report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSummary {
    /// The client that made the request.
    pub client: String,
    /// When the request was sent, ns.
    pub invoke: u64,
    /// When its answer arrived, ns.
    pub complete: u64,
    /// Its smallest ID.
    pub min_id: u64,
    /// Its largest ID.
    pub max_id: u64,
    /// How many IDs it got.
    pub count: usize,
    /// Its line in the file (1-based), 0 when pushed in code.
    pub line: u64,
    /// The file it was read from, as named to [`History::read`]; empty when none was named.
    pub file: String,
}

impl fmt::Display for OpSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} invoked {} completed {} ns, ",
            self.client, self.invoke, self.complete
        )?;
        if self.count == 1 {
            write!(f, "ID {}", self.min_id)?;
        } else {
            write!(f, "{} IDs {}..={}", self.count, self.min_id, self.max_id)?;
        }
        match (self.line, self.file.as_str()) {
            (0, _) => {}
            (line, "") => write!(f, " (line {line})")?,
            (line, file) => write!(f, " ({file} line {line})")?,
        }
        Ok(())
    }
}

/// The kinds of [`Violation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ViolationKind {
    /// An ID handed out twice.
    Duplicate,
    /// IDs of one answer that are not consecutive.
    Gap,
    /// An answer not above one that completed before its request was sent.
    RealTime,
}

/// One finding of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// `id` was handed out to `first` and again to `second` (possibly the same
    /// operation).
    Duplicate {
        /// The ID.
        id: u64,
        /// One operation that got it (the earlier in the file).
        first: OpSummary,
        /// Another that got it.
        second: OpSummary,
    },
    /// In `op`'s answer, ID number `index` (from 0) is `next`, not `previous + 1`.
    Gap {
        /// The operation.
        op: OpSummary,
        /// Position of `next` in the answer.
        index: usize,
        /// The ID before it.
        previous: u64,
        /// The ID that should have been `previous + 1`.
        next: u64,
    },
    /// `earlier` completed before `later` was invoked, yet `later` holds an ID not above
    /// every ID of `earlier`. `earlier` is, of all the operations completed before `later`
    /// was invoked, the one with the largest ID: the strongest witness.
    RealTime {
        /// The operation that completed first.
        earlier: OpSummary,
        /// The operation invoked after it.
        later: OpSummary,
    },
}

impl Violation {
    /// Its kind.
    pub fn kind(&self) -> ViolationKind {
        match self {
            Violation::Duplicate { .. } => ViolationKind::Duplicate,
            Violation::Gap { .. } => ViolationKind::Gap,
            Violation::RealTime { .. } => ViolationKind::RealTime,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Duplicate { id, first, second } => {
                write!(f, "duplicate ID {id}: {first}; and {second}")
            }
            Violation::Gap {
                op,
                index,
                previous,
                next,
            } => write!(
                f,
                "gap: ID #{index} of one answer is {next}, not {previous} + 1: {op}"
            ),
            Violation::RealTime { earlier, later } => write!(
                f,
                "real-time order: {later}; is not above {earlier}, which completed before it was invoked"
            ),
        }
    }
}

/// What [`History::check`] found. Counts are exact; [`violations`](Self::violations)
/// holds the first 100 of each kind, duplicates in ID order, gaps in operation order and
/// real-time violations in order of invocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryReport {
    /// Operations in the history.
    pub operations: usize,
    /// IDs in the history, duplicates included.
    pub ids: usize,
    /// Distinct clients.
    pub clients: usize,
    /// IDs handed out more than once: each extra handing-out counts one.
    pub duplicate_count: u64,
    /// Breaks in the IDs of one answer (0 when the check is off).
    pub gap_count: u64,
    /// Operations whose IDs are not above those of an operation that completed before
    /// they were invoked (each such operation counts once).
    pub real_time_count: u64,
    /// The violations kept in full.
    pub violations: Vec<Violation>,
}

impl HistoryReport {
    /// True when nothing was found.
    pub fn is_clean(&self) -> bool {
        self.violation_count() == 0
    }

    /// All violations, counted.
    pub fn violation_count(&self) -> u64 {
        self.duplicate_count + self.gap_count + self.real_time_count
    }

    /// The kept violations of one kind.
    pub fn of_kind(&self, kind: ViolationKind) -> impl Iterator<Item = &Violation> {
        self.violations.iter().filter(move |v| v.kind() == kind)
    }
}

impl fmt::Display for HistoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} operations, {} IDs, {} clients: {} violations ({} duplicates, {} gaps within an answer, {} real-time order)",
            self.operations,
            self.ids,
            self.clients,
            self.violation_count(),
            self.duplicate_count,
            self.gap_count,
            self.real_time_count
        )?;
        for v in &self.violations {
            write!(f, "\n  {v}")?;
        }
        let shown = self.violations.len() as u64;
        if self.violation_count() > shown {
            write!(
                f,
                "\n  ... and {} more (the first {KEPT} of each kind are shown)",
                self.violation_count() - shown
            )?;
        }
        Ok(())
    }
}

impl History {
    /// Checks uniqueness, consecutive answers and real-time order.
    pub fn check(&self) -> HistoryReport {
        self.check_with(CheckOptions::default())
    }

    /// Checks uniqueness and real-time order, and consecutive answers if asked.
    pub fn check_with(&self, options: CheckOptions) -> HistoryReport {
        let mut report = HistoryReport {
            operations: self.ops.len(),
            ids: self.ids.len(),
            clients: self.clients.len(),
            ..HistoryReport::default()
        };
        self.find_duplicates(&mut report);
        if options.consecutive {
            self.find_gaps(&mut report);
        }
        self.find_real_time_violations(&mut report);
        report
    }

    fn summary(&self, op: &Op) -> OpSummary {
        let ids = self.ids_of(op);
        OpSummary {
            client: self.clients[op.client].clone(),
            invoke: op.invoke,
            complete: op.complete,
            min_id: ids.iter().copied().min().unwrap_or(0),
            max_id: ids.iter().copied().max().unwrap_or(0),
            count: ids.len(),
            line: op.line,
            file: self.files[op.file].clone(),
        }
    }

    /// Sorts (ID, operation) pairs and compares neighbours.
    fn find_duplicates(&self, report: &mut HistoryReport) {
        let mut pairs: Vec<(u64, usize)> = Vec::with_capacity(self.ids.len());
        for (i, op) in self.ops.iter().enumerate() {
            pairs.extend(self.ids_of(op).iter().map(|&id| (id, i)));
        }
        pairs.sort_unstable();
        let mut kept = 0;
        for w in pairs.windows(2) {
            if w[0].0 == w[1].0 {
                report.duplicate_count += 1;
                if kept < KEPT {
                    kept += 1;
                    report.violations.push(Violation::Duplicate {
                        id: w[0].0,
                        first: self.summary(&self.ops[w[0].1]),
                        second: self.summary(&self.ops[w[1].1]),
                    });
                }
            }
        }
    }

    fn find_gaps(&self, report: &mut HistoryReport) {
        let mut kept = 0;
        for op in &self.ops {
            for (i, w) in self.ids_of(op).windows(2).enumerate() {
                if w[0].checked_add(1) != Some(w[1]) {
                    report.gap_count += 1;
                    if kept < KEPT {
                        kept += 1;
                        report.violations.push(Violation::Gap {
                            op: self.summary(op),
                            index: i + 1,
                            previous: w[0],
                            next: w[1],
                        });
                    }
                }
            }
        }
    }

    /// Operations in order of invocation, against the largest ID of every operation that
    /// completed strictly before each invocation: a sweep over the two sorted orders.
    fn find_real_time_violations(&self, report: &mut HistoryReport) {
        // (min, max) of each operation with IDs; failed requests constrain nothing.
        let bounds: Vec<Option<(u64, u64)>> = self
            .ops
            .iter()
            .map(|op| {
                let ids = self.ids_of(op);
                Some((*ids.iter().min()?, *ids.iter().max()?))
            })
            .collect();
        let with_ids: Vec<usize> = (0..self.ops.len())
            .filter(|&i| bounds[i].is_some())
            .collect();
        let mut by_invoke = with_ids.clone();
        by_invoke.sort_by_key(|&i| (self.ops[i].invoke, i));
        let mut by_complete = with_ids;
        by_complete.sort_by_key(|&i| (self.ops[i].complete, i));

        let mut done = 0;
        // The largest ID among operations completed so far, and the operation holding it.
        let mut top: Option<(u64, usize)> = None;
        let mut kept = 0;
        for &later in &by_invoke {
            let invoke = self.ops[later].invoke;
            while let Some(&earlier) = by_complete.get(done) {
                if self.ops[earlier].complete >= invoke {
                    break;
                }
                if let Some((_, max)) = bounds[earlier]
                    && top.is_none_or(|(t, _)| max > t)
                {
                    top = Some((max, earlier));
                }
                done += 1;
            }
            let (Some((top_id, earlier)), Some((min, _))) = (top, bounds[later]) else {
                continue;
            };
            if min <= top_id {
                report.real_time_count += 1;
                if kept < KEPT {
                    kept += 1;
                    report.violations.push(Violation::RealTime {
                        earlier: self.summary(&self.ops[earlier]),
                        later: self.summary(&self.ops[later]),
                    });
                }
            }
        }
    }
}
