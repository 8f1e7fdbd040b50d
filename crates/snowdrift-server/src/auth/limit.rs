//! A token's request rate: `rate` requests per second on average, up to `burst` at once
//! (GCRA, from `governor`).

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::error::ConfigError;

/// One token's limiter.
#[derive(Debug)]
pub struct RateLimit {
    limiter: DefaultDirectRateLimiter,
    clock: DefaultClock,
    rate: NonZeroU32,
    burst: NonZeroU32,
}

impl RateLimit {
    /// `rate` requests per second, `burst` at once (`rate` when not given).
    pub fn new(rate: u32, burst: Option<u32>) -> Result<Self, ConfigError> {
        let rate = NonZeroU32::new(rate).ok_or_else(|| {
            ConfigError::new(
                "rate is 0, which would refuse every request; give requests per second (at \
                 least 1), or leave rate out for no limit"
                    .into(),
            )
        })?;
        let burst = match burst {
            None => rate,
            Some(b) => NonZeroU32::new(b).ok_or_else(|| {
                ConfigError::new(
                    "burst is 0, which would refuse every request; give at least 1".into(),
                )
            })?,
        };
        let clock = DefaultClock::default();
        let limiter = RateLimiter::direct_with_clock(
            Quota::per_second(rate).allow_burst(burst),
            clock.clone(),
        );
        Ok(Self {
            limiter,
            clock,
            rate,
            burst,
        })
    }

    /// Takes one request's share, or says how long until one is free.
    pub fn take(&self) -> Result<(), Duration> {
        self.limiter
            .check()
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Requests per second.
    pub fn rate(&self) -> u32 {
        self.rate.get()
    }

    /// Requests at once.
    pub fn burst(&self) -> u32 {
        self.burst.get()
    }
}

/// `wait` as a `Retry-After` value: whole seconds, rounded up, at least 1 (a client that
/// retries after 0 seconds would just be refused again).
pub fn retry_after_secs(wait: Duration) -> u64 {
    let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    whole.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_passes_then_a_request_waits_at_most_one_interval() {
        // 1 per second with a burst of 3: the first three pass at once. A slow machine may
        // let one more through as time passes, so take until refused (a few microseconds
        // each: a thousand takes cannot all find a free second).
        let limit = RateLimit::new(1, Some(3)).unwrap();
        for i in 0..3 {
            assert_eq!(limit.take(), Ok(()), "request {i} is within the burst");
        }
        let wait = (0..1000)
            .find_map(|_| limit.take().err())
            .expect("a limiter of 1/s refuses within 1000 quick requests");
        assert!(wait <= Duration::from_secs(1), "{wait:?}");
        assert_eq!(retry_after_secs(wait), 1);
    }

    #[test]
    fn burst_defaults_to_rate_and_zero_is_refused() {
        let limit = RateLimit::new(5, None).unwrap();
        assert_eq!(limit.burst(), 5);
        assert!(
            RateLimit::new(0, None)
                .unwrap_err()
                .message()
                .contains("rate is 0")
        );
        assert!(
            RateLimit::new(5, Some(0))
                .unwrap_err()
                .message()
                .contains("burst is 0")
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_of_at_least_one() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(7)), 7);
    }
}
