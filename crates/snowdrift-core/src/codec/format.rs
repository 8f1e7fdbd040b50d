//! The text formats of a 64-bit ID, by name, for command lines and configuration.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use super::{base62, crockford32, friendly, invalid, sqids::Sqids};
use crate::error::{Error, Result};
use crate::layout::Layout;

/// How a 64-bit ID is written as text.
///
/// The names (`decimal`, `hex`, `base62`, `crockford32`, `sqids`, `friendly`) are what
/// [`FromStr`] accepts and [`Display`](fmt::Display) writes.
///
/// ```
/// use snowdrift_core::{codec::Format, layout::Layout};
/// let twitter = Layout::preset("twitter")?;
/// let id = 1050118621198921728;
/// for format in Format::ALL {
///     let text = format.encode(id, &twitter)?;
///     assert_eq!(format.decode(&text, &twitter)?, id);
/// }
/// let hex: Format = "hex".parse()?;
/// assert_eq!(hex.encode(id, &twitter)?, "e92c5527c95b000");
/// assert_eq!(hex.decode("0xE92C5527C95B000", &twitter)?, id);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Format {
    /// Base 10, as databases and JSON numbers show it.
    #[default]
    Decimal,
    /// Base 16, lowercase, no prefix on output; decoding takes an optional `0x`.
    Hex,
    /// [`base62`]: `0-9A-Za-z`, at most 11 characters.
    Base62,
    /// [`crockford32`]: for people reading and typing IDs.
    Crockford32,
    /// [`sqids`](super::sqids) with Sqids' default alphabet and options, so that any Sqids
    /// implementation decodes it.
    Sqids,
    /// [`friendly`]: `time-node-...-sequence` under the layout, time in UTC.
    Friendly,
}

impl Format {
    /// Every format, in the order of their names above.
    pub const ALL: [Format; 6] = [
        Format::Decimal,
        Format::Hex,
        Format::Base62,
        Format::Crockford32,
        Format::Sqids,
        Format::Friendly,
    ];

    /// The format's name, as [`FromStr`] accepts it.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Decimal => "decimal",
            Format::Hex => "hex",
            Format::Base62 => "base62",
            Format::Crockford32 => "crockford32",
            Format::Sqids => "sqids",
            Format::Friendly => "friendly",
        }
    }

    /// Writes `id` in this format. Only [`Format::Friendly`] reads the layout; it fails when
    /// `id` does not fit the layout. The others accept any `u64`.
    pub fn encode(&self, id: u64, layout: &Layout) -> Result<String> {
        Ok(match self {
            Format::Decimal => id.to_string(),
            Format::Hex => format!("{id:x}"),
            Format::Base62 => base62::encode(id),
            Format::Crockford32 => crockford32::encode(id),
            Format::Sqids => default_sqids().encode(id)?,
            Format::Friendly => friendly::encode(layout, id)?,
        })
    }

    /// Reads an ID written in this format. Only [`Format::Friendly`] reads the layout; the
    /// others return any `u64` the text stands for, so use
    /// [`Layout::decode`](crate::layout::Layout::decode) to check that it fits a layout.
    pub fn decode(&self, text: &str, layout: &Layout) -> Result<u64> {
        match self {
            Format::Decimal => decode_decimal(text),
            Format::Hex => decode_hex(text),
            Format::Base62 => base62::decode(text),
            Format::Crockford32 => crockford32::decode(text),
            Format::Sqids => default_sqids().decode(text),
            Format::Friendly => friendly::decode(layout, text),
        }
    }
}

/// Sqids with the default options, built once: building parses a blocklist of hundreds of
/// words, too slow to repeat for every ID. It is an immutable constant computed on first use,
/// not state: every process computes the same value.
fn default_sqids() -> &'static Sqids {
    static DEFAULT: OnceLock<Sqids> = OnceLock::new();
    DEFAULT.get_or_init(Sqids::new)
}

/// Decimal digits only: no sign, no spaces. Leading zeros are accepted (`007` is 7), as every
/// tool that prints fixed-width numbers expects.
fn decode_decimal(text: &str) -> Result<u64> {
    let bad = |why: &str| {
        invalid(
            "decimal",
            text,
            format!("{why}; expected digits 0-9 only, at most {}", u64::MAX),
        )
    };
    if text.is_empty() {
        return Err(bad("empty"));
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("not a number"));
    }
    text.parse().map_err(|_| bad("too large for 64 bits"))
}

