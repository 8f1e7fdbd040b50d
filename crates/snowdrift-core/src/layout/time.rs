//! Rendering of millisecond timestamps as RFC 3339 text.

/// Formats milliseconds since 1970 as RFC 3339 UTC (`2010-11-04T01:42:54.657Z`), or as
/// `+{ms} ms since 1970` when the instant is beyond what a calendar date can show.
pub fn format_ms(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(|| format!("+{ms} ms since 1970"), |t| format!("{t:.3}"))
}
