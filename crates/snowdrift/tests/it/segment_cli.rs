//! `snowdrift tags` and `snowdrift next --kind segment` end to end: several processes on one
//! tag, and a process killed mid-stream, against SQLite and PostgreSQL.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use crate::common::Served;
use snowdrift_testkit::{IdChecker, urls};

fn snowdrift(args: &[impl AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .env_remove("SNOWDRIFT_STORE__URL")
        .output()
        .unwrap()
}

fn ok(args: &[impl AsRef<std::ffi::OsStr> + std::fmt::Debug]) -> String {
    let out = snowdrift(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[impl AsRef<std::ffi::OsStr> + std::fmt::Debug]) -> String {
    let out = snowdrift(args);
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

/// A store URL and a table no other test (or earlier run) uses.
fn store(backend: &str, name: &str) -> (String, String) {
    let table = snowdrift_testkit::unique_name(&format!("cli_{name}"));
    let url = match backend {
        "sqlite" => {
            let dir = std::env::temp_dir().join(format!("snowdrift-cli-{table}"));
            std::fs::create_dir_all(&dir).unwrap();
            format!("sqlite://{}/s.db", dir.display())
        }
        _ => urls::postgres(),
    };
    (url, table)
}

fn max_id(url: &str, table: &str, tag: &str) -> u64 {
    let list = ok(&["tags", "--store", url, "--table", table, "list", "--json"]);
    let tags: serde_json::Value = serde_json::from_str(&list).unwrap();
    let t = tags
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tag"] == tag)
        .unwrap();
    t["max_id"].as_str().unwrap().parse().unwrap()
}

fn ids(text: &str) -> Vec<u64> {
    text.lines().map(|l| l.parse().unwrap()).collect()
}

#[test]
fn tags_are_managed_from_the_command_line() {
    let (url, t) = store("sqlite", "tags");
    let base = ["tags", "--store", url.as_str(), "--table", t.as_str()];
    let with = |rest: &[&'static str]| -> Vec<String> {
        base.iter().chain(rest).map(|s| s.to_string()).collect()
    };
    let out = ok(&with(&[
        "create",
        "order",
        "--step",
        "50",
        "--description",
        "orders",
    ]));
    assert!(out.contains("created order (max_id 1, step 50"), "{out}");
    ok(&with(&["create", "user:id"]));
    let out = ok(&with(&["update", "order", "--step", "70"]));
    assert!(out.contains("step 70"), "{out}");
    let list = ok(&with(&["list"]));
    assert!(list.lines().nth(1).unwrap().starts_with("order"), "{list}");
    assert!(
        list.lines().nth(2).unwrap().starts_with("user:id"),
        "{list}"
    );
    assert!(fails(&with(&["create", "order"])).contains("already exists"));
    assert!(fails(&with(&["create", "a b"])).contains("not valid"));
    assert!(fails(&with(&["create", "x", "--step", "0"])).contains("step 0 is not valid"));
    assert!(fails(&with(&["update", "order"])).contains("nothing to update"));
    assert!(fails(&with(&["update", "nope", "--step", "5"])).contains("does not exist"));
    let err = fails(&["tags", "--server", "http://127.0.0.1:1", "list"]);
    assert!(err.contains("cannot reach the snowdrift server"), "{err}");
    let first = ids(&ok(&[
        "next", "--kind", "segment", "--tag", "order", "--store", &url, "--table", &t, "-n", "3",
    ]));
    assert_eq!(first, [1, 2, 3]);
    let err = fails(&[
        "next", "--kind", "segment", "--tag", "nope", "--store", &url, "--table", &t,
    ]);
    assert!(err.contains("create it first"), "{err}");
}

/// `snowdrift serve` over `store_url` and `table`, with its lease files in a temp dir.
fn serve(store_url: &str, table: &str) -> Served {
    let mut cmd = crate::common::serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--store", store_url])
        .env("SNOWDRIFT_STORE__TABLE", table)
        .env(
            "SNOWDRIFT_WORKER__PATH",
            std::env::temp_dir().join(snowdrift_testkit::unique_name("served-workers")),
        );
    Served::start(cmd)
}

#[test]
fn tags_are_managed_through_a_running_server() {
    let (url, t) = store("sqlite", "served");
    let served = serve(&url, &t);
    let server = served.url();
    let with = |rest: &[&str]| -> Vec<String> {
        ["tags", "--server", server.as_str()]
            .iter()
            .chain(rest)
            .map(|s| s.to_string())
            .collect()
    };
    let out = ok(&with(&[
        "create",
        "order",
        "--step",
        "40",
        "--description",
        "orders",
    ]));
    assert!(out.contains("created order (max_id 1, step 40"), "{out}");
    let out = ok(&with(&["update", "order", "--step", "90"]));
    assert!(out.contains("step 90"), "{out}");
    let list = ok(&with(&["list", "--json"]));
    let tags: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(tags[0]["tag"], "order");
    assert_eq!(tags[0]["step"], 90);
    // The server refuses what the store alone would not know about: a generator's name.
    let err = fails(&with(&["create", "snowflake"]));
    assert!(err.contains("409") && err.contains("generator"), "{err}");
    let err = fails(&with(&["create", "x", "--step", "0"]));
    assert!(err.contains("400") && err.contains("step"), "{err}");
    // The tag made through the server is in the store the server uses.
    assert_eq!(max_id(&url, &t, "order"), 1);
    let status = served.stop();
    assert!(status.success(), "SIGTERM is a clean shutdown: {status:?}");
}

/// Three processes take IDs of one tag at the same time: none repeats.
fn processes_share_a_tag(backend: &str) {
    let (url, t) = store(backend, "share");
    ok(&[
        "tags", "--store", &url, "--table", &t, "create", "order", "--step", "100",
    ]);
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_snowdrift"))
                .args(["next", "--kind", "segment", "--tag", "order", "-n", "50000"])
                .args(["--store", &url, "--table", &t])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let checker = IdChecker::new();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = ids(&String::from_utf8(out.stdout).unwrap());
        assert_eq!(got.len(), 50_000);
        checker.record(&format!("process {i}"), got);
    }
    checker.assert_clean();
    assert_eq!(checker.distinct(), 150_000);
}

/// A process killed with SIGKILL mid-stream: the next one repeats nothing, and starts
/// exactly where the store's claims ended (only claimed, unserved IDs are skipped).
fn a_killed_process_never_causes_a_repeat(backend: &str) {
    let (url, t) = store(backend, "kill");
    ok(&[
        "tags", "--store", &url, "--table", &t, "create", "order", "--step", "1000",
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "next",
            "--kind",
            "segment",
            "--tag",
            "order",
            "-n",
            "1000000000",
        ])
        .args(["--store", &url, "--table", &t])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut before = Vec::new();
    while before.len() < 200_000 {
        before.push(lines.next().unwrap().unwrap().parse::<u64>().unwrap());
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no flush
    child.wait().unwrap();
    // Whatever reached the pipe before the kill was issued too (a torn last line was not).
    for line in lines.map_while(Result::ok) {
        if let Ok(id) = line.parse() {
            before.push(id);
        }
    }
    let claimed = max_id(&url, &t, "order");
    let after = ids(&ok(&[
        "next", "--kind", "segment", "--tag", "order", "-n", "1000", "--store", &url, "--table", &t,
    ]));
    let checker = IdChecker::new();
    checker.record("killed", before.iter().copied());
    checker.record("restarted", after.iter().copied());
    checker.assert_clean();
    let last = *before.last().unwrap();
    assert_eq!(
        after[0], claimed,
        "the restart starts after every claimed ID"
    );
    assert!(after[0] > last);
    // What was claimed but never served is lost, and that is all that is lost.
    println!(
        "killed at {last}, claims reached {claimed}: {} IDs skipped",
        claimed - 1 - last
    );
}

#[test]
fn processes_share_a_tag_sqlite() {
    processes_share_a_tag("sqlite");
}

#[test]
fn processes_share_a_tag_postgres() {
    processes_share_a_tag("postgres");
}

#[test]
fn a_killed_process_never_causes_a_repeat_sqlite() {
    a_killed_process_never_causes_a_repeat("sqlite");
}

#[test]
fn a_killed_process_never_causes_a_repeat_postgres() {
    a_killed_process_never_causes_a_repeat("postgres");
}

/// A claim slower than a server's one-second wait (a commit stalled on a busy disk) is
/// waited for, not reported as an error: PostgreSQL behind a proxy that delays each of its
/// answers by 400 ms, so every claim of the three the command needs (four or more round
/// trips: begin, update, select, commit) takes over a second.
#[test]
fn the_command_waits_for_a_claim_slower_than_a_second_postgres() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (proxy, url) = runtime
        .block_on(snowdrift_testkit::FaultProxy::start_for_url(
            &urls::postgres(),
        ))
        .unwrap();
    let t = snowdrift_testkit::unique_name("cli_slow");
    ok(&[
        "tags", "--store", &url, "--table", &t, "create", "order", "--step", "100",
    ]);
    proxy.delay(std::time::Duration::from_millis(400));
    let started = std::time::Instant::now();
    let got = ids(&ok(&[
        "next", "--kind", "segment", "--tag", "order", "-n", "250", "--store", &url, "--table", &t,
    ]));
    assert!(
        started.elapsed() > std::time::Duration::from_secs(2),
        "the proxy did not slow the claims down ({:?}): the test proves nothing",
        started.elapsed()
    );
    let checker = IdChecker::new();
    checker.record("slow", got.iter().copied());
    checker.assert_clean();
    assert_eq!(checker.distinct(), 250);
    proxy.pass();
    // Three segments of 100 for 250 IDs, and perhaps a fourth prefetched before the exit.
    let claimed = max_id(&url, &t, "order");
    assert!((301..=401).contains(&claimed), "claims reached {claimed}");
}

#[test]
fn segment_ids_print_in_any_format_and_obfuscated_as_the_server_obfuscates_them() {
    use snowdrift_core::codec::IdFormat;
    use snowdrift_core::layout::Layout;
    use snowdrift_core::obfuscate::{DEFAULT_BITS, Obfuscator, parse_key};
    let key = "5f1e0c9a27b34d6e8a91c2d3e4f50617";
    let (url, t) = store("sqlite", "formats");
    ok(&["tags", "--store", &url, "--table", &t, "create", "order"]);
    let next = |format: &str| {
        let out = ok(&[
            "next",
            "--kind",
            "segment",
            "--tag",
            "order",
            "--store",
            &url,
            "--table",
            &t,
            "-n",
            "5",
            "--format",
            format,
            "--obfuscate-key",
            key,
        ]);
        out.lines().map(str::to_string).collect::<Vec<_>>()
    };
    // The server's default width for segment IDs, under the same key.
    let obfuscator = Obfuscator::new(parse_key(key).unwrap(), DEFAULT_BITS).unwrap();
    let twitter = Layout::preset("twitter").unwrap();
    let mut decoded = Vec::new();
    for format in ["obfuscated-base62", "hex"] {
        let codec = format
            .parse::<IdFormat>()
            .unwrap()
            .codec(&twitter, Some(&obfuscator))
            .unwrap();
        let printed = next(format);
        decoded.push(
            printed
                .iter()
                .map(|text| codec.decode(text).unwrap())
                .collect::<Vec<u64>>(),
        );
    }
    // Each process claims a segment of its own (step 1000): the first, then the second.
    assert_eq!(
        decoded,
        [vec![1, 2, 3, 4, 5], vec![1001, 1002, 1003, 1004, 1005]]
    );
    let err = fails(&[
        "next", "--kind", "segment", "--tag", "order", "--store", &url, "--table", &t, "--format",
        "friendly",
    ]);
    assert!(err.contains("segment IDs have none"), "{err}");
}