/// Hex digits in either case, with an optional `0x`/`0X`; leading zeros are accepted.
fn decode_hex(text: &str) -> Result<u64> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .unwrap_or(text);
    let bad = |why: &str| {
        invalid(
            "hex",
            text,
            format!(
                "{why}; expected hex digits 0-9, a-f (either case) with an optional 0x, at most ffffffffffffffff"
            ),
        )
    };
    if digits.is_empty() {
        return Err(bad("no digits"));
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad("not a hex number"));
    }
    u64::from_str_radix(digits, 16).map_err(|_| bad("too large for 64 bits"))
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    /// Parses a format name; see [`Format`].
    fn from_str(s: &str) -> Result<Self> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                let shown: String = s.chars().take(64).collect();
                Error::InvalidConfig(format!(
                    "unknown ID format {shown:?}; the formats are: {}",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        for format in Format::ALL {
            assert_eq!(format.to_string().parse::<Format>(), Ok(format));
        }
        assert_eq!(Format::default(), Format::Decimal);
        let err = "Base62"
            .parse::<Format>()
            .expect_err("case matters")
            .to_string();
        assert!(
            err.contains("decimal, hex, base62, crockford32, sqids, friendly"),
            "{err}"
        );
    }

    #[test]
    fn known_encodings() {
        let twitter = Layout::preset("twitter").expect("preset");
        let id = 1050118621198921728;
        let expected = [
            "1050118621198921728",
            "e92c5527c95b000",
            "1FZYNDFWXYm",
            "X4P5A9Y9BC00",
            "Sm5Tn1DQhx5X",
            "20181010201924211-10-27-0",
        ];
        for (format, text) in Format::ALL.into_iter().zip(expected) {
            assert_eq!(format.encode(id, &twitter).as_deref(), Ok(text), "{format}");
            assert_eq!(format.decode(text, &twitter), Ok(id), "{format}");
        }
        assert_eq!(Format::Sqids.encode(0, &twitter).as_deref(), Ok("bM"));
    }

    #[test]
    fn decimal_and_hex_rules() {
        let l = Layout::preset("twitter").expect("preset");
        assert_eq!(Format::Decimal.decode("007", &l), Ok(7));
        assert_eq!(
            Format::Decimal.decode("18446744073709551615", &l),
            Ok(u64::MAX)
        );
        assert_eq!(Format::Hex.decode("0XfF", &l), Ok(255));
        assert_eq!(Format::Hex.decode("ffffffffffffffff", &l), Ok(u64::MAX));
        assert_eq!(Format::Hex.encode(255, &l).as_deref(), Ok("ff"));
        for (format, text, reason) in [
            (Format::Decimal, "", "empty"),
            (Format::Decimal, "+1", "not a number"),
            (Format::Decimal, " 1", "not a number"),
            (Format::Decimal, "18446744073709551616", "too large"),
            (Format::Hex, "0x", "no digits"),
            (Format::Hex, "", "no digits"),
            (Format::Hex, "-1", "not a hex number"),
            (Format::Hex, "0x+1", "not a hex number"),
            (Format::Hex, "10000000000000000", "too large"),
        ] {
            let err = format.decode(text, &l).expect_err(text).to_string();
            assert!(err.contains(reason), "{format} {text:?}: {err}");
        }
    }

    proptest! {
        #[test]
        fn every_format_round_trips(
            preset in proptest::sample::select(vec!["twitter", "sonyflake", "discord", "js53"]),
            raw: u64,
        ) {
            let layout = Layout::preset(preset).expect("preset");
            let id = raw & layout.max_id();
            for format in Format::ALL {
                let text = format.encode(id, &layout).expect("encodes");
                prop_assert_eq!(format.decode(&text, &layout), Ok(id), "{} {}", format, text);
            }
        }

        #[test]
        fn any_u64_round_trips_in_layout_free_formats(id: u64) {
            let layout = Layout::preset("twitter").expect("preset");
            for format in [Format::Decimal, Format::Hex, Format::Base62, Format::Crockford32, Format::Sqids] {
                let text = format.encode(id, &layout).expect("encodes");
                prop_assert_eq!(format.decode(&text, &layout), Ok(id));
            }
        }

        #[test]
        fn decoding_never_panics(text in "\\PC{0,24}") {
            let layout = Layout::preset("twitter").expect("preset");
            for format in Format::ALL {
                let _ = format.decode(&text, &layout);
            }
        }
    }
}
