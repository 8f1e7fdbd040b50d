//! KSUIDs ([segmentio/ksuid](https://github.com/segmentio/ksuid)): 20 bytes, a 4-byte
//! big-endian count of seconds since 2014-05-13T16:53:20Z (Unix time 1,400,000,000) and 16
//! random bytes, written as 27 characters of base62 (`0-9A-Za-z`, zero-padded). The text
//! sorts as the bytes do, so KSUIDs sort by their second; within one second their order is
//! random, as in segmentio's `ksuid.New()`.
//!
//! ```
//! use snowdrift_core::kinds::ksuid::Ksuid;
//! // The example of segmentio's README.
//! let id: Ksuid = "0ujtsYcgvSTl8PAuAdqWYSMnLOv".parse()?;
//! assert_eq!(id.timestamp(), 107_608_047);
//! assert_eq!(id.unix_secs(), 1_507_608_047); // 2017-10-10T04:00:47Z
//! assert_eq!(id.payload(), [
//!     0xb5, 0xa1, 0xcd, 0x34, 0xb5, 0xf9, 0x9d, 0x11,
//!     0x54, 0xfb, 0x68, 0x53, 0x34, 0x5c, 0x97, 0x35,
//! ]);
//! assert_eq!(id.to_string(), "0ujtsYcgvSTl8PAuAdqWYSMnLOv");
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use rand::Rng as _;

use crate::clock::Clock;
use crate::codec::{describe_char, invalid};
use crate::error::{Error, Result};

/// The KSUID epoch in Unix seconds: 2014-05-13T16:53:20Z.
pub const EPOCH_SECS: u64 = 1_400_000_000;

/// Bytes of a KSUID.
pub const BYTES: usize = 20;

/// Characters of a KSUID's text.
pub const TEXT_LEN: usize = 27;

const CODEC: &str = "ksuid";

/// segmentio's base62 alphabet: digits, then upper case, then lower case (ASCII order, so
/// the zero-padded text sorts as the number does).
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// 62^5, the largest power of 62 below 2^32: base conversion takes five digits a step.
const BASE5: u64 = 916_132_832;

/// The largest KSUID's text (2^160 - 1).
pub const MAX_TEXT: &str = "aWgEPTl1tmebfsQzFP4bxwgy80V";

/// A KSUID: its 20 bytes. Ordering compares the bytes, so KSUIDs sort by their second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Ksuid([u8; BYTES]);

impl Ksuid {
    /// The KSUID with these bytes.
    pub const fn from_bytes(bytes: [u8; BYTES]) -> Self {
        Self(bytes)
    }

    /// A KSUID of `timestamp` (seconds since [`EPOCH_SECS`]) and `payload`.
    ///
    /// ```
    /// use snowdrift_core::kinds::ksuid::Ksuid;
    /// assert_eq!(Ksuid::from_parts(0, [0; 16]).to_string(), "000000000000000000000000000");
    /// assert_eq!(Ksuid::from_parts(u32::MAX, [0xff; 16]).to_string(), "aWgEPTl1tmebfsQzFP4bxwgy80V");
    /// ```
    pub const fn from_parts(timestamp: u32, payload: [u8; 16]) -> Self {
        let t = timestamp.to_be_bytes();
        let mut bytes = [0u8; BYTES];
        bytes[0] = t[0];
        bytes[1] = t[1];
        bytes[2] = t[2];
        bytes[3] = t[3];
        let mut i = 0;
        while i < 16 {
            bytes[4 + i] = payload[i];
            i += 1;
        }
        Self(bytes)
    }

    /// The bytes.
    pub const fn bytes(&self) -> [u8; BYTES] {
        self.0
    }

    /// Seconds since the KSUID epoch (2014-05-13T16:53:20Z), bytes 0 to 3.
    pub const fn timestamp(&self) -> u32 {
        let b = self.0;
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Seconds since 1970 when it was made.
    pub const fn unix_secs(&self) -> u64 {
        self.timestamp() as u64 + EPOCH_SECS
    }

    /// The 16 random bytes.
    pub fn payload(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out.copy_from_slice(&self.0[4..]);
        out
    }

    /// The 27-character text, without allocating.
    pub fn encode(&self) -> [u8; TEXT_LEN] {
        // The 160 bits as five 32-bit limbs, most significant first, divided by 62^5 in
        // turn: each remainder gives five digits, least significant first.
        let mut limbs = [0u32; 5];
        for (limb, chunk) in limbs.iter_mut().zip(self.0.chunks_exact(4)) {
            *limb = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        let mut out = [b'0'; TEXT_LEN];
        let mut end = TEXT_LEN;
        while end > 0 {
            let mut rem = 0u64;
            for limb in limbs.iter_mut() {
                let acc = rem << 32 | u64::from(*limb);
                *limb = (acc / BASE5) as u32;
                rem = acc % BASE5;
            }
            for _ in 0..5 {
                if end == 0 {
                    break;
                }
                end -= 1;
                out[end] = ALPHABET[(rem % 62) as usize];
                rem /= 62;
            }
        }
        out
    }
}

impl fmt::Debug for Ksuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ksuid({self})")
    }
}

