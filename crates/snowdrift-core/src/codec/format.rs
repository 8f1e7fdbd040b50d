//! The text formats of a 64-bit ID, by name, for command lines and configuration.

use std::fmt;
use std::str::FromStr;

use super::{IdFormat, base62, crockford32, friendly, invalid, sqids::Sqids};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::obfuscate::Obfuscator;

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
///     let text = format.codec(&twitter).encode(id)?;
///     assert_eq!(format.codec(&twitter).decode(&text)?, id);
/// }
/// let hex: Format = "hex".parse()?;
/// assert_eq!(hex.codec(&twitter).encode(id)?, "e92c5527c95b000");
/// assert_eq!(hex.codec(&twitter).decode("0xE92C5527C95B000")?, id);
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
    /// TSID's string form: [`crockford32`] padded with zeros to 13 characters, so strings
    /// sort as their IDs do (what TSID Creator's `toString` writes). Decoding takes any
    /// `crockford32` text.
    Tsid,
    /// [`sqids`](super::sqids) with Sqids' default alphabet and options, so that any Sqids
    /// implementation decodes it.
    Sqids,
    /// [`friendly`]: `time-node-...-sequence` under the layout, time in UTC.
    Friendly,
}

impl Format {
    /// Every format, in the order of their names above.
    pub const ALL: [Format; 7] = [
        Format::Decimal,
        Format::Hex,
        Format::Base62,
        Format::Crockford32,
        Format::Tsid,
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
            Format::Tsid => "tsid",
            Format::Sqids => "sqids",
            Format::Friendly => "friendly",
        }
    }

    /// This format bound to `layout`, ready to encode and decode many IDs.
    pub fn codec(self, layout: &Layout) -> Codec {
        let inner = match self {
            Format::Decimal => Inner::Decimal,
            Format::Hex => Inner::Hex,
            Format::Base62 => Inner::Base62,
            Format::Crockford32 => Inner::Crockford32,
            Format::Tsid => Inner::Tsid,
            // Building Sqids prepares a blocklist of hundreds of words: once here, not per ID.
            Format::Sqids => Inner::Sqids(Box::default()),
            Format::Friendly => Inner::Friendly(layout.clone()),
        };
        Codec {
            inner,
            obfuscator: None,
        }
    }
}

/// A [`Format`] bound to a layout, and for an obfuscated [`IdFormat`] to an
/// [`Obfuscator`]: encodes and decodes IDs in that format.
///
/// ```
/// use snowdrift_core::{codec::Format, layout::Layout};
/// let codec = Format::Friendly.codec(&Layout::preset("twitter")?);
/// assert_eq!(codec.encode(1050118621198921728)?, "20181010201924211-10-27-0");
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Codec {
    inner: Inner,
    /// Applied before encoding and undone after decoding; never with [`Format::Friendly`],
    /// whose fields would be scrambled.
    obfuscator: Option<Obfuscator>,
}

#[derive(Debug, Clone)]
enum Inner {
    Decimal,
    Hex,
    Base62,
    Crockford32,
    Tsid,
    Sqids(Box<Sqids>),
    Friendly(Layout),
}

impl Codec {
    /// `self` writing obfuscated IDs: what [`IdFormat::codec`] builds. The caller has
    /// refused [`Format::Friendly`].
    pub(super) fn obfuscated(self, obfuscator: &Obfuscator) -> Self {
        Self {
            obfuscator: Some(obfuscator.clone()),
            ..self
        }
    }

    /// The text format (applied to the obfuscated ID when [`is_obfuscated`](Self::is_obfuscated)).
    pub fn format(&self) -> Format {
        match self.inner {
            Inner::Decimal => Format::Decimal,
            Inner::Hex => Format::Hex,
            Inner::Base62 => Format::Base62,
            Inner::Crockford32 => Format::Crockford32,
            Inner::Tsid => Format::Tsid,
            Inner::Sqids(_) => Format::Sqids,
            Inner::Friendly(_) => Format::Friendly,
        }
    }

    /// True when IDs are obfuscated before they are written.
    pub fn is_obfuscated(&self) -> bool {
        self.obfuscator.is_some()
    }

    /// The format's full name: [`format`](Self::format), obfuscated or not.
    pub fn id_format(&self) -> IdFormat {
        IdFormat::of(self.format(), self.is_obfuscated())
    }

