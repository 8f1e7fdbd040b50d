use proptest::prelude::*;

use super::{CounterTemplate, MAX_TEMPLATE_LEN, Period};
use crate::Error;

/// 2026-11-22T10:20:00Z.
const NOV22: u64 = 1_795_342_800_000;
const HOUR: u64 = 3_600_000;
const DAY: u64 = 24 * HOUR;
/// 9999-12-30T22:00:00Z, jiff's last instant.
const JIFF_MAX_MS: u64 = 253_402_207_200_000;

fn t(text: &str) -> CounterTemplate {
    CounterTemplate::parse(text).unwrap()
}

/// The column and reason of a parse error.
fn err(text: &str) -> (usize, String) {
    match CounterTemplate::parse(text) {
        Err(Error::InvalidTemplate { column, reason, .. }) => (column, reason),
        other => panic!("{text:?} parsed as {other:?}"),
    }
}

#[test]
fn order_number_vector() {
    let tpl = t("ORD{date:%Y%m%d}{seq:08}");
    assert_eq!(tpl.period(), Period::Day);
    assert_eq!(tpl.seq_width(), Some(8));
    assert_eq!(tpl.max_seq(), 99_999_999);
    assert_eq!(tpl.period_key(NOV22).unwrap(), "20261122");
    assert_eq!(tpl.render(NOV22, 1).unwrap(), "ORD2026112200000001");
    assert_eq!(
        tpl.render(NOV22, 99_999_999).unwrap(),
        "ORD2026112299999999"
    );
    assert_eq!(
        tpl.render(NOV22, 100_000_000),
        Err(Error::CounterOverflow {
            seq: 100_000_000,
            max: 99_999_999,
            field: "{seq:08} field".into()
        })
    );
    assert_eq!(tpl.to_string(), "ORD{date:%Y%m%d}{seq:08}");
}

#[test]
fn periods_and_keys_follow_the_finest_date_part() {
    let cases = [
        ("{seq}", Period::None, ""),
        ("N-{seq:04}", Period::None, ""),
        ("{date:%Y}-{seq}", Period::Year, "2026"),
        ("{date:%y}{seq}", Period::Year, "2026"),
        ("{date:%Y-%m}-{seq}", Period::Month, "202611"),
        ("{date:%b %Y} {seq}", Period::Month, "202611"),
        ("{date:%F}/{seq}", Period::Day, "20261122"),
        ("{date:%Y}.{date:%j}.{seq}", Period::Day, "20261122"),
        ("{date:%Y%m%d%H}{seq:03}", Period::Hour, "2026112210"),
        ("{date:%Y%j%H}{seq}", Period::Hour, "2026112210"),
    ];
    for (text, period, key) in cases {
        let tpl = t(text);
        assert_eq!(tpl.period(), period, "{text}");
        assert_eq!(tpl.period_key(NOV22).unwrap(), key, "{text}");
    }
}

#[test]
fn render_vectors() {
    let cases = [
        ("{seq}", 0, "0"),
        ("{seq}", 42, "42"),
        ("{seq:01}", 7, "7"),
        ("{seq:05}", 42, "00042"),
        ("{{{seq}}}", 5, "{5}"),
        ("a}}b{{c{seq}", 5, "a}b{c5"),
        ("{date:%y%m%d}-{seq:04}", 12, "261122-0012"),
        ("{date:%F %H}h#{seq}", 3, "2026-11-22 10h#3"),
        (
            "{date:%a %e %B %Y} no.{seq}",
            9,
            "Sun 22 November 2026 no.9",
        ),
        ("{date:%Y}/{date:%j}/{seq:02}", 1, "2026/326/01"),
        ("{date:100%% %Y}{seq}", 1, "100% 20261"),
        ("Ω{date:%Yй}{seq}", 1, "Ω2026й1"),
    ];
    for (text, seq, want) in cases {
        assert_eq!(t(text).render(NOV22, seq).unwrap(), want, "{text}");
    }
    let max = i64::MAX.unsigned_abs();
    assert_eq!(t("{seq}").render(0, max).unwrap(), max.to_string());
    assert!(matches!(
        t("{seq}").render(0, max + 1),
        Err(Error::CounterOverflow { .. })
    ));
    assert_eq!(t("{seq:019}").max_seq(), max);
    assert_eq!(t("{seq:018}").max_seq(), 999_999_999_999_999_999);
}

