//! The one backoff of the store: how long to wait before trying again what failed several
//! times in a row (a ticket server that is down, a striped segment store, a segment
//! refill).

use std::time::Duration;

/// Waits that double with each failure in a row, from `first` up to `longest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backoff {
    first: Duration,
    longest: Duration,
}

impl Backoff {
    /// Waits from `first` up to `longest`.
    pub(crate) const fn new(first: Duration, longest: Duration) -> Self {
        Self { first, longest }
    }

    /// The wait after the `failures`-th failure in a row (1 for the first; 0 counts as 1):
    /// `first`, twice that after the second, and so on, at most `longest`.
    pub(crate) fn after(self, failures: u32) -> Duration {
        // 2^30 times any first wait is past every sensible longest one.
        let doublings = failures.saturating_sub(1).min(30);
        self.first.saturating_mul(1 << doublings).min(self.longest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_up_to_the_longest() {
        let ms = Duration::from_millis;
        let b = Backoff::new(ms(50), ms(5_000));
        let waits: Vec<Duration> = (1..=9).map(|f| b.after(f)).collect();
        assert_eq!(
            waits,
            [50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000].map(ms)
        );
        assert_eq!(b.after(0), ms(50));
        assert_eq!(b.after(u32::MAX), ms(5_000));
        // Saturates rather than overflows with a huge first wait.
        let huge = Backoff::new(Duration::MAX / 2, Duration::MAX);
        assert_eq!(huge.after(40), Duration::MAX);
    }
}
