//! TypeIDs ([specification v0.3](https://github.com/jetify-com/typeid/tree/main/spec)): a
//! type prefix, an underscore and a UUID written as 26 characters of lowercase Crockford
//! base32, as in `user_01h455vb4pex5vsknk084sn02q`. New TypeIDs carry a UUID v7 from
//! [`UuidV7Generator`], so they sort by time and, within one generator, in the order made.
//!
//! The prefix says what the ID names; it is at most 63 characters of `a`–`z` and `_`,
//! neither first nor last an underscore, or empty (then the ID is the suffix alone, with no
//! separator). The suffix is the UUID's 128 bits with two zero bits in front, 5 bits a
//! character, so its first character is `0` to `7`. Parsing is as strict as the
//! specification: lowercase only, no Crockford aliases (`i`, `l`, `o`, `u`), no hyphens.
//!
//! ```
//! use snowdrift_core::clock::ManualClock;
//! use snowdrift_core::kinds::typeid::{TypeId, TypeIdGenerator};
//! let generator = TypeIdGenerator::new("user", ManualClock::new(1_700_000_000_000))?;
//! let text = generator.next()?;
//! let id: TypeId = text.parse()?;
//! assert_eq!(id.prefix(), "user");
//! assert_eq!(id.uuid().get_version_num(), 7);
//! assert_eq!(id.unix_ms(), Some(1_700_000_000_000));
//! assert_eq!(id.to_string(), text);
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use super::uuid::{Uuid, UuidV7Generator};
use crate::clock::Clock;
use crate::codec::{describe_char, invalid};
use crate::error::{Error, Result};

/// Longest prefix the specification allows.
pub const MAX_PREFIX_LEN: usize = 63;

/// Characters of the suffix.
pub const SUFFIX_LEN: usize = 26;

/// Longest TypeID: a 63-character prefix, the separator and the suffix.
pub const MAX_LEN: usize = MAX_PREFIX_LEN + 1 + SUFFIX_LEN;

const CODEC: &str = "typeid";

/// The specification's base32 alphabet: Crockford's, in lowercase.
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Each byte's value in [`ALPHABET`]; 0xff for a byte that is not in it (upper case,
/// Crockford's aliases and hyphens included: the specification reads none of them).
const VALUES: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < ALPHABET.len() {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// Checks `prefix` against the specification: empty, or at most 63 characters of `a`–`z`
/// and `_` that start and end with a letter.
///
/// ```
/// use snowdrift_core::kinds::typeid::check_prefix;
/// assert!(check_prefix("user").is_ok());
/// assert!(check_prefix("").is_ok());
/// assert!(check_prefix("my__type").is_ok());
/// let e = check_prefix("User").unwrap_err().to_string();
/// assert!(e.contains("'U'"), "{e}");
/// ```
pub fn check_prefix(prefix: &str) -> Result<()> {
    prefix_problem(prefix).map_or(Ok(()), |why| {
        Err(Error::InvalidConfig(format!(
            "TypeID prefix {prefix:?} {why}; {PREFIX_RULE}"
        )))
    })
}

/// What the specification allows, said after every refused prefix.
const PREFIX_RULE: &str = "a TypeID prefix is empty or 1 to 63 characters of a-z and _, \
                           starting and ending with a letter (e.g. \"user\", \"api_key\")";

/// Why `prefix` is not one, or `None`.
fn prefix_problem(prefix: &str) -> Option<String> {
    if let Some((at, c)) = prefix
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_lowercase() || c == '_'))
    {
        return Some(format!("holds {c:?} at byte {at}"));
    }
    if prefix.len() > MAX_PREFIX_LEN {
        return Some(format!("has {} characters", prefix.len()));
    }
    if prefix.starts_with('_') {
        return Some("starts with an underscore".into());
    }
    if prefix.ends_with('_') {
        return Some("ends with an underscore".into());
    }
    None
}

/// Writes `uuid` as the specification's 26-character suffix.
///
/// ```
/// use snowdrift_core::kinds::typeid::encode_suffix;
/// use snowdrift_core::kinds::Uuid;
/// assert_eq!(encode_suffix(&Uuid::max()), *b"7zzzzzzzzzzzzzzzzzzzzzzzzz");
/// ```
pub fn encode_suffix(uuid: &Uuid) -> [u8; SUFFIX_LEN] {
    let value = uuid.as_u128();
    let mut out = [0u8; SUFFIX_LEN];
    // 130 bits, the top two zero: character i holds bits 125 - 5i and the four below.
    for (i, c) in out.iter_mut().enumerate() {
        let shift = 5 * (SUFFIX_LEN - 1 - i);
        *c = ALPHABET[((value >> shift) & 31) as usize];
    }
    out
}

/// Reads a 26-character suffix back into its UUID.
///
/// ```
/// use snowdrift_core::kinds::typeid::decode_suffix;
/// let uuid = decode_suffix("01h455vb4pex5vsknk084sn02q")?;
/// assert_eq!(uuid.to_string(), "01890a5d-ac96-774b-bcce-b302099a8057");
/// assert!(decode_suffix("8zzzzzzzzzzzzzzzzzzzzzzzzz").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn decode_suffix(suffix: &str) -> Result<Uuid> {
    decode_suffix_of(suffix, suffix, 0)
}

