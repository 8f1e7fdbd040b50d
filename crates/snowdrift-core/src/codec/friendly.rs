//! CosId's "friendly" form of a snowflake: its fields in layout order joined with `-`, the
//! time written as `yyyyMMddHHmmssSSS` in UTC.
//!
//! A tweet ID under the Twitter layout reads `20181010201924211-10-27-0`: created
//! 2018-10-10 20:19:24.211 UTC by datacenter 10, worker 27, sequence 0. A person can read
//! it without a tool, and it still sorts by time as text (while the year has four digits).
//! CosId writes local time; this form always uses UTC, so the same ID reads the same on
//! every machine.
//!
//! Decoding is strict, so that one ID has one text: the time must be exactly 17 digits and a
//! real instant on a tick of the layout (for a 10 ms unit the last digit is always `0`), and
//! the other fields are plain decimal numbers without leading zeros that fit their widths.
//!
//! ```
//! use snowdrift_core::{codec::friendly, layout::Layout};
//! let twitter = Layout::preset("twitter")?;
//! assert_eq!(friendly::encode(&twitter, 1050118621198921728)?, "20181010201924211-10-27-0");
//! assert_eq!(friendly::decode(&twitter, "20181010201924211-10-27-0")?, 1050118621198921728);
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt::Write as _;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;

use super::invalid;
use crate::error::{Error, Result};
use crate::layout::{Layout, Role, format_ms};

const CODEC: &str = "friendly";

/// Digits of the time part: `yyyyMMddHHmmssSSS`.
const TIME_DIGITS: usize = 17;

/// The fields' names joined as the text is (`time-datacenter-worker-seq`), for messages.
fn shape(layout: &Layout) -> String {
    layout.field_names().join("-")
}

/// Writes `ms` (since 1970) as `yyyyMMddHHmmssSSS` in UTC; `None` past the last instant
/// jiff represents (9999-12-30T22:00:00Z, kept inside the year 9999 in every time zone).
fn write_time(out: &mut String, ms: u64) -> Option<()> {
    let ts = jiff::Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok()?;
    let t = TimeZone::UTC.to_datetime(ts);
    write!(
        out,
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
    .ok()
}

/// Writes the friendly form of `id`.
///
/// Fails when `id` is not an ID of the layout (wider than its bits), or when its time is
/// after 9999-12-30T22:00:00Z, near the end of what `yyyy` can show (only layouts with very
/// wide time fields reach it).
///
/// ```
/// use snowdrift_core::{codec::friendly, layout::Layout};
/// let sonyflake = Layout::preset("sonyflake")?;
/// let id = sonyflake.compose(&[1, 2, 3])?; // 10 ms after the epoch, sequence 2, machine 3
/// assert_eq!(friendly::encode(&sonyflake, id)?, "20140901000000010-2-3");
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn encode(layout: &Layout, id: u64) -> Result<String> {
    let decoded = layout.decode(id)?;
    let mut out = String::with_capacity(TIME_DIGITS + 8 * layout.fields().len());
    for (i, (field, &value)) in layout.fields().iter().zip(&decoded.values).enumerate() {
        if i > 0 {
            out.push('-');
        }
        if field.role() == Role::Time {
            // Computed in u128: tick_to_ms saturates, which would print a wrong date.
            let ms =
                u128::from(value) * u128::from(layout.unit_ms()) + u128::from(layout.epoch_ms());
            let shown = u64::try_from(ms)
                .ok()
                .and_then(|ms| write_time(&mut out, ms));
            if shown.is_none() {
                return Err(Error::InvalidId {
                    id: id.to_string(),
                    reason: format!(
                        "its time ({ms} ms since 1970) is after 9999-12-30T22:00:00Z, the last \
                         time the friendly form shows; use another format"
                    ),
                });
            }
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "{value}");
        }
    }
    Ok(out)
}

