//! [Sqids](https://sqids.org): short, URL-safe codes that avoid common profanity, readable by
//! every Sqids implementation (JavaScript, Python, Go, Java...) that uses the same alphabet.
//!
//! [`Sqids::new`] uses the default alphabet, no minimum length and the default blocklist, so
//! a code made here decodes anywhere with Sqids' defaults, and the other way round. Each code
//! stands for exactly one `u64`: [`Sqids::decode`] refuses codes for several numbers and codes
//! that Sqids would not produce for their number (re-encoding must give the input back), so
//! one ID never has two codes.
//!
//! Other implementations limit the numbers they take: Python's to `i64::MAX`, JavaScript's
//! to `Number.MAX_SAFE_INTEGER` (2^53 - 1). Snowflake IDs stay below 2^63, so Python reads
//! them all; a JavaScript client needs a 53-bit layout such as `js53`.
//!
//! Sqids is an encoding, not encryption: the default alphabet is public, so anyone can decode
//! a code. A custom alphabet shuffles the output, but it is no key either.
//!
//! ```
//! use snowdrift_core::codec::sqids::Sqids;
//! let sqids = Sqids::new();
//! assert_eq!(sqids.encode(1050118621198921728)?, "Sm5Tn1DQhx5X");
//! assert_eq!(sqids.decode("Sm5Tn1DQhx5X")?, 1050118621198921728);
//! assert_eq!(sqids.encode(0)?, "bM");
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use super::invalid;
use crate::error::{Error, Result};

const CODEC: &str = "sqids";

/// Sqids' default alphabet.
pub const DEFAULT_ALPHABET: &str = sqids::DEFAULT_ALPHABET;

/// How much longer than the minimum length a code may be before decoding refuses it unread.
/// A `u64` takes at most 64 digits (with a 3-symbol alphabet, the smallest allowed, one
/// symbol of which separates) plus the prefix; longer text cannot be canonical, and decoding
/// it would only cost time.
const MAX_EXTRA_LEN: usize = 72;

/// A Sqids encoder/decoder for single `u64` IDs.
///
/// Building one parses Sqids' blocklist, which takes a while (tens of microseconds): build
/// it once and reuse it. It is safe to share between threads.
#[derive(Debug, Clone)]
pub struct Sqids {
    inner: sqids::Sqids,
    /// The alphabet as given: the sqids crate keeps only its shuffled copy, and a rebuild
    /// with another minimum length needs the original.
    alphabet: String,
    min_length: u8,
}

impl Default for Sqids {
    fn default() -> Self {
        Self::new()
    }
}

impl Sqids {
    /// Sqids with the default alphabet, options and blocklist: the codes every other Sqids
    /// implementation produces with its defaults.
    pub fn new() -> Self {
        Self {
            inner: sqids::Sqids::default(),
            alphabet: DEFAULT_ALPHABET.to_owned(),
            min_length: 0,
        }
    }

    /// Sqids with a custom alphabet (at least 3 distinct single-byte characters) and the
    /// default blocklist.
    ///
    /// ```
    /// use snowdrift_core::codec::sqids::Sqids;
    /// let sqids = Sqids::with_alphabet("FxnXM1kBN6cuhsAvjW3Co7l2RePyY8DwaU04Tzt9fHQrqSVKdpimLGIJOgb5ZE")?;
    /// assert_eq!(sqids.decode(&sqids.encode(42)?)?, 42);
    /// assert!(Sqids::with_alphabet("ab").is_err());
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn with_alphabet(alphabet: &str) -> Result<Self> {
        Self::build(alphabet, 0)
    }

    /// The same alphabet, padding codes to at least `min_length` characters.
    ///
    /// ```
    /// use snowdrift_core::codec::sqids::Sqids;
    /// let sqids = Sqids::new().with_min_length(10)?;
    /// assert_eq!(sqids.encode(0)?.len(), 10);
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn with_min_length(self, min_length: u8) -> Result<Self> {
        Self::build(&self.alphabet, min_length)
    }