#[test]
fn utc_offset_moves_dates_and_periods() {
    // 2026-11-22T23:30:00Z is the 23rd in Tokyo and still the 22nd in New York (-05:00).
    let ms = NOV22 + 13 * HOUR + 10 * 60_000;
    let tokyo = t("{date:%Y%m%d%H}{seq}").with_utc_offset(9 * 3600).unwrap();
    assert_eq!(tokyo.period_key(ms).unwrap(), "2026112308");
    assert_eq!(tokyo.render(ms, 1).unwrap(), "20261123081");
    assert_eq!(tokyo.utc_offset_seconds(), 32_400);
    let new_york = t("{date:%Y%m%d}{seq}").with_utc_offset(-5 * 3600).unwrap();
    assert_eq!(new_york.period_key(ms).unwrap(), "20261122");
    // Half-hour offsets move hour boundaries to :30 UTC.
    let india = t("{date:%Y%m%d%H}{seq}")
        .with_utc_offset(5 * 3600 + 1800)
        .unwrap();
    assert_eq!(india.period_key(NOV22).unwrap(), "2026112215");
    assert_eq!(india.period_key(NOV22 + 9 * 60_000).unwrap(), "2026112215");
    assert_eq!(india.period_key(NOV22 + 10 * 60_000).unwrap(), "2026112216");
    assert!(matches!(
        t("{seq}").with_utc_offset(-93_600),
        Err(Error::InvalidConfig(_))
    ));
}

#[test]
fn period_boundaries() {
    // 2026-11-22T23:59:59.999Z and one millisecond later.
    let last = 1_795_391_999_999;
    let daily = t("{date:%Y%m%d}{seq}");
    assert_eq!(daily.period_key(last).unwrap(), "20261122");
    assert_eq!(daily.period_key(last + 1).unwrap(), "20261123");
    let monthly = t("{date:%Y%m}{seq}");
    assert_eq!(monthly.period_key(last + 8 * DAY).unwrap(), "202611");
    assert_eq!(monthly.period_key(last + 8 * DAY + 1).unwrap(), "202612");
    let yearly = t("{date:%Y}{seq}");
    // 2026-12-31T23:59:59.999Z.
    let year_end = last + 39 * DAY;
    assert_eq!(yearly.period_key(year_end).unwrap(), "2026");
    assert_eq!(yearly.period_key(year_end + 1).unwrap(), "2027");
}

#[test]
fn dates_out_of_range_are_errors_not_panics() {
    let daily = t("{date:%Y%m%d}{seq}");
    assert!(daily.period_key(JIFF_MAX_MS).is_ok());
    assert!(matches!(
        daily.render(JIFF_MAX_MS + 1, 1),
        Err(Error::ClockOutOfRange { .. })
    ));
    assert!(matches!(
        daily.period_key(u64::MAX),
        Err(Error::ClockOutOfRange { .. })
    ));
    // A template without a date reads no date.
    assert_eq!(t("x{seq}").render(u64::MAX, 3).unwrap(), "x3");
    assert_eq!(t("x{seq}").period_key(u64::MAX).unwrap(), "");
}