/// Reads the friendly form of an ID back.
///
/// ```
/// use snowdrift_core::{codec::friendly, layout::Layout};
/// let sonyflake = Layout::preset("sonyflake")?;
/// assert_eq!(friendly::decode(&sonyflake, "20140901000000010-2-3")?, sonyflake.compose(&[1, 2, 3])?);
/// // Sonyflake counts in 10 ms: a time between two ticks is no Sonyflake time.
/// assert!(friendly::decode(&sonyflake, "20140901000000015-2-3").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn decode(layout: &Layout, text: &str) -> Result<u64> {
    let fields = layout.fields();
    let expected = || {
        format!(
            "expected {} parts joined with '-' ({}), the time as yyyyMMddHHmmssSSS in UTC",
            fields.len(),
            shape(layout)
        )
    };
    let mut values = Vec::with_capacity(fields.len());
    let mut parts = text.split('-');
    for field in fields {
        let Some(part) = parts.next() else {
            return Err(invalid(
                CODEC,
                text,
                format!("too few parts; {}", expected()),
            ));
        };
        let value = if field.role() == Role::Time {
            decode_time(layout, text, part)?
        } else {
            decode_number(text, part, field.name())?
        };
        if value > field.max() {
            return Err(invalid(
                CODEC,
                text,
                format!(
                    "{} = {value} does not fit in {} bit(s); allowed: 0..={}",
                    field.name(),
                    field.bits(),
                    field.max()
                ),
            ));
        }
        values.push(value);
    }
    if parts.next().is_some() {
        return Err(invalid(
            CODEC,
            text,
            format!("too many parts; {}", expected()),
        ));
    }
    layout.compose(&values)
}

/// A non-time field: canonical decimal.
fn decode_number(text: &str, part: &str, name: &str) -> Result<u64> {
    let bad = |why: &str| {
        invalid(
            CODEC,
            text,
            format!(
                "{name} {part:?} {why}; write it as a decimal number without sign or leading zeros"
            ),
        )
    };
    if part.is_empty() {
        return Err(bad("is empty"));
    }
    if !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("is not a number"));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(bad("has a leading zero"));
    }
    part.parse().map_err(|_| bad("is too large"))
}

