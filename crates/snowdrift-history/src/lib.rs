//! Linearizability of an ID service, checked on a recorded history.
//!
//! A history is what clients saw: for each request, who asked, when it was invoked, when
//! its answer came back, and which IDs it got. [`History::check`] finds
//!
//! - **duplicates**: an ID handed out twice (to the same request or to two);
//! - **gaps**: IDs of one answer that are not consecutive (a timestamp oracle, a segment
//!   or a counter hands out `n, n+1, ...`; turn the check off with
//!   [`CheckOptions::consecutive`] for kinds whose batches are not);
//! - **real-time order violations**: a request that completed before another was invoked
//!   holds an ID not below every ID of the later one. This is linearizability for an ID
//!   service: the service behaves as one counter whose increments take effect at some
//!   instant between invocation and completion.
//!
//! The check is `O(n log n)` in the IDs and operations (sorting, then one sweep), so
//! millions of IDs take seconds.
//!
//! # The file format
//!
//! JSON lines, one operation per line; blank lines are skipped and unknown keys ignored:
//!
//! ```text
//! {"client": "c1", "invoke": 1700000000000000000, "complete": 1700000000000250000, "ids": ["7124820000000000", "7124820000000001"]}
//! ```
//!
//! - `client`: any string naming who made the request;
//! - `invoke`, `complete`: **nanoseconds**, as unsigned integers, when the request was
//!   sent and when its answer was received. Any origin will do (the Unix epoch, the start
//!   of the run) as long as all clients read the same clock: the checker trusts these
//!   times, so clients on different machines must record on synchronized clocks, and
//!   their error makes real-time claims below that error meaningless;
//! - `ids`: the IDs, as decimal strings (as snowdrift's HTTP API returns them) or as
//!   numbers; an empty list records a failed request, which constrains nothing.

#![deny(missing_docs)]

mod check;
mod parse;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub use check::{CheckOptions, HistoryReport, OpSummary, Violation, ViolationKind};

/// A malformed history.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// A line of the history is not a valid operation.
    #[error("line {line}: {reason}")]
    Malformed {
        /// 1-based line number (0 for an operation pushed in code).
        line: u64,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// The history could not be read.
    #[error("reading the history: {0}")]
    Io(#[from] std::io::Error),
}

/// One recorded operation. The IDs live in the history's one array, so a history of
/// millions of IDs holds a few allocations, not one per operation.
#[derive(Debug, Clone, Copy)]
struct Op {
    client: usize,
    invoke: u64,
    complete: u64,
    /// 1-based line of the file, 0 when pushed in code.
    line: u64,
    /// Index of the file it was read from in `History::files` (0: none named).
    file: usize,
    /// `ids[start..start + len]` of the history.
    start: usize,
    len: usize,
}

/// A recorded history of an ID service: operations with their times and IDs.
///
/// ```
/// use snowdrift_history::History;
/// let mut h = History::new();
/// h.push("a", 0, 10, [1, 2])?;
/// h.push("b", 20, 30, [3])?; // after a completed: must be above
/// h.push("c", 5, 25, [0])?; // overlaps both: may be anything unused
/// assert!(h.check().is_clean());
/// h.push("d", 40, 50, [2])?; // a duplicate, and below c's earlier answer
/// let report = h.check();
/// assert_eq!(report.duplicate_count, 1);
/// assert_eq!(report.real_time_count, 1);
/// # Ok::<(), snowdrift_history::HistoryError>(())
/// ```
#[derive(Debug, Clone)]
pub struct History {
    ops: Vec<Op>,
    ids: Vec<u64>,
    clients: Vec<String>,
    client_index: HashMap<String, usize>,
    /// Names of the files read; "" first, for operations pushed in code or read unnamed.
    files: Vec<String>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self {
            ops: Vec::new(),
            ids: Vec::new(),
            clients: Vec::new(),
            client_index: HashMap::new(),
            files: vec![String::new()],
        }
    }

    /// Records an operation of `client`, invoked and completed at the given times
    /// (nanoseconds on a clock all clients share), that got `ids`.
    pub fn push(
        &mut self,
        client: &str,
        invoke_ns: u64,
        complete_ns: u64,
        ids: impl IntoIterator<Item = u64>,
    ) -> Result<(), HistoryError> {
        self.push_at(0, 0, client, invoke_ns, complete_ns, ids)
    }

    fn push_at(
        &mut self,
        file: usize,
        line: u64,
        client: &str,
        invoke: u64,
        complete: u64,
        ids: impl IntoIterator<Item = u64>,
    ) -> Result<(), HistoryError> {
        if complete < invoke {
            return Err(HistoryError::Malformed {
                line,
                reason: format!(
                    "complete ({complete}) is before invoke ({invoke}); an answer cannot arrive before its request was sent"
                ),
            });
        }
        let start = self.ids.len();
        self.ids.extend(ids);
        let client = self.client_id(client);
        self.ops.push(Op {
            client,
            invoke,
            complete,
            line,
            file,
            start,
            len: self.ids.len() - start,
        });
        Ok(())
    }

    fn client_id(&mut self, name: &str) -> usize {
        if let Some(&i) = self.client_index.get(name) {
            return i;
        }
        let i = self.clients.len();
        self.clients.push(name.to_string());
        self.client_index.insert(name.to_string(), i);
        i
    }

    /// Number of operations.
    pub fn operations(&self) -> usize {
        self.ops.len()
    }

    /// Number of IDs, duplicates included.
    pub fn id_count(&self) -> usize {
        self.ids.len()
    }

    /// Number of distinct clients.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }

    fn ids_of(&self, op: &Op) -> &[u64] {
        &self.ids[op.start..op.start + op.len]
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}
