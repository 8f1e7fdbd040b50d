//! How the load tools print their results: numbers with digit groups, "count (rate/s)" lines
//! and latency percentiles. `bench-peers/examples/ferroid_grpc_load.rs` prints through it
//! too, so the peer's client prints exactly as `snowdrift bench` does and the load scripts
//! parse both alike.

use std::time::Duration;

use hdrhistogram::Histogram;

/// `1234567` as `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `ids        1,000 (100 IDs/s)`: a label padded to the column, a count and its rate over
/// `secs` in `unit`s per second.
pub fn count_line(label: &str, count: u64, secs: f64, unit: &str) -> String {
    format!(
        "{label:<10} {} ({} {unit}/s)",
        group_digits(count),
        group_digits((count as f64 / secs) as u64)
    )
}

/// [`count_line`] followed by `, N error(s)` and the first error's text, if any.
pub fn outcome_line(
    label: &str,
    count: u64,
    secs: f64,
    unit: &str,
    errors: u64,
    first_error: Option<&str>,
) -> String {
    let first = first_error
        .map(|e| format!(", first: {e}"))
        .unwrap_or_default();
    format!(
        "{}, {errors} error(s){first}",
        count_line(label, count, secs, unit)
    )
}

/// `p50 1ms  p99 2ms  p99.9 3ms  max 4ms` of a histogram of nanoseconds.
pub fn percentiles(latency: &Histogram<u64>) -> String {
    let q = |p: f64| Duration::from_nanos(latency.value_at_quantile(p));
    format!(
        "p50 {:?}  p99 {:?}  p99.9 {:?}  max {:?}",
        q(0.5),
        q(0.99),
        q(0.999),
        Duration::from_nanos(latency.max())
    )
}

/// What a gRPC streaming load counted, for [`stream_lines`].
pub struct StreamCounts<'a> {
    /// Streams received to their end.
    pub streams: u64,
    /// Streams that failed.
    pub errors: u64,
    /// The first failure's text.
    pub first_error: Option<&'a str>,
    /// IDs received.
    pub ids: u64,
    /// Messages received.
    pub messages: u64,
    /// Bytes of those messages (or of their IDs: `bytes_of` says which).
    pub bytes: u64,
    /// What `bytes` counts, e.g. `messages` or `IDs`.
    pub bytes_of: &'a str,
    /// Time to receive each whole stream, in nanoseconds.
    pub latency: &'a Histogram<u64>,
}

/// The streams, IDs, messages and stream-time lines of a streaming load over `secs`.
pub fn stream_lines(c: &StreamCounts, secs: f64) -> String {
    format!(
        "{}\n{}\n{}, {} bytes of {}\nstream     {}  (time to receive a whole stream)",
        outcome_line(
            "streams",
            c.streams,
            secs,
            "streams",
            c.errors,
            c.first_error
        ),
        count_line("ids", c.ids, secs, "IDs"),
        count_line("messages", c.messages, secs, "messages"),
        group_digits(c.bytes),
        c.bytes_of,
        percentiles(c.latency)
    )
}

/// A histogram of nanoseconds up to an hour. Fixed bounds, not auto-resizing:
/// `saturating_record` on an auto-resizing histogram clamps every value past its initial
/// range (about 2 µs) to the lowest value instead of growing, which hides the tail.
pub fn latency_histogram() -> Result<Histogram<u64>, hdrhistogram::CreationError> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_the_load_scripts_expect() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(1_234_567), "1,234,567");
        assert_eq!(
            count_line("ids", 1_000, 10.0, "IDs"),
            "ids        1,000 (100 IDs/s)"
        );
        assert_eq!(
            outcome_line("requests", 10, 1.0, "requests", 2, Some("status 503")),
            "requests   10 (10 requests/s), 2 error(s), first: status 503"
        );
        let mut h = latency_histogram().unwrap();
        h.record(1_000_000).unwrap();
        assert!(
            percentiles(&h).starts_with("p50 1.000"),
            "{}",
            percentiles(&h)
        );
    }
}
