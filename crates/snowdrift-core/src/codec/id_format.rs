//! The names a client asks for an ID's text form by: a [`Format`], optionally applied to the
//! ID after a keyed [`Obfuscator`] has permuted it.
//!
//! Every interface that takes a format name (the server's `format=`, its gRPC and RESP
//! commands, the command line) parses it here and builds its [`Codec`] here, so
//! "obfuscate, then encode" and "decode, then un-obfuscate" exist once.

use std::fmt;
use std::str::FromStr;

use super::{Codec, Format};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::obfuscate::Obfuscator;

/// Prefix of the obfuscated formats' names: `obfuscated-base62` is base62 of the obfuscated
/// ID; `obfuscated` alone is its decimal.
const PREFIX: &str = "obfuscated";

/// How an ID is written: a [`Format`], of the ID itself or of its obfuscated form.
///
/// The names are those of [`Format`] (`decimal`, `hex`, `base62`, `crockford32`, `sqids`,
/// `friendly`) and the obfuscated ones: `obfuscated` (decimal; `obfuscated-decimal` is
/// read too), `obfuscated-hex`, `obfuscated-base62`, `obfuscated-crockford32` and
/// `obfuscated-sqids`. There is no obfuscated `friendly`: it shows a snowflake ID's
/// fields, which obfuscation scrambles on purpose.
///
/// ```
/// use snowdrift_core::codec::{Format, IdFormat};
/// use snowdrift_core::layout::Layout;
/// use snowdrift_core::obfuscate::{Obfuscator, parse_key};
/// let layout = Layout::preset("twitter")?;
/// let key = Obfuscator::new(parse_key("000102030405060708090a0b0c0d0e0f")?, 63)?;
/// let format: IdFormat = "obfuscated-base62".parse()?;
/// assert_eq!(format.format(), Format::Base62);
/// let codec = format.codec(&layout, Some(&key))?;
/// let public = codec.encode(1050118621198921728)?;
/// assert_ne!(public, Format::Base62.codec(&layout).encode(1050118621198921728)?);
/// assert_eq!(codec.decode(&public)?, 1050118621198921728);
/// assert!(format.codec(&layout, None).is_err()); // no key, no obfuscated IDs
/// assert!("obfuscated-friendly".parse::<IdFormat>().is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IdFormat {
    format: Format,
    obfuscated: bool,
}

impl From<Format> for IdFormat {
    fn from(format: Format) -> Self {
        Self::plain(format)
    }
}

impl IdFormat {
    /// Every format: the plain ones, then the obfuscated ones, in the order of their names
    /// above.
    pub const ALL: [IdFormat; 13] = [
        Self::plain(Format::Decimal),
        Self::plain(Format::Hex),
        Self::plain(Format::Base62),
        Self::plain(Format::Crockford32),
        Self::plain(Format::Tsid),
        Self::plain(Format::Sqids),
        Self::plain(Format::Friendly),
        Self::of(Format::Decimal, true),
        Self::of(Format::Hex, true),
        Self::of(Format::Base62, true),
        Self::of(Format::Crockford32, true),
        Self::of(Format::Tsid, true),
        Self::of(Format::Sqids, true),
    ];

    /// `format` of the ID itself.
    pub const fn plain(format: Format) -> Self {
        Self::of(format, false)
    }

    /// `format` of the obfuscated ID; refused for [`Format::Friendly`].
    pub fn obfuscated(format: Format) -> Result<Self> {
        if format == Format::Friendly {
            return Err(Error::InvalidConfig(format!(
                "there is no obfuscated friendly format: friendly shows the fields of a \
                 snowflake ID, which obfuscation scrambles; use one of {}",
                Self::names(true)
            )));
        }
        Ok(Self::of(format, true))
    }

    /// Callers never pass `Friendly` with `obfuscated`.
    pub(super) const fn of(format: Format, obfuscated: bool) -> Self {
        Self { format, obfuscated }
    }

    /// The text format.
    pub const fn format(self) -> Format {
        self.format
    }