    fn build(alphabet: &str, min_length: u8) -> Result<Self> {
        let inner = sqids::Sqids::builder()
            .alphabet(alphabet.chars().collect())
            .min_length(min_length)
            .build()
            .map_err(|e| {
                let shown: String = alphabet.chars().take(80).collect();
                Error::InvalidConfig(format!(
                    "Sqids alphabet {shown:?}: {e}; an alphabet needs at least 3 distinct ASCII characters"
                ))
            })?;
        Ok(Self {
            inner,
            alphabet: alphabet.to_owned(),
            min_length,
        })
    }

    /// The alphabet, as given.
    pub fn alphabet(&self) -> &str {
        &self.alphabet
    }

    /// The minimum length of a code.
    pub fn min_length(&self) -> u8 {
        self.min_length
    }

    /// Encodes one ID.
    ///
    /// Fails only when every candidate code contains a blocked word, which Sqids' own tests
    /// can provoke with a tiny alphabet and cannot happen with the default one.
    ///
    /// ```
    /// use snowdrift_core::codec::sqids::Sqids;
    /// assert_eq!(Sqids::new().encode(9)?, "nJ");
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn encode(&self, id: u64) -> Result<String> {
        self.inner.encode(&[id]).map_err(|e| {
            Error::InvalidConfig(format!(
                "Sqids cannot encode {id} with this alphabet: {e} (every candidate code contains a \
                 blocked word); use a longer alphabet or another min_length"
            ))
        })
    }

