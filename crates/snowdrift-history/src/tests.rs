use proptest::prelude::*;

use super::*;

fn parse(text: &str) -> Result<History, HistoryError> {
    History::from_reader(text.as_bytes())
}

fn malformed(text: &str) -> (u64, String) {
    match parse(text) {
        Err(HistoryError::Malformed { line, reason }) => (line, reason),
        other => panic!("expected a malformed-line error, got {other:?}"),
    }
}

/// Three clients, overlapping and not, every answer consecutive and in real-time order.
const CLEAN: &str = r#"
{"client": "a", "invoke": 0, "complete": 10, "ids": ["100", "101"]}
{"client": "b", "invoke": 5, "complete": 30, "ids": [90]}
{"client": "c", "invoke": 20, "complete": 25, "ids": ["102", 103, "104"]}

{"client": "a", "invoke": 31, "complete": 40, "ids": ["105"], "node": "n1"}
{"client": "b", "invoke": 41, "complete": 41, "ids": []}
"#;

#[test]
fn a_clean_history_passes() {
    let h = parse(CLEAN).unwrap();
    assert_eq!(h.operations(), 5);
    assert_eq!(h.id_count(), 7);
    assert_eq!(h.clients(), 3);
    let report = h.check();
    assert!(report.is_clean(), "{report}");
    assert!(
        report
            .to_string()
            .starts_with("5 operations, 7 IDs, 3 clients: 0 violations")
    );
}

#[test]
fn a_swapped_pair_is_a_real_time_violation_naming_both() {
    let mut h = History::new();
    h.push("a", 0, 10, [5, 6]).unwrap();
    h.push("b", 20, 30, [3, 4]).unwrap();
    let report = h.check();
    assert_eq!(report.real_time_count, 1);
    assert_eq!(report.violation_count(), 1);
    let Violation::RealTime { earlier, later } = &report.violations[0] else {
        panic!("{report}")
    };
    assert_eq!((earlier.client.as_str(), earlier.max_id), ("a", 6));
    assert_eq!((later.client.as_str(), later.min_id), ("b", 3));
    let text = report.violations[0].to_string();
    assert!(
        text.contains("\"a\" invoked 0 completed 10 ns, 2 IDs 5..=6"),
        "{text}"
    );
    assert!(
        text.contains("\"b\" invoked 20 completed 30 ns, 2 IDs 3..=4"),
        "{text}"
    );
}

#[test]
fn overlapping_operations_may_come_in_either_order() {
    let mut h = History::new();
    // b is invoked before a completes: they are concurrent, any order is linearizable.
    h.push("a", 0, 10, [5]).unwrap();
    h.push("b", 9, 20, [4]).unwrap();
    // d is invoked exactly when c completes: not strictly after, so still concurrent.
    h.push("c", 20, 30, [7]).unwrap();
    h.push("d", 30, 40, [6]).unwrap();
    let report = h.check();
    assert!(report.is_clean(), "{report}");
    // e starts after all of them: it must be above all of them.
    h.push("e", 41, 50, [8]).unwrap();
    assert!(h.check().is_clean());
    h.push("f", 51, 60, [2]).unwrap();
    assert_eq!(h.check().real_time_count, 1);
}

#[test]
fn the_witness_is_the_earlier_operation_with_the_largest_id() {
    let mut h = History::new();
    h.push("a", 0, 1, [10]).unwrap();
    h.push("b", 2, 3, [20]).unwrap();
    h.push("c", 0, 5, [30]).unwrap(); // concurrent with a and b, fine
    h.push("d", 6, 7, [25]).unwrap(); // after c: violation, c is the witness
    let report = h.check();
    assert_eq!(report.real_time_count, 1);
    let Violation::RealTime { earlier, later } = &report.violations[0] else {
        panic!()
    };
    assert_eq!((earlier.client.as_str(), later.client.as_str()), ("c", "d"));
}