    /// True when the ID is obfuscated before it is written.
    pub const fn is_obfuscated(self) -> bool {
        self.obfuscated
    }

    /// The name, as [`FromStr`] accepts it.
    pub const fn name(self) -> &'static str {
        if !self.obfuscated {
            return self.format.name();
        }
        match self.format {
            Format::Decimal => "obfuscated",
            Format::Hex => "obfuscated-hex",
            Format::Base62 => "obfuscated-base62",
            Format::Crockford32 => "obfuscated-crockford32",
            Format::Tsid => "obfuscated-tsid",
            Format::Sqids => "obfuscated-sqids",
            // Not constructible (see `obfuscated`); named for completeness.
            Format::Friendly => "obfuscated-friendly",
        }
    }

    /// This format bound to `layout` (read only by `friendly`) and, for an obfuscated
    /// format, to `obfuscator`, which it needs: without one it fails, since writing the ID
    /// plain instead would publish what the caller meant to hide. A plain format ignores
    /// `obfuscator`.
    pub fn codec(self, layout: &Layout, obfuscator: Option<&Obfuscator>) -> Result<Codec> {
        let codec = self.format.codec(layout);
        if !self.obfuscated {
            return Ok(codec);
        }
        match obfuscator {
            Some(o) => Ok(codec.obfuscated(o)),
            None => Err(Error::InvalidConfig(format!(
                "format {self} needs an obfuscation key, and none was given"
            ))),
        }
    }

    /// The names of the plain or the obfuscated formats, comma-separated.
    fn names(obfuscated: bool) -> String {
        let names: Vec<&str> = Self::ALL
            .iter()
            .filter(|f| f.obfuscated == obfuscated)
            .map(|f| f.name())
            .collect();
        names.join(", ")
    }
}

impl fmt::Display for IdFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for IdFormat {
    type Err = Error;

    /// Parses a format name; see [`IdFormat`]. The error lists every name.
    fn from_str(s: &str) -> Result<Self> {
        let Some(rest) = s.strip_prefix(PREFIX) else {
            return s.parse::<Format>().map(Self::plain).map_err(|_| unknown(s));
        };
        let format = match rest {
            "" => Format::Decimal,
            _ => rest
                .strip_prefix('-')
                .and_then(|name| name.parse::<Format>().ok())
                .ok_or_else(|| unknown(s))?,
        };
        Self::obfuscated(format)
    }
}

