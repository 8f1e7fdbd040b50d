//! Parsing of layout specs (`time:41,datacenter:5,worker:5,seq:12`), units (`10ms`) and
//! epochs (`2010-11-04T01:42:54.657Z` or milliseconds).
//!
//! Field names decide the role: `time`/`timestamp` is the time field, `seq`/`sequence`/
//! `increment` the sequence, `ext`/`extension` the extension bits; any other name is a node
//! field. Fields are listed from the high bits to the low bits.

use super::{Field, Role};
use crate::error::{Error, Result};

/// Longest spec accepted, so a hostile input cannot make us allocate much.
const MAX_SPEC_LEN: usize = 512;

fn spec_error(spec: &str, reason: impl Into<String>) -> Error {
    let shown: String = spec.chars().take(80).collect();
    Error::InvalidSpec {
        spec: shown,
        reason: reason.into(),
    }
}

/// The role a field name implies.
fn role_of(name: &str) -> Role {
    match name {
        "time" | "timestamp" => Role::Time,
        "seq" | "sequence" | "increment" => Role::Sequence,
        "ext" | "extension" => Role::Extension,
        _ => Role::Node,
    }
}

/// Parses the field list of a spec. Structural rules (one time field, total width...) are
/// checked by [`Layout::new`](super::Layout::new).
pub(super) fn parse_fields(spec: &str) -> Result<Vec<Field>> {
    if spec.len() > MAX_SPEC_LEN {
        return Err(spec_error(
            spec,
            format!("longer than {MAX_SPEC_LEN} characters"),
        ));
    }
    if spec.trim().is_empty() {
        return Err(spec_error(
            spec,
            "empty; expected fields like time:41,worker:10,seq:12",
        ));
    }
    spec.split(',')
        .map(|part| {
            let part = part.trim();
            let (name, bits) = part.split_once(':').ok_or_else(|| {
                spec_error(spec, format!("{part:?} is not name:bits (e.g. worker:10)"))
            })?;
            let name = name.trim().to_ascii_lowercase();
            let bits: u8 = bits.trim().parse().map_err(|_| {
                spec_error(
                    spec,
                    format!("{bits:?} in {part:?} is not a bit count between 0 and 63"),
                )
            })?;
            if bits > 63 {
                return Err(spec_error(
                    spec,
                    format!("{part:?}: a field cannot be wider than 63 bits"),
                ));
            }
            let role = role_of(&name);
            Ok(Field::new(name, bits, role))
        })
        .collect()
}

/// Parses a time unit: `1ms`, `10ms`, `1s`, `2s`, or a bare number of milliseconds.
///
/// ```
/// assert_eq!(snowdrift_core::layout::parse_unit("10ms")?, 10);
/// assert_eq!(snowdrift_core::layout::parse_unit("1s")?, 1000);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn parse_unit(text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = || {
        Error::InvalidConfig(format!(
            "time unit {text:?} is not valid; use a whole number of milliseconds or seconds, such as 1ms, 10ms or 1s"
        ))
    };
    let (digits, scale) = if let Some(d) = t.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = t.strip_suffix('s') {
        (d, 1000)
    } else {
        (t, 1)
    };
    let n: u64 = digits.trim().parse().map_err(|_| bad())?;
    match n.checked_mul(scale) {
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(bad()),
    }
}

/// Parses an epoch: RFC 3339 (`2010-11-04T01:42:54.657Z`), a date (`2014-09-01`, midnight
/// UTC) or milliseconds since 1970 (`1288834974657`).
///
/// ```
/// use snowdrift_core::layout::parse_epoch;
/// assert_eq!(parse_epoch("2010-11-04T01:42:54.657Z")?, 1288834974657);
/// assert_eq!(parse_epoch("1288834974657")?, 1288834974657);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn parse_epoch(text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = |why: &str| {
        Error::InvalidConfig(format!(
            "epoch {text:?} is not valid ({why}); use RFC 3339 such as 2010-11-04T01:42:54.657Z, a date such as 2014-09-01, or milliseconds since 1970"
        ))
    };
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map_err(|_| bad("too large"));
    }
    let ts = if let Ok(ts) = t.parse::<jiff::Timestamp>() {
        ts
    } else {
        let date: jiff::civil::Date = t.parse().map_err(|_| bad("not a date or time"))?;
        date.to_zoned(jiff::tz::TimeZone::UTC)
            .map_err(|_| bad("out of range"))?
            .timestamp()
    };
    u64::try_from(ts.as_millisecond()).map_err(|_| bad("before 1970"))
}