#[test]
fn duplicates_are_found_across_and_within_operations() {
    let mut h = History::new();
    h.push("a", 0, 10, [1, 2]).unwrap();
    h.push("b", 0, 10, [2, 3]).unwrap();
    h.push("c", 0, 10, [7, 7]).unwrap();
    let report = h.check_with(CheckOptions { consecutive: false });
    assert_eq!(report.duplicate_count, 2);
    assert_eq!(report.gap_count, 0, "gap check off");
    let dups: Vec<_> = report.of_kind(ViolationKind::Duplicate).collect();
    let Violation::Duplicate { id, first, second } = dups[0] else {
        panic!()
    };
    assert_eq!(
        (*id, first.client.as_str(), second.client.as_str()),
        (2, "a", "b")
    );
    let Violation::Duplicate { id, first, second } = dups[1] else {
        panic!()
    };
    assert_eq!(
        (*id, first.client.as_str(), second.client.as_str()),
        (7, "c", "c")
    );
}

#[test]
fn gaps_within_an_answer_are_found() {
    let mut h = History::new();
    h.push("a", 0, 10, [1, 2, 4, 5, 3]).unwrap();
    let report = h.check();
    assert_eq!(report.gap_count, 2);
    let Violation::Gap {
        op,
        index,
        previous,
        next,
    } = &report.violations[0]
    else {
        panic!("{report}")
    };
    assert_eq!(
        (op.client.as_str(), *index, *previous, *next),
        ("a", 2, 2, 4)
    );
    assert!(h.check_with(CheckOptions { consecutive: false }).is_clean());
}

#[test]
fn counts_are_exact_but_only_the_first_hundred_are_kept() {
    let mut h = History::new();
    // 300 operations, each after the one before, with decreasing IDs.
    for i in 0..300u64 {
        h.push("a", i * 10, i * 10 + 1, [1_000 - i]).unwrap();
    }
    let report = h.check();
    assert_eq!(report.real_time_count, 299);
    assert_eq!(report.violations.len(), 100);
    assert!(
        report
            .to_string()
            .ends_with("... and 199 more (the first 100 of each kind are shown)")
    );
}