fn unknown(s: &str) -> Error {
    let shown: String = s.chars().take(64).collect();
    Error::InvalidConfig(format!(
        "unknown ID format {shown:?}; the formats are {}, and obfuscated with the \
         generator's key: {}",
        IdFormat::names(false),
        IdFormat::names(true)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obfuscate::DEFAULT_BITS;
    use proptest::prelude::*;

    const KEY: [u8; 16] = *b"snowdrift-test-k";

    #[test]
    fn names_round_trip_and_errors_list_them() {
        for format in IdFormat::ALL {
            assert_eq!(format.to_string().parse::<IdFormat>(), Ok(format));
        }
        assert_eq!(
            IdFormat::ALL.iter().filter(|f| f.is_obfuscated()).count(),
            6
        );
        assert_eq!(
            "obfuscated-decimal".parse::<IdFormat>(),
            Ok(IdFormat::of(Format::Decimal, true))
        );
        assert_eq!(IdFormat::default(), IdFormat::plain(Format::Decimal));
        let err = "obfuscated-friendly"
            .parse::<IdFormat>()
            .expect_err("no obfuscated friendly")
            .to_string();
        assert!(
            err.contains("scrambles") && err.contains("obfuscated-sqids"),
            "{err}"
        );
        for bad in [
            "obfuscated-",
            "obfuscatedhex",
            "obfuscated-base64",
            "Obfuscated",
            "x",
        ] {
            let err = bad.parse::<IdFormat>().expect_err(bad).to_string();
            assert!(
                err.contains("decimal, hex, base62, crockford32, tsid, sqids, friendly")
                    && err.contains(
                        "obfuscated, obfuscated-hex, obfuscated-base62, \
                         obfuscated-crockford32, obfuscated-tsid, obfuscated-sqids"
                    ),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn obfuscated_formats_need_a_key_and_plain_ones_ignore_it() {
        let layout = Layout::preset("twitter").expect("preset");
        let key = Obfuscator::new(KEY, DEFAULT_BITS).expect("valid");
        let id = 1050118621198921728;
        for format in IdFormat::ALL {
            let plain = format.format().codec(&layout).encode(id).expect("encodes");
            if format.is_obfuscated() {
                let err = format.codec(&layout, None).expect_err("no key").to_string();
                assert!(err.contains("needs an obfuscation key"), "{err}");
                let codec = format.codec(&layout, Some(&key)).expect("with key");
                assert!(codec.is_obfuscated());
                assert_eq!(codec.id_format(), format);
                let text = codec.encode(id).expect("in domain");
                assert_ne!(text, plain, "{format}");
                assert_eq!(codec.decode(&text), Ok(id), "{format} {text}");
            } else {
                let codec = format.codec(&layout, Some(&key)).expect("plain");
                assert!(!codec.is_obfuscated());
                assert_eq!(codec.encode(id).as_deref(), Ok(plain.as_str()));
            }
        }
    }

    /// The published forms of pinned IDs: the permutation is pinned in `obfuscate`, and
    /// this pins the order "obfuscate, then encode".
    #[test]
    fn known_obfuscated_encodings() {
        let layout = Layout::preset("twitter").expect("preset");
        let key = Obfuscator::new(KEY, 63).expect("valid");
        let expected = [
            ("obfuscated", "4726222040605329998"),
            ("obfuscated-hex", "4196e9e7c3e70a4e"),
        ];
        for (name, text) in expected {
            let codec = name
                .parse::<IdFormat>()
                .and_then(|f| f.codec(&layout, Some(&key)))
                .expect("codec");
            assert_eq!(codec.encode(1).as_deref(), Ok(text), "{name}");
        }
    }

    #[test]
    fn ids_outside_the_domain_are_errors_both_ways() {
        let layout = Layout::preset("twitter").expect("preset");
        let js = Obfuscator::new(KEY, 53).expect("valid");
        for format in IdFormat::ALL.into_iter().filter(|f| f.is_obfuscated()) {
            let codec = format.codec(&layout, Some(&js)).expect("codec");
            assert_eq!(
                codec.encode(1 << 53),
                Err(Error::OutOfDomain {
                    value: 1 << 53,
                    bits: 53,
                    max: (1 << 53) - 1
                }),
                "{format}"
            );
            let beyond = format
                .format()
                .codec(&layout)
                .encode(1 << 60)
                .expect("plain");
            assert!(
                matches!(codec.decode(&beyond), Err(Error::OutOfDomain { .. })),
                "{format}"
            );
        }
    }

    proptest! {
        /// Obfuscate then encode, decode then un-obfuscate: every ID of the domain comes
        /// back, under any key, width and layout.
        #[test]
        fn obfuscated_formats_round_trip(
            key: [u8; 16],
            bits in proptest::sample::select(vec![53u8, 63, 64]),
            preset in proptest::sample::select(vec!["twitter", "sonyflake", "discord", "js53"]),
            raw: u64,
        ) {
            let layout = Layout::preset(preset).expect("preset");
            let o = Obfuscator::new(key, bits).expect("valid");
            let id = raw & o.max();
            for format in IdFormat::ALL {
                if format.format() == Format::Friendly && id > layout.max_id() {
                    continue;
                }
                let codec = format.codec(&layout, Some(&o)).expect("codec");
                let text = codec.encode(id).expect("encodes");
                prop_assert_eq!(codec.decode(&text), Ok(id), "{} {}", format, text);
            }
        }

        #[test]
        fn parsing_never_panics_and_accepts_only_names(text in "\\PC{0,30}") {
            if let Ok(format) = text.parse::<IdFormat>() {
                prop_assert!(text == format.name() || text == "obfuscated-decimal");
            }
        }
    }
}
