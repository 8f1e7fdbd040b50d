//! A keyed, reversible permutation of n-bit numbers, to make sequential IDs look random.
//!
//! An auto-increment or snowflake ID tells whoever sees two of them how many orders, users or
//! messages were created in between, and lets them guess the neighbours' IDs. [`Obfuscator`]
//! maps every number below 2^n to another number below 2^n, one to one, under a 128-bit
//! key: `1, 2, 3` come out as three unrelated-looking numbers, and the server turns them
//! back into `1, 2, 3` with the same key. Because the output has the same width as the
//! input, it still fits the same column: 63 bits for a positive `i64`, 53 bits for a
//! JavaScript `number`.
//!
//! # It hides volume and order, not secrets
//!
//! Use it so that IDs do not reveal how many of something exist or when they were made, and
//! so that they cannot be enumerated by counting. Do **not** use it for anything that must
//! stay secret, and never for authorization (an obfuscated ID is not a capability: check
//! permissions whatever ID is presented), because:
//!
//! - It is not a vetted cipher. It is a Feistel network with [`ROUNDS`] rounds of SipHash-2-4
//!   (a good keyed PRF), which is a sound design, but this construction has had no
//!   cryptographic review. Security proofs for Feistel networks hold only up to about
//!   2^(n/2) queries at best, which for a 53-bit domain is about 100 million pairs, well
//!   within what a scraper can collect; published attacks on small-domain format-preserving encryption
//!   (NIST's FF3, broken in 2017) needed far fewer pairs than a cipher's key size suggests.
//!   Someone who collects many (ID, obfuscated ID) pairs, for example by creating objects
//!   themselves, may learn enough to map further IDs without the key.
//! - It is deterministic: the same ID always gives the same output, so equal outputs reveal
//!   equal inputs.
//! - The key sits in every server's configuration; anyone who can read that can decode every
//!   ID ever issued, and a leaked key cannot be rotated without changing every published ID.
//!
//! Changing the key, the width or this algorithm changes every output, so the exact
//! permutation is pinned by a test: outputs stored today decode in later versions.
//!
//! ```
//! use snowdrift_core::obfuscate::Obfuscator;
//! let key = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128.to_le_bytes();
//! let js_safe = Obfuscator::new(key, 53)?;
//! let public = js_safe.encode(1)?;
//! assert!(public < 1 << 53);
//! assert_ne!(js_safe.encode(2)?, public + 1);
//! assert_eq!(js_safe.decode(public)?, 1);
//! assert!(js_safe.encode(1 << 53).is_err()); // outside the domain
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt;

use std::hash::Hasher;

use crate::error::{Error, Result};
use crate::layout::{Layout, mask};

/// The width used when none is chosen for IDs that are not snowflake IDs (whose layout's
/// width is the natural choice): 63 bits, every positive `i64`, so the output fits the
/// same signed 64-bit column as the input. 53 bits keeps IDs exact in JavaScript.
pub const DEFAULT_BITS: u8 = 63;

/// Length of a key written as hex: two digits per byte of the 128-bit key.
pub const KEY_HEX_DIGITS: usize = 32;

/// Reads a key written as 32 hex digits (either case), as `openssl rand -hex 16` prints one.
///
/// The error says what is wrong with the text but never shows it: a key that is almost
/// right is still a secret, and errors end up in logs.
///
/// ```
/// use snowdrift_core::obfuscate::parse_key;
/// let key = parse_key("000102030405060708090a0b0c0d0E0F")?;
/// assert_eq!(key, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
/// assert!(parse_key("0001").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn parse_key(text: &str) -> Result<[u8; 16]> {
    let wanted = || {
        format!(
            "an obfuscation key is {KEY_HEX_DIGITS} hex digits (16 bytes), for example from \
             `openssl rand -hex 16`"
        )
    };
    let chars = text.chars().count();
    if chars != KEY_HEX_DIGITS {
        return Err(Error::InvalidConfig(format!(
            "{}; this one has {chars} characters",
            wanted()
        )));
    }
    if let Some(at) = text.chars().position(|c| !c.is_ascii_hexdigit()) {
        return Err(Error::InvalidConfig(format!(
            "{}; character {} of this one is not a hex digit (0-9, a-f, A-F)",
            wanted(),
            at + 1
        )));
    }
    let mut key = [0u8; 16];
    for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        // Both bytes are ASCII hex digits, checked above.
        let digit = |b: u8| (b as char).to_digit(16).unwrap_or_default() as u8;
        *byte = (digit(pair[0]) << 4) | digit(pair[1]);
    }
    Ok(key)
}