impl fmt::Display for Ksuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The alphabet is ASCII.
        f.write_str(std::str::from_utf8(&self.encode()).unwrap_or_default())
    }
}

/// A base62 character's value; `None` for anything else.
const fn digit(b: u8) -> Option<u64> {
    Some(match b {
        b'0'..=b'9' => b - b'0',
        b'A'..=b'Z' => b - b'A' + 10,
        b'a'..=b'z' => b - b'a' + 36,
        _ => return None,
    } as u64)
}

impl FromStr for Ksuid {
    type Err = Error;

    /// Reads exactly 27 base62 characters (`0-9A-Za-z`; case matters) no larger than
    /// [`MAX_TEXT`].
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| invalid(CODEC, s, why);
        if s.len() != TEXT_LEN {
            return Err(bad(format!(
                "it has {} bytes; a KSUID is exactly 27 characters of 0-9, A-Z and a-z",
                s.len()
            )));
        }
        // limbs = limbs * 62^n + chunk, five digits at a time (the last step two).
        let mut limbs = [0u32; 5];
        for (c, chunk) in s.as_bytes().chunks(5).enumerate() {
            let mut value = 0u64;
            let mut scale = 1u64;
            for (i, &b) in chunk.iter().enumerate() {
                let Some(d) = digit(b) else {
                    return Err(bad(format!(
                        "{} is not base62; a KSUID is 27 characters of 0-9, A-Z and a-z",
                        describe_char(s, c * 5 + i)
                    )));
                };
                value = value * 62 + d;
                scale *= 62;
            }
            let mut carry = value;
            for limb in limbs.iter_mut().rev() {
                let acc = u64::from(*limb) * scale + carry;
                *limb = acc as u32;
                carry = acc >> 32;
            }
            if carry != 0 {
                return Err(bad(format!(
                    "it is larger than 160 bits; the largest KSUID is {MAX_TEXT}"
                )));
            }
        }
        let mut bytes = [0u8; BYTES];
        for (chunk, limb) in bytes.chunks_exact_mut(4).zip(limbs) {
            chunk.copy_from_slice(&limb.to_be_bytes());
        }
        Ok(Self(bytes))
    }
}

/// The first Unix second past the KSUID's 32-bit field (2150-06-19T23:21:36Z).
const UNIX_SECS_END: u64 = EPOCH_SECS + (1 << 32);

/// A source of random bytes: fills the buffer it is given.
type FillRandom = Box<dyn Fn(&mut [u8]) + Send + Sync>;

/// Makes KSUIDs: the clock's second and 16 random bytes from `rand`'s thread-local CSPRNG
/// (ChaCha, seeded and reseeded from the operating system), as segmentio's `ksuid.New()`
/// reads `crypto/rand`.
///
/// Nothing is shared between calls but the clock: any number of threads or processes make
/// KSUIDs without coordination, and uniqueness rests on the 128 random bits.
pub struct KsuidGenerator<C> {
    clock: C,
    random: Option<FillRandom>,
}

