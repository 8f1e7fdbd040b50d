//! xid, nanoid and cuid2 through the real binary's configuration and command line: each key
//! refused out of range by `--check-config` and by a start alike, naming the key; the
//! collision-risk warning of a Nano ID size at its `expected_rate` (printed by the check,
//! shown by `/v1/generators`, absent when the size lasts); `snowdrift next --explain`; the options
//! refused for kinds they do not belong to.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use snowdrift_testkit::unique_name;

use crate::common::{Served, serve_command};

fn config(dir: &Path, generators: &str) -> PathBuf {
    let file = dir.join("snowdrift.toml");
    std::fs::write(
        &file,
        format!(
            "[store]\nurl = \"sqlite://{}\"\n{generators}",
            dir.join("ids.db").display()
        ),
    )
    .unwrap();
    file
}

fn serve(file: &Path, check: bool) -> Output {
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(file);
    if check {
        cmd.arg("--check-config");
    }
    // A start that passes the plan would serve until killed: give it none to pass.
    cmd.output().unwrap()
}

fn snowdrift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn keys_out_of_range_are_refused_by_the_check_and_the_start_alike() {
    let dir = std::env::temp_dir().join(unique_name("text-kinds"));
    std::fs::create_dir_all(&dir).unwrap();
    let g = |kind: &str, keys: &str| {
        format!("[[generator]]\nname = \"g\"\nkind = \"{kind}\"\n{keys}\n")
    };
    for (generator, key, reason) in [
        (
            g("xid", "machine_id = 16777216"),
            "generator[0].machine_id",
            "0 to 16777215",
        ),
        (
            g("nanoid", "size = 0"),
            "generator[0].size",
            "allowed: 1 to 255",
        ),
        (
            g("nanoid", "size = 256"),
            "generator[0].size",
            "allowed: 1 to 255",
        ),
        (
            g("nanoid", "alphabet = \"a\""),
            "generator[0].alphabet",
            "2 to 256 distinct",
        ),
        (
            g("nanoid", "alphabet = \"abca\""),
            "generator[0].alphabet",
            "'a' appears twice",
        ),
        (
            g("nanoid", "alphabet = \"ab c\""),
            "generator[0].alphabet",
            "white space",
        ),
        (
            g("nanoid", "expected_rate = 0"),
            "generator[0].expected_rate",
            "above 0",
        ),
        (
            g("nanoid", "expected_rate = -5.0"),
            "generator[0].expected_rate",
            "above 0",
        ),
        // Issue 40: shapes whose IDs repeat within one answer, or within a day at the
        // expected rate, are refused (one answer of alphabet "ab", size 1 held "a" three
        // times; cuid2 of length 2 gave 817 distinct of 2,000).
        (
            g("nanoid", "alphabet = \"ab\"\nsize = 1"),
            "generator[0] (\"g\")",
            "IDs of 1 characters from an alphabet of 2 carries 1.0 random bits: one answer of limits.max_count = 10000 IDs holds two equal ones with a chance of ~100%",
        ),
        (
            g("nanoid", "size = 7"),
            "generator[0] (\"g\")",
            "accept_collision_risk = true",
        ),
        (
            g("nanoid", "size = 10\nexpected_rate = 1e9"),
            "generator[0] (\"g\")",
            "within a day",
        ),
        (
            g("cuid2", "length = 2"),
            "generator[0] (\"g\")",
            "cuid2 of length 2 carries 9.9 random bits",
        ),
        (
            g("cuid2", "length = 8"),
            "generator[0] (\"g\")",
            "Give a larger length (the default is 24)",
        ),
        (
            g("cuid2", "length = 1"),
            "generator[0].length",
            "allowed: 2 to 32",
        ),
        (
            g("cuid2", "length = 33"),
            "generator[0].length",
            "allowed: 2 to 32",
        ),
        (
            g("cuid2", "size = 10"),
            "line 6",
            "key \"size\" does not apply to kind cuid2; it is a key of kind nanoid",
        ),
        (
            g("xid", "length = 10"),
            "line 6",
            "key \"length\" does not apply to kind xid; it is a key of kind cuid2",
        ),
        (
            g("uuid7", "machine_id = 1"),
            "line 6",
            "key \"machine_id\" does not apply to kind uuid7; it is a key of kind xid",
        ),
    ] {
        let file = config(&dir, &generator);
        for check in [true, false] {
            let out = serve(&file, check);
            let err = text(&out.stderr);
            assert!(
                !out.status.success(),
                "{generator} (check {check}) was accepted"
            );
            assert!(
                err.contains(key) && err.contains(reason),
                "{generator} (check {check}): {err}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A Nano ID size whose 1% collision chance at `expected_rate` comes within a year is
/// warned about by `--check-config` (as a TOML comment, and on stderr) and shown by
/// `/v1/generators`; one that lasts is not. One that repeats within a day (or within one
/// answer) needs `accept_collision_risk = true` to be accepted at all.
#[test]
fn a_nanoid_size_that_collides_within_a_year_is_warned_about() {
    let dir = std::env::temp_dir().join(unique_name("nanoid-risk"));
    std::fs::create_dir_all(&dir).unwrap();
    // 8 hex characters are 32 bits: 1% after ~9,300 IDs, 93 s at 100/s.
    let risky = config(
        &dir,
        "[[generator]]\nname = \"short\"\nkind = \"nanoid\"\nalphabet = \"0123456789abcdef\"\n\
         size = 8\nexpected_rate = 100\naccept_collision_risk = true\n\
         [[generator]]\nname = \"long\"\nkind = \"nanoid\"\nexpected_rate = 1000000\n",
    );
    let out = serve(&risky, true);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let warning = stdout
        .lines()
        .find(|l| l.starts_with("# warning:"))
        .unwrap_or_else(|| panic!("no warning in:\n{stdout}"));
    assert!(
        warning.contains("generator[0] (\"short\")")
            && warning.contains("expected_rate = 100 IDs/s")
            && warning.contains("1% chance of a repeat in ~1.5 minutes")
            && warning.contains("raise size"),
        "{warning}"
    );
    assert_eq!(stdout.matches("# warning:").count(), 1, "{stdout}");
    assert!(text(&out.stderr).contains("warning: generator[0] (\"short\")"));
    // The effective config, warnings and all, is still a config the check takes.
    let again = dir.join("again.toml");
    std::fs::write(&again, &stdout).unwrap();
    let out = serve(&again, true);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // A start serves it anyway, and /v1/generators shows the risk.
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&risky);
    let served = Served::start(cmd);
    served.wait_ready();
    let (_, body) = served.get("/v1/generators", None);
    let g: serde_json::Value = serde_json::from_str(&body).unwrap();
    let short = g["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "short")
        .unwrap()
        .clone();
    assert_eq!(short["collision_1pct_after"], "~1.5 minutes", "{short}");
    assert_eq!(short["size"], 8, "{short}");
    drop(served);

    // Without expected_rate, or with a size that lasts, nothing to warn about.
    let fine = config(
        &dir,
        "[[generator]]\nname = \"short\"\nkind = \"nanoid\"\nalphabet = \"0123456789abcdef\"\n\
         size = 16\n[[generator]]\nname = \"long\"\nkind = \"nanoid\"\nsize = 21\n\
         expected_rate = 1000000\n",
    );
    let out = serve(&fine, true);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("warning"),
        "{}",
        text(&out.stdout)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn next_explains_a_nanoid_size_and_refuses_options_of_other_kinds() {
    let out = snowdrift(&[
        "next",
        "--kind",
        "nanoid",
        "--alphabet",
        "0123456789abcdef",
        "--size",
        "8",
        "--explain",
        "--rate",
        "100",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("32.0 random bits"), "{report}");
    assert!(report.contains("9.291e3 IDs"), "{report}");
    assert!(
        report.contains("~1.5 minutes   UNDER A YEAR: raise --size"),
        "{report}"
    );
    // The default shape, at the default rates: years at every one of them.
    let out = snowdrift(&["next", "--kind", "nanoid", "--explain", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["size"], 21);
    assert_eq!(v["random_bits"], 126.0);
    assert!(v["rates"].as_array().unwrap().len() >= 3, "{v}");
    assert!(
        v["rates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["under_a_year"] == false),
        "{v}"
    );
    for (args, reason) in [
        (
            &["next", "--kind", "uuid7", "--size", "3"][..],
            "--size applies to --kind nanoid, not uuid7",
        ),
        (
            &["next", "--kind", "cuid2", "--explain"][..],
            "--explain applies to --kind nanoid",
        ),
        (
            &["next", "--kind", "nanoid", "--machine-id", "3"][..],
            "--machine-id applies to --kind xid",
        ),
        (
            &["next", "--kind", "xid", "--machine-id", "16777216"][..],
            "0 to 16777215",
        ),
        (
            &["next", "--kind", "cuid2", "--length", "40"][..],
            "--length: cuid2 length 40 is out of range",
        ),
        (
            &["next", "--kind", "nanoid", "--alphabet", "aa"][..],
            "'a' appears twice",
        ),
        (
            &["decode", "--kind", "xid", "9M4E2MR0UI3E8A215N4G"][..],
            "'M' at byte 1 is not allowed",
        ),
        (
            &["decode", "--kind", "cuid2", "--size", "3", "abc"][..],
            "--size applies to --kind nanoid, not cuid2",
        ),
    ] {
        let out = snowdrift(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            text(&out.stderr).contains(reason),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// Issue 40: 1 M Nano IDs of 255 characters in one request made a 640 MB body (1.75 GB of
/// RSS). One answer holds at most `limits.max_answer_bytes` of text IDs, whatever
/// `max_count` allows, and the refusal says how many to ask for.
#[test]
fn an_answer_of_long_text_ids_is_bounded_by_bytes() {
    let dir = std::env::temp_dir().join(unique_name("nanoid-bytes"));
    std::fs::create_dir_all(&dir).unwrap();
    // 255 characters of a two-byte alphabet: 510 bytes each, so 1 MiB holds 2,056.
    let file = config(
        &dir,
        "[limits]\nmax_count = 1000000\nmax_answer_bytes = 1048576\n\
         [[generator]]\nname = \"long\"\nkind = \"nanoid\"\nsize = 255\n\
         alphabet = \"абвгдежзийклмнопрстуфхцчшщъыьэюя\"\n",
    );
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"]).arg(&file);
    let served = Served::start(cmd);
    served.wait_ready();
    let (status, body) = served.get("/v1/ids/long?count=100000", None);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("up to 510 bytes each") && body.contains("at most 2056"),
        "{body}"
    );
    let (status, body) = served.get("/v1/ids/long?count=2056", None);
    assert_eq!(status, 200, "{}", &body[..body.len().min(300)]);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ids"].as_array().unwrap().len(), 2056);
    assert!(body.len() < 1_200_000, "{} bytes", body.len());
    let (_, generators) = served.get("/v1/generators", None);
    assert!(
        generators.contains("\"max_per_answer\":2056"),
        "{generators}"
    );
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}
