//! The checks on their own: broken shapes, IDs at or above 2^63, repeats across batches and
//! within one (runs and text IDs), honest interleavings that must pass (servers' segments,
//! striped residue classes, snowflake workers), the exact overlap of progressions against
//! brute force, and the memory bounds.

use proptest::prelude::*;

use super::*;

fn batch(runs: &[(u64, u64, u64)]) -> Batch {
    Batch::Runs {
        runs: runs.to_vec(),
        expires: false,
        ordered: false,
    }
}

fn admit(g: &Guard, runs: &[(u64, u64, u64)]) -> Result<(), String> {
    g.admit("http://e", "order", &batch(runs), u64::MAX)
        .map_err(|Refusal(why)| why)
}

#[test]
fn broken_shapes_are_refused() {
    let g = Guard::default();
    let wrap = admit(&g, &[(u64::MAX - 2, 10, 1)]).unwrap_err();
    assert!(wrap.contains("wrap") && wrap.contains("http://e"), "{wrap}");
    assert!(admit(&g, &[(1 << 62, 5, 1 << 62)]).is_err());
    assert!(admit(&g, &[(5, 0, 1)]).unwrap_err().contains("0 IDs"));
    assert!(admit(&g, &[(5, 3, 0)]).unwrap_err().contains("stride 0"));
    assert!(admit(&g, &[]).unwrap_err().contains("no ID"));
    let more = g
        .admit("http://e", "order", &batch(&[(1, 11, 1)]), 10)
        .unwrap_err();
    assert!(more.0.contains("11 IDs where 10"), "{more:?}");
    // Up to the last ID a server issues, and a single ID with any stride, are fine.
    admit(&g, &[(MAX_ID - 2, 3, 1)]).unwrap();
    admit(&g, &[(7, 1, 0)]).unwrap();
    let text = |ids: &[&str]| Batch::Text {
        ids: ids.iter().map(|s| s.to_string()).collect(),
        kind: Some(snowdrift_proto::Kind::Uuid7),
    };
    assert!(check_shape("e", "u", &text(&["a", "a"]), 5).is_err());
    assert!(check_shape("e", "u", &text(&[""]), 5).is_err());
    assert!(check_shape("e", "u", &text(&[]), 5).is_err());
    check_shape("e", "u", &text(&["a", "b"]), 5).unwrap();
}

#[test]
fn ids_at_or_above_2_63_are_refused() {
    let g = Guard::default();
    // What the server's own range excludes: a first ID from 2^63, or a last one past 2^63 - 1
    // (the whole run, even the IDs of it that would fit).
    let above = admit(&g, &[(1 << 63, 5, 1)]).unwrap_err();
    assert!(
        above.contains("from 9223372036854775808, at or above 2^63") && above.contains("http://e"),
        "{above}"
    );
    let past = admit(&g, &[(MAX_ID - 7, 100, 1)]).unwrap_err();
    assert!(past.contains("passes 2^63 - 1"), "{past}");
    assert!(admit(&g, &[(MAX_ID - 7, 1, 1), (u64::MAX - 2, 3, 1)]).is_err());
    assert!(
        admit(&g, &[(1, 3, 1 << 62)])
            .unwrap_err()
            .contains("passes 2^63 - 1")
    );
    // A refused batch records nothing: the IDs below 2^63 of it may come later.
    admit(&g, &[(MAX_ID - 7, 8, 1)]).unwrap();
    admit(&g, &[(1, 2, 1 << 62)]).unwrap();
}

#[test]
fn a_repeated_text_id_is_refused_across_batches() {
    let g = Guard::default();
    let text = |ids: &[&str]| Batch::Text {
        ids: ids.iter().map(|s| s.to_string()).collect(),
        kind: Some(snowdrift_proto::Kind::Uuid7),
    };
    let admit_text = |ids: &[&str]| {
        g.admit("http://e", "u7", &text(ids), 100)
            .map_err(|Refusal(why)| why)
    };
    admit_text(&["a", "b"]).unwrap();
    admit_text(&["c", "d"]).unwrap();
    // One repeat among new IDs, from two batches back, is enough.
    let why = admit_text(&["e", "a"]).unwrap_err();
    assert!(
        why.contains("endpoint http://e answered the text ID \"a\" for \"u7\"")
            && why.contains("a server that repeats IDs is refused"),
        "{why}"
    );
    assert!(admit_text(&["c", "d"]).is_err());
    // A refused batch records nothing: its new ID is not "received".
    admit_text(&["e"]).unwrap();
    assert!(admit_text(&["e"]).is_err());
    // Each name has its own record; uuid3/uuid5 answers (no guard) are not remembered.
    let other = Guard::default();
    other.admit("http://e", "u4", &text(&["a"]), 1).unwrap();
}

