//! Collects IDs from many sources and finds duplicates and order violations.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// How many findings of each kind are kept in full; the rest are only counted.
const KEPT: usize = 100;

/// A value an [`IdChecker`] accepts: unsigned and signed integers. Negative values are
/// findings of their own (no snowdrift ID is negative).
pub trait IdValue: Copy {
    /// The ID as `u64`, or the negative value it was.
    fn to_id(self) -> Result<u64, i64>;
}

impl IdValue for u64 {
    fn to_id(self) -> Result<u64, i64> {
        Ok(self)
    }
}

impl IdValue for u32 {
    fn to_id(self) -> Result<u64, i64> {
        Ok(u64::from(self))
    }
}

impl IdValue for usize {
    fn to_id(self) -> Result<u64, i64> {
        // usize is at most 64 bits on every target Rust supports.
        Ok(self as u64)
    }
}

impl IdValue for i64 {
    fn to_id(self) -> Result<u64, i64> {
        u64::try_from(self).map_err(|_| self)
    }
}

impl IdValue for i32 {
    fn to_id(self) -> Result<u64, i64> {
        i64::from(self).to_id()
    }
}

/// The same ID recorded twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The ID.
    pub id: u64,
    /// The source that recorded it first.
    pub first: String,
    /// The source that recorded it again (may be the same source).
    pub second: String,
}

/// An ID not greater than the one its source recorded before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderViolation {
    /// The source.
    pub source: String,
    /// The ID it recorded before.
    pub previous: u64,
    /// The ID that should have been greater.
    pub next: u64,
    /// Position of `next` among the source's IDs, from 0.
    pub index: u64,
}

/// A negative value recorded as an ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negative {
    /// The source.
    pub source: String,
    /// The value.
    pub value: i64,
}

/// What an [`IdChecker`] found. The lists hold the first 100 findings of each kind; the
/// counts are exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// IDs recorded, duplicates included.
    pub ids: u64,
    /// Distinct sources.
    pub sources: usize,
    /// Number of duplicate recordings.
    pub duplicate_count: u64,
    /// The first duplicates.
    pub duplicates: Vec<Duplicate>,
    /// Number of order violations.
    pub order_violation_count: u64,
    /// The first order violations.
    pub order_violations: Vec<OrderViolation>,
    /// Number of negative values.
    pub negative_count: u64,
    /// The first negative values.
    pub negatives: Vec<Negative>,
}

impl Report {
    /// True when nothing was found.
    pub fn is_clean(&self) -> bool {
        self.duplicate_count == 0 && self.order_violation_count == 0 && self.negative_count == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} IDs from {} sources: {} duplicates, {} order violations, {} negative",
            self.ids,
            self.sources,
            self.duplicate_count,
            self.order_violation_count,
            self.negative_count
        )?;
        for d in &self.duplicates {
            write!(
                f,
                "\n  duplicate {} from {:?}, first from {:?}",
                d.id, d.second, d.first
            )?;
        }
        for o in &self.order_violations {
            write!(
                f,
                "\n  {:?}: ID #{} is {}, not above the previous {}",
                o.source, o.index, o.next, o.previous
            )?;
        }
        for n in &self.negatives {
            write!(f, "\n  {:?}: negative value {}", n.source, n.value)?;
        }
        Ok(())
    }
}

/// Collects IDs from many sources (threads, tasks, clients, runs) and reports every ID seen
/// twice, with both sources, and every source whose IDs stop increasing.
///
/// It is `Sync`: share it by reference or in an `Arc` and [`record`](Self::record) from
/// anywhere. Memory is about 16 bytes per distinct ID.
///
/// ```
/// use snowdrift_testkit::IdChecker;
/// let checker = IdChecker::new();
/// checker.record("a", [1u64, 2, 3]);
/// checker.record("b", 3..5u64);
/// let report = checker.report();
/// assert_eq!(report.duplicate_count, 1);
/// assert_eq!(report.duplicates[0].first, "a");
/// assert_eq!(report.duplicates[0].second, "b");
/// ```
#[derive(Debug, Default)]
pub struct IdChecker {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Every ID seen, with the index of the source that recorded it first.
    seen: HashMap<u64, u32>,
    names: Vec<String>,
    sources: HashMap<String, SourceState>,
    report: Report,
}

#[derive(Debug)]
struct SourceState {
    index: u32,
    last: Option<u64>,
    count: u64,
}

impl IdChecker {
    /// An empty checker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `ids` from `source`, which must be strictly increasing within the source
    /// (across calls too).
    pub fn record<I>(&self, source: &str, ids: I)
    where
        I: IntoIterator,
        I::Item: IdValue,
    {
        self.record_inner(source, ids, true);
    }

    /// Records `ids` from `source` without checking their order (duplicates still count).
    pub fn record_unordered<I>(&self, source: &str, ids: I)
    where
        I: IntoIterator,
        I::Item: IdValue,
    {
        self.record_inner(source, ids, false);
    }

