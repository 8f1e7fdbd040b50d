//! UUIDs the real binary issued (`snowdrift serve` over HTTP, and `snowdrift next`), read
//! back by an independent implementation: Python's `uuid` module checks the version, the
//! variant, the time of v1 and v6 (100 ns intervals since 1582-10-15), v2's domain and
//! local ID, and recomputes v3 and v5 from the namespace and name.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;
use snowdrift_testkit::unique_name;

use crate::common::{Served, serve_command};

/// Reads `kind id timestamp run [extra...]` lines (`run` names the generator, within which
/// v6 UUIDs must increase); fails (exit 1, naming the line) at the first
/// UUID Python reads otherwise. Python 3.11's `UUID.time` reads every version as v1, so the
/// v6 time is put together from the fields Python splits out, as RFC 9562 section 5.6 lays
/// them.
const CHECK: &str = r#"
import sys, time, uuid
GREGORIAN = 0x01B21DD213814000
now = time.time_ns() // 100 + GREGORIAN
seen, last6, n = set(), {}, 0
for line in sys.stdin:
    kind, text, stamp, run, *extra = line.split()
    u = uuid.UUID(text)
    where = f"{kind} {text}"
    assert str(u) == text, where
    assert u.variant == uuid.RFC_4122, f"{where}: variant {u.variant}"
    assert u.version == int(kind[-1]), f"{where}: version {u.version}"
    if kind in ("uuid1", "uuid2", "uuid6"):
        if kind == "uuid6":
            t = (u.time_low << 28) | (u.time_mid << 12) | (u.time_hi_version & 0x0FFF)
            assert last6.get(run, -1) < u.int, f"{where}: v6 out of order in run {run}"
            last6[run] = u.int
        else:
            t = u.time
        if kind == "uuid2":
            # The local ID is in time_low, the domain in clock_seq_low.
            domain, local_id = int(extra[0]), int(extra[1])
            assert u.time_low == local_id, f"{where}: time_low {u.time_low}"
            assert u.clock_seq_low == domain, f"{where}: clock_seq_low {u.clock_seq_low}"
            t >>= 32
            assert t == int(stamp) >> 32, f"{where}: window {t} vs {stamp}"
            t <<= 32
        else:
            assert t == int(stamp), f"{where}: python time {t}, snowdrift {stamp}"
        # Made within the last ten minutes (v2: within its 7-minute window before that).
        assert 0 <= now - t < 10 * 60 * 10**7 + (1 << 32), f"{where}: time {t}, now {now}"
        if kind == "uuid1":
            assert u.node & (1 << 40), f"{where}: a random node without the multicast bit"
    elif kind in ("uuid3", "uuid5"):
        ns = getattr(uuid, "NAMESPACE_" + extra[0].upper())
        want = uuid.uuid3(ns, extra[1]) if kind == "uuid3" else uuid.uuid5(ns, extra[1])
        assert u == want, f"{where}: python makes {want}"
    assert u not in seen, f"{where}: twice"
    seen.add(u)
    n += 1
print(n)
"#;

fn python(lines: &str) -> usize {
    let mut child = Command::new("python3")
        .args(["-c", CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 on the machine");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python's uuid module disagrees:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn next(args: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .arg("next")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "next {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `snowdrift decode ID` as JSON.
fn decode(id: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["decode", id])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn python_reads_what_the_server_and_the_cli_issue() {
    let dir = std::env::temp_dir().join(unique_name("uuid-python"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("snowdrift.toml");
    std::fs::write(
        &config,
        format!(
            "[store]\nurl = \"sqlite://{}\"\n[worker]\npath = \"{}\"\n\
             [[generator]]\nname = \"u1\"\nkind = \"uuid1\"\n\
             [[generator]]\nname = \"u2\"\nkind = \"uuid2\"\ndomain = \"org\"\nlocal_id = 77\n\
             [[generator]]\nname = \"u3\"\nkind = \"uuid3\"\nnamespace = \"url\"\n\
             [[generator]]\nname = \"u5\"\nkind = \"uuid5\"\nnamespace = \"dns\"\n\
             [[generator]]\nname = \"u6\"\nkind = \"uuid6\"\nnode = \"0123456789ab\"\n",
            dir.join("ids.db").display(),
            dir.join("workers").display()
        ),
    )
    .unwrap();
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&config);
    let served = Served::start(cmd);
    let get = |path: &str| -> Value {
        let (status, body) = served.get(path, None);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    };
    let ids = |v: &Value| -> Vec<String> {
        v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_str().unwrap().to_string())
            .collect()
    };
    let mut lines = String::new();
    let mut line = |kind: &str, id: &str, stamp: &Value, run: &str, extra: &str| {
        let stamp = stamp.as_u64().unwrap_or(0);
        lines.push_str(&format!("{kind} {id} {stamp} {run} {extra}\n"));
    };
    for (name, kind, count) in [
        ("u1", "uuid1", 500),
        ("u6", "uuid6", 500),
        ("u2", "uuid2", 20),
    ] {
        for id in ids(&get(&format!("/v1/ids/{name}?count={count}"))) {
            // The server's decode route says what the time is; Python must agree.
            let d = get(&format!("/v1/ids/{name}/decode/{id}"));
            let extra = if kind == "uuid2" {
                assert_eq!(d["domain"], "org");
                "2 77"
            } else {
                ""
            };
            line(kind, &id, &d["timestamp"], "server", extra);
        }
    }
    for (name, kind, ns, input) in [
        ("u3", "uuid3", "url", "https://example.com/a"),
        ("u5", "uuid5", "dns", "www.example.com"),
        ("u5", "uuid5", "dns", "snowdrift.example"),
    ] {
        let path = format!(
            "/v1/ids/{name}?input={}",
            input.replace('/', "%2F").replace(':', "%3A")
        );
        let id = &ids(&get(&path))[0];
        line(kind, id, &Value::Null, "server", &format!("{ns} {input}"));
    }
    drop(served);

    // The same through `snowdrift next` and `snowdrift decode`.
    for kind in ["uuid1", "uuid6"] {
        for id in next(&["--kind", kind, "-n", "300"]) {
            line(kind, &id, &decode(&id)["timestamp"], "cli", "");
        }
    }
    for id in next(&["--kind", "uuid6", "--node", "02:00:00:00:00:07", "-n", "10"]) {
        assert!(id.ends_with("020000000007"), "{id}");
        line("uuid6", &id, &decode(&id)["timestamp"], "cli-node", "");
    }
    for id in next(&[
        "--kind",
        "uuid2",
        "--domain",
        "group",
        "--local-id",
        "4000",
        "-n",
        "5",
    ]) {
        let d = decode(&id);
        assert_eq!(
            (d["domain"].as_str(), d["local_id"].as_u64()),
            (Some("group"), Some(4000))
        );
        line("uuid2", &id, &d["timestamp"], "cli", "1 4000");
    }
    for (kind, ns, input) in [
        ("uuid3", "dns", "www.example.com"),
        ("uuid5", "x500", "cn=snowdrift"),
    ] {
        let id = &next(&["--kind", kind, "--namespace", ns, "--input", input])[0];
        assert_eq!(
            decode(id)["version"].as_u64(),
            Some(u64::from(kind.as_bytes()[4] - b'0'))
        );
        line(kind, id, &Value::Null, "cli", &format!("{ns} {input}"));
    }
    let checked = python(&lines);
    assert_eq!(checked, lines.lines().count());
    let _ = std::fs::remove_dir_all(&dir);
}