#[test]
fn malformed_lines_are_named() {
    let ok = r#"{"client": "a", "invoke": 0, "complete": 1, "ids": ["1"]}"#;
    let (line, reason) = malformed(&format!("{ok}\n\n{{\"client\": \"a\", \"invoke\": 0}}\n"));
    assert_eq!(line, 3);
    assert!(reason.contains("missing field `complete`"), "{reason}");
    assert!(reason.contains("expected {\"client\""), "{reason}");

    let (line, reason) = malformed(&format!("{ok}\nnot json"));
    assert_eq!(line, 2);
    assert!(reason.contains("column"), "{reason}");

    let (_, reason) = malformed(r#"{"client": "a", "invoke": 0, "complete": 1, "ids": ["12x"]}"#);
    assert!(
        reason.contains(r#"ID "12x" is not a decimal number"#),
        "{reason}"
    );

    let (_, reason) = malformed(r#"{"client": "a", "invoke": 0, "complete": 1, "ids": [-3]}"#);
    assert!(reason.contains("ID -3 is negative"), "{reason}");

    let (_, reason) = malformed(r#"{"client": "a", "invoke": 0, "complete": 1, "ids": [1.5]}"#);
    assert!(reason.contains("expected an ID"), "{reason}");

    let (_, reason) = malformed(r#"{"client": "a", "invoke": -1, "complete": 1, "ids": []}"#);
    assert!(reason.contains("invalid value: integer `-1`"), "{reason}");

    let (line, reason) = malformed(r#"{"client": "a", "invoke": 9, "complete": 1, "ids": []}"#);
    assert_eq!(line, 1);
    assert!(
        reason.contains("complete (1) is before invoke (9)"),
        "{reason}"
    );

    let err = History::from_reader(&b"{\"client\": \"\xff\"}\n"[..]).unwrap_err();
    assert_eq!(err.to_string(), "line 1: not UTF-8 text");
}

#[test]
fn ids_up_to_2_pow_64_are_read_from_strings_and_numbers() {
    let h = parse(&format!(
        r#"{{"client": "a", "invoke": 0, "complete": 1, "ids": ["{}", {}]}}"#,
        u64::MAX - 1,
        u64::MAX
    ))
    .unwrap();
    assert!(h.check().is_clean());
}

#[test]
fn a_million_ids_are_checked() {
    // 100,000 operations of 10 IDs from 10 clients, each overlapping the next.
    let mut h = History::new();
    for i in 0..100_000u64 {
        let client = format!("c{}", i % 10);
        h.push(&client, i * 10, i * 10 + 15, i * 10..i * 10 + 10)
            .unwrap();
    }
    let report = h.check();
    assert_eq!(report.ids, 1_000_000);
    assert!(report.is_clean(), "{report}");
}

/// One operation of a simulated client: when it is sent, how long until the counter
/// takes effect, how long after that the answer arrives, and how many IDs it asks for.
fn ops() -> impl Strategy<Value = Vec<(u64, u64, u64, u64, u8)>> {
    proptest::collection::vec((0u64..1_000, 0u64..50, 0u64..50, 1u64..5, 0u8..4), 1..60)
}

/// A linearizable history: one atomic counter, incremented at an instant between each
/// operation's invocation and completion.
fn simulate(ops: &[(u64, u64, u64, u64, u8)]) -> History {
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| (ops[i].0 + ops[i].1, i));
    let mut counter = 1_000u64;
    let mut ids = vec![0..0; ops.len()];
    for i in order {
        ids[i] = counter..counter + ops[i].3;
        counter += ops[i].3;
    }
    let mut h = History::new();
    for (i, &(invoke, to_effect, to_answer, _, client)) in ops.iter().enumerate() {
        h.push(
            &format!("client{client}"),
            invoke,
            invoke + to_effect + to_answer,
            ids[i].clone(),
        )
        .unwrap();
    }
    h
}

proptest! {
    #[test]
    fn a_simulated_atomic_counter_is_linearizable(ops in ops()) {
        let h = simulate(&ops);
        let report = h.check();
        prop_assert!(report.is_clean(), "{}", report);
        // The file form reads back to the same history.
        let mut text = Vec::new();
        h.write_jsonl(&mut text).unwrap();
        let back = History::from_reader(&text[..]).unwrap();
        prop_assert_eq!(back.check(), report);
    }

    #[test]
    fn swapping_the_ids_of_two_ordered_operations_is_caught(
        ops in ops(),
        pick in any::<proptest::sample::Index>(),
    ) {
        let h = simulate(&ops);
        let pairs: Vec<(usize, usize)> = (0..h.ops.len())
            .flat_map(|a| (0..h.ops.len()).map(move |b| (a, b)))
            .filter(|&(a, b)| h.ops[a].complete < h.ops[b].invoke)
            .collect();
        prop_assume!(!pairs.is_empty());
        let (a, b) = pairs[pick.index(pairs.len())];
        let mut swapped = History::new();
        for (i, op) in h.ops.iter().enumerate() {
            let from = if i == a { &h.ops[b] } else if i == b { &h.ops[a] } else { op };
            swapped
                .push(&h.clients[op.client], op.invoke, op.complete, h.ids_of(from).iter().copied())
                .unwrap();
        }
        let report = swapped.check();
        prop_assert!(report.real_time_count >= 1, "{}", report);
        prop_assert_eq!(report.duplicate_count, 0);
        prop_assert_eq!(report.gap_count, 0);
    }
}

#[test]
fn files_read_into_one_history_are_checked_together_and_named() {
    let mut h = History::new();
    let a = r#"{"client": "a", "invoke": 0, "complete": 10, "ids": ["5"]}"#;
    let b = r#"{"client": "b", "invoke": 0, "complete": 1, "ids": ["1"]}
{"client": "b", "invoke": 20, "complete": 30, "ids": ["4"]}"#;
    h.read(a.as_bytes(), "a.jsonl").unwrap();
    h.read(b.as_bytes(), "b.jsonl").unwrap();
    let report = h.check();
    assert_eq!(report.real_time_count, 1);
    let text = report.violations[0].to_string();
    assert!(
        text.contains("\"b\" invoked 20 completed 30 ns, ID 4 (b.jsonl line 2)"),
        "{text}"
    );
    assert!(
        text.contains("\"a\" invoked 0 completed 10 ns, ID 5 (a.jsonl line 1)"),
        "{text}"
    );
}
