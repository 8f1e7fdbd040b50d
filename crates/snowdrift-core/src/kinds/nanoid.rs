//! Nano ID, as [ai/nanoid](https://github.com/ai/nanoid) makes it: `size` characters, each
//! drawn uniformly from an alphabet, with no modulo bias. Each random byte is masked to the
//! smallest power of two that covers the alphabet and bytes past the alphabet are thrown
//! away (rejection), so every character is equally likely whatever the alphabet's size.
//!
//! The bytes are used exactly as the reference uses them, so the same random bytes give the
//! same ID as nanoid 5's JavaScript: the default alphabet (nanoid's `urlAlphabet`, the 64
//! characters `A-Za-z0-9_-`) takes `size` bytes in order, as `nanoid()` does; any other
//! alphabet takes `step` bytes per round and reads them from the last, as `customAlphabet`
//! does.
//!
//! A Nano ID holds no fields: no time, no counter, nothing to decode but its characters.
//! Its uniqueness is in its randomness alone; [`Nanoid::collision_risk`] says how long a
//! rate of IDs takes to reach a 1% chance of one repeat, as nanoid's own calculator does.
//!
//! ```
//! use snowdrift_core::kinds::nanoid::Nanoid;
//! let ids = Nanoid::new("0123456789abcdef", 12)?;
//! let id = ids.generate(&mut |buf: &mut [u8]| { buf.fill(0xab); Ok(()) })?;
//! assert_eq!(id, "bbbbbbbbbbbb");
//! ids.check(&id)?;
//! assert!(ids.check("bbbbbbbbbbbg").is_err());
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use crate::codec::invalid;
use crate::error::{Error, Result};

/// nanoid's `urlAlphabet`: `A-Za-z0-9_-`, in the order nanoid maps bytes to them.
pub const DEFAULT_ALPHABET: &str =
    "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";

/// nanoid's default size: 126 random bits with the default alphabet.
pub const DEFAULT_SIZE: usize = 21;

/// The largest `size`.
pub const MAX_SIZE: usize = 255;

/// The most characters an alphabet may have: one byte picks one.
pub const MAX_ALPHABET: usize = 256;

/// The collision probability [`Nanoid::collision_risk`] reports the time to.
pub const RISK_PROBABILITY: f64 = 0.01;

/// A Nano ID shape: an alphabet and a size, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nanoid {
    chars: Vec<char>,
    /// The alphabet's bytes when it is all ASCII (one byte per character).
    ascii: Option<Vec<u8>>,
    size: usize,
    mask: u8,
    step: usize,
    default: bool,
}

impl Nanoid {
    /// The shape of `size` characters of `alphabet`: 2 to 256 distinct characters, none a
    /// control character or white space; `size` 1 to 255.
    pub fn new(alphabet: &str, size: usize) -> Result<Self> {
        let chars: Vec<char> = alphabet.chars().collect();
        let bad = |why: String| Error::InvalidConfig(format!("nanoid alphabet: {why}"));
        if chars.len() < 2 || chars.len() > MAX_ALPHABET {
            return Err(bad(format!(
                "it has {} characters; allowed: 2 to {MAX_ALPHABET} distinct characters",
                chars.len()
            )));
        }
        for (i, &c) in chars.iter().enumerate() {
            if c.is_control() || c.is_whitespace() {
                return Err(bad(format!(
                    "character {i} is {c:?}, a control character or white space; IDs are \
                     written in URLs, logs and keys"
                )));
            }
            if chars[..i].contains(&c) {
                return Err(bad(format!(
                    "{c:?} appears twice; each character must appear once, or the IDs would \
                     not be uniform"
                )));
            }
        }
        if !(1..=MAX_SIZE).contains(&size) {
            return Err(Error::InvalidConfig(format!(
                "nanoid size {size} is out of range; allowed: 1 to {MAX_SIZE}"
            )));
        }
        let n = chars.len() as u32;
        // nanoid: (2 << (31 - clz32((n - 1) | 1))) - 1, the smallest 2^k - 1 >= n - 1.
        let mask = (2u32 << (31 - ((n - 1) | 1).leading_zeros())) - 1;
        // nanoid: ceil(1.6 * mask * size / n) bytes per round; 1.6 covers the rejections.
        let step = (1.6 * f64::from(mask) * size as f64 / f64::from(n)).ceil() as usize;
        let ascii = alphabet.is_ascii().then(|| alphabet.as_bytes().to_vec());
        Ok(Self {
            default: alphabet == DEFAULT_ALPHABET,
            chars,
            ascii,
            size,
            mask: mask as u8,
            step,
        })
    }