    fn record_inner<I>(&self, source: &str, ids: I, ordered: bool)
    where
        I: IntoIterator,
        I::Item: IdValue,
    {
        // The state stays consistent whatever a panicking recorder did.
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Inner {
            seen,
            names,
            sources,
            report,
        } = &mut *inner;
        if !sources.contains_key(source) {
            let index = u32::try_from(names.len()).unwrap_or(u32::MAX);
            names.push(source.to_string());
            sources.insert(
                source.to_string(),
                SourceState {
                    index,
                    last: None,
                    count: 0,
                },
            );
            report.sources = names.len();
        }
        let Some(state) = sources.get_mut(source) else {
            return;
        };
        for value in ids {
            report.ids += 1;
            let position = state.count;
            state.count += 1;
            let id = match value.to_id() {
                Ok(id) => id,
                Err(value) => {
                    report.negative_count += 1;
                    if report.negatives.len() < KEPT {
                        report.negatives.push(Negative {
                            source: source.to_string(),
                            value,
                        });
                    }
                    continue;
                }
            };
            if ordered {
                if let Some(previous) = state.last.filter(|&p| id <= p) {
                    report.order_violation_count += 1;
                    if report.order_violations.len() < KEPT {
                        report.order_violations.push(OrderViolation {
                            source: source.to_string(),
                            previous,
                            next: id,
                            index: position,
                        });
                    }
                }
                state.last = Some(id);
            }
            if let Some(&first) = seen.get(&id) {
                report.duplicate_count += 1;
                if report.duplicates.len() < KEPT {
                    report.duplicates.push(Duplicate {
                        id,
                        first: names[first as usize].clone(),
                        second: source.to_string(),
                    });
                }
            } else {
                seen.insert(id, state.index);
            }
        }
    }

    /// Distinct IDs recorded so far.
    pub fn distinct(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .seen
            .len()
    }

    /// What was found so far.
    pub fn report(&self) -> Report {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .report
            .clone()
    }

    /// Panics with the report unless it is clean; returns it otherwise. For tests.
    #[track_caller]
    pub fn assert_clean(&self) -> Report {
        let report = self.report();
        assert!(report.is_clean(), "ID check failed: {report}");
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_when_unique_and_increasing_per_source() {
        let c = IdChecker::new();
        c.record("a", [1u64, 3, 5]);
        c.record("b", [2i64, 4, 6]);
        c.record("a", 7..10u64);
        let r = c.assert_clean();
        assert_eq!((r.ids, r.sources), (9, 2));
        assert_eq!(c.distinct(), 9);
    }

    #[test]
    fn duplicates_name_both_sources() {
        let c = IdChecker::new();
        c.record("a", [1u64, 2]);
        c.record("b", [5u64, 2]);
        c.record("a", [5u64]);
        let r = c.report();
        assert!(!r.is_clean());
        assert_eq!(r.duplicate_count, 2);
        assert_eq!(
            r.duplicates,
            vec![
                Duplicate {
                    id: 2,
                    first: "a".into(),
                    second: "b".into()
                },
                Duplicate {
                    id: 5,
                    first: "b".into(),
                    second: "a".into()
                },
            ]
        );
        // "b" went 5 then 2: an order violation too.
        assert_eq!(r.order_violation_count, 1);
        assert!(
            r.to_string()
                .contains("duplicate 2 from \"b\", first from \"a\"")
        );
    }

    #[test]
    fn order_is_checked_per_source_and_across_calls() {
        let c = IdChecker::new();
        c.record("a", [10u64]);
        c.record("b", [1u64]);
        c.record("a", [11u64, 11, 9]);
        let r = c.report();
        assert_eq!(r.order_violation_count, 2);
        assert_eq!(
            r.order_violations[1],
            OrderViolation {
                source: "a".into(),
                previous: 11,
                next: 9,
                index: 3
            }
        );
        c.record_unordered("c", [100u64, 50]);
        assert_eq!(c.report().order_violation_count, 2);
    }

    #[test]
    fn negatives_are_findings() {
        let c = IdChecker::new();
        c.record("a", [-1i64, 1]);
        let r = c.report();
        assert_eq!(r.negative_count, 1);
        assert_eq!(r.negatives[0].value, -1);
    }

    #[test]
    #[should_panic(expected = "1 duplicates")]
    fn assert_clean_panics_on_a_duplicate() {
        let c = IdChecker::new();
        c.record("a", [1u64]);
        c.record("b", [1u64]);
        c.assert_clean();
    }

    #[test]
    fn kept_findings_are_capped_but_counted() {
        let c = IdChecker::new();
        c.record_unordered("a", 0..500u64);
        c.record_unordered("b", 0..500u64);
        let r = c.report();
        assert_eq!(r.duplicate_count, 500);
        assert_eq!(r.duplicates.len(), KEPT);
    }
}
