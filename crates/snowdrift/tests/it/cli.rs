//! End-to-end tests of the `snowdrift` binary, run as a user would run it.

use std::collections::HashSet;
use std::process::{Command, Output};

fn snowdrift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .output()
        .expect("run snowdrift")
}

fn ok(args: &[&str]) -> String {
    let out = snowdrift(args);
    assert!(
        out.status.success(),
        "snowdrift {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a failing command; returns its single stderr line.
fn fails(args: &[&str]) -> String {
    let out = snowdrift(args);
    assert!(!out.status.success(), "snowdrift {args:?} should fail");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "errors are one line: {err:?}");
    assert!(err.starts_with("snowdrift: error: "), "{err}");
    err
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn next_prints_distinct_increasing_ids() {
    let out = ok(&["next", "-n", "20000"]);
    let ids: Vec<u64> = out.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(ids.len(), 20000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 20000);
}

#[test]
fn next_uses_the_worker_and_layout() {
    let id = ok(&["next", "--layout", "discord", "--worker", "37"]);
    let d = json(&ok(&["decode", id.trim(), "--layout", "discord"]));
    assert_eq!(d["fields"]["worker"], 1);
    assert_eq!(d["fields"]["process"], 5);
    let id = ok(&[
        "next",
        "--bits",
        "time:39,worker:12,seq:12",
        "--unit",
        "10ms",
        "--epoch",
        "2024-01-01",
        "--worker",
        "4095",
    ]);
    let d = json(&ok(&[
        "decode",
        id.trim(),
        "--bits",
        "time:39,worker:12,seq:12",
        "--unit",
        "10ms",
        "--epoch",
        "2024-01-01",
    ]));
    assert_eq!(d["fields"]["worker"], 4095);
    assert_eq!(d["layout"], "custom");
}

#[test]
fn every_format_decodes_back() {
    for layout in ["twitter", "sonyflake", "js53", "tsid", "sonyflake-v2"] {
        for format in [
            "decimal",
            "hex",
            "base62",
            "crockford32",
            "tsid",
            "sqids",
            "friendly",
        ] {
            let encoded = ok(&[
                "next", "--layout", layout, "--format", format, "--worker", "3",
            ]);
            let d = json(&ok(&[
                "decode",
                encoded.trim(),
                "--layout",
                layout,
                "--format",
                format,
            ]));
            let id = d["id"].as_str().unwrap().to_string();
            let again = json(&ok(&["decode", &id, "--layout", layout]));
            assert_eq!(d, again, "{layout}/{format}: {encoded}");
        }
    }
}

#[test]
fn decode_gives_documented_fields() {
    let d = json(&ok(&["decode", "1050118621198921728"]));
    assert_eq!(d["time"], "2018-10-10T20:19:24.211Z");
    assert_eq!(d["fields"]["datacenter"], 10);
    assert_eq!(d["fields"]["worker"], 27);
    // Field order follows the layout, high bits first.
    let keys: Vec<&String> = d["fields"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["time", "datacenter", "worker", "seq"]);
    let d = json(&ok(&[
        "decode",
        "175928847299117063",
        "--layout",
        "discord",
    ]));
    assert_eq!(d["time"], "2016-04-30T11:18:25.796Z");
    assert_eq!(d["fields"]["increment"], 7);
    // The friendly form is accepted back without --format.
    let d = json(&ok(&["decode", "20181010201924211-10-27-0"]));
    assert_eq!(d["id"], "1050118621198921728");
}

#[test]
fn layout_reports_and_refuses() {
    let t = ok(&["layout", "twitter"]);
    assert!(t.contains("4,096,000 IDs/s per node"), "{t}");
    assert!(t.contains("2080-07-10"), "{t}");
    assert!(t.contains("1,024"), "{t}");
    let j = json(&ok(&["layout", "js53", "--json"]));
    assert_eq!(j["js_safe_now"], true);
    assert_eq!(j["js_unsafe_from"], serde_json::Value::Null);

    let out = snowdrift(&["layout", "baidu"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("EXPIRED"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ran out on 2024-11-20"));
    // Its epoch moved, the preset lives again; a unit stays its own.
    let moved = ok(&["layout", "baidu", "--epoch", "2025-01-01"]);
    assert!(moved.contains("lifetime  2033-07-04"), "{moved}");
    let unit = snowdrift(&["layout", "baidu", "--unit", "1ms"]);
    assert!(!unit.status.success());
    assert!(String::from_utf8_lossy(&unit.stderr).contains("--bits"));
    let tsid = ok(&["layout", "tsid"]);
    assert!(tsid.contains("2089-"), "{tsid}");

    let e = fails(&["layout", "--bits", "time:37,server:20,seq:16"]);
    assert!(e.contains("time 37 + server 20 + seq 16 = 73 bits"), "{e}");
    assert!(e.contains("remove 10 bit(s)"), "{e}");
    let e = fails(&[
        "layout",
        "--bits",
        "time:41,seq:12",
        "--epoch",
        "2999-01-01",
    ]);
    assert!(e.contains("in the future"), "{e}");
}

#[test]
fn bad_input_is_one_clear_line() {
    assert!(fails(&["layout", "nope"]).contains("known presets: twitter"));
    assert!(fails(&["next", "--worker", "1024"]).contains("allowed: 0..=1023"));
    assert!(fails(&["next", "-n", "0"]).contains("at least 1"));
    assert!(fails(&["decode", "12x"]).contains("not valid decimal"));
    assert!(fails(&["decode", "9223372036854775808"]).contains("at most"));
    assert!(fails(&["next", "--bits", "time:41,worker:10,seq:0"]).contains("zero width"));
    assert!(fails(&["next", "--bits", "time:41,seq:12", "--unit", "1h"]).contains("time unit"));
    assert!(fails(&["bench", "--threads", "0"]).contains("--threads"));
}

#[test]
fn clock_offset_moves_generated_time() {
    let day_ms: i64 = 86_400_000;
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["next"])
        .env("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", (-day_ms).to_string())
        .output()
        .unwrap();
    assert!(out.status.success());
    let id = String::from_utf8(out.stdout).unwrap();
    let t = json(&ok(&["decode", id.trim()]))["time_ms"]
        .as_i64()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (now - day_ms - t).abs() < 60_000,
        "time {t} should be a day before {now}"
    );
}

#[test]
fn bench_reports_rate_latency_and_order() {
    let out = ok(&[
        "bench",
        "--duration",
        "300ms",
        "--threads",
        "2",
        "--block",
        "16",
    ]);
    assert!(out.contains("IDs/s"), "{out}");
    assert!(out.contains("p99.9"), "{out}");
    assert!(out.contains("order      0 violation(s)"), "{out}");
    // A token exported for the server commands does not get in the way.
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["bench", "--duration", "100ms"])
        .env("SNOWDRIFT_TOKEN", "sd_exported")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn other_kinds_have_standard_forms_and_increase() {
    let lines = |kind: &str| -> Vec<String> {
        ok(&["next", "--kind", kind, "-n", "2000"])
            .lines()
            .map(String::from)
            .collect()
    };
    for (kind, len) in [("uuid7", 36), ("ulid", 26), ("objectid", 24)] {
        let ids = lines(kind);
        assert_eq!(ids.len(), 2000);
        assert!(ids.iter().all(|i| i.len() == len), "{kind}: {}", ids[0]);
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{kind} IDs increase within a process"
        );
    }
    let v7 = lines("uuid7");
    assert!(
        v7.iter().all(|u| u.as_bytes()[14] == b'7'),
        "version 7: {}",
        v7[0]
    );
    let v4 = lines("uuid4");
    assert!(v4.iter().all(|u| u.as_bytes()[14] == b'4'));
    assert_eq!(v4.iter().collect::<HashSet<_>>().len(), 2000);
    assert!(
        fails(&["next", "--kind", "ulid", "--format", "hex"])
            .contains("ulid IDs have one standard text form")
    );
}

/// TypeIDs and KSUIDs made here, and decoded by `snowdrift decode` whether it is told the
/// kind or reads it from the text; bad prefixes and malformed IDs are one line saying why.
#[test]
fn typeids_and_ksuids_are_made_and_decoded() {
    let out = ok(&["next", "--kind", "typeid", "--prefix", "user", "-n", "2000"]);
    let ids: Vec<&str> = out.lines().collect();
    assert_eq!(ids.len(), 2000);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "TypeIDs increase");
    for id in &ids {
        assert!(id.starts_with("user_") && id.len() == 31, "{id}");
    }
    let d = json(&ok(&["decode", ids[0]]));
    assert_eq!(d["prefix"], "user");
    assert_eq!(d["uuid"].as_str().map(|u| &u[14..15]), Some("7"), "{d}");
    assert!(d["time"].as_str().unwrap().starts_with("20"), "{d}");
    let bare = ok(&["next", "--kind", "typeid", "--prefix", ""]);
    let bare = bare.trim();
    assert_eq!(bare.len(), 26);
    let d = json(&ok(&["decode", "--kind", "typeid", bare]));
    assert_eq!(d["prefix"], "");
    // The specification's example and segmentio's.
    let d = json(&ok(&["decode", "prefix_01h455vb4pex5vsknk084sn02q"]));
    assert_eq!(d["uuid"], "01890a5d-ac96-774b-bcce-b302099a8057");
    let d = json(&ok(&["decode", "0ujtsYcgvSTl8PAuAdqWYSMnLOv"]));
    assert_eq!(d["timestamp"], 107_608_047);
    assert_eq!(d["payload"], "b5a1cd34b5f99d1154fb6853345c9735");
    assert_eq!(d["time"], "2017-10-10T04:00:47.000Z");

    let out = ok(&["next", "--kind", "ksuid", "-n", "2000"]);
    let ids: HashSet<&str> = out.lines().collect();
    assert_eq!(ids.len(), 2000);
    let id = ids.iter().next().unwrap();
    assert_eq!(id.len(), 27);
    let d = json(&ok(&["decode", id]));
    assert_eq!(d["id"], *id);
    assert!(d["time"].as_str().unwrap().starts_with("20"), "{d}");

    for (args, says) in [
        (
            &["next", "--kind", "typeid", "--prefix", "User"][..],
            "'U' at byte 0",
        ),
        (
            &["next", "--kind", "ksuid", "--prefix", "user"][..],
            "--prefix applies to --kind typeid",
        ),
        (
            &["decode", "user_01h455vb4pex5vsknk084sn02"][..],
            "the suffix has 25 bytes",
        ),
        (
            &["decode", "user_8zzzzzzzzzzzzzzzzzzzzzzzzz"][..],
            "starts above 7",
        ),
        (
            &["decode", "--kind", "ksuid", "0ujtsYcgvSTl8PAuAdqWYSMnLO-"][..],
            "'-' at byte 26",
        ),
        (
            &["decode", "aWgEPTl1tmebfsQzFP4bxwgy80W"][..],
            "larger than 160 bits",
        ),
    ] {
        let err = fails(args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = snowdrift(&["next", "--kind", "typeid"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--prefix <PREFIX>"));
}

/// `--kind` takes the kinds `next` makes in this process, by their config names, and refuses
/// the others (kinds only a server issues, such as tso, included) listing what it takes.
#[test]
fn next_takes_only_the_kinds_it_makes_here() {
    let local = "snowflake, uuid1, uuid2, uuid3, uuid4, uuid5, uuid6, uuid7, ulid, objectid, \
                 typeid, ksuid, xid, nanoid, cuid2, segment";
    for kind in [
        "tso",
        "ticket",
        "counter",
        "zk-version",
        "Snowflake",
        "uuid8",
    ] {
        let out = snowdrift(&["next", "--kind", kind]);
        assert!(!out.status.success(), "--kind {kind} is refused");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains(&format!("invalid value '{kind}' for '--kind <KIND>'")),
            "{err}"
        );
        assert!(
            err.contains(&format!("[possible values: {local}]")),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    let help = ok(&["next", "--help"]);
    assert!(
        !help.contains("- tso") && !help.contains("- zk-version"),
        "{help}"
    );
    assert!(
        help.contains("- segment:   The next IDs of a segment tag"),
        "{help}"
    );
    assert!(help.contains("[default: snowflake]"), "{help}");
}

#[test]
fn uuid_options_are_checked_before_anything_is_printed() {
    for (args, says) in [
        (
            &["next", "--kind", "uuid5", "--input", "a"][..],
            "--namespace",
        ),
        (
            &["next", "--kind", "uuid3", "--namespace", "dns"][..],
            "--input NAME",
        ),
        (
            &[
                "next",
                "--kind",
                "uuid5",
                "--namespace",
                "dns",
                "--input",
                "a",
                "-n",
                "2",
            ][..],
            "-n must be 1",
        ),
        (
            &[
                "next",
                "--kind",
                "uuid5",
                "--namespace",
                "dnss",
                "--input",
                "a",
            ][..],
            "--namespace: namespace \"dnss\"",
        ),
        (
            &["next", "--kind", "uuid1", "--node", "01:23"][..],
            "--node: node",
        ),
        (
            &["next", "--kind", "uuid4", "--node", "0123456789ab"][..],
            "--node applies to",
        ),
        (
            &["next", "--kind", "uuid7", "--input", "a"][..],
            "--input applies to",
        ),
        (
            &["next", "--kind", "uuid2", "--domain", "user"][..],
            "--domain",
        ),
        (
            &["next", "--kind", "uuid2", "--domain", "org"][..],
            "--local-id",
        ),
        (&["next", "--kind", "uuid2", "-n", "65"][..], "at most 64"),
    ] {
        let err = fails(args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let err = snowdrift(&[
        "next",
        "--server",
        "http://127.0.0.1:1",
        "u5",
        "--input",
        "a",
    ]);
    assert!(!err.status.success(), "--input cannot go to a server");
    assert_eq!(
        ok(&[
            "next",
            "--kind",
            "uuid5",
            "--namespace",
            "dns",
            "--input",
            "www.example.com"
        ])
        .trim(),
        "2ed6657d-e927-568b-95e1-2665a8aea6a2"
    );
}

#[test]
fn obfuscated_formats_decode_back_with_the_same_key() {
    let key = "00112233445566778899aabbccddeeff";
    for (layout, format) in [
        ("twitter", "obfuscated"),
        ("js53", "obfuscated-base62"),
        ("discord", "obfuscated-crockford32"),
    ] {
        let with_key = |command: &[&'static str]| -> Vec<&str> {
            let options = [
                "--layout",
                layout,
                "--format",
                format,
                "--obfuscate-key",
                key,
            ];
            command.iter().copied().chain(options).collect()
        };
        let out = ok(&with_key(&["next", "-n", "200"]));
        let public: Vec<&str> = out.lines().collect();
        assert_eq!(public.iter().collect::<HashSet<_>>().len(), 200);
        let mut originals = Vec::new();
        for text in [public[0], public[199]] {
            let d = json(&ok(&[&["decode", text][..], &with_key(&[])].concat()));
            let id = d["id"].as_str().unwrap().to_string();
            assert_eq!(d, json(&ok(&["decode", &id, "--layout", layout])));
            originals.push(id.parse::<u64>().unwrap());
        }
        assert!(originals[0] < originals[1], "{layout}: {originals:?}");
    }
    // The key from the environment, and its width: 53-bit outputs from a 53-bit layout.
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "next",
            "-n",
            "100",
            "--layout",
            "js53",
            "--format",
            "obfuscated",
        ])
        .env("SNOWDRIFT_OBFUSCATE_KEY", key)
        .output()
        .unwrap();
    assert!(out.status.success());
    let shown: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert!(shown.iter().all(|&v| v < 1 << 53));
    let rises = shown.windows(2).filter(|w| w[1] > w[0]).count();
    assert!((25..75).contains(&rises), "{rises} of 99 rose: {shown:?}");
    for (args, word) in [
        (
            &["next", "--format", "obfuscated-hex"][..],
            "needs the generator's key",
        ),
        (
            &[
                "next",
                "--format",
                "obfuscated",
                "--obfuscate-key",
                &key[1..],
            ][..],
            "has 31 characters",
        ),
        (
            &[
                "next",
                "--format",
                "obfuscated",
                "--obfuscate-key",
                key,
                "--obfuscate-bits",
                "53",
            ][..],
            "53 bits cannot hold",
        ),
        (
            &["next", "--format", "hex", "--obfuscate-bits", "53"][..],
            "applies to the obfuscated formats",
        ),
    ] {
        let err = fails(args);
        assert!(err.contains(word), "{args:?}: {err}");
        assert!(!err.contains(&key[4..20]), "{err}");
    }
    let out = snowdrift(&["next", "--format", "obfuscated-friendly"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no obfuscated friendly format"), "{err}");
}

/// A reader that closed stdout before reading (`| head`, a pager quit early) ends a command
/// quietly with success, whether it writes through a buffered writer (`next`) or prints a
/// report (`layout`, `layout migrate`): no panic, no "Broken pipe" error.
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    for args in [
        &["next", "-n", "100000"][..],
        &["layout", "twitter"],
        &[
            "layout",
            "migrate",
            "--from",
            "sonyflake",
            "--to",
            "twitter",
        ],
        &["decode", "1541815603606036480"],
    ] {
        // The read end is closed before the command starts, so its first write fails.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("run snowdrift");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.is_empty(),
            "snowdrift {args:?} with stdout closed: {:?}, stderr {err:?}",
            out.status
        );
    }
}