/// [`decode_suffix`] of `suffix`, found at byte `offset` of `whole` (which errors show).
fn decode_suffix_of(whole: &str, suffix: &str, offset: usize) -> Result<Uuid> {
    let bad = |why: String| invalid(CODEC, whole, why);
    if suffix.len() != SUFFIX_LEN {
        let what = if suffix.is_empty() {
            "the suffix is empty".to_string()
        } else {
            format!("the suffix has {} bytes", suffix.len())
        };
        return Err(bad(format!(
            "{what}; a TypeID's suffix is exactly 26 characters of 0-9 and a-z without i, l, \
             o and u (lowercase)"
        )));
    }
    let mut value = 0u128;
    for (i, &b) in suffix.as_bytes().iter().enumerate() {
        let v = VALUES[usize::from(b)];
        if v == 0xff {
            let hint = if b.is_ascii_uppercase() {
                " (the suffix is lowercase)"
            } else {
                ""
            };
            return Err(bad(format!(
                "{} is not in the suffix's alphabet{hint}; it is 0-9 and a-z without i, l, o \
                 and u",
                describe_char(whole, offset + i)
            )));
        }
        value = value << 5 | u128::from(v);
    }
    if suffix.as_bytes()[0] > b'7' {
        return Err(bad(
            "the suffix starts above 7, which would be more than 128 bits; the largest is \
             7zzzzzzzzzzzzzzzzzzzzzzzzz"
                .into(),
        ));
    }
    Ok(Uuid::from_u128(value))
}

/// Writes the TypeID of `prefix` and `uuid` into `out`: `prefix_suffix`, or the suffix
/// alone when `prefix` is empty. `prefix` is not checked: see [`check_prefix`].
pub fn write(prefix: &str, uuid: &Uuid, out: &mut String) {
    out.reserve(prefix.len() + 1 + SUFFIX_LEN);
    if !prefix.is_empty() {
        out.push_str(prefix);
        out.push('_');
    }
    let suffix = encode_suffix(uuid);
    // The alphabet is ASCII.
    out.push_str(std::str::from_utf8(&suffix).unwrap_or_default());
}

/// A TypeID read or made: its prefix and its UUID.
///
/// Ordering compares the prefix, then the UUID, so TypeIDs of one prefix sort by time
/// (when their UUIDs are v7), as their text does.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeId {
    prefix: String,
    uuid: Uuid,
}

impl TypeId {
    /// The TypeID of `prefix` (checked, see [`check_prefix`]) and `uuid`, which may be any
    /// UUID: the specification lets users encode other versions than 7.
    pub fn new(prefix: &str, uuid: Uuid) -> Result<Self> {
        check_prefix(prefix)?;
        Ok(Self {
            prefix: prefix.to_string(),
            uuid,
        })
    }

    /// The type prefix (empty for a TypeID without one).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The UUID the suffix holds.
    pub fn uuid(&self) -> Uuid {
        self.uuid
    }

    /// When the ID was made, in milliseconds since 1970: the UUID's time when it is a
    /// version 7 (or 1, 6) UUID; `None` for a UUID that holds no time.
    pub fn unix_ms(&self) -> Option<u64> {
        let (secs, nanos) = self.uuid.get_timestamp()?.to_unix();
        Some(secs * 1000 + u64::from(nanos) / 1_000_000)
    }
}

impl fmt::Display for TypeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::with_capacity(MAX_LEN);
        write(&self.prefix, &self.uuid, &mut out);
        f.write_str(&out)
    }
}

impl FromStr for TypeId {
    type Err = Error;

    /// Reads a TypeID as the specification says: the prefix is everything before the last
    /// underscore (none: the whole text is the suffix), and both parts are checked.
    fn from_str(s: &str) -> Result<Self> {
        let Some(sep) = s.rfind('_') else {
            return Ok(Self {
                prefix: String::new(),
                uuid: decode_suffix_of(s, s, 0)?,
            });
        };
        let prefix = &s[..sep];
        if prefix.is_empty() {
            return Err(invalid(
                CODEC,
                s,
                "it starts with the separator '_' but has no prefix; a TypeID without a prefix \
                 is the 26-character suffix alone",
            ));
        }
        if let Some(why) = prefix_problem(prefix) {
            return Err(invalid(
                CODEC,
                s,
                format!("the prefix {why}; {PREFIX_RULE}"),
            ));
        }
        let uuid = decode_suffix_of(s, &s[sep + 1..], sep + 1)?;
        Ok(Self {
            prefix: prefix.to_string(),
            uuid,
        })
    }
}

/// Makes TypeIDs of one prefix, their UUIDs v7 from a [`UuidV7Generator`]: strictly
/// increasing within this generator (RFC 9562's method 2), even when the clock steps back.
///
/// Two generators share no order; across them, uniqueness rests on the UUIDs' random bits,
/// as for every UUID v7.
#[derive(Debug)]
pub struct TypeIdGenerator<C> {
    prefix: String,
    uuids: UuidV7Generator<C>,
}