impl<C: fmt::Debug> fmt::Debug for KsuidGenerator<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KsuidGenerator")
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> KsuidGenerator<C> {
    /// A generator reading the time from `clock`.
    pub fn new(clock: C) -> Self {
        Self {
            clock,
            random: None,
        }
    }

    /// A generator that takes its payloads from `fill`, which must fill the whole buffer it
    /// is given. Use a CSPRNG in production; tests can make KSUIDs reproducible.
    ///
    /// ```
    /// use snowdrift_core::{clock::ManualClock, kinds::ksuid::KsuidGenerator};
    /// let generator = KsuidGenerator::with_random(ManualClock::new(1_400_000_001_000), |b: &mut [u8]| b.fill(0));
    /// assert_eq!(generator.next()?.to_string(), "000007n42DGM5Tflk9n8mt7Fhc8");
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn with_random(clock: C, fill: impl Fn(&mut [u8]) + Send + Sync + 'static) -> Self {
        Self {
            clock,
            random: Some(Box::new(fill)),
        }
    }

    /// The next KSUID. Fails when the clock reads a time its 32-bit field cannot hold
    /// (before 2014-05-13T16:53:20Z or from 2150-06-19T23:21:36Z).
    pub fn next(&self) -> Result<Ksuid> {
        let ms = self.clock.now_ms();
        let secs = ms / 1000;
        if !(EPOCH_SECS..UNIX_SECS_END).contains(&secs) {
            return Err(Error::ClockOutOfRange {
                kind: "KSUID",
                now_ms: ms,
                range: "2014-05-13T16:53:20Z to 2150-06-19T23:21:35Z",
            });
        }
        let mut payload = [0u8; 16];
        match &self.random {
            Some(fill) => fill(&mut payload),
            None => rand::rng().fill_bytes(&mut payload),
        }
        Ok(Ksuid::from_parts((secs - EPOCH_SECS) as u32, payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::collections::HashSet;

    #[test]
    fn extremes_and_their_text() {
        assert_eq!(Ksuid::default().to_string(), "0".repeat(27));
        let max = Ksuid::from_bytes([0xff; 20]);
        assert_eq!(max.to_string(), MAX_TEXT);
        assert_eq!(MAX_TEXT.parse::<Ksuid>(), Ok(max));
        assert_eq!("0".repeat(27).parse::<Ksuid>(), Ok(Ksuid::default()));
    }

    #[test]
    fn round_trips_every_bit_and_sorts_as_text() {
        let mut ids = Vec::new();
        for byte in 0..20 {
            for bit in 0..8 {
                let mut bytes = [0u8; 20];
                bytes[byte] = 1 << bit;
                ids.push(Ksuid::from_bytes(bytes));
                bytes = [0x5a; 20];
                bytes[byte] ^= 1 << bit;
                ids.push(Ksuid::from_bytes(bytes));
            }
        }
        for id in &ids {
            let text = id.to_string();
            assert_eq!(text.len(), 27);
            assert_eq!(text.parse::<Ksuid>(), Ok(*id), "{text}");
        }
        let mut by_bytes = ids.clone();
        by_bytes.sort();
        let mut by_text = ids;
        by_text.sort_by_key(|id| id.to_string());
        assert_eq!(by_bytes, by_text);
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        for (text, says) in [
            ("", "0 bytes"),
            ("0ujtsYcgvSTl8PAuAdqWYSMnLO", "26 bytes"),
            ("0ujtsYcgvSTl8PAuAdqWYSMnLOvv", "28 bytes"),
            ("0ujtsYcgvSTl8PAuAdqWYSMnLO-", "'-' at byte 26"),
            ("0ujtsYcgvSTl8PAuAdqWYSMnLO_", "'_' at byte 26"),
            ("aWgEPTl1tmebfsQzFP4bxwgy80W", "larger than 160 bits"),
            ("zzzzzzzzzzzzzzzzzzzzzzzzzzz", "larger than 160 bits"),
        ] {
            let e = text.parse::<Ksuid>().expect_err(text).to_string();
            assert!(e.contains(says) && e.contains("ksuid"), "{text:?}: {e}");
        }
        let e = "0ujtsYcgvSTl8PAuAdqWYSMnLé"
            .parse::<Ksuid>()
            .expect_err("é");
        assert!(e.to_string().contains("'é' at byte 25"), "{e}");
    }

    #[test]
    fn generated_ids_carry_the_second_and_random_payloads() {
        let clock = ManualClock::new(1_700_000_000_999);
        let g = KsuidGenerator::new(clock.clone());
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let id = g.next().expect("in range");
            assert_eq!(id.unix_secs(), 1_700_000_000);
            assert!(seen.insert(id.payload()));
        }
        let before = g.next().expect("in range");
        clock.advance(1_000);
        let after = g.next().expect("in range");
        assert!(after > before && after.to_string() > before.to_string());
    }

    #[test]
    fn refuses_clocks_outside_its_field() {
        for ms in [EPOCH_SECS * 1000 - 1, UNIX_SECS_END * 1000] {
            let e = KsuidGenerator::new(ManualClock::new(ms))
                .next()
                .expect_err("out of range")
                .to_string();
            assert!(e.contains("2014-05-13") && e.contains("2150"), "{e}");
        }
        let last = KsuidGenerator::new(ManualClock::new(UNIX_SECS_END * 1000 - 1))
            .next()
            .expect("the last second");
        assert_eq!(last.timestamp(), u32::MAX);
    }
}
