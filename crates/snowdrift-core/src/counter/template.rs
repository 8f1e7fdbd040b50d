//! Parsing and rendering of counter templates.

use std::fmt::Write as _;
use std::str::FromStr;

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::Offset;

use super::{MAX_SEQ_WIDTH, MAX_TEMPLATE_LEN, Period, PeriodSpan};
use crate::error::{Error, Result};

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Part {
    Literal(String),
    /// A strftime format, checked at parse time.
    Date(String),
    Seq,
}

/// A parsed counter template such as `ORD{date:%Y%m%d}{seq:08}`: literal text, date parts and
/// exactly one sequence field. The syntax and its rules are in the [module docs](super).
///
/// ```
/// use snowdrift_core::counter::{CounterTemplate, Period};
/// let t = CounterTemplate::parse("INV-{date:%Y-%m}-{seq:05}")?;
/// assert_eq!(t.period(), Period::Month);
/// assert_eq!(t.max_seq(), 99_999);
/// let ms = 1_795_342_800_000; // 2026-11-22T10:20:00Z
/// assert_eq!(t.render(ms, 7)?, "INV-2026-11-00007");
///
/// let err = CounterTemplate::parse("ORD{date:%m%d}{seq}").unwrap_err();
/// assert!(err.to_string().contains("no year"), "{err}");
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterTemplate {
    text: String,
    parts: Vec<Part>,
    width: Option<u8>,
    period: Period,
    offset: Offset,
}

/// Where each kind of date part first appears (0-based character index), for the checks
/// that the date names its period completely and for messages that point at the culprit.
#[derive(Debug, Default)]
struct DateFields {
    any: Option<usize>,
    year: Option<usize>,
    month: Option<usize>,
    day_of_month: Option<usize>,
    day_of_year: Option<usize>,
    hour: Option<usize>,
}

impl DateFields {
    fn note(slot: &mut Option<usize>, at: usize) {
        slot.get_or_insert(at);
    }

    fn period(&self) -> Period {
        if self.hour.is_some() {
            Period::Hour
        } else if self.day_of_month.is_some() || self.day_of_year.is_some() {
            Period::Day
        } else if self.month.is_some() {
            Period::Month
        } else if self.year.is_some() {
            Period::Year
        } else {
            Period::None
        }
    }
}

const ALLOWED: &str = "%Y %y %m %b %h %B %d %e %j %H %F %a %A %%";

