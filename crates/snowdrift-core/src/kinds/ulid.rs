//! ULIDs (48-bit Unix milliseconds, 80 random bits, Crockford base32) through the `ulid`
//! crate, with the time from a [`Clock`] and a generator the caller owns.
//!
//! ```
//! use snowdrift_core::{clock::ManualClock, kinds::ulid::UlidGenerator};
//! let generator = UlidGenerator::new(ManualClock::new(1_700_000_000_000));
//! let a = generator.next()?;
//! let b = generator.next()?;
//! assert!(a < b);
//! assert_eq!(a.timestamp_ms(), 1_700_000_000_000);
//! assert_eq!(a.to_string().len(), 26);
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::convert::Infallible;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

pub use ::ulid::Ulid;

use crate::clock::Clock;
use crate::error::{Error, Result};

/// A source of random bytes: fills the buffer it is given.
type FillRandom = Box<dyn FnMut(&mut [u8]) + Send>;

/// The first millisecond (since 1970) a ULID's 48-bit time field cannot hold.
const UNIX_MS_END: u64 = 1 << 48;

/// Makes monotonic ULIDs: within one millisecond each ULID is the previous one plus one,
/// as the ULID specification's monotonic mode says, so they sort in the order they were
/// made; a clock that steps back is treated as the same millisecond.
///
/// It wraps the `ulid` crate's [`Generator`](::ulid::Generator) in a mutex this value owns.
/// The price of monotonic mode: after the first ULID of a millisecond the next ones are
/// guessable (the previous plus one), and when the 80-bit random part would pass its
/// maximum within one millisecond, [`next`](Self::next) fails with
/// [`Error::Overflow`] until the clock moves on, rather than wrap.
pub struct UlidGenerator<C> {
    clock: C,
    state: Mutex<State>,
}

struct State {
    generator: ::ulid::Generator,
    random: Option<FillRandom>,
}

impl<C: fmt::Debug> fmt::Debug for UlidGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UlidGenerator")
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> UlidGenerator<C> {
    /// A generator reading the time from `clock` and randomness from the `ulid` crate's
    /// default generator (`rand`'s thread-local CSPRNG).
    pub fn new(clock: C) -> Self {
        Self {
            clock,
            state: Mutex::new(State {
                generator: ::ulid::Generator::new(),
                random: None,
            }),
        }
    }

    /// A generator that takes its random bytes from `fill`, which must fill the whole buffer
    /// it is given. Use a CSPRNG in production; tests can make ULIDs reproducible.
    ///
    /// ```
    /// use snowdrift_core::{clock::ManualClock, kinds::ulid::UlidGenerator};
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = UlidGenerator::with_random(clock, |buf: &mut [u8]| buf.fill(0));
    /// assert_eq!(generator.next()?.to_string(), "01HF7YAT000000000000000000");
    /// assert_eq!(generator.next()?.to_string(), "01HF7YAT000000000000000001");
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn with_random(clock: C, fill: impl FnMut(&mut [u8]) + Send + 'static) -> Self {
        Self {
            clock,
            state: Mutex::new(State {
                generator: ::ulid::Generator::new(),
                random: Some(Box::new(fill)),
            }),
        }
    }

    /// The next ULID.
    ///
    /// Fails with [`Error::Overflow`] when the random part is used up within one
    /// millisecond (after 2^80 minus its random start), and with
    /// [`Error::ClockOutOfRange`] when the clock reads beyond the year 10889.
    pub fn next(&self) -> Result<Ulid> {
        let ms = self.clock.now_ms();
        if ms >= UNIX_MS_END {
            return Err(Error::ClockOutOfRange {
                kind: "ULID",
                now_ms: ms,
                range: "1970 to the year 10889",
            });
        }
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
        // The state is the last ULID, assigned only after a successful step, so it is valid
        // even if a panic (in a caller's random source) poisoned the lock.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State { generator, random } = &mut *state;
        let made = match random {
            Some(fill) => generator.generate_from_datetime_with_source(at, &mut FillRng(fill)),
            None => generator.generate_from_datetime(at),
        };
        made.map_err(|_| Error::Overflow { kind: "ULID" })
    }
}

/// Adapts a byte-filling closure to the RNG trait the `ulid` crate takes.
struct FillRng<'a>(&'a mut FillRandom);

impl rand_core::TryRng for FillRng<'_> {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut b = [0u8; 4];
        (self.0)(&mut b);
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut b = [0u8; 8];
        (self.0)(&mut b);
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        (self.0)(dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::collections::HashSet;
    use std::sync::Arc;

    const NOW: u64 = 1_700_000_000_000;

    #[test]
    fn monotonic_within_a_millisecond_and_across_steps_back() {
        let clock = ManualClock::new(NOW);
        let generator = UlidGenerator::new(clock.clone());
        let mut last = generator.next().expect("in range");
        assert_eq!(last.timestamp_ms(), NOW);
        for i in 0..5_000 {
            match i {
                1_000 => clock.step_back(10),
                2_000 => clock.advance(1_000),
                _ => {}
            }
            let next = generator.next().expect("no overflow");
            assert!(next > last, "{i}");
            last = next;
        }
        assert_eq!(last.timestamp_ms(), NOW + 990);
    }

    #[test]
    fn random_source_is_used() {
        let mut counter = 0u8;
        let generator =
            UlidGenerator::with_random(ManualClock::new(NOW), move |buf: &mut [u8]| {
                for b in buf.iter_mut() {
                    counter = counter.wrapping_add(1);
                    *b = counter;
                }
            });
        let a = generator.next().expect("in range");
        assert_eq!(a.timestamp_ms(), NOW);
        assert_ne!(a.random(), 0);
        let again = UlidGenerator::with_random(ManualClock::new(NOW), {
            let mut counter = 0u8;
            move |buf: &mut [u8]| {
                for b in buf.iter_mut() {
                    counter = counter.wrapping_add(1);
                    *b = counter;
                }
            }
        });
        assert_eq!(again.next(), Ok(a), "same bytes, same ULID");
    }

    #[test]
    fn overflow_is_an_error_until_the_clock_moves() {
        let clock = ManualClock::new(NOW);
        let generator = UlidGenerator::with_random(clock.clone(), |buf: &mut [u8]| buf.fill(0xff));
        let first = generator.next().expect("in range");
        assert_eq!(first.random(), (1u128 << 80) - 1);
        assert_eq!(generator.next(), Err(Error::Overflow { kind: "ULID" }));
        assert_eq!(generator.next(), Err(Error::Overflow { kind: "ULID" }));
        clock.advance(1);
        let next = generator.next().expect("a new millisecond");
        assert!(next > first);
    }

    #[test]
    fn rejects_clocks_past_its_field() {
        let generator = UlidGenerator::new(ManualClock::new(1 << 48));
        let err = generator.next().expect_err("out of range").to_string();
        assert!(err.contains("10889"), "{err}");
    }

    #[test]
    fn shareable_between_threads() {
        let generator = Arc::new(UlidGenerator::new(ManualClock::new(NOW)));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let g = generator.clone();
                std::thread::spawn(move || (0..2_000).map(|_| g.next()).collect::<Result<Vec<_>>>())
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            for id in h.join().expect("no panic").expect("no overflow") {
                assert!(all.insert(id));
            }
        }
        assert_eq!(all.len(), 4_000);
    }
}
