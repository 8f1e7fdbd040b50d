//! Leaf's dynamic step: how large the next segment should be.

use std::time::Duration;

/// Chooses the next segment's step from how long the last one lasted.
///
/// Leaf's rule, made configurable: a segment used up in less than `grow_below` (15 minutes)
/// doubles the step, up to `max_step` (1,000,000); one that lasted more than `shrink_above`
/// (30 minutes) halves it, never below the tag's stored step. A busy tag then touches the
/// database about once per 15-30 minutes whatever its rate, and an idle one wastes little
/// on restart.
///
/// ```
/// use std::time::Duration;
/// use snowdrift_core::segment::StepPolicy;
/// let p = StepPolicy::default();
/// assert_eq!(p.next_step(1000, 1000, Duration::from_secs(60)), 2000);
/// assert_eq!(p.next_step(8000, 1000, Duration::from_secs(3600)), 4000);
/// assert_eq!(p.next_step(1000, 1000, Duration::from_secs(3600)), 1000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepPolicy {
    /// A segment that lasted less than this doubles the step.
    pub grow_below: Duration,
    /// A segment that lasted more than this halves the step.
    pub shrink_above: Duration,
    /// The step never grows beyond this.
    pub max_step: u64,
}

impl Default for StepPolicy {
    fn default() -> Self {
        Self {
            grow_below: Duration::from_secs(15 * 60),
            shrink_above: Duration::from_secs(30 * 60),
            max_step: 1_000_000,
        }
    }
}

impl StepPolicy {
    /// The step for the next segment, given the current step, the tag's stored (minimum)
    /// step and how long the last segment lasted.
    pub fn next_step(&self, current: u64, stored: u64, lasted: Duration) -> u64 {
        let floor = stored.max(1);
        let ceiling = self.max_step.max(floor);
        let next = if lasted < self.grow_below {
            current.saturating_mul(2)
        } else if lasted > self.shrink_above {
            current / 2
        } else {
            current
        };
        next.clamp(floor, ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn grows_to_the_cap_and_shrinks_to_the_stored_step() {
        let p = StepPolicy::default();
        let mut step = 1000;
        for _ in 0..20 {
            step = p.next_step(step, 1000, MIN);
        }
        assert_eq!(step, 1_000_000);
        for _ in 0..20 {
            step = p.next_step(step, 1000, 60 * MIN);
        }
        assert_eq!(step, 1000);
        assert_eq!(
            p.next_step(5000, 1000, 20 * MIN),
            5000,
            "between the bounds: unchanged"
        );
    }

    #[test]
    fn a_stored_step_above_the_cap_wins() {
        let p = StepPolicy {
            max_step: 100,
            ..StepPolicy::default()
        };
        assert_eq!(p.next_step(500, 500, MIN), 500);
    }

    proptest! {
        #[test]
        fn always_within_bounds(current in 0u64..u64::MAX, stored in 0u64..10_000_000, secs in 0u64..100_000) {
            let p = StepPolicy::default();
            let next = p.next_step(current, stored, Duration::from_secs(secs));
            prop_assert!(next >= stored.max(1));
            prop_assert!(next <= p.max_step.max(stored.max(1)));
        }
    }
}