    /// The default shape: 21 characters of `A-Za-z0-9_-`.
    pub fn default_shape() -> Self {
        // Both are valid by construction.
        Self::new(DEFAULT_ALPHABET, DEFAULT_SIZE).unwrap_or_else(|_| unreachable!())
    }

    /// The alphabet.
    pub fn alphabet(&self) -> String {
        self.chars.iter().collect()
    }

    /// Characters per ID.
    pub fn size(&self) -> usize {
        self.size
    }

    /// A new ID from the random bytes `random` fills in (the OS CSPRNG in production:
    /// [`os_random::fill`](super::os_random::fill)).
    pub fn generate(&self, random: &mut impl FnMut(&mut [u8]) -> Result<()>) -> Result<String> {
        let mut out = String::with_capacity(self.size * 4);
        if self.default {
            // nanoid(): 64 characters, so every byte's low 6 bits pick one; size bytes.
            let mut bytes = [0u8; MAX_SIZE];
            let bytes = &mut bytes[..self.size];
            random(bytes)?;
            let table = DEFAULT_ALPHABET.as_bytes();
            out.extend(
                bytes
                    .iter()
                    .map(|&b| char::from(table[usize::from(b & 63)])),
            );
            return Ok(out);
        }
        // customRandom(): step bytes per round, read from the last; bytes past the
        // alphabet are skipped. The step never exceeds 3.2 × size bytes.
        let mut buf = [0u8; 4 * MAX_SIZE];
        let bytes = &mut buf[..self.step];
        if let Some(table) = &self.ascii {
            // One byte per character: collected as bytes, checked as UTF-8 once.
            let mut id = Vec::with_capacity(self.size);
            loop {
                random(bytes)?;
                for &b in bytes.iter().rev() {
                    if let Some(&c) = table.get(usize::from(b & self.mask)) {
                        id.push(c);
                        if id.len() == self.size {
                            return String::from_utf8(id)
                                .map_err(|e| Error::InvalidConfig(e.to_string()));
                        }
                    }
                }
            }
        }
        let mut made = 0;
        loop {
            random(bytes)?;
            for &b in bytes.iter().rev() {
                if let Some(&c) = self.chars.get(usize::from(b & self.mask)) {
                    out.push(c);
                    made += 1;
                    if made == self.size {
                        return Ok(out);
                    }
                }
            }
        }
    }

    /// Checks that `text` could be an ID of this shape: `size` characters, each of the
    /// alphabet. It says which character is wrong, or how long the text is.
    pub fn check(&self, text: &str) -> Result<()> {
        let what = || {
            format!(
                "a nanoid of this generator is {} characters of {:?}",
                self.size,
                self.alphabet()
            )
        };
        for (n, (at, c)) in text.char_indices().enumerate() {
            if !self.chars.contains(&c) {
                return Err(invalid(
                    "nanoid",
                    text,
                    format!(
                        "{c:?} at byte {at} (character {n}) is not in the alphabet; {}",
                        what()
                    ),
                ));
            }
        }
        let len = text.chars().count();
        if len != self.size {
            return Err(invalid(
                "nanoid",
                text,
                format!("it has {len} characters; {}", what()),
            ));
        }
        Ok(())
    }

    /// Random bits per ID: `size × log2(alphabet size)`.
    pub fn bits(&self) -> f64 {
        self.size as f64 * (self.chars.len() as f64).log2()
    }

    /// How long IDs made at `rate` per second take to reach a 1% chance of any two being
    /// equal, by the birthday bound nanoid's calculator uses.
    pub fn collision_risk(&self, rate: f64) -> CollisionRisk {
        CollisionRisk::of(self.bits(), rate)
    }
}

/// The collision risk of random IDs: after how many IDs, and at a rate how soon, the
/// chance that two are equal reaches [`RISK_PROBABILITY`] (1%).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollisionRisk {
    /// Random bits per ID.
    pub bits: f64,
    /// IDs per second it was worked out for.
    pub rate: f64,
    /// IDs made before the chance of a repeat reaches 1%:
    /// `sqrt(2 × 2^bits × ln(1 / (1 − 0.01)))`.
    pub ids: f64,
    /// Seconds at `rate` until then.
    pub seconds: f64,
}

impl CollisionRisk {
    /// The risk for IDs of `bits` random bits at `rate` IDs per second (nanoid-cc's
    /// `criticalNumber` and `timeToCollision`).
    pub fn of(bits: f64, rate: f64) -> Self {
        let ids = (2.0 * bits.exp2() * (1.0 / (1.0 - RISK_PROBABILITY)).ln()).sqrt();
        Self {
            bits,
            rate,
            ids,
            seconds: ids / rate,
        }
    }