#[test]
fn text_memory_stays_bounded_and_recent_repeats_are_still_caught() {
    let g = Guard::default();
    let batch = |from: usize, n: usize| Batch::Text {
        ids: (from..from + n).map(|k| format!("id-{k}")).collect(),
        kind: None,
    };
    let n = MAX_TEXTS + 1000;
    for from in (0..n).step_by(500) {
        g.admit("http://e", "u7", &batch(from, 500), 500).unwrap();
    }
    assert_eq!(g.texts_remembered(), MAX_TEXTS);
    // The newest are remembered; the oldest were forgotten first.
    assert!(g.admit("http://e", "u7", &batch(n - 10, 1), 1).is_err());
    g.admit("http://e", "u7", &batch(0, 1), 1).unwrap();
}

#[test]
fn the_same_run_twice_is_refused_with_what_was_sent() {
    let g = Guard::default();
    admit(&g, &[(1, 10, 1)]).unwrap();
    let why = admit(&g, &[(1, 10, 1)]).unwrap_err();
    assert!(
        why.contains("endpoint http://e answered IDs 1..=10 for \"order\"")
            && why.contains("a server that repeats IDs is refused"),
        "{why}"
    );
    // One shared ID at either end is enough; the next ID up is not a repeat.
    assert!(admit(&g, &[(10, 5, 1)]).is_err());
    assert!(admit(&g, &[(0, 2, 1)]).is_err());
    admit(&g, &[(11, 5, 1)]).unwrap();
    // Within one batch.
    let why = admit(&g, &[(100, 5, 1), (102, 1, 1)]).unwrap_err();
    assert!(why.contains("in one batch"), "{why}");
    // A refused batch records nothing: its IDs are not "received".
    admit(&g, &[(100, 5, 1)]).unwrap();
}

#[test]
fn honest_interleavings_pass() {
    let g = Guard::default();
    // Two servers' segments, fetched in any order (one endpoint may be a load balancer).
    admit(&g, &[(1001, 100, 1)]).unwrap();
    admit(&g, &[(1, 100, 1)]).unwrap();
    admit(&g, &[(101, 100, 1), (2001, 50, 1)]).unwrap();
    admit(&g, &[(1101, 100, 1)]).unwrap();
    // A striped tag: each store keeps its residue class, and their hulls overlap.
    admit(&g, &[(10_000, 100, 3)]).unwrap();
    admit(&g, &[(10_001, 100, 3)]).unwrap();
    admit(&g, &[(10_002, 1, 1)]).unwrap();
    assert!(admit(&g, &[(10_003, 1, 1)]).is_err());
    // Snowflake runs of a layout with the sequence above the worker bits: stride 2^10,
    // one residue per worker.
    admit(&g, &[(1 << 40, 50, 1 << 10)]).unwrap();
    admit(&g, &[((1 << 40) + 1, 50, 1 << 10)]).unwrap();
    assert!(admit(&g, &[((1 << 40) + 5 * 1024, 2, 1)]).is_err());
    // Adjacent batches of one server stay one entry.
    let g = Guard::default();
    for k in 0..1000 {
        admit(&g, &[(1 + 10 * k, 10, 1)]).unwrap();
    }
    assert_eq!(g.entries(), 1);
}

#[test]
fn memory_stays_bounded_and_recent_repeats_are_still_caught() {
    let g = Guard::default();
    let n = MAX_ENTRIES as u64 + 1000;
    for k in 0..n {
        admit(&g, &[(10 * k, 5, 1)]).unwrap();
    }
    assert_eq!(g.entries(), MAX_ENTRIES);
    assert!(admit(&g, &[(10 * (n - 1), 5, 1)]).is_err());
    // The lowest were forgotten first.
    admit(&g, &[(0, 5, 1)]).unwrap();
}

fn ids(first: u64, count: u64, stride: u64) -> std::collections::BTreeSet<u64> {
    (0..count).map(|k| first + k * stride).collect()
}

proptest! {
    /// Two runs are refused together exactly when they share an ID.
    #[test]
    fn overlap_is_exact(
        a in 0u64..200, n in 1u64..30, s in 1u64..12,
        b in 0u64..200, m in 1u64..30, t in 1u64..12,
    ) {
        let g = Guard::default();
        admit(&g, &[(a, n, s)]).unwrap();
        let shared = !ids(a, n, s).is_disjoint(&ids(b, m, t));
        prop_assert_eq!(admit(&g, &[(b, m, t)]).is_err(), shared);
    }

    /// The same with large strides near 2^64, where the progressions' period passes 2^64.
    #[test]
    fn overlap_is_exact_for_large_strides(
        a in 0u64..1000, s in (1u64 << 40)..(1u64 << 41),
        b in 0u64..1000, t in (1u64 << 40)..(1u64 << 41),
        n in 1u64..5, m in 1u64..5,
    ) {
        let g = Guard::default();
        admit(&g, &[(a, n, s)]).unwrap();
        let shared = !ids(a, n, s).is_disjoint(&ids(b, m, t));
        prop_assert_eq!(admit(&g, &[(b, m, t)]).is_err(), shared);
    }
}
