//! `snowdrift verify --history`: the linearizability checker through the real binary.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Writes `text` to a fresh file under the temp dir.
fn history_file(text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "{}.jsonl",
        snowdrift_testkit::unique_name("verify")
    ));
    std::fs::write(&path, text).unwrap();
    path
}

fn verify(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .arg("verify")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A linearizable history of 6 clients sharing one counter: 20,000 operations of 1-8
/// IDs, each overlapping its neighbours, IDs taken in order of a point inside each.
fn clean_history() -> String {
    let mut out = String::new();
    let mut next = 7_000_000_000_000u64;
    for i in 0..20_000u64 {
        let count = i % 8 + 1;
        let ids: Vec<String> = (next..next + count).map(|id| format!("\"{id}\"")).collect();
        next += count;
        // Invoked 5 µs apart, each open for 12 µs: up to three at once.
        let invoke = 1_700_000_000_000_000_000 + i * 5_000;
        out.push_str(&format!(
            "{{\"client\": \"c{}\", \"invoke\": {invoke}, \"complete\": {}, \"ids\": [{}]}}\n",
            i % 6,
            invoke + 12_000,
            ids.join(",")
        ));
    }
    out
}

#[test]
fn a_clean_history_passes_from_a_file_and_from_stdin() {
    let history = clean_history();
    let path = history_file(&history);
    let out = verify(&["--history", path.to_str().unwrap()], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("operations: 20,000"), "{stdout}");
    assert!(stdout.contains("IDs: 90,000"), "{stdout}");
    assert!(stdout.contains("clients: 6"), "{stdout}");
    assert!(stdout.contains("violations: 0 "), "{stdout}");

    let out = verify(&["--history", "-"], Some(&history));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("history: -\n"));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn one_planted_swap_fails_and_names_both_operations() {
    // Swap the IDs of operations 100 and 200, which do not overlap.
    let mut lines: Vec<String> = clean_history().lines().map(str::to_string).collect();
    let ids = |l: &str| l[l.find("\"ids\"").unwrap()..].to_string();
    let (a, b) = (ids(&lines[100]), ids(&lines[200]));
    lines[100] = lines[100].replace(&a, &b);
    lines[200] = lines[200].replace(&b, &a);
    let path = history_file(&(lines.join("\n") + "\n"));
    let out = verify(&["--history", path.to_str().unwrap()], None);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stdout}");
    // Every operation invoked after line 101 completed, up to line 201, is below it.
    assert!(
        stdout.contains("(line 101), which completed before it was invoked"),
        "{stdout}"
    );
    assert!(stdout.contains("(line 104); is not above"), "{stdout}");
    assert!(stdout.contains("(line 201); is not above"), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("snowdrift: error: history ") && stderr.contains("is not linearizable"),
        "{stderr}"
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn duplicates_and_gaps_are_reported_and_gaps_can_be_allowed() {
    let history = "{\"client\": \"a\", \"invoke\": 0, \"complete\": 10, \"ids\": [\"1\", \"3\"]}\n\
                   {\"client\": \"b\", \"invoke\": 0, \"complete\": 10, \"ids\": [3]}\n";
    let out = verify(&["--history", "-"], Some(history));
    let stdout = text(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains(
            "violations: 2 (duplicates: 1, gaps within an answer: 1, real-time order: 0)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("duplicate ID 3: \"a\""), "{stdout}");
    let out = verify(&["--history", "-", "--allow-gaps"], Some(history));
    assert!(
        text(&out.stdout).contains("gaps within an answer: not checked"),
        "{}",
        text(&out.stdout)
    );
    assert!(!out.status.success(), "the duplicate still fails");
}

#[test]
fn a_malformed_line_is_a_clear_error() {
    let history = "{\"client\": \"a\", \"invoke\": 0, \"complete\": 10, \"ids\": [\"1\"]}\n\
                   {\"client\": \"a\", \"invoke\": 20, \"complete\": 30, \"ids\": [\"2x\"]}\n";
    let out = verify(&["--history", "-"], Some(history));
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("history - is malformed: line 2: ID \"2x\" is not a decimal number"),
        "{stderr}"
    );
    let out = verify(&["--history", "/nonexistent/history.jsonl"], None);
    assert!(text(&out.stderr).contains("cannot open /nonexistent/history.jsonl"));
}

#[test]
fn files_of_several_clients_are_checked_as_one_history() {
    let lines: Vec<String> = clean_history().lines().map(str::to_string).collect();
    // Split by client into two files: c0-c2 and c3-c5.
    let (first, second): (Vec<&String>, Vec<&String>) = lines
        .iter()
        .partition(|l| ["\"c0\"", "\"c1\"", "\"c2\""].iter().any(|c| l.contains(c)));
    let join = |v: &[&String]| v.iter().map(|l| format!("{l}\n")).collect::<String>();
    let a = history_file(&join(&first));
    let b = history_file(&join(&second));
    let (a_name, b_name) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = verify(&["--history", a_name, "--history", b_name], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("operations: 20,000"), "{stdout}");

    // A late operation in the second file below one the first file recorded earlier.
    let mut late = join(&second);
    late.push_str(
        "{\"client\": \"c9\", \"invoke\": 1800000000000000000, \"complete\": 1800000000000000001, \"ids\": [\"7000000000005\"]}\n",
    );
    std::fs::write(&b, late).unwrap();
    let out = verify(&["--history", a_name, "--history", b_name], None);
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let late_line = second.len() + 1;
    assert!(
        stdout.contains(&format!("({b_name} line {late_line}); is not above")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("({a_name} line ")), "{stdout}");
    assert!(stdout.contains("duplicate ID 7000000000005"), "{stdout}");

    let out = verify(&["--history", "-", "--history", "-"], None);
    assert!(text(&out.stderr).contains("can be given only once"));
    std::fs::remove_file(a).unwrap();
    std::fs::remove_file(b).unwrap();
}
