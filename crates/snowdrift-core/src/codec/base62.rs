//! Base62: `0-9A-Za-z`, the shortest text of a `u64` that is safe in URLs and file names
//! (at most 11 characters).
//!
//! The digits are ordered `0-9`, then `A-Z`, then `a-z`, as in GMP and most base62 libraries,
//! so codes of the same length sort in ASCII the same as their numbers. Only the canonical
//! form is accepted: no leading zeros and no sign, so one ID has exactly one text.
//!
//! ```
//! use snowdrift_core::codec::base62;
//! assert_eq!(base62::encode(1050118621198921728), "1FZYNDFWXYm");
//! assert_eq!(base62::decode("1FZYNDFWXYm")?, 1050118621198921728);
//! assert!(base62::decode("01FZYNDFWXYm").is_err());
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use super::{describe_char, encode_radix, invalid};
use crate::error::Result;

const CODEC: &str = "base62";
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Longest encoding of a `u64` (`u64::MAX` is `LygHa16AHYF`).
pub const MAX_LEN: usize = 11;

/// Encodes `id` as base62.
///
/// ```
/// assert_eq!(snowdrift_core::codec::base62::encode(61), "z");
/// assert_eq!(snowdrift_core::codec::base62::encode(62), "10");
/// ```
pub fn encode(id: u64) -> String {
    let mut buf = [0u8; MAX_LEN];
    encode_to(id, &mut buf).to_owned()
}

/// Encodes `id` into `buf` and returns the text, which is a suffix of `buf`. Allocates
/// nothing, for hot paths that write many IDs.
///
/// ```
/// let mut buf = [0u8; 11];
/// assert_eq!(snowdrift_core::codec::base62::encode_to(u64::MAX, &mut buf), "LygHa16AHYF");
/// ```
pub fn encode_to(id: u64, buf: &mut [u8; MAX_LEN]) -> &str {
    encode_radix(id, ALPHABET, buf)
}

/// The value of a base62 digit.
const fn digit(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u64),
        b'A'..=b'Z' => Some((b - b'A') as u64 + 10),
        b'a'..=b'z' => Some((b - b'a') as u64 + 36),
        _ => None,
    }
}

/// Decodes canonical base62 text.
///
/// Fails on an empty string, a character outside `0-9A-Za-z`, a leading zero (other than
/// the single digit `0`), and values above `u64::MAX`.
///
/// ```
/// use snowdrift_core::codec::base62;
/// assert_eq!(base62::decode("LygHa16AHYF")?, u64::MAX);
/// assert!(base62::decode("LygHa16AHYG").is_err()); // u64::MAX + 1
/// assert!(base62::decode("a-b").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn decode(text: &str) -> Result<u64> {
    let bytes = text.as_bytes();
    if bytes.is_empty() {
        return Err(invalid(
            CODEC,
            text,
            "empty; expected 1 to 11 characters from 0-9, A-Z, a-z",
        ));
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return Err(invalid(
            CODEC,
            text,
            "leading zeros are not allowed (only the number 0 itself starts with 0); drop them",
        ));
    }
    let mut value: u64 = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let d = digit(b).ok_or_else(|| {
            invalid(
                CODEC,
                text,
                format!(
                    "{} is not a base62 digit; allowed are 0-9, A-Z and a-z (case matters)",
                    describe_char(text, i)
                ),
            )
        })?;
        value = value
            .checked_mul(62)
            .and_then(|v| v.checked_add(d))
            .ok_or_else(|| {
                invalid(
                    CODEC,
                    text,
                    format!(
                        "too large for 64 bits; the largest value is {}",
                        encode(u64::MAX)
                    ),
                )
            })?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        for (n, s) in [
            (0, "0"),
            (9, "9"),
            (10, "A"),
            (35, "Z"),
            (36, "a"),
            (61, "z"),
            (62, "10"),
            (3843, "zz"),
            (3844, "100"),
            (u64::MAX, "LygHa16AHYF"),
        ] {
            assert_eq!(encode(n), s);
            assert_eq!(decode(s), Ok(n), "{s}");
        }
    }

    #[test]
    fn rejects_bad_input_with_a_reason() {
        for (text, reason) in [
            ("", "empty"),
            ("00", "leading zeros"),
            ("0z", "leading zeros"),
            ("ab-c", "'-' at byte 2"),
            ("é", "'é' at byte 0"),
            (" 1", "' ' at byte 0"),
            ("+1", "'+' at byte 0"),
            ("LygHa16AHYG", "too large"),
            ("zzzzzzzzzzzz", "too large"),
        ] {
            let err = decode(text).expect_err(text).to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
            assert!(err.contains("base62"), "{err}");
        }
    }

    #[test]
    fn long_input_is_truncated_in_the_error() {
        let text = "z".repeat(10_000);
        let err = decode(&text).expect_err("too large").to_string();
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn text_order_matches_number_order_at_equal_length() {
        let a = encode(1_000_000);
        let b = encode(1_000_001);
        assert_eq!(a.len(), b.len());
        assert!(a < b);
    }

    proptest! {
        #[test]
        fn round_trip(n: u64) {
            let mut buf = [0u8; MAX_LEN];
            let text = encode_to(n, &mut buf);
            prop_assert_eq!(text, encode(n));
            prop_assert_eq!(decode(text), Ok(n));
        }

        #[test]
        fn decode_never_panics_and_is_canonical(text in "\\PC{0,14}") {
            if let Ok(n) = decode(&text) {
                prop_assert_eq!(encode(n), text);
            }
        }

        #[test]
        fn decode_alphabet_strings(text in "[0-9A-Za-z]{1,12}") {
            if let Ok(n) = decode(&text) {
                prop_assert_eq!(encode(n), text);
            }
        }
    }
}
