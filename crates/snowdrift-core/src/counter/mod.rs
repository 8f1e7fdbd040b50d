//! Counter mode's pure part: templates such as `ORD{date:%Y%m%d}{seq:08}` that name the
//! period a counter counts in and render its values as text.
//!
//! A counter is a number that only goes up (Redis `INCRBY` in `snowdrift-store`). Order
//! numbers often restart each day or month, so a template names both the text of an ID and
//! the *period* of its counter: the finest date part it shows. `{date:%Y%m%d}` resets daily,
//! `{date:%Y%m}` monthly, `{date:%Y}` yearly, `{date:%Y%m%d%H}` hourly, and a template without
//! a date never resets. The store keeps one counter per period, named by
//! [`TemplateAt::period_key`].
//!
//! ```
//! use snowdrift_core::counter::{CounterTemplate, Period};
//! let template: CounterTemplate = "ORD{date:%Y%m%d}{seq:08}".parse()?;
//! assert_eq!(template.period(), Period::Day);
//! let ms = 1_795_342_800_000; // 2026-11-22T10:20:00Z
//! assert_eq!(template.period_key(ms)?, "20261122");
//! assert_eq!(template.render(ms, 42)?, "ORD2026112200000042");
//! assert!(template.render(ms, 100_000_000).is_err()); // nine digits do not fit {seq:08}
//! # Ok::<(), snowdrift_core::Error>(())
//! ```
//!
//! # Template syntax
//!
//! - Literal text is copied as is; `{{` and `}}` stand for `{` and `}`.
//! - `{seq}` is the counter's value in decimal, up to `i64::MAX`; `{seq:0N}` pads it with
//!   zeros to N digits (N from 1 to 19) and holds at most N digits. Exactly one `{seq}`.
//! - `{date:FORMAT}` is the time of the request in strftime form (formatted by jiff). It may
//!   appear more than once. FORMAT may use `%Y` (year), `%y` (two-digit year), `%m`, `%b`,
//!   `%h`, `%B` (month), `%d`, `%e` (day of month), `%j` (day of year), `%H` (hour), `%F`
//!   (`%Y-%m-%d`), `%a`, `%A` (weekday) and `%%`; other characters are copied.
//!
//! The rules keep rendered IDs unique: every date part has a fixed width or is a name
//! (padding flags such as `%-d` are refused, since `2026-1-11` and `2026-11-1` would run
//! together with the sequence), nothing finer than an hour is allowed (a counter per minute
//! buys nothing over a wider `{seq}`), and the date must name its period completely: a year is
//! required, a day of the month needs a month, an hour needs a day. `%y` is accepted for the
//! common `ORD261122...` style; such IDs repeat after a hundred years.
//!
//! Dates are in UTC unless [`CounterTemplate::with_utc_offset`] sets a fixed offset. Named
//! zones (`Europe/Berlin`) are not supported: this build of jiff carries no time-zone
//! database, and a zone with daylight saving time repeats an hour each autumn, which would
//! repeat an hourly counter's IDs.

mod template;
#[cfg(test)]
mod tests;

pub use template::{CounterTemplate, TemplateAt};

use std::time::Duration;

/// Template length limit, in bytes: IDs are meant to be short.
pub const MAX_TEMPLATE_LEN: usize = 256;

/// Widest `{seq:0N}`: 19 digits hold `i64::MAX`.
pub const MAX_SEQ_WIDTH: u8 = 19;

/// One period of a template: its number and when it begins and ends, as
/// [`CounterTemplate::period_span`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeriodSpan {
    /// The period as a number: `2026`, `202611`, `20261122` or `2026112210` for a yearly,
    /// monthly, daily or hourly template; 0 for one that never resets.
    pub key: i64,
    /// Its first instant, ms since 1970.
    pub start_ms: u64,
    /// The first instant of the next period, ms since 1970 (`u64::MAX`: none).
    pub end_ms: u64,
}

impl PeriodSpan {
    /// True when `ms` lies in the period.
    #[inline]
    pub const fn contains(&self, ms: u64) -> bool {
        self.start_ms <= ms && ms < self.end_ms
    }
}

/// How often a counter starts again from 1: the finest date part its template shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Period {
    /// Never: the template shows no date.
    None,
    /// Each calendar year.
    Year,
    /// Each calendar month.
    Month,
    /// Each day.
    Day,
    /// Each hour.
    Hour,
}

impl Period {
    /// The longest a period of this kind lasts (a leap year, a 31-day month); `None` for
    /// [`Period::None`]. With fixed UTC offsets a day is always 24 hours.
    ///
    /// ```
    /// use snowdrift_core::counter::Period;
    /// assert_eq!(Period::Day.longest().map(|d| d.as_secs()), Some(86_400));
    /// assert_eq!(Period::None.longest(), None);
    /// ```
    pub const fn longest(self) -> Option<Duration> {
        const DAY: u64 = 86_400;
        match self {
            Period::None => None,
            Period::Year => Some(Duration::from_secs(366 * DAY)),
            Period::Month => Some(Duration::from_secs(31 * DAY)),
            Period::Day => Some(Duration::from_secs(DAY)),
            Period::Hour => Some(Duration::from_secs(3_600)),
        }
    }

    /// The name used in messages: `none`, `year`, `month`, `day`, `hour`.
    pub const fn name(self) -> &'static str {
        match self {
            Period::None => "none",
            Period::Year => "year",
            Period::Month => "month",
            Period::Day => "day",
            Period::Hour => "hour",
        }
    }
}

impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