#[test]
fn parse_errors_point_at_the_problem() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "no {seq}"),
        ("ORD{date:%Y}", 13, "no {seq}"),
        ("{seq}{seq}", 6, "a second {seq}"),
        ("a}b{seq}", 2, "lone '}'"),
        ("ab{seq", 3, "never closed"),
        ("{seq{date:%Y}}", 5, "do not nest"),
        ("x{sequence}", 3, "unknown field \"sequence\""),
        ("{}{seq}", 2, "unknown field \"\""),
        ("{seq:8}", 1, "not a width"),
        ("{seq:00}", 1, "not a width"),
        ("{seq:008}", 1, "not a width"),
        ("{seq:020}", 1, "N from 1 to 19"),
        ("{seq:0x}", 1, "not a width"),
        ("{date}{seq}", 1, "needs a strftime format"),
        ("{date:}{seq}", 1, "needs a strftime format"),
        ("{date:%Y%m%-d}{seq}", 11, "padding flags"),
        ("{date:%Y%m%d%M}{seq}", 13, "finer than an hour"),
        ("{date:%Y%m%d %T}{seq}", 14, "finer than an hour"),
        ("{date:%Y%z}{seq}", 9, "%z is not allowed"),
        ("{date:%Y%}{seq}", 9, "lone '%'"),
        ("{date:%m%d}{seq}", 7, "no year"),
        ("{date:%a}{seq}", 7, "no year"),
        ("{date:%Y%d}{seq}", 9, "without a month"),
        ("{date:%Y%m%H}{seq}", 11, "without a day"),
    ];
    for &(text, column, needle) in cases {
        let (got_column, reason) = err(text);
        assert!(reason.contains(needle), "{text:?}: {reason}");
        assert_eq!(got_column, column, "{text:?}: {reason}");
    }
    let long = format!("{}{{seq}}", "x".repeat(MAX_TEMPLATE_LEN));
    let (column, reason) = err(&long);
    assert_eq!(column, MAX_TEMPLATE_LEN + 1);
    assert!(reason.contains("at most 256"), "{reason}");
    // The message names the template, the column and what is allowed.
    let shown = CounterTemplate::parse("{date:%Y%q}{seq}")
        .unwrap_err()
        .to_string();
    assert!(shown.contains("at column 9"), "{shown}");
    assert!(shown.contains("allowed: %Y %y"), "{shown}");
}

/// A literal without braces or per-cent signs, including digits and letters so that
/// collisions between literal text and rendered parts would show up.
fn literal() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _./-]{0,4}"
}

/// A date format from the allowed parts that names its period completely.
fn date_format() -> impl Strategy<Value = String> {
    let year = prop_oneof![Just("%Y"), Just("%y")];
    let rest = prop_oneof![
        Just(""),
        Just("%m"),
        Just("%b"),
        Just("%B"),
        Just("-%m-%d"),
        Just("%m%d"),
        Just("%b%e"),
        Just("%j"),
        Just("%m%d%H"),
        Just("%j%H"),
        Just("%B %d %A %H"),
    ];
    (year, rest, literal()).prop_map(|(y, r, lit)| format!("{y}{lit}{r}"))
}

/// A valid template with a date before and after the sequence, each optional.
fn template() -> impl Strategy<Value = String> {
    let seq = prop_oneof![
        Just("{seq}".to_string()),
        (1u8..=19).prop_map(|w| format!("{{seq:0{w}}}"))
    ];
    (
        literal(),
        proptest::option::of(date_format()),
        literal(),
        seq,
        literal(),
        proptest::option::of(date_format()),
    )
        .prop_map(|(a, d1, b, seq, c, d2)| {
            let d1 = d1.map_or(String::new(), |d| format!("{{date:{d}}}"));
            let d2 = d2.map_or(String::new(), |d| format!("{{date:{d}}}"));
            format!("{a}{d1}{b}{seq}{c}{d2}")
        })
}

/// Milliseconds from 1970 to about 2200.
fn ms() -> impl Strategy<Value = u64> {
    0u64..7_258_118_400_000
}

/// 2026-11-22T00:00:00Z.
const NOV22_MIDNIGHT: u64 = 1_795_305_600_000;

