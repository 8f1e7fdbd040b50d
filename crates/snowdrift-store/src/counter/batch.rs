//! The values a counter fetched from Redis and has not served yet.

/// A run of consecutive counter values of one period, served from memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Batch {
    /// The period the values belong to (`""` for a counter that never resets).
    pub(super) period_key: String,
    /// The next value to serve.
    pub(super) next: i64,
    /// How many values from `next` on may still be served.
    pub(super) remaining: u64,
}

/// What an `INCRBY` by `added` that returned `end` gives a counter whose values may not pass
/// `max`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fetched {
    /// The values `end - added + 1 ..= min(end, max)` (possibly none, when the counter had
    /// passed `max` already).
    Batch(Batch),
    /// The key held a negative value before the `INCRBY`: someone set it by hand.
    Corrupt {
        /// The value before the `INCRBY`.
        before: i64,
    },
}

impl Batch {
    /// Interprets an `INCRBY key added` that returned `end`.
    pub(super) fn fetched(period_key: &str, end: i64, added: u64, max: u64) -> Fetched {
        // i128: `end - added` cannot overflow here, and `max` may be `i64::MAX`.
        let before = i128::from(end) - i128::from(added);
        if before < 0 {
            return Fetched::Corrupt {
                before: i64::try_from(before).unwrap_or(i64::MIN),
            };
        }
        let first = before + 1;
        let last = i128::from(end).min(i128::from(max));
        let remaining = u64::try_from(last - first + 1).unwrap_or(0);
        Fetched::Batch(Batch {
            period_key: period_key.to_string(),
            // Values are at most `end`, an i64; when none remain `next` is never read.
            next: i64::try_from(first).unwrap_or(i64::MAX),
            remaining,
        })
    }

    /// Takes `n` consecutive values if this batch belongs to `period_key` and holds that
    /// many; returns the first.
    pub(super) fn take(&mut self, period_key: &str, n: u64) -> Option<i64> {
        if self.period_key != period_key || self.remaining < n || n == 0 {
            return None;
        }
        let first = self.next;
        self.remaining -= n;
        // Past the last value `next` may not fit an i64, but then nothing remains to read it.
        self.next = i64::try_from(i128::from(first) + i128::from(n)).unwrap_or(i64::MAX);
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(end: i64, added: u64, max: u64) -> Batch {
        match Batch::fetched("p", end, added, max) {
            Fetched::Batch(b) => b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_fetch_serves_its_values_in_order_then_runs_dry() {
        let mut b = batch(100, 100, u64::MAX);
        assert_eq!((b.next, b.remaining), (1, 100));
        assert_eq!(b.take("p", 30), Some(1));
        assert_eq!(b.take("p", 70), Some(31));
        assert_eq!(b.take("p", 1), None);
        assert_eq!(b.remaining, 0);
    }

    #[test]
    fn another_period_or_too_many_takes_nothing() {
        let mut b = batch(10, 10, u64::MAX);
        assert_eq!(b.take("q", 1), None);
        assert_eq!(b.take("p", 11), None);
        assert_eq!(b.take("p", 0), None);
        assert_eq!(b.remaining, 10);
    }

    #[test]
    fn values_over_the_maximum_are_cut_off_not_wrapped() {
        // The key held 995; INCRBY 10 gives 996..=1005 of which 996..=999 fit {seq:03}.
        let mut b = batch(1005, 10, 999);
        assert_eq!((b.next, b.remaining), (996, 4));
        assert_eq!(b.take("p", 5), None);
        assert_eq!(b.take("p", 4), Some(996));
        // Already past the maximum: nothing at all.
        assert_eq!(batch(1015, 10, 999).remaining, 0);
        assert_eq!(batch(1009, 10, 999).remaining, 0);
        assert_eq!(batch(1000, 10, 999).remaining, 9);
    }

    #[test]
    fn the_top_of_i64_is_served_exactly_once() {
        let max = i64::MAX.unsigned_abs();
        let mut b = batch(i64::MAX, 3, max);
        assert_eq!((b.next, b.remaining), (i64::MAX - 2, 3));
        assert_eq!(b.take("p", 2), Some(i64::MAX - 2));
        assert_eq!(b.take("p", 1), Some(i64::MAX));
        assert_eq!(b.take("p", 1), None);
    }

    #[test]
    fn a_negative_start_is_reported() {
        assert_eq!(
            Batch::fetched("p", 5, 10, 100),
            Fetched::Corrupt { before: -5 }
        );
        assert!(matches!(
            Batch::fetched("p", 10, 10, 100),
            Fetched::Batch(Batch { next: 1, .. })
        ));
    }
}