    /// Writes `id` in the format. Only [`Format::Friendly`] reads the layout; it fails when
    /// `id` does not fit the layout. An obfuscating codec fails with
    /// [`Error::OutOfDomain`] when `id` is beyond the obfuscator's width: an ID it cannot
    /// permute is an error, never written plain. The others accept any `u64`.
    pub fn encode(&self, id: u64) -> Result<String> {
        let id = match &self.obfuscator {
            Some(o) => o.encode(id)?,
            None => id,
        };
        Ok(match &self.inner {
            Inner::Decimal => id.to_string(),
            Inner::Hex => format!("{id:x}"),
            Inner::Base62 => base62::encode(id),
            Inner::Crockford32 => crockford32::encode(id),
            Inner::Tsid => format!("{:0>13}", crockford32::encode(id)),
            Inner::Sqids(sqids) => sqids.encode(id)?,
            Inner::Friendly(layout) => friendly::encode(layout, id)?,
        })
    }

    /// Reads an ID written in the format, and un-obfuscates it when the codec obfuscates.
    /// Only [`Format::Friendly`] reads the layout; the others return any `u64` the text
    /// stands for, so use [`Layout::decode`](crate::layout::Layout::decode) to check that
    /// it fits a layout. Text that stands for a number beyond the obfuscator's width fails
    /// with [`Error::OutOfDomain`]: no ID was ever obfuscated to it.
    pub fn decode(&self, text: &str) -> Result<u64> {
        let value = self.decode_plain(text)?;
        match &self.obfuscator {
            Some(o) => o.decode(value),
            None => Ok(value),
        }
    }

    fn decode_plain(&self, text: &str) -> Result<u64> {
        match &self.inner {
            Inner::Decimal => decode_decimal(text),
            Inner::Hex => decode_hex(text),
            Inner::Base62 => base62::decode(text),
            Inner::Crockford32 | Inner::Tsid => crockford32::decode(text),
            Inner::Sqids(sqids) => sqids.decode(text),
            Inner::Friendly(layout) => friendly::decode(layout, text),
        }
    }
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
            err.contains("decimal, hex, base62, crockford32, tsid, sqids, friendly"),
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
            "0X4P5A9Y9BC00",
            "Sm5Tn1DQhx5X",
            "20181010201924211-10-27-0",
        ];
        for (format, text) in Format::ALL.into_iter().zip(expected) {
            assert_eq!(
                format.codec(&twitter).encode(id).as_deref(),
                Ok(text),
                "{format}"
            );
            assert_eq!(format.codec(&twitter).decode(text), Ok(id), "{format}");
        }
        assert_eq!(Format::Sqids.codec(&twitter).encode(0).as_deref(), Ok("bM"));
    }

    #[test]
    fn decimal_and_hex_rules() {
        let l = Layout::preset("twitter").expect("preset");
        assert_eq!(Format::Decimal.codec(&l).decode("007"), Ok(7));
        assert_eq!(
            Format::Decimal.codec(&l).decode("18446744073709551615"),
            Ok(u64::MAX)
        );
        assert_eq!(Format::Hex.codec(&l).decode("0XfF"), Ok(255));
        assert_eq!(
            Format::Hex.codec(&l).decode("ffffffffffffffff"),
            Ok(u64::MAX)
        );
        assert_eq!(Format::Hex.codec(&l).encode(255).as_deref(), Ok("ff"));
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
            let err = format.codec(&l).decode(text).expect_err(text).to_string();
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
                let text = format.codec(&layout).encode(id).expect("encodes");
                prop_assert_eq!(format.codec(&layout).decode(&text), Ok(id), "{} {}", format, text);
            }
        }

        #[test]
        fn any_u64_round_trips_in_layout_free_formats(id: u64) {
            let layout = Layout::preset("twitter").expect("preset");
            for format in [Format::Decimal, Format::Hex, Format::Base62, Format::Crockford32, Format::Tsid, Format::Sqids] {
                let text = format.codec(&layout).encode(id).expect("encodes");
                prop_assert_eq!(format.codec(&layout).decode(&text), Ok(id));
            }
        }

        #[test]
        fn decoding_never_panics(text in "\\PC{0,24}") {
            let layout = Layout::preset("twitter").expect("preset");
            for format in Format::ALL {
                let _ = format.codec(&layout).decode(&text);
            }
        }
    }
}