    /// The chance that `n` IDs of `bits` random bits, made together (one answer), hold two
    /// equal ones: `1 − exp(−n(n−1) / 2^(bits+1))`, the birthday bound.
    ///
    /// ```
    /// use snowdrift_core::kinds::nanoid::CollisionRisk;
    /// assert!(CollisionRisk::within(1.0, 3) > 0.5);
    /// assert!(CollisionRisk::within(126.0, 10_000) < 1e-20);
    /// ```
    pub fn within(bits: f64, n: u64) -> f64 {
        let n = n as f64;
        -(-(n * (n - 1.0)) / (bits + 1.0).exp2()).exp_m1()
    }

    /// The time until a 1% chance, in words: `~3 hours`, `~1.2 thousand years`,
    /// `~2 billion years`, `less than a second`.
    pub fn time_text(&self) -> String {
        human_duration(self.seconds)
    }
}

/// Seconds in a year of 365.25 days.
pub const YEAR_SECS: f64 = 365.25 * 86_400.0;

/// `seconds` in the largest unit that keeps it at least 1, for messages.
pub fn human_duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "forever".into();
    }
    if seconds < 1.0 {
        return "less than a second".into();
    }
    let years = seconds / YEAR_SECS;
    let round = |v: f64, unit: &str| {
        let shown = if v < 10.0 {
            format!("{:.1}", (v * 10.0).floor() / 10.0)
        } else {
            format!("{}", v.floor())
        };
        let shown = shown.trim_end_matches(".0");
        let plural = if shown == "1" { "" } else { "s" };
        format!("~{shown} {unit}{plural}")
    };
    let big = |v: f64, unit: &str| {
        let shown = if v < 10.0 {
            format!("{:.1}", (v * 10.0).floor() / 10.0)
        } else {
            format!("{}", v.floor())
        };
        format!("~{} {unit} years", shown.trim_end_matches(".0"))
    };
    match seconds {
        s if s < 60.0 => round(s, "second"),
        s if s < 3600.0 => round(s / 60.0, "minute"),
        s if s < 86_400.0 => round(s / 3600.0, "hour"),
        s if s < YEAR_SECS => round(s / 86_400.0, "day"),
        _ if years < 1e3 => round(years, "year"),
        _ if years < 1e6 => big(years / 1e3, "thousand"),
        _ if years < 1e9 => big(years / 1e6, "million"),
        _ if years < 1e12 => big(years / 1e9, "billion"),
        _ => format!("~{years:.1e} years"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A random source that hands out 0, 1, 2, ... 255, 0, 1, ...: every byte value equally
    /// often, so a uniform mapping shows every character equally often and a biased one
    /// (a modulo) does not.
    fn cycling() -> impl FnMut(&mut [u8]) -> Result<()> {
        let mut next = 0u8;
        move |buf: &mut [u8]| {
            for b in buf {
                *b = next;
                next = next.wrapping_add(1);
            }
            Ok(())
        }
    }

    #[test]
    fn defaults_are_nanoids() {
        let d = Nanoid::default_shape();
        assert_eq!((d.size(), d.alphabet().len()), (21, 64));
        let mut sorted: Vec<char> = d.alphabet().chars().collect();
        sorted.sort_unstable();
        let want: String = ('-'..='-')
            .chain('0'..='9')
            .chain('A'..='Z')
            .chain('_'..='_')
            .chain('a'..='z')
            .collect();
        assert_eq!(sorted.into_iter().collect::<String>(), want);
        assert!((d.bits() - 126.0).abs() < 1e-9);
        // nanoid(): byte b is urlAlphabet[b & 63], in order.
        let id = d.generate(&mut cycling()).unwrap();
        assert_eq!(id, &DEFAULT_ALPHABET[..21]);
    }

    #[test]
    fn custom_alphabets_read_each_round_from_its_last_byte() {
        // 10 characters: mask 15, step ceil(1.6 * 15 * 4 / 10) = 10 bytes; bytes 0..9 read
        // from the last: 9, 8, ..., all below 10.
        let ids = Nanoid::new("0123456789", 4).unwrap();
        assert_eq!(ids.generate(&mut cycling()).unwrap(), "9876");
        // Bytes past the alphabet (10 to 15 after the mask) are skipped, not folded in.
        let mut high = |buf: &mut [u8]| {
            buf.fill(0x0f);
            buf[0] = 0x03;
            Ok(())
        };
        let one = Nanoid::new("0123456789", 1).unwrap();
        assert_eq!(one.generate(&mut high).unwrap(), "3");
    }

    /// splitmix64's bytes: deterministic, and uniform enough to show a bias of a few
    /// percent over a million characters.
    fn splitmix(mut state: u64) -> impl FnMut(&mut [u8]) -> Result<()> {
        move |buf: &mut [u8]| {
            for b in buf {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                *b = ((z ^ (z >> 31)) >> 56) as u8;
            }
            Ok(())
        }
    }

    /// No modulo bias: every character of a 62- or 36-character alphabet comes up as often
    /// as the others, within 7% over two million characters (about 5 standard deviations).
    /// `byte % 62` would give the first 8 characters 5/256 each and the rest 4/256 (25%
    /// more); `byte % 36` the first 4 characters 14% more.
    #[test]
    fn every_character_is_equally_likely() {
        for alphabet in [
            "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            "0123456789abcdefghijklmnopqrstuvwxyz",
            "абвгд",
        ] {
            let ids = Nanoid::new(alphabet, 40).unwrap();
            let mut random = splitmix(7);
            let mut counts = std::collections::HashMap::new();
            for _ in 0..50_000 {
                for c in ids.generate(&mut random).unwrap().chars() {
                    *counts.entry(c).or_insert(0u32) += 1;
                }
            }
            assert_eq!(counts.len(), alphabet.chars().count(), "{alphabet}");
            let lo = f64::from(*counts.values().min().unwrap());
            let hi = f64::from(*counts.values().max().unwrap());
            assert!(hi / lo < 1.07, "{alphabet}: {lo}..{hi}");
        }
    }

    #[test]
    fn bad_shapes_are_refused_saying_why() {
        for (alphabet, size, reason) in [
            ("a", 21, "1 characters; allowed: 2 to 256"),
            ("", 21, "0 characters"),
            ("abca", 21, "'a' appears twice"),
            ("ab c", 21, "white space"),
            ("ab\u{7}", 21, "control character"),
            ("ab", 0, "size 0 is out of range; allowed: 1 to 255"),
            ("ab", 256, "size 256"),
        ] {
            let err = Nanoid::new(alphabet, size).unwrap_err().to_string();
            assert!(err.contains(reason), "{alphabet:?} {size}: {err}");
        }
        let big: String = (0x100..0x300u32)
            .filter_map(char::from_u32)
            .take(257)
            .collect();
        assert_eq!(big.chars().count(), 257);
        assert!(Nanoid::new(&big, 5).is_err());
    }

    #[test]
    fn check_refuses_wrong_length_and_alphabet() {
        let ids = Nanoid::new("abc", 4).unwrap();
        ids.check("abca").unwrap();
        let err = ids.check("abcd").unwrap_err().to_string();
        assert!(
            err.contains("'d' at byte 3 (character 3) is not in the alphabet"),
            "{err}"
        );
        let err = ids.check("abc").unwrap_err().to_string();
        assert!(
            err.contains("it has 3 characters; a nanoid of this generator is 4"),
            "{err}"
        );
        let err = Nanoid::default_shape()
            .check("V1StGXR8_Z5jdHi6B-myT!")
            .unwrap_err();
        assert!(err.to_string().contains("'!'"), "{err}");
    }

    /// nanoid-cc's own numbers: 126 bits reach 1% after ~1.31e18 IDs; at 1,000 IDs per
    /// hour the default shape takes ~149 billion years (its page says so).
    #[test]
    fn collision_risk_matches_nanoids_calculator() {
        let r = Nanoid::default_shape().collision_risk(1000.0 / 3600.0);
        assert!((r.ids / 1.31e18 - 1.0).abs() < 0.01, "{}", r.ids);
        assert_eq!(r.time_text(), "~149 billion years");
        let short = Nanoid::new("0123456789", 6).unwrap().collision_risk(1.0);
        // sqrt(2e6 × ln(100/99)) = 141.8 IDs, 2 minutes at one a second.
        assert!((short.ids - 141.78).abs() < 0.01, "{}", short.ids);
        assert_eq!(short.time_text(), "~2.3 minutes");
        assert_eq!(human_duration(0.5), "less than a second");
        assert_eq!(human_duration(3600.0), "~1 hour");
        assert_eq!(human_duration(2.0 * YEAR_SECS), "~2 years");
        assert_eq!(human_duration(1234.0 * YEAR_SECS), "~1.2 thousand years");
    }

    proptest! {
        #[test]
        fn ids_have_the_size_and_alphabet(size in 1usize..=255, n in 2usize..=80, seed: u64) {
            let alphabet: String = (0..n as u32).map(|i| char::from_u32(0x21 + i).unwrap()).collect();
            let ids = Nanoid::new(&alphabet, size).unwrap();
            let mut state = seed;
            let mut random = |buf: &mut [u8]| {
                for b in buf {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    *b = (state >> 56) as u8;
                }
                Ok(())
            };
            let id = ids.generate(&mut random).unwrap();
            prop_assert_eq!(id.chars().count(), size);
            prop_assert!(ids.check(&id).is_ok());
        }
    }
}