impl<C: Clock> TypeIdGenerator<C> {
    /// A generator of TypeIDs with `prefix` (checked, see [`check_prefix`]), reading the
    /// time from `clock`.
    pub fn new(prefix: &str, clock: C) -> Result<Self> {
        check_prefix(prefix)?;
        Ok(Self {
            prefix: prefix.to_string(),
            uuids: UuidV7Generator::new(clock),
        })
    }

    /// The prefix of its TypeIDs.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The next TypeID, as text. Fails only when the clock reads beyond the year 10889.
    pub fn next(&self) -> Result<String> {
        let mut out = String::with_capacity(self.prefix.len() + 1 + SUFFIX_LEN);
        self.next_into(&mut out)?;
        Ok(out)
    }

    /// Appends the next TypeID to `out`; for callers that reuse a buffer.
    pub fn next_into(&self, out: &mut String) -> Result<()> {
        let uuid = self.uuids.next()?;
        write(&self.prefix, &uuid, out);
        Ok(())
    }

    /// The next TypeID, parsed: its prefix and UUID.
    pub fn next_id(&self) -> Result<TypeId> {
        Ok(TypeId {
            prefix: self.prefix.clone(),
            uuid: self.uuids.next()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const NOW: u64 = 1_700_000_000_000;

    #[test]
    fn suffix_round_trips_every_bit() {
        for shift in 0..128 {
            let uuid = Uuid::from_u128(1u128 << shift);
            let text = encode_suffix(&uuid);
            let text = std::str::from_utf8(&text).expect("ascii");
            assert_eq!(decode_suffix(text), Ok(uuid), "{text}");
        }
        let uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        let text = encode_suffix(&uuid);
        assert_eq!(
            decode_suffix(std::str::from_utf8(&text).expect("ascii")),
            Ok(uuid)
        );
    }

    #[test]
    fn generated_ids_are_v7_ordered_and_carry_the_clock() {
        let clock = ManualClock::new(NOW);
        let g = TypeIdGenerator::new("user", clock.clone()).expect("a good prefix");
        let mut last = g.next().expect("in range");
        assert!(
            last.starts_with("user_") && last.len() == 5 + SUFFIX_LEN,
            "{last}"
        );
        let id: TypeId = last.parse().expect("parses");
        assert_eq!(id.unix_ms(), Some(NOW));
        for i in 0..5_000 {
            if i == 2_000 {
                clock.step_back(10_000);
            }
            let next = g.next().expect("in range");
            assert!(next > last, "{i}: {next} after {last}");
            let id: TypeId = next.parse().expect("parses");
            assert_eq!(id.uuid().get_version_num(), 7);
            assert_eq!(id.prefix(), "user");
            last = next;
        }
        let bare = TypeIdGenerator::new("", clock).expect("empty prefix");
        let text = bare.next().expect("in range");
        assert_eq!(text.len(), SUFFIX_LEN);
        assert!(!text.contains('_'));
        assert_eq!(bare.next_id().expect("in range").prefix(), "");
    }

    #[test]
    fn prefixes_follow_the_specification() {
        let longest = "a".repeat(63);
        for good in [
            "",
            "a",
            "user",
            "my_type",
            "my__type",
            "a_b_c",
            longest.as_str(),
        ] {
            assert_eq!(check_prefix(good), Ok(()), "{good:?}");
        }
        for (bad, says) in [
            ("User", "'U' at byte 0"),
            ("us3r", "'3' at byte 2"),
            ("_user", "starts with an underscore"),
            ("user_", "ends with an underscore"),
            ("_", "starts with an underscore"),
            ("usér", "'é' at byte 2"),
            (&"a".repeat(64), "has 64 characters"),
        ] {
            let e = check_prefix(bad).expect_err(bad).to_string();
            assert!(e.contains(says) && e.contains("1 to 63"), "{bad:?}: {e}");
        }
        assert!(TypeIdGenerator::new("User", ManualClock::new(NOW)).is_err());
        assert!(TypeId::new("1", Uuid::nil()).is_err());
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        for (text, says) in [
            ("", "the suffix is empty"),
            ("user_", "the suffix is empty"),
            ("_01h455vb4pex5vsknk084sn02q", "no prefix"),
            ("user_01h455vb4pex5vsknk084sn02", "25 bytes"),
            ("user_01H455VB4PEX5VSKNK084SN02Q", "lowercase"),
            ("user_01h455vb4pex5vsknk084sn0iq", "'i' at byte 29"),
            ("user_8zzzzzzzzzzzzzzzzzzzzzzzzz", "starts above 7"),
            ("User_01h455vb4pex5vsknk084sn02q", "the prefix holds 'U'"),
        ] {
            let e = text.parse::<TypeId>().expect_err(text).to_string();
            assert!(e.contains(says) && e.contains("typeid"), "{text:?}: {e}");
        }
    }
}