/// Feistel rounds. Four are enough for a pseudorandom permutation in theory (Luby-Rackoff);
/// eight, as in NIST's FF3-1, leave margin against the attacks that work on few rounds.
pub const ROUNDS: u64 = 8;

/// A keyed permutation of the numbers `0..2^bits`.
///
/// Cheap to clone and safe to share between threads; encoding costs a few hundred
/// nanoseconds. Its `Debug` output shows the width, never the key.
#[derive(Clone)]
pub struct Obfuscator {
    k0: u64,
    k1: u64,
    bits: u8,
    /// Width of each Feistel half: the network permutes `2 * half` bits, the smallest even
    /// width that covers `bits`, and cycle-walks back into the domain.
    half: u32,
    max: u64,
}

impl fmt::Debug for Obfuscator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Obfuscator")
            .field("bits", &self.bits)
            .field("key", &"<hidden>")
            .finish()
    }
}

impl Obfuscator {
    /// A permutation of `0..2^bits` (1 to 64 bits) under `key`.
    ///
    /// Use a random key (16 bytes from a CSPRNG) and keep it with the data it protects:
    /// losing it means the public IDs cannot be decoded any more. Different widths under the
    /// same key give unrelated permutations.
    ///
    /// ```
    /// use snowdrift_core::obfuscate::Obfuscator;
    /// assert!(Obfuscator::new([7; 16], 63).is_ok());
    /// assert!(Obfuscator::new([7; 16], 0).is_err());
    /// assert!(Obfuscator::new([7; 16], 65).is_err());
    /// ```
    pub fn new(key: [u8; 16], bits: u8) -> Result<Self> {
        if !(1..=64).contains(&bits) {
            return Err(Error::InvalidConfig(format!(
                "an obfuscation domain of {bits} bits is not possible; use 1 to 64 bits \
                 (63 for positive i64 IDs, 53 for IDs JavaScript reads exactly)"
            )));
        }
        let (k0, k1) = key.split_at(8);
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_le_bytes(w)
        };
        Ok(Self {
            k0: word(k0),
            k1: word(k1),
            bits,
            half: u32::from(bits).div_ceil(2),
            max: mask(bits),
        })
    }

    /// A permutation for the IDs of `layout`, `bits` wide: by default the layout's own
    /// width, so every ID the layout can hold has an obfuscated form of the same width. A
    /// width narrower than the layout is refused, since the layout's later IDs would not
    /// fit; a wider one is allowed (the outputs are then wider than the IDs).
    ///
    /// ```
    /// use snowdrift_core::{layout::Layout, obfuscate::Obfuscator};
    /// let twitter = Layout::preset("twitter")?;
    /// assert_eq!(Obfuscator::for_layout([7; 16], &twitter, None)?.bits(), 63);
    /// assert!(Obfuscator::for_layout([7; 16], &twitter, Some(53)).is_err());
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn for_layout(key: [u8; 16], layout: &Layout, bits: Option<u8>) -> Result<Self> {
        // A valid layout has at most 64 bits.
        let width = u8::try_from(layout.total_bits()).unwrap_or(64);
        match bits {
            Some(bits) if bits < width => Err(Error::InvalidConfig(format!(
                "{bits} bits cannot hold the IDs of a layout that takes {width} bits; use \
                 {width} to 64, or a layout as narrow as you need (js53 for 53 bits)"
            ))),
            bits => Self::new(key, bits.unwrap_or(width)),
        }
    }

    /// Width of the domain in bits.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// The largest number in the domain, `2^bits - 1`.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Maps `value` to its obfuscated form, which is also below `2^bits`.
    pub fn encode(&self, value: u64) -> Result<u64> {
        self.check(value)?;
        Ok(self.walk(value, Self::forward))
    }

    /// Maps an obfuscated value back to the original.
    pub fn decode(&self, value: u64) -> Result<u64> {
        self.check(value)?;
        Ok(self.walk(value, Self::backward))
    }

    fn check(&self, value: u64) -> Result<()> {
        if value > self.max {
            return Err(Error::OutOfDomain {
                value,
                bits: self.bits,
                max: self.max,
            });
        }
        Ok(())
    }

    /// Cycle walking: the network permutes `2 * half` bits, up to twice the domain, so an
    /// output outside the domain is fed through again until it lands inside. This ends:
    /// following a permutation from `value` returns to `value`, which is inside. It takes two
    /// passes on average for odd widths, one for even widths.
    fn walk(&self, value: u64, step: fn(&Self, u64) -> u64) -> u64 {
        let mut x = step(self, value);
        while x > self.max {
            x = step(self, x);
        }
        x
    }

    fn forward(&self, x: u64) -> u64 {
        let m = mask(self.half as u8);
        let (mut l, mut r) = (x >> self.half, x & m);
        for round in 0..ROUNDS {
            let t = l ^ (self.round(round, r) & m);
            l = r;
            r = t;
        }
        (l << self.half) | r
    }

    fn backward(&self, x: u64) -> u64 {
        let m = mask(self.half as u8);
        let (mut l, mut r) = (x >> self.half, x & m);
        for round in (0..ROUNDS).rev() {
            let t = r ^ (self.round(round, l) & m);
            r = l;
            l = t;
        }
        (l << self.half) | r
    }

    /// The round function: SipHash of the half-block, with the round number and the width
    /// mixed in so that rounds and widths use unrelated functions. A half-block has at most
    /// 32 bits, so the three never overlap.
    fn round(&self, round: u64, half_block: u64) -> u64 {
        siphash24(
            self.k0,
            self.k1,
            half_block | (round << 32) | (u64::from(self.bits) << 40),
        )
    }
}