/// The time part, as a tick of the layout.
fn decode_time(layout: &Layout, text: &str, part: &str) -> Result<u64> {
    let bad = |why: String| invalid(CODEC, text, format!("time {part:?} {why}"));
    if part.len() != TIME_DIGITS || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(
            "is not 17 digits; write it as yyyyMMddHHmmssSSS in UTC, e.g. 20210623131730192".into(),
        ));
    }
    // Every slice below is ASCII digits of at most 4 characters, so each parse succeeds.
    let num = |range: std::ops::Range<usize>| part[range].parse::<i16>().unwrap_or(-1);
    let to_i8 = |v: i16| i8::try_from(v).unwrap_or(-1);
    let dt = DateTime::new(
        num(0..4),
        to_i8(num(4..6)),
        to_i8(num(6..8)),
        to_i8(num(8..10)),
        to_i8(num(10..12)),
        to_i8(num(12..14)),
        i32::from(num(14..17)) * 1_000_000,
    )
    .map_err(|_| {
        bad("is not a real date and time (check the month, day, hour, minute and second)".into())
    })?;
    let ts = TimeZone::UTC
        .to_timestamp(dt)
        .map_err(|_| bad("is out of range: the latest time is 99991230220000000".into()))?;
    let ms = u64::try_from(ts.as_millisecond()).map_err(|_| bad("is before 1970".into()))?;
    let since_epoch = ms.checked_sub(layout.epoch_ms()).ok_or_else(|| {
        bad(format!(
            "is before the layout's epoch {}",
            format_ms(layout.epoch_ms())
        ))
    })?;
    let unit = layout.unit_ms();
    if since_epoch % unit != 0 {
        return Err(bad(format!(
            "is not on a tick of the layout: it counts time in steps of {unit} ms from {}",
            format_ms(layout.epoch_ms())
        )));
    }
    let tick = since_epoch / unit;
    if tick > layout.max_tick() {
        return Err(bad(format!(
            "is after the layout's time field runs out ({})",
            layout.lifetime()
        )));
    }
    Ok(tick)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::parse_epoch;
    use proptest::prelude::*;

    fn cosid_layout() -> Layout {
        Layout::from_spec("time:41,machine:10,seq:12", 1, 1_577_836_800_000).expect("valid")
    }

    #[test]
    fn cosid_example() {
        let layout = cosid_layout();
        let ms = parse_epoch("2021-06-23T13:17:30.192Z").expect("valid");
        let tick = layout.ms_to_tick(ms).expect("after epoch");
        let id = layout.compose(&[tick, 1, 0]).expect("fits");
        assert_eq!(encode(&layout, id).as_deref(), Ok("20210623131730192-1-0"));
        assert_eq!(decode(&layout, "20210623131730192-1-0"), Ok(id));
    }

    #[test]
    fn twitter_fields_in_order() {
        let twitter = Layout::preset("twitter").expect("preset");
        let id = twitter.compose(&[0, 31, 1, 4095]).expect("fits");
        assert_eq!(
            encode(&twitter, id).as_deref(),
            Ok("20101104014254657-31-1-4095")
        );
        assert_eq!(decode(&twitter, "20101104014254657-31-1-4095"), Ok(id));
    }

    #[test]
    fn extension_field_comes_first() {
        let layout = Layout::from_spec("ext:2,time:40,worker:8,seq:12", 1, 0).expect("valid");
        let id = layout.compose(&[3, 1000, 7, 9]).expect("fits");
        assert_eq!(
            encode(&layout, id).as_deref(),
            Ok("3-19700101000001000-7-9")
        );
        assert_eq!(decode(&layout, "3-19700101000001000-7-9"), Ok(id));
    }

    #[test]
    fn rejects_ids_outside_the_layout() {
        let twitter = Layout::preset("twitter").expect("preset");
        assert!(matches!(
            encode(&twitter, u64::MAX),
            Err(Error::InvalidId { .. })
        ));
    }

    #[test]
    fn rejects_times_beyond_year_9999() {
        let layout = Layout::from_spec("time:50,seq:8", 1000, 0).expect("valid");
        let id = layout.compose(&[layout.max_tick(), 0]).expect("fits");
        let err = encode(&layout, id).expect_err("year too large").to_string();
        assert!(err.contains("9999-12-30T22:00:00Z"), "{err}");
        // The last instant that does fit still round-trips.
        let max_ms = u64::try_from(jiff::Timestamp::MAX.as_millisecond()).expect("positive");
        let last = layout.ms_to_tick(max_ms).expect("after epoch");
        let id = layout.compose(&[last, 255]).expect("fits");
        let text = encode(&layout, id).expect("fits in 4 digits");
        assert_eq!(text, "99991230220000000-255");
        assert_eq!(decode(&layout, &text), Ok(id));
    }

    #[test]
    fn rejects_bad_text_with_a_reason() {
        let twitter = Layout::preset("twitter").expect("preset");
        for (text, reason) in [
            ("", "not 17 digits"),
            ("20181010201924211-10-27", "too few parts"),
            ("20181010201924211-10-27-0-1", "too many parts"),
            ("20181010201924211-10-27-", "seq \"\" is empty"),
            ("20181010201924211-10-027-0", "leading zero"),
            ("20181010201924211-10-+2-0", "not a number"),
            (
                "20181010201924211-32-0-0",
                "datacenter = 32 does not fit in 5 bit(s)",
            ),
            ("20181010201924211-1-0-99999999999999999999", "too large"),
            ("2018101020192421-10-27-0", "not 17 digits"),
            ("2018-10-10T20:19:24Z", "not 17 digits"),
            ("20181310201924211-10-27-0", "not a real date"),
            ("20180230201924211-10-27-0", "not a real date"),
            ("20181010246000000-10-27-0", "not a real date"),
            ("20181010235960000-10-27-0", "not a real date"),
            ("00000101000000000-0-0-0", "before 1970"),
            ("99991231000000000-0-0-0", "out of range"),
            (
                "20000101000000000-0-0-0",
                "before the layout's epoch 2010-11-04T01:42:54.657Z",
            ),
            ("21000101000000000-0-0-0", "runs out"),
            ("２0181010201924211-10-27-0", "not 17 digits"),
        ] {
            let err = decode(&twitter, text).expect_err(text).to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
            assert!(err.contains("friendly"), "{err}");
        }
    }

    #[test]
    fn time_must_be_on_a_tick() {
        let sonyflake = Layout::preset("sonyflake").expect("preset");
        let err = decode(&sonyflake, "20200101000000005-0-0")
            .expect_err("between ticks")
            .to_string();
        assert!(err.contains("steps of 10 ms"), "{err}");
        assert!(decode(&sonyflake, "20200101000000010-0-0").is_ok());
    }

    proptest! {
        #[test]
        fn round_trip_presets(
            preset in proptest::sample::select(vec!["twitter", "sonyflake", "discord", "baidu", "instagram", "js53", "mastodon"]),
            raw: u64,
        ) {
            let layout = Layout::preset(preset).expect("preset");
            let id = raw & layout.max_id();
            let text = encode(&layout, id).expect("every preset's IDs are before year 9999");
            prop_assert_eq!(decode(&layout, &text), Ok(id), "{}", text);
        }

        #[test]
        fn decode_never_panics_and_is_canonical(text in "[0-9]{17}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,5}|\\PC{0,30}") {
            let twitter = Layout::preset("twitter").expect("preset");
            if let Ok(id) = decode(&twitter, &text) {
                prop_assert_eq!(encode(&twitter, id), Ok(text));
            }
        }
    }
}