#[test]
fn period_spans_begin_and_end_where_the_period_does() {
    let span = |text: &str, ms: u64| t(text).period_span(ms).unwrap();
    let day = span("ORD{date:%Y%m%d}{seq:06}", NOV22);
    assert_eq!(
        (day.key, day.start_ms, day.end_ms),
        (20261122, NOV22_MIDNIGHT, NOV22_MIDNIGHT + DAY)
    );
    let hour = span("{date:%Y%m%d%H}-{seq}", NOV22);
    assert_eq!(
        (hour.key, hour.start_ms, hour.end_ms),
        (
            2026112210,
            NOV22_MIDNIGHT + 10 * HOUR,
            NOV22_MIDNIGHT + 11 * HOUR
        )
    );
    // November has 30 days; 2026-12-01T00:00Z is 9 days after the 22nd.
    let month = span("{date:%Y%m}-{seq}", NOV22);
    assert_eq!(month.key, 202611);
    assert_eq!(month.start_ms, NOV22_MIDNIGHT - 21 * DAY);
    assert_eq!(month.end_ms, NOV22_MIDNIGHT + 9 * DAY);
    // 2028 is a leap year: February has 29 days.
    let feb_2028 = 1_835_481_600_000; // 2028-03-01T00:00:00Z
    let feb = span("{date:%Y%m}-{seq}", feb_2028 - 1);
    assert_eq!((feb.key, feb.end_ms), (202802, feb_2028));
    assert_eq!(feb.end_ms - feb.start_ms, 29 * DAY);
    let year = span("{date:%Y}-{seq}", NOV22);
    assert_eq!(year.key, 2026);
    assert_eq!(year.end_ms, 1_798_761_600_000); // 2027-01-01T00:00:00Z
    let never = span("N{seq}", NOV22);
    assert_eq!((never.key, never.start_ms, never.end_ms), (0, 0, u64::MAX));
    // The last period jiff can show has no next one.
    let last = span("{date:%Y}-{seq}", JIFF_MAX_MS);
    assert_eq!((last.key, last.end_ms), (9999, u64::MAX));
}

#[test]
fn period_spans_follow_the_utc_offset() {
    let tokyo = t("{date:%Y%m%d}-{seq}").with_utc_offset(9 * 3600).unwrap();
    // 2026-11-22T20:00Z is the 23rd in Tokyo, which began at 2026-11-22T15:00Z.
    let span = tokyo.period_span(NOV22_MIDNIGHT + 20 * HOUR).unwrap();
    assert_eq!(span.key, 20261123);
    assert_eq!(span.start_ms, NOV22_MIDNIGHT + 15 * HOUR);
    assert_eq!(span.end_ms, NOV22_MIDNIGHT + 15 * HOUR + DAY);
    let west = t("{date:%Y%m%d}-{seq}")
        .with_utc_offset(-(5 * 3600 + 1800))
        .unwrap();
    let span = west.period_span(NOV22_MIDNIGHT).unwrap();
    assert_eq!(span.key, 20261121);
    assert_eq!(span.end_ms, NOV22_MIDNIGHT + 5 * HOUR + 30 * 60_000);
}