/// SipHash-2-4 of one 8-byte message (`write_u64(m)`), from the `siphasher` crate.
fn siphash24(k0: u64, k1: u64, m: u64) -> u64 {
    let mut h = siphasher::sip::SipHasher24::new_with_keys(k0, k1);
    h.write_u64(m);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: [u8; 16] = *b"snowdrift-test-k";

    #[test]
    fn siphash_reference_vector() {
        // The paper's test vector with key 00..0f: the 8-byte message 00..07.
        let k0 = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        let k1 = u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]);
        let m = u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(siphash24(k0, k1, m), 0x93f5_f579_9a93_2462);
    }

    #[test]
    fn bijection_on_small_domains() {
        for bits in (1..=12).chain([16]) {
            let o = Obfuscator::new(KEY, bits).expect("valid width");
            let size = 1usize << bits;
            let mut seen = vec![false; size];
            for x in 0..size as u64 {
                let y = o.encode(x).expect("in domain");
                assert!(y <= o.max(), "{bits} bits: {x} -> {y}");
                assert!(!seen[y as usize], "{bits} bits: {y} hit twice");
                seen[y as usize] = true;
                assert_eq!(o.decode(y), Ok(x));
            }
        }
    }

    #[test]
    fn rejects_values_outside_the_domain() {
        let o = Obfuscator::new(KEY, 53).expect("valid width");
        let err = o.encode(1 << 53).expect_err("outside");
        assert_eq!(
            err,
            Error::OutOfDomain {
                value: 1 << 53,
                bits: 53,
                max: (1 << 53) - 1
            }
        );
        assert!(o.decode(u64::MAX).is_err());
        let full = Obfuscator::new(KEY, 64).expect("valid width");
        assert_eq!(
            full.decode(full.encode(u64::MAX).expect("in domain")),
            Ok(u64::MAX)
        );
    }

    #[test]
    fn rejects_impossible_widths() {
        for bits in [0, 65, 255] {
            let err = Obfuscator::new(KEY, bits)
                .expect_err("bad width")
                .to_string();
            assert!(err.contains("1 to 64 bits"), "{err}");
        }
    }

    #[test]
    fn keys_are_32_hex_digits_and_errors_never_show_them() {
        let key = parse_key("736e6f7764726966742d746573742d6B").expect("valid key");
        assert_eq!(key, KEY);
        for (text, why) in [
            ("", "has 0 characters"),
            ("736e6f7764726966742d746573742d6", "has 31 characters"),
            ("736e6f7764726966742d746573742d6b0", "has 33 characters"),
            ("0x6e6f7764726966742d746573742d6b", "character 2 of"),
            ("736e6f7764726966742d74657374 d6b", "character 29 of"),
            ("736e6f7764726966742d746573742d6é", "character 32 of"),
        ] {
            let err = parse_key(text).expect_err(text).to_string();
            assert!(
                err.contains(why) && err.contains("32 hex digits"),
                "{text:?}: {err}"
            );
            assert!(
                text.len() < 8 || !err.contains(&text[..8]),
                "{err} shows the key"
            );
        }
    }

    #[test]
    fn layouts_set_the_default_width_and_the_narrowest() {
        let width = |preset: &str, bits| {
            Obfuscator::for_layout(KEY, &Layout::preset(preset).expect("preset"), bits)
                .map(|o| o.bits())
        };
        assert_eq!(width("twitter", None), Ok(63));
        assert_eq!(width("discord", None), Ok(64));
        assert_eq!(width("js53", None), Ok(53));
        assert_eq!(width("js53", Some(60)), Ok(60));
        assert_eq!(width("twitter", Some(63)), Ok(63));
        let err = width("twitter", Some(62))
            .expect_err("narrower")
            .to_string();
        assert!(
            err.contains("62 bits cannot hold") && err.contains("takes 63 bits"),
            "{err}"
        );
        assert!(width("js53", Some(65)).is_err());
    }

    #[test]
    fn debug_hides_the_key() {
        let shown = format!("{:?}", Obfuscator::new(KEY, 63).expect("valid"));
        assert!(shown.contains("bits: 63"), "{shown}");
        assert!(
            !shown.contains("k0") && !shown.contains(&u64::from_le_bytes(*b"snowdrif").to_string())
        );
    }

    /// Obfuscated IDs get stored and published; these values must never change.
    #[test]
    fn permutation_is_stable_across_versions() {
        let got: Vec<(u8, u64, u64)> = [
            (63u8, 1u64),
            (63, 2),
            (53, 1),
            (53, 1_000_000),
            (64, 0),
            (10, 5),
        ]
        .into_iter()
        .map(|(bits, x)| {
            let o = Obfuscator::new(KEY, bits).expect("valid");
            (bits, x, o.encode(x).expect("in domain"))
        })
        .collect();
        assert_eq!(got, PINNED);
    }
    const PINNED: &[(u8, u64, u64)] = &[
        (63, 1, 4_726_222_040_605_329_998),
        (63, 2, 2_821_679_671_568_707_429),
        (53, 1, 4_724_620_060_892_646),
        (53, 1_000_000, 4_820_170_464_287_504),
        (64, 0, 16_612_170_507_092_510_969),
        (10, 5, 319),
    ];

    #[test]
    fn different_keys_give_different_permutations() {
        let a = Obfuscator::new(KEY, 63).expect("valid");
        let mut other = KEY;
        other[15] ^= 1;
        let b = Obfuscator::new(other, 63).expect("valid");
        let same = (0..1000).filter(|&x| a.encode(x) == b.encode(x)).count();
        assert_eq!(same, 0);
        let narrow = Obfuscator::new(KEY, 62).expect("valid");
        let same = (0..1000)
            .filter(|&x| a.encode(x) == narrow.encode(x))
            .count();
        assert_eq!(same, 0, "widths must not share a permutation");
    }

    #[test]
    fn sequential_inputs_do_not_look_sequential() {
        for bits in [53, 63, 64] {
            let o = Obfuscator::new(KEY, bits).expect("valid");
            let out: Vec<u64> = (1..=1000)
                .map(|x| o.encode(x).expect("in domain"))
                .collect();
            let increasing = out.windows(2).filter(|w| w[1] > w[0]).count();
            assert!(
                (400..600).contains(&increasing),
                "{bits} bits: {increasing} of 999 rose"
            );
            let close = out
                .windows(2)
                .filter(|w| w[1].abs_diff(w[0]) < 1 << (bits - 8))
                .count();
            assert!(close < 20, "{bits} bits: {close} neighbours stayed close");
            // The top bit is set about half the time: outputs spread over the whole domain.
            let high = out.iter().filter(|&&y| y >> (bits - 1) == 1).count();
            assert!(
                (400..600).contains(&high),
                "{bits} bits: top bit set {high} times"
            );
        }
    }

    proptest! {
        #[test]
        fn round_trip(x: u64, key: [u8; 16], bits in proptest::sample::select(vec![53u8, 63, 64])) {
            let o = Obfuscator::new(key, bits).expect("valid");
            let x = x & o.max();
            let y = o.encode(x).expect("in domain");
            prop_assert!(y <= o.max());
            prop_assert_eq!(o.decode(y), Ok(x));
        }

        #[test]
        fn round_trip_any_width(x: u64, key: [u8; 16], bits in 1u8..=64) {
            let o = Obfuscator::new(key, bits).expect("valid");
            let x = x & o.max();
            prop_assert_eq!(o.decode(o.encode(x).expect("in domain")), Ok(x));
        }
    }
}