impl CounterTemplate {
    /// Parses a template. Errors name the column (1-based, in characters), what is wrong
    /// and what is allowed.
    ///
    /// ```
    /// use snowdrift_core::counter::CounterTemplate;
    /// let err = CounterTemplate::parse("A{date:%Y%m%d%M}{seq}").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid counter template \"A{date:%Y%m%d%M}{seq}\" at column 14: %M is finer \
    ///      than an hour; a counter resets at most hourly, so use %H at the finest and a \
    ///      wider {seq} for more IDs"
    /// );
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |index: usize, reason: String| Error::InvalidTemplate {
            template: text.chars().take(80).collect(),
            column: index + 1,
            reason,
        };
        if text.len() > MAX_TEMPLATE_LEN {
            let inside = text
                .char_indices()
                .take_while(|&(b, _)| b < MAX_TEMPLATE_LEN)
                .count();
            return Err(bad(
                inside,
                format!(
                    "the template is {} bytes long; at most {MAX_TEMPLATE_LEN} are allowed",
                    text.len()
                ),
            ));
        }
        let chars: Vec<char> = text.chars().collect();
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut seq: Option<Option<u8>> = None;
        let mut dates = DateFields::default();
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            let next = chars.get(i + 1).copied();
            match c {
                '{' if next == Some('{') => {
                    literal.push('{');
                    i += 2;
                }
                '}' if next == Some('}') => {
                    literal.push('}');
                    i += 2;
                }
                '}' => {
                    return Err(bad(
                        i,
                        "a lone '}' closes no field; write '}}' for a literal '}'".into(),
                    ));
                }
                '{' => {
                    let end = match chars[i + 1..].iter().position(|&c| c == '{' || c == '}') {
                        Some(k) if chars[i + 1 + k] == '}' => i + 1 + k,
                        Some(k) => {
                            return Err(bad(
                                i + 1 + k,
                                "'{' inside a field; fields do not nest (write '{{' for a literal '{')"
                                    .into(),
                            ));
                        }
                        None => {
                            return Err(bad(
                                i,
                                "'{' opens a field that is never closed; write '{{' for a literal '{'"
                                    .into(),
                            ));
                        }
                    };
                    let inner: String = chars[i + 1..end].iter().collect();
                    let (name, arg) = match inner.split_once(':') {
                        Some((name, arg)) => (name, Some(arg)),
                        None => (inner.as_str(), None),
                    };
                    match name {
                        "seq" => {
                            if seq.is_some() {
                                return Err(bad(
                                    i,
                                    "a second {seq}; a template has exactly one".into(),
                                ));
                            }
                            seq = Some(parse_width(arg).map_err(|reason| bad(i, reason))?);
                            flush(&mut parts, &mut literal);
                            parts.push(Part::Seq);
                        }
                        "date" => {
                            let format = arg.filter(|f| !f.is_empty()).ok_or_else(|| {
                                bad(
                                    i,
                                    "{date} needs a strftime format, e.g. {date:%Y%m%d}".into(),
                                )
                            })?;
                            // The format starts after "{date:".
                            check_date(format, i + 6, &mut dates)
                                .map_err(|(at, reason)| bad(at, reason))?;
                            flush(&mut parts, &mut literal);
                            parts.push(Part::Date(format.to_string()));
                        }
                        _ => {
                            return Err(bad(
                                i + 1,
                                format!(
                                    "unknown field {name:?}; the fields are {{seq}}, {{seq:0N}} and {{date:FORMAT}} (write '{{{{' for a literal '{{')"
                                ),
                            ));
                        }
                    }
                    i = end + 1;
                }
                c => {
                    literal.push(c);
                    i += 1;
                }
            }
        }
        flush(&mut parts, &mut literal);
        let Some(width) = seq else {
            return Err(bad(
                chars.len(),
                "the template has no {seq}; add one, e.g. ORD{date:%Y%m%d}{seq:08}".into(),
            ));
        };
        if let (Some(at), None) = (dates.any, dates.year) {
            return Err(bad(
                at,
                "the date has no year (%Y, %y or %F), so its IDs would repeat next year".into(),
            ));
        }
        if let (Some(at), None) = (dates.day_of_month, dates.month) {
            return Err(bad(
                at,
                "a day of the month without a month (%m, %b or %B) repeats every month; add one, or use %j (day of the year)"
                    .into(),
            ));
        }
        let has_day =
            (dates.day_of_month.is_some() && dates.month.is_some()) || dates.day_of_year.is_some();
        if let (Some(at), false) = (dates.hour, has_day) {
            return Err(bad(
                at,
                "an hour (%H) without a day (%d with a month, or %j) repeats every day".into(),
            ));
        }
        Ok(Self {
            text: text.to_string(),
            parts,
            width,
            period: dates.period(),
            offset: Offset::UTC,
        })
    }

    /// The same template with dates (and periods) in a fixed offset from UTC, in seconds
    /// east: `9 * 3600` for Japan. Only fixed offsets: see the [module docs](super).
    ///
    /// ```
    /// use snowdrift_core::counter::CounterTemplate;
    /// let t = CounterTemplate::parse("{date:%Y%m%d}-{seq}")?.with_utc_offset(9 * 3600)?;
    /// let ms = 1_795_377_600_000; // 2026-11-22T20:00:00Z, already the 23rd in Tokyo
    /// assert_eq!(t.period_key(ms)?, "20261123");
    /// assert!(CounterTemplate::parse("{seq}")?.with_utc_offset(100_000).is_err());
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn with_utc_offset(mut self, seconds: i32) -> Result<Self> {
        self.offset = Offset::from_seconds(seconds).map_err(|_| {
            Error::InvalidConfig(format!(
                "UTC offset {seconds} s is out of range; allowed: -93599 to 93599 (±25:59:59)"
            ))
        })?;
        Ok(self)
    }

    /// The offset from UTC dates are shown in, in seconds east (0 unless
    /// [`with_utc_offset`](Self::with_utc_offset) set one).
    pub fn utc_offset_seconds(&self) -> i32 {
        self.offset.seconds()
    }

    /// The template text as parsed.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// How often the counter starts again: the finest date part shown.
    pub fn period(&self) -> Period {
        self.period
    }

    /// The width N of `{seq:0N}`, or `None` for `{seq}`.
    pub fn seq_width(&self) -> Option<u8> {
        self.width
    }

    /// The largest sequence value the template shows: `10^N - 1` for `{seq:0N}` (at most
    /// `i64::MAX`), `i64::MAX` for `{seq}`.
    ///
    /// ```
    /// use snowdrift_core::counter::CounterTemplate;
    /// assert_eq!(CounterTemplate::parse("{seq:03}")?.max_seq(), 999);
    /// assert_eq!(CounterTemplate::parse("{seq}")?.max_seq(), i64::MAX as u64);
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn max_seq(&self) -> u64 {
        let i64_max = i64::MAX.unsigned_abs();
        match self.width {
            Some(w) => 10u64
                .checked_pow(u32::from(w))
                .map_or(i64_max, |p| (p - 1).min(i64_max)),
            None => i64_max,
        }
    }

    /// The template evaluated at `ms` (milliseconds since 1970): its date parts and period
    /// key, to render many sequence values of one request with one clock reading.
    ///
    /// Fails only for a time jiff cannot show (after the year 9999) when the template has a
    /// date; a template without a date accepts any `ms`.
    pub fn at(&self, ms: u64) -> Result<TemplateAt<'_>> {
        let mut dates = Vec::new();
        let mut period_key = String::new();
        let has_date = self.parts.iter().any(|p| matches!(p, Part::Date(_)));
        if has_date {
            let dt = self.datetime(ms)?;
            for part in &self.parts {
                if let Part::Date(format) = part {
                    let shown = jiff::fmt::strtime::format(format, dt).map_err(|e| {
                        Error::InvalidConfig(format!("date format {format:?} failed: {e}"))
                    })?;
                    dates.push(shown);
                }
            }
            period_key = period_key_of(self.period, dt);
        }
        Ok(TemplateAt {
            template: self,
            dates,
            period_key,
        })
    }

    /// The name of the counter's period at `ms`: `"2026"`, `"202611"`, `"20261122"` or
    /// `"2026112210"` for a yearly, monthly, daily or hourly template (in its UTC offset),
    /// `""` for one that never resets. The same whatever the date format, so the key does
    /// not change when a template is reworded.
    pub fn period_key(&self, ms: u64) -> Result<String> {
        Ok(self.at(ms)?.period_key)
    }

    /// The period holding `ms` as a number and its bounds: what a segment tag with this
    /// template binds each claim to. The number is [`period_key`](Self::period_key) read as
    /// decimal (`20261122`), 0 for a template that never resets; numbers of later periods
    /// are larger, so a store compares them as integers. `start_ms` and `end_ms` are the
    /// first instant of the period and the first of the next (`u64::MAX` when the next
    /// would begin after the year 9999, or never).
    ///
    /// ```
    /// use snowdrift_core::counter::{CounterTemplate, PeriodSpan};
    /// let t = CounterTemplate::parse("ORD{date:%Y%m%d}{seq:06}")?;
    /// let ms = 1_795_342_800_000; // 2026-11-22T10:20:00Z
    /// let day = t.period_span(ms)?;
    /// assert_eq!(day.key, 20261122);
    /// assert_eq!(day.start_ms, 1_795_305_600_000); // 2026-11-22T00:00:00Z
    /// assert_eq!(day.end_ms, 1_795_392_000_000); // 2026-11-23T00:00:00Z
    /// assert!(day.contains(ms) && !day.contains(day.end_ms));
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn period_span(&self, ms: u64) -> Result<PeriodSpan> {
        if self.period == Period::None {
            return Ok(PeriodSpan {
                key: 0,
                start_ms: 0,
                end_ms: u64::MAX,
            });
        }
        let dt = self.datetime(ms)?;
        let (y, m, d, h) = (dt.year(), dt.month(), dt.day(), dt.hour());
        let key = match self.period {
            Period::None => 0,
            Period::Year => i64::from(y),
            Period::Month => i64::from(y) * 100 + i64::from(m),
            Period::Day => (i64::from(y) * 100 + i64::from(m)) * 100 + i64::from(d),
            Period::Hour => {
                ((i64::from(y) * 100 + i64::from(m)) * 100 + i64::from(d)) * 100 + i64::from(h)
            }
        };
        let start =
            match self.period {
                Period::None | Period::Year => dt.first_of_year().start_of_day(),
                Period::Month => dt.first_of_month().start_of_day(),
                Period::Day => dt.start_of_day(),
                Period::Hour => dt.start_of_day().with().hour(h).build().map_err(|e| {
                    Error::InvalidConfig(format!("the start of hour {h} of {dt}: {e}"))
                })?,
            };
        let next = match self.period {
            Period::None | Period::Year => start.checked_add(jiff::Span::new().years(1)),
            Period::Month => start.checked_add(jiff::Span::new().months(1)),
            Period::Day => start.checked_add(jiff::Span::new().days(1)),
            Period::Hour => start.checked_add(jiff::Span::new().hours(1)),
        };
        let instant = |civil: DateTime| -> Option<u64> {
            let ts = self.offset.to_timestamp(civil).ok()?;
            u64::try_from(ts.as_millisecond()).ok()
        };
        // A fixed offset maps every civil time to one instant; only the ends of jiff's range
        // (before 1970 for the start, past 9999 for the end) have none.
        let start_ms = instant(start).unwrap_or(0);
        let end_ms = next.ok().and_then(instant).unwrap_or(u64::MAX);
        Ok(PeriodSpan {
            key,
            start_ms,
            end_ms,
        })
    }

    /// Renders sequence value `seq` at time `ms`. Fails with [`Error::CounterOverflow`] when
    /// `seq` is over [`max_seq`](Self::max_seq): a value is never cut or wrapped to fit.
    pub fn render(&self, ms: u64, seq: u64) -> Result<String> {
        self.at(ms)?.render(seq)
    }

    /// The `{seq}` field as written, for messages.
    fn seq_field(&self) -> String {
        match self.width {
            Some(w) => format!("{{seq:0{w}}} field"),
            None => "{seq} field (an i64)".to_string(),
        }
    }

    fn datetime(&self, ms: u64) -> Result<DateTime> {
        let ts = i64::try_from(ms)
            .ok()
            .and_then(|ms| Timestamp::from_millisecond(ms).ok())
            .ok_or(Error::ClockOutOfRange {
                kind: "counter template date",
                now_ms: ms,
                range: "up to the year 9999",
            })?;
        Ok(self.offset.to_datetime(ts))
    }
}