proptest! {
    #[test]
    fn any_text_parses_or_errors_and_renders_without_panicking(
        text in "[{}%a-z:0-9]{0,24}|\\PC{0,24}",
        at in any::<u64>(),
        seq in any::<u64>(),
    ) {
        if let Ok(tpl) = CounterTemplate::parse(&text) {
            prop_assert_eq!(tpl.to_string(), text.clone());
            prop_assert_eq!(CounterTemplate::parse(&text), Ok(tpl.clone()));
            let _ = tpl.render(at, seq);
        }
    }

    #[test]
    fn generated_templates_parse_and_render(text in template(), at in ms(), seq in 0u64..1_000_000) {
        let tpl = CounterTemplate::parse(&text).unwrap();
        let rendered = tpl.render(at, seq.min(tpl.max_seq()));
        prop_assert!(rendered.is_ok(), "{}: {:?}", text, rendered);
    }

    /// The padded field shows exactly N digits, and values over the width are refused,
    /// never cut.
    #[test]
    fn padded_seq_has_its_width_or_errors(width in 1u8..=19, seq in any::<u64>(), lit in literal()) {
        let tpl = CounterTemplate::parse(&format!("{lit}{{seq:0{width}}}")).unwrap();
        let max = tpl.max_seq();
        match tpl.render(0, seq) {
            Ok(text) => {
                prop_assert!(seq <= max);
                let digits = &text[lit.len()..];
                prop_assert_eq!(digits.len(), usize::from(width));
                prop_assert_eq!(digits.parse::<u64>().unwrap(), seq);
            }
            Err(Error::CounterOverflow { seq: s, max: m, .. }) => {
                prop_assert!(seq > max);
                prop_assert_eq!((s, m), (seq, max));
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }

    /// What a rendered ID shows depends only on the period and the sequence value.
    #[test]
    fn rendering_depends_only_on_period_and_seq(text in template(), a in ms(), d in 0u64..HOUR, seq in 0u64..1000) {
        let tpl = CounterTemplate::parse(&text).unwrap();
        let b = a + d;
        let seq = seq.min(tpl.max_seq());
        if tpl.period_key(a).unwrap() == tpl.period_key(b).unwrap() {
            prop_assert_eq!(tpl.render(a, seq).unwrap(), tpl.render(b, seq).unwrap());
        }
    }

    /// No two (period, sequence) pairs render the same text: a counter that resets each
    /// period never repeats an ID. Each case renders every small value in a run of
    /// neighbouring periods, where renderings of equal length (the ones that could collide,
    /// such as `2026-1` + `15` and `2026-11` + `5`) are common.
    #[test]
    fn different_periods_or_seqs_render_differently(
        text in template(),
        start in ms(),
        step in prop_oneof![Just(HOUR), Just(DAY), Just(31 * DAY), Just(366 * DAY)],
    ) {
        let tpl = CounterTemplate::parse(&text).unwrap();
        let mut seen = std::collections::HashMap::new();
        for k in 0..14 {
            let at = tpl.at(start + k * step).unwrap();
            for seq in 0..=tpl.max_seq().min(120) {
                let shown = at.render(seq).unwrap();
                let me = (at.period_key().to_string(), seq);
                if let Some(other) = seen.insert(shown.clone(), me.clone()) {
                    prop_assert_eq!(&other, &me, "{} renders {} for both", text, shown);
                }
            }
        }
    }

    /// Period keys of one template have one length and sort in time order.
    #[test]
    fn period_keys_sort_by_time(text in template(), a in ms(), b in ms()) {
        let tpl = CounterTemplate::parse(&text).unwrap();
        let (ka, kb) = (tpl.period_key(a).unwrap(), tpl.period_key(b).unwrap());
        prop_assert_eq!(ka.len(), kb.len());
        if a <= b {
            prop_assert!(ka <= kb);
        }
    }

    /// A period's span holds the instant it was taken at, its number is the period key,
    /// and the instant at its end begins the next period, with a larger number.
    #[test]
    fn period_spans_tile_time(text in template(), at in ms(), offset in -93_599i32..=93_599) {
        let tpl = CounterTemplate::parse(&text).unwrap().with_utc_offset(offset).unwrap();
        let span = tpl.period_span(at).unwrap();
        prop_assert!(span.contains(at), "{:?} holds {}", span, at);
        let key = tpl.period_key(at).unwrap();
        prop_assert_eq!(span.key, if key.is_empty() { 0 } else { key.parse::<i64>().unwrap() });
        if span.end_ms < JIFF_MAX_MS {
            let next = tpl.period_span(span.end_ms).unwrap();
            prop_assert_eq!(next.start_ms, span.end_ms);
            prop_assert!(next.key > span.key);
        }
        if span.start_ms > 0 {
            let before = tpl.period_span(span.start_ms - 1).unwrap();
            prop_assert_eq!(before.end_ms, span.start_ms);
            prop_assert!(before.key < span.key);
        }
    }
}