    /// Decodes a code made by [`encode`](Self::encode) (or by any Sqids implementation with
    /// the same alphabet and minimum length) for one number.
    ///
    /// ```
    /// use snowdrift_core::codec::sqids::Sqids;
    /// let sqids = Sqids::new();
    /// assert_eq!(sqids.decode("ABARpJzdz9")?, 9_007_199_254_740_991);
    /// assert!(sqids.decode("86Rf07").is_err()); // three numbers: 1, 2, 3
    /// assert!(sqids.decode("aho1e").is_err()); // 4572721, but blocked: its code is JExTR
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn decode(&self, text: &str) -> Result<u64> {
        if text.is_empty() {
            return Err(invalid(
                CODEC,
                text,
                "empty; a Sqids code has at least 2 characters",
            ));
        }
        if text.len() > usize::from(self.min_length) + MAX_EXTRA_LEN {
            return Err(invalid(
                CODEC,
                text,
                "too long to be the code of one 64-bit number",
            ));
        }
        if let Some((i, c)) = text
            .char_indices()
            .find(|&(_, c)| !self.alphabet.contains(c))
        {
            return Err(invalid(
                CODEC,
                text,
                format!(
                    "{c:?} at byte {i} is not in the alphabet; allowed are: {}",
                    self.alphabet
                ),
            ));
        }
        let numbers = self.inner.decode(text);
        let &[id] = numbers.as_slice() else {
            let what = if numbers.is_empty() {
                "it holds no number (it is malformed, or its number is over 64 bits)".to_owned()
            } else {
                format!(
                    "it holds {} numbers, but an ID is one number",
                    numbers.len()
                )
            };
            return Err(invalid(CODEC, text, what));
        };
        match self.encode(id) {
            Ok(canonical) if canonical == text => Ok(id),
            Ok(canonical) => Err(invalid(
                CODEC,
                text,
                format!(
                    "not the canonical code of {id}; Sqids encodes it as {canonical:?} (the text \
                     may contain a blocked word, or padding for another minimum length)"
                ),
            )),
            Err(_) => Err(invalid(
                CODEC,
                text,
                format!("{id} has no code with this alphabet"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Vectors from the Sqids specification's test suite (also in the sqids crate's tests).
    #[test]
    fn spec_vectors_single_numbers() {
        let sqids = Sqids::new();
        for (n, code) in [
            (0, "bM"),
            (1, "Uk"),
            (2, "gb"),
            (3, "Ef"),
            (4, "Vq"),
            (5, "uw"),
            (6, "OI"),
            (7, "AX"),
            (8, "p6"),
            (9, "nJ"),
            (4_572_721, "JExTR"),
            (9_007_199_254_740_991, "ABARpJzdz9"),
            // Checked against the reference Python implementation (`sqids` on PyPI).
            (1_050_118_621_198_921_728, "Sm5Tn1DQhx5X"),
            (9_223_372_036_854_775_807, "AqkYhRmbHpEX"),
        ] {
            assert_eq!(sqids.encode(n), Ok(code.to_owned()), "{n}");
            assert_eq!(sqids.decode(code), Ok(n), "{code}");
        }
    }

    #[test]
    fn spec_vector_three_numbers_is_not_an_id() {
        let sqids = Sqids::new();
        assert_eq!(
            sqids.inner.encode(&[1, 2, 3]).ok().as_deref(),
            Some("86Rf07")
        );
        let err = sqids
            .decode("86Rf07")
            .expect_err("three numbers")
            .to_string();
        assert!(err.contains("3 numbers"), "{err}");
    }

    #[test]
    fn spec_vectors_min_length() {
        let sqids = Sqids::new().with_min_length(62).expect("valid");
        let code = sqids.inner.encode(&[1, 2, 3]).expect("encodes");
        assert_eq!(
            code,
            "86Rf07xd4zBmiJXQG6otHEbew02c3PWsUOLZxADhCpKj7aVFv9I8RquYrNlSTM"
        );
        for n in [0, 1, 1_000_000, u64::MAX] {
            let code = sqids.encode(n).expect("encodes");
            assert_eq!(code.len(), 62);
            assert_eq!(sqids.decode(&code), Ok(n));
        }
        assert_eq!(sqids.min_length(), 62);
        assert_eq!(sqids.alphabet(), DEFAULT_ALPHABET);
    }

    #[test]
    fn rejects_non_canonical_and_bad_codes() {
        let sqids = Sqids::new();
        for (text, reason) in [
            ("", "empty"),
            ("*", "not in the alphabet"),
            ("bM-", "not in the alphabet"),
            ("aho1e", "canonical"),
            ("0J4AEXRN106Z0", "no number"),
            ("86Rf07", "3 numbers"),
        ] {
            let err = sqids.decode(text).expect_err(text).to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
        }
        let padded = Sqids::new().with_min_length(8).expect("valid");
        let long = padded.encode(5).expect("encodes");
        assert!(
            sqids.decode(&long).is_err(),
            "padding belongs to another min_length"
        );
        assert!(sqids.decode(&"a".repeat(10_000)).is_err());
    }

    #[test]
    fn custom_alphabet() {
        let sqids = Sqids::with_alphabet("abc").expect("valid");
        for n in [0, 1, 2, 3, 1_000_000, u64::MAX] {
            let code = sqids.encode(n).expect("encodes");
            assert_eq!(sqids.decode(&code), Ok(n), "{code}");
        }
        for bad in ["ab", "aab", "ab€"] {
            let err = Sqids::with_alphabet(bad).expect_err(bad).to_string();
            assert!(err.contains("invalid configuration"), "{err}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(n: u64) {
            let sqids = Sqids::new();
            let code = sqids.encode(n).expect("default alphabet encodes every u64");
            prop_assert_eq!(sqids.decode(&code), Ok(n));
        }

        #[test]
        fn round_trip_min_length(n: u64, min in 0u8..40) {
            let sqids = Sqids::new().with_min_length(min).expect("valid");
            let code = sqids.encode(n).expect("encodes");
            prop_assert!(code.len() >= usize::from(min));
            prop_assert_eq!(sqids.decode(&code), Ok(n));
        }

        #[test]
        fn decode_never_panics_and_is_canonical(text in "[a-zA-Z0-9]{0,14}|\\PC{0,8}") {
            let sqids = Sqids::new();
            if let Ok(n) = sqids.decode(&text) {
                prop_assert_eq!(sqids.encode(n), Ok(text));
            }
        }
    }
}
