//! Crockford's base32: digits and upper-case letters without `I`, `L`, `O` and `U`, made for
//! people who read IDs aloud or type them from paper (at most 13 characters for a `u64`).
//!
//! Encoding writes upper case with no leading zeros. Decoding is as forgiving as Crockford's
//! specification asks: it ignores case and hyphens (`X4P5-A9Y9-BC00`), reads `I` and `L` as
//! `1` and `O` as `0`, and accepts leading zeros (so fixed-width, zero-padded codes decode).
//! It rejects `U` and the optional check symbols (`*~$=`), which this codec does not use.
//!
//! ```
//! use snowdrift_core::codec::crockford32;
//! assert_eq!(crockford32::encode(1050118621198921728), "X4P5A9Y9BC00");
//! assert_eq!(crockford32::decode("x4p5-a9y9-bcoo")?, 1050118621198921728);
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use super::{describe_char, encode_radix, invalid};
use crate::error::Result;

const CODEC: &str = "crockford32";
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Longest encoding of a `u64` (`u64::MAX` is `FZZZZZZZZZZZZ`).
pub const MAX_LEN: usize = 13;

/// Encodes `id` in upper case, without leading zeros or hyphens.
///
/// ```
/// assert_eq!(snowdrift_core::codec::crockford32::encode(31), "Z");
/// assert_eq!(snowdrift_core::codec::crockford32::encode(32), "10");
/// ```
pub fn encode(id: u64) -> String {
    let mut buf = [0u8; MAX_LEN];
    encode_to(id, &mut buf).to_owned()
}

/// Encodes `id` into `buf` and returns the text, which is a suffix of `buf`. Allocates
/// nothing.
///
/// ```
/// let mut buf = [0u8; 13];
/// assert_eq!(snowdrift_core::codec::crockford32::encode_to(u64::MAX, &mut buf), "FZZZZZZZZZZZZ");
/// ```
pub fn encode_to(id: u64, buf: &mut [u8; MAX_LEN]) -> &str {
    encode_radix(id, ALPHABET, buf)
}

/// The value of a symbol, with Crockford's aliases; `None` for anything else.
const fn symbol(b: u8) -> Option<u64> {
    let v = match b.to_ascii_uppercase() {
        c @ b'0'..=b'9' => c - b'0',
        b'O' => 0,
        b'I' | b'L' => 1,
        c @ b'A'..=b'H' => c - b'A' + 10,
        b'J' => 18,
        b'K' => 19,
        b'M' => 20,
        b'N' => 21,
        c @ b'P'..=b'T' => c - b'P' + 22,
        c @ b'V'..=b'Z' => c - b'V' + 27,
        _ => return None,
    };
    Some(v as u64)
}

/// Decodes Crockford base32, forgiving case, hyphens, leading zeros and the `I`/`L`/`O`
/// look-alikes.
///
/// Fails when no symbol is present, on a character that is not a symbol (including `U` and
/// the check symbols `*~$=`), and on values above `u64::MAX`.
///
/// ```
/// use snowdrift_core::codec::crockford32;
/// assert_eq!(crockford32::decode("fzzz-zzzz-zzzz-z")?, u64::MAX);
/// assert_eq!(crockford32::decode("0000000000001")?, 1);
/// assert_eq!(crockford32::decode("IL")?, 33);
/// assert!(crockford32::decode("G0000000000000").is_err()); // over 64 bits
/// assert!(crockford32::decode("U").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn decode(text: &str) -> Result<u64> {
    let mut value: u64 = 0;
    let mut symbols = 0usize;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if b == b'-' {
            continue;
        }
        let d = symbol(b).ok_or_else(|| {
            let hint = match b.to_ascii_uppercase() {
                b'U' => " (U is left out of the alphabet on purpose)",
                b'*' | b'~' | b'$' | b'=' => " (check symbols are not used)",
                _ => "",
            };
            invalid(
                CODEC,
                text,
                format!(
                    "{} is not a Crockford base32 symbol{hint}; allowed are 0-9 and the letters \
                     A-Z except U, in either case, with I and L read as 1, O as 0, and hyphens ignored",
                    describe_char(text, i)
                ),
            )
        })?;
        symbols += 1;
        // The top five bits must be clear before shifting, or bits would fall off the top.
        if value >> 59 != 0 {
            return Err(invalid(
                CODEC,
                text,
                "too large for 64 bits; the largest value is FZZZZZZZZZZZZ",
            ));
        }
        value = (value << 5) | d;
    }
    if symbols == 0 {
        return Err(invalid(
            CODEC,
            text,
            "no symbols; expected up to 13 characters from 0-9 and A-Z (except U), hyphens allowed",
        ));
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
            (10, "A"),
            (17, "H"),
            (18, "J"),
            (20, "M"),
            (22, "P"),
            (26, "T"),
            (27, "V"),
            (31, "Z"),
            (32, "10"),
            (1050118621198921728, "X4P5A9Y9BC00"),
            (u64::MAX, "FZZZZZZZZZZZZ"),
        ] {
            assert_eq!(encode(n), s);
            assert_eq!(decode(s), Ok(n), "{s}");
            assert_eq!(decode(&s.to_ascii_lowercase()), Ok(n), "{s}");
        }
    }

    #[test]
    fn every_symbol_decodes_to_its_position() {
        for (i, &b) in ALPHABET.iter().enumerate() {
            assert_eq!(symbol(b), Some(i as u64));
            assert_eq!(symbol(b.to_ascii_lowercase()), Some(i as u64));
        }
    }

    #[test]
    fn aliases_and_hyphens() {
        assert_eq!(decode("O"), Ok(0));
        assert_eq!(decode("o"), Ok(0));
        assert_eq!(decode("I"), Ok(1));
        assert_eq!(decode("l"), Ok(1));
        assert_eq!(decode("1-0"), Ok(32));
        assert_eq!(decode("--1--0--"), Ok(32));
        assert_eq!(decode("000000000000000000000000001"), Ok(1));
    }

    #[test]
    fn rejects_bad_input_with_a_reason() {
        for (text, reason) in [
            ("", "no symbols"),
            ("---", "no symbols"),
            ("U", "U is left out"),
            ("12*", "check symbols"),
            ("A B", "' ' at byte 1"),
            ("é", "'é' at byte 0"),
            ("G000000000000", "too large"),
            ("ZZZZZZZZZZZZZZ", "too large"),
        ] {
            let err = decode(text).expect_err(text).to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(n: u64) {
            let mut buf = [0u8; MAX_LEN];
            let text = encode_to(n, &mut buf);
            prop_assert_eq!(text, encode(n));
            prop_assert_eq!(decode(text), Ok(n));
            prop_assert_eq!(decode(&text.to_ascii_lowercase()), Ok(n));
        }

        #[test]
        fn hyphens_anywhere_are_ignored(n: u64, cuts in proptest::collection::vec(0usize..14, 0..4)) {
            let mut text = encode(n);
            for cut in cuts {
                text.insert(cut.min(text.len()), '-');
            }
            prop_assert_eq!(decode(&text), Ok(n));
        }

        #[test]
        fn decode_never_panics(text in "\\PC{0,16}") {
            if let Ok(n) = decode(&text) {
                let clean: String = text.chars().filter(|&c| c != '-').collect();
                prop_assert!(encode(n).len() <= clean.len());
            }
        }
    }
}