/// A [`CounterTemplate`] evaluated at one instant: made by [`CounterTemplate::at`].
#[derive(Debug, Clone)]
pub struct TemplateAt<'a> {
    template: &'a CounterTemplate,
    /// The text of each date part, in order.
    dates: Vec<String>,
    period_key: String,
}

impl TemplateAt<'_> {
    /// The period's name; see [`CounterTemplate::period_key`].
    pub fn period_key(&self) -> &str {
        &self.period_key
    }

    /// Renders `seq`; see [`CounterTemplate::render`].
    pub fn render(&self, seq: u64) -> Result<String> {
        let max = self.template.max_seq();
        if seq > max {
            return Err(Error::CounterOverflow {
                seq,
                max,
                field: self.template.seq_field(),
            });
        }
        let mut out = String::with_capacity(self.template.text.len() + 16);
        let mut dates = self.dates.iter();
        for part in &self.template.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Date(_) => out.push_str(dates.next().map_or("", String::as_str)),
                Part::Seq => {
                    let width = usize::from(self.template.width.unwrap_or(0));
                    // Writing to a String cannot fail.
                    let _ = write!(out, "{seq:0width$}");
                }
            }
        }
        Ok(out)
    }
}

impl FromStr for CounterTemplate {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl std::fmt::Display for CounterTemplate {
    /// The template text as parsed (without the UTC offset).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn flush(parts: &mut Vec<Part>, literal: &mut String) {
    if !literal.is_empty() {
        parts.push(Part::Literal(std::mem::take(literal)));
    }
}

/// `None` or `"0N"` with N from 1 to 19 and no further leading zeros.
fn parse_width(arg: Option<&str>) -> std::result::Result<Option<u8>, String> {
    let Some(arg) = arg else { return Ok(None) };
    let digits = arg.strip_prefix('0').unwrap_or("");
    let width = (!digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse::<u8>().ok())
        .flatten()
        .filter(|w| (1..=MAX_SEQ_WIDTH).contains(w));
    match width {
        Some(w) => Ok(Some(w)),
        None => Err(format!(
            "{{seq:{arg}}} is not a width; write {{seq}} or {{seq:0N}} with N from 1 to {MAX_SEQ_WIDTH}, as in {{seq:08}}"
        )),
    }
}

/// Checks a `{date:FORMAT}` format that starts at character `start` of the template, and
/// notes which date parts it shows. Errors carry the character index of the culprit.
fn check_date(
    format: &str,
    start: usize,
    dates: &mut DateFields,
) -> std::result::Result<(), (usize, String)> {
    DateFields::note(&mut dates.any, start);
    let mut chars = format.chars().enumerate().peekable();
    while let Some((k, c)) = chars.next() {
        if c != '%' {
            continue;
        }
        let at = start + k;
        let Some((_, d)) = chars.next() else {
            return Err((
                at,
                "a lone '%' ends the format; write '%%' for a literal '%'".into(),
            ));
        };
        match d {
            '%' => {}
            'Y' | 'y' => DateFields::note(&mut dates.year, at),
            'm' | 'b' | 'h' | 'B' => DateFields::note(&mut dates.month, at),
            'd' | 'e' => DateFields::note(&mut dates.day_of_month, at),
            'j' => DateFields::note(&mut dates.day_of_year, at),
            'H' => DateFields::note(&mut dates.hour, at),
            'F' => {
                DateFields::note(&mut dates.year, at);
                DateFields::note(&mut dates.month, at);
                DateFields::note(&mut dates.day_of_month, at);
            }
            // Weekdays follow from the date: shown, but they name no period.
            'a' | 'A' => {}
            '-' | '_' | '0' | '^' | '#' | '.' | ':' | '1'..='9' => {
                return Err((
                    at,
                    format!(
                        "padding flags and widths ('%{d}...') are not allowed: date parts keep a fixed width, so an ID never reads as another date and sequence; allowed: {ALLOWED}"
                    ),
                ));
            }
            'M' | 'S' | 'T' | 'R' | 'X' | 'c' | 'r' | 's' | 'f' | 'N' => {
                return Err((
                    at,
                    format!(
                        "%{d} is finer than an hour; a counter resets at most hourly, so use %H at the finest and a wider {{seq}} for more IDs"
                    ),
                ));
            }
            other => {
                return Err((
                    at,
                    format!("%{other} is not allowed in a counter template; allowed: {ALLOWED}"),
                ));
            }
        }
    }
    Ok(())
}

/// The canonical name of the period holding `dt`.
fn period_key_of(period: Period, dt: DateTime) -> String {
    let (y, m, d, h) = (dt.year(), dt.month(), dt.day(), dt.hour());
    match period {
        Period::None => String::new(),
        Period::Year => format!("{y:04}"),
        Period::Month => format!("{y:04}{m:02}"),
        Period::Day => format!("{y:04}{m:02}{d:02}"),
        Period::Hour => format!("{y:04}{m:02}{d:02}{h:02}"),
    }
}
