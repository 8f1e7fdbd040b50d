//! The segment buffers in `/metrics`, bounded per tag: two counters for every tag (refills,
//! starved requests), node totals, and the fill gauges only for the tags holding the smallest
//! share of what their buffers aim to hold. With 10,000 tags that is about 20,000 short
//! lines, written straight into the response; nothing per tag is registered.

use std::cmp::Ordering;

use snowdrift_core::segment::ChainStatus;

use super::text::{self, Out};

/// How many tags get fill gauges (current segment, IDs and segments ahead): every tag when
/// there are at most this many, else the ones closest to running dry.
pub const LOWEST_TAGS: usize = 10;

type Buffer = (String, ChainStatus);

/// A series of every tag (or of the lowest): its name, help text and value.
type PerTag = (&'static str, &'static str, fn(&ChainStatus) -> u64);

/// Writes the series of `buffers` (tag and state) to `out`; `failing` is how many of them
/// have a failing refill.
pub fn write(out: &mut Out, buffers: &[Buffer], failing: usize) {
    let total = |f: fn(&ChainStatus) -> u64| {
        buffers
            .iter()
            .fold(0u64, |sum, (_, s)| sum.saturating_add(f(s)))
    };
    let totals: [(&str, &str, u64); 3] = [
        (
            "snowdrift_segment_buffers",
            "Segment tags with a buffer on this node.",
            buffers.len() as u64,
        ),
        (
            "snowdrift_segment_buffered_ids",
            "IDs held by all segment buffers of this node: left in current segments and ready ahead.",
            total(held),
        ),
        (
            "snowdrift_segment_refills_failing",
            "Segment tags whose latest refill from the store failed, with none succeeding since (the store unreachable or refusing).",
            failing as u64,
        ),
    ];
    for (name, help, value) in totals {
        text::family(out, name, "gauge", help);
        text::sample(out, name, &[], value);
    }
    let counters: [PerTag; 2] = [
        (
            "snowdrift_segment_refills_total",
            "Segments a tag's buffer has claimed from the store (one write each).",
            |s| s.pushed,
        ),
        (
            "snowdrift_segment_starved_total",
            "Requests that found a tag's buffer empty and waited for the store.",
            |s| s.starved,
        ),
    ];
    per_tag(out, "counter", &counters, buffers.iter());
    let lowest = lowest(buffers, LOWEST_TAGS);
    let gauges: [PerTag; 3] = [
        (
            "snowdrift_segment_current_left",
            "IDs left in the current segment (the tags closest to running dry).",
            |s| s.current_left,
        ),
        (
            "snowdrift_segment_ids_ahead",
            "IDs in the segments ready after the current one (the tags closest to running dry).",
            |s| s.ids_ahead,
        ),
        (
            "snowdrift_segment_segments_ahead",
            "Segments ready after the current one (the tags closest to running dry).",
            |s| s.segments_ahead,
        ),
    ];
    per_tag(out, "gauge", &gauges, lowest.iter().copied());
}

/// Each of `series` (of Prometheus type `kind`) for each of `buffers`.
fn per_tag<'a>(
    out: &mut Out,
    kind: &str,
    series: &[PerTag],
    buffers: impl Iterator<Item = &'a Buffer> + Clone,
) {
    for (name, help, value) in series {
        text::family(out, name, kind, help);
        for (tag, s) in buffers.clone() {
            text::sample(out, name, &[("tag", tag)], value(s));
        }
    }
}

/// IDs a buffer holds now.
fn held(s: &ChainStatus) -> u64 {
    s.current_left.saturating_add(s.ids_ahead)
}

/// What a buffer holds as a share of what it aims to hold: a full current segment plus its
/// target of segments ahead.
fn fill(s: &ChainStatus) -> f64 {
    let aim = s
        .current_len
        .saturating_mul(s.target_ahead.saturating_add(1));
    held(s) as f64 / aim.max(1) as f64
}

/// The `n` buffers of lowest fill, lowest first (ties by tag, so the set is stable).
fn lowest(buffers: &[Buffer], n: usize) -> Vec<&Buffer> {
    let order = |a: &&Buffer, b: &&Buffer| -> Ordering {
        fill(&a.1)
            .total_cmp(&fill(&b.1))
            .then_with(|| a.0.cmp(&b.0))
    };
    let mut all: Vec<&Buffer> = buffers.iter().collect();
    if all.len() > n {
        all.select_nth_unstable_by(n, order);
        all.truncate(n);
    }
    all.sort_by(order);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(tag: &str, current_left: u64, ids_ahead: u64, starved: u64) -> Buffer {
        let status = ChainStatus {
            current_left,
            current_len: 100,
            segments_ahead: ids_ahead / 100,
            ids_ahead,
            target_ahead: 1,
            starved,
            pushed: 3,
            segment: 2,
            current: None,
            next: None,
        };
        (tag.to_string(), status)
    }

    #[test]
    fn every_tag_gets_two_counters_and_the_lowest_get_gauges() {
        let mut buffers: Vec<Buffer> = (0..50)
            .map(|i| buffer(&format!("t{i:02}"), 50 + i, 100, 0))
            .collect();
        buffers.push(buffer("dry", 3, 0, 7));
        let mut out = Out::default();
        write(&mut out, &buffers, 0);
        let out = text::tests::joined(out);
        assert!(out.contains("snowdrift_segment_buffers 51\n"), "{out}");
        let held: u64 = (0..50).map(|i| 150 + i).sum::<u64>() + 3;
        assert!(
            out.contains(&format!("snowdrift_segment_buffered_ids {held}\n")),
            "{out}"
        );
        assert!(out.contains("snowdrift_segment_starved_total{tag=\"dry\"} 7\n"));
        assert!(out.contains("snowdrift_segment_refills_total{tag=\"t49\"} 3\n"));
        let gauge_lines = |name: &str| {
            out.lines()
                .filter(|l| l.starts_with(&format!("{name}{{")))
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
        };
        let left = gauge_lines("snowdrift_segment_current_left");
        assert_eq!(left.len(), LOWEST_TAGS, "{left:?}");
        // The driest first, then the tags with the fewest IDs left.
        assert_eq!(left[0], "snowdrift_segment_current_left{tag=\"dry\"} 3");
        assert_eq!(left[1], "snowdrift_segment_current_left{tag=\"t00\"} 50");
        assert_eq!(left[9], "snowdrift_segment_current_left{tag=\"t08\"} 58");
        assert_eq!(
            gauge_lines("snowdrift_segment_ids_ahead").len(),
            LOWEST_TAGS
        );
        // Two counters per tag, gauges for ten, three totals: nothing else grows with tags.
        let samples = out.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(samples, 2 * 51 + 3 * LOWEST_TAGS + 3);
    }

    #[test]
    fn few_tags_all_get_gauges() {
        let buffers = [buffer("a", 1, 0, 0), buffer("b", 2, 0, 0)];
        let mut out = Out::default();
        write(&mut out, &buffers, 0);
        let out = text::tests::joined(out);
        assert!(out.contains("snowdrift_segment_segments_ahead{tag=\"a\"} 0\n"));
        assert!(out.contains("snowdrift_segment_segments_ahead{tag=\"b\"} 0\n"));
    }
}
