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

/// Applies a [`StepPolicy`] to a running tag: measures how long a segment's worth of IDs
/// took to be used, and gives the step of each next claim.
///
/// Leaf measures "how long the last segment lasted" between two claims, which is right
/// for a double buffer (one claim per segment used up). A chain that keeps several
/// segments ahead claims in bursts, and the time between two claims of a burst says
/// nothing about demand: taken literally it would double the step at every claim. So the
/// tracker re-evaluates only once a whole step of IDs was used since the last evaluation
/// (or `shrink_above` passed), and judges by the time that took.
///
/// ```
/// use std::time::Duration;
/// use snowdrift_core::segment::{StepPolicy, StepTracker};
/// let mut t = StepTracker::new(StepPolicy::default(), 1000, Duration::ZERO);
/// // Three claims in a burst, nothing used yet: the step stays.
/// assert_eq!(t.next_step(0, 1000, Duration::from_millis(1)), 1000);
/// assert_eq!(t.next_step(0, 1000, Duration::from_millis(2)), 1000);
/// // A thousand used within a minute: segments last under 15 minutes, so double.
/// assert_eq!(t.next_step(1000, 1000, Duration::from_secs(60)), 2000);
/// ```
#[derive(Debug, Clone)]
pub struct StepTracker {
    policy: StepPolicy,
    step: u64,
    used_at_last: u64,
    last: Duration,
}

impl StepTracker {
    /// Starts at `step`, at time `now` (any monotonic origin, the same for every call).
    pub fn new(policy: StepPolicy, step: u64, now: Duration) -> Self {
        Self {
            policy,
            step,
            used_at_last: 0,
            last: now,
        }
    }

    /// The step for the next claim, given how many IDs were used since the tracker
    /// started (`used`, never decreasing), the tag's stored step and the time.
    pub fn next_step(&mut self, used: u64, stored: u64, now: Duration) -> u64 {
        let since = used.saturating_sub(self.used_at_last);
        let elapsed = now.saturating_sub(self.last);
        let lasted = if since >= self.step.max(1) {
            // How long one segment of the current step took at the measured pace.
            Some(elapsed.mul_f64(self.step as f64 / since as f64))
        } else if elapsed > self.policy.shrink_above {
            Some(elapsed)
        } else {
            None
        };
        match lasted {
            Some(lasted) => {
                self.step = self.policy.next_step(self.step, stored, lasted);
                self.used_at_last = used;
                self.last = now;
            }
            // Not enough seen to judge: keep the step, within the stored floor and the cap.
            None => {
                self.step = self
                    .policy
                    .next_step(self.step, stored, self.policy.grow_below)
            }
        }
        self.step
    }

    /// The current step.
    pub fn step(&self) -> u64 {
        self.step
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

    #[test]
    fn a_burst_of_claims_does_not_grow_the_step() {
        let mut t = StepTracker::new(StepPolicy::default(), 1000, Duration::ZERO);
        for ms in 1..50 {
            assert_eq!(t.next_step(10, 1000, Duration::from_millis(ms)), 1000);
        }
    }

    #[test]
    fn the_step_follows_the_pace_of_use() {
        let mut t = StepTracker::new(StepPolicy::default(), 1000, Duration::ZERO);
        // 1000 IDs a minute: a segment lasts a minute, so the step doubles...
        assert_eq!(t.next_step(1000, 1000, MIN), 2000);
        // ...until a segment lasts between 15 and 30 minutes (16,000 at this pace).
        let mut used = 1000;
        let mut now = MIN;
        for _ in 0..10 {
            used += t.step();
            now += MIN * (t.step() / 1000) as u32;
            t.next_step(used, 1000, now);
        }
        assert_eq!(t.step(), 16_000);
        // An idle tag goes back to its stored step, one halving per idle half hour.
        for _ in 0..10 {
            now += 31 * MIN;
            t.next_step(used, 1000, now);
        }
        assert_eq!(t.step(), 1000);
        // A step updated in the store above the current one is the new floor at once.
        assert_eq!(t.next_step(used, 5000, now), 5000);
    }
}
