//! xid, Nano ID and cuid2 against their reference implementations, installed by
//! `scripts/id-references` (run here first): rs/xid itself (Go) reads the xids the server
//! and `snowdrift next` issue, writes the same text for the same bytes, refuses what
//! snowdrift refuses, and makes this host's machine ID and its process ID as snowdrift
//! does; ai/nanoid (JavaScript) makes the same Nano IDs from the same random bytes, for the
//! default alphabet and custom ones; paralleldrive/cuid2 makes the same cuid2s (and
//! fingerprint) from the same draws, time, counter and fingerprint, and its `isCuid`
//! accepts what the server issues. Properties the references state are checked on what
//! the real binary issues: length, alphabet, first letter, no repeat in a million cuid2s.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use snowdrift_core::clock::ManualClock;
use snowdrift_core::kinds::cuid2::{self, Cuid2Generator};
use snowdrift_core::kinds::nanoid::{DEFAULT_ALPHABET, Nanoid};
use snowdrift_core::kinds::xid::{self, Xid};
use snowdrift_testkit::unique_name;

use crate::common::{Served, serve_command};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn references() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/references")
}

/// Installs the references (once per change of their pins) and gives rs/xid's checker.
fn install() -> PathBuf {
    let out = Command::new(repo().join("scripts/id-references"))
        .output()
        .expect("scripts/id-references runs");
    assert!(
        out.status.success(),
        "scripts/id-references failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = String::from_utf8(out.stdout).unwrap();
    let path = PathBuf::from(path.trim());
    if path.is_absolute() {
        path
    } else {
        repo().join(path)
    }
}

/// Runs `program args` with `input` on stdin; its stdout, lines. Fails on a non-zero exit.
fn run(program: &Path, args: &[&str], input: &str) -> Vec<String> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(references())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn node(args: &[&str], input: &str) -> Vec<String> {
    run(Path::new("node"), args, input)
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

fn serve(config: &str) -> (PathBuf, Served) {
    let dir = std::env::temp_dir().join(unique_name("id-references"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("snowdrift.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env_remove("XID_MACHINE_ID");
    (dir, Served::start(cmd))
}

fn get(served: &Served, path: &str) -> Value {
    let (status, body) = served.get(path, None);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn ids(served: &Served, name: &str, count: u64) -> Vec<String> {
    get(served, &format!("/v1/ids/{name}?count={count}"))["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().to_string())
        .collect()
}

/// splitmix64's bytes: the same on both sides of a comparison.
fn stream(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 56) as u8
        })
        .collect()
}

#[test]
fn xids_agree_with_rs_xid() {
    let checker = install();
    // rs/xid's own machine ID and process ID on this host, and ours by the same rules.
    let host = run(&checker, &["host"], "");
    let [machine, go_pid, xid_pid]: [&str; 3] =
        host[0].split(' ').collect::<Vec<_>>().try_into().unwrap();
    let (ours, _) = xid::read_host_machine_id(None, [0; 3]).unwrap();
    let hex = |b: &[u8]| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(hex(&ours), machine, "rs/xid's machine ID on this host");
    let cpuset = std::fs::read("/proc/self/cpuset").ok();
    assert_eq!(
        xid::process_id(go_pid.parse().unwrap(), cpuset.as_deref()).to_string(),
        xid_pid,
        "rs/xid's process ID of PID {go_pid}"
    );

    let (dir, served) = serve(
        "[[generator]]\nname = \"x\"\nkind = \"xid\"\n\
         [[generator]]\nname = \"xm\"\nkind = \"xid\"\nmachine_id = 123456\n",
    );
    let server_pid = xid::process_id(served.pid(), cpuset.as_deref());
    let issued = ids(&served, "x", 1000);
    let parsed = run(&checker, &["parse"], &(issued.join("\n") + "\n"));
    assert_eq!(parsed.len(), issued.len());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut last_counter = None;
    for (id, line) in issued.iter().zip(&parsed) {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 5, "rs/xid refused {id}: {line}");
        let d = get(&served, &format!("/v1/ids/x/decode/{id}"));
        assert_eq!(f[0], id);
        assert_eq!(
            d["time_ms"].as_u64(),
            Some(f[1].parse::<u64>().unwrap() * 1000)
        );
        assert!(now.abs_diff(f[1].parse().unwrap()) < 600, "{line}");
        assert_eq!((d["machine"].as_str(), f[2]), (Some(machine), machine));
        assert_eq!(d["pid"].as_u64(), Some(f[3].parse().unwrap()));
        assert_eq!(f[3].parse::<u16>().unwrap(), server_pid, "{line}");
        let counter: u32 = f[4].parse().unwrap();
        assert_eq!(d["counter"].as_u64(), Some(u64::from(counter)));
        if let Some(last) = last_counter {
            assert_eq!(counter, (last + 1) & 0xff_ffff, "{line}");
        }
        last_counter = Some(counter);
    }
    let set = ids(&served, "xm", 3);
    for line in run(&checker, &["parse"], &(set.join("\n") + "\n")) {
        assert_eq!(
            line.split(' ').nth(2),
            Some("01e240"),
            "machine_id 123456: {line}"
        );
    }
    let g = get(&served, "/v1/generators");
    let x = g["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "x")
        .unwrap();
    assert_eq!(x["machine"], machine, "{x}");
    assert_eq!(x["pid"].as_u64(), Some(u64::from(server_pid)), "{x}");
    drop(served);
    std::fs::remove_dir_all(&dir).ok();

    // `snowdrift next`, with rs/xid's rule and with --machine-id.
    let cli = next(&["--kind", "xid", "-n", "50"]);
    for line in run(&checker, &["parse"], &(cli.join("\n") + "\n")) {
        assert_eq!(line.split(' ').nth(2), Some(machine), "{line}");
    }
    let cli = next(&["--kind", "xid", "--machine-id", "7", "-n", "2"]);
    for line in run(&checker, &["parse"], &(cli.join("\n") + "\n")) {
        assert_eq!(line.split(' ').nth(2), Some("000007"), "{line}");
    }

    // The same bytes give the same text, and the same text the same bytes.
    let bytes = stream(12 * 2000, 11);
    let hexes: Vec<String> = bytes.chunks(12).map(hex).collect();
    let texts = run(&checker, &["encode"], &(hexes.join("\n") + "\n"));
    for (chunk, text) in bytes.chunks(12).zip(&texts) {
        let id = Xid::from_bytes(chunk.try_into().unwrap());
        assert_eq!(&id.to_string(), text);
        assert_eq!(text.parse::<Xid>(), Ok(id));
    }
    // What rs/xid refuses, snowdrift refuses, and the other way round.
    let mut probes: Vec<String> = vec![
        "9M4E2MR0UI3E8A215N4G".into(),
        "9m4e2mr0ui3e8a215n4".into(),
        "9m4e2mr0ui3e8a215n4g0".into(),
        "c6e52g2mrqcjl44hf179".into(),
        "9m4e2mr0ui3e8a215n4w".into(),
        "9m4e2mr0ui3e8a215n4-".into(),
        "9m4e2mr0ui3e8a215n4g".into(),
        "vvvvvvvvvvvvvvvvvvvg".into(),
        "00000000000000000000".into(),
    ];
    for c in ['0', 'f', 'g', 'h', 'v', 'w', 'z', 'A'] {
        probes.push(format!("9m4e2mr0ui3e8a215n4{c}"));
        probes.push(format!("{c}m4e2mr0ui3e8a215n4g"));
    }
    let answers = run(&checker, &["parse"], &(probes.join("\n") + "\n"));
    for (probe, answer) in probes.iter().zip(&answers) {
        let go_ok = !answer.ends_with(" invalid");
        let ours = probe.parse::<Xid>();
        assert_eq!(
            ours.is_ok(),
            go_ok,
            "{probe}: rs/xid says {answer}, we say {ours:?}"
        );
    }
}

#[test]
fn nanoids_are_the_references_for_the_same_bytes() {
    install();
    let dir = std::env::temp_dir().join(unique_name("nanoid-ref"));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = stream(1 << 21, 5);
    let file = dir.join("bytes");
    std::fs::write(&file, &bytes).unwrap();
    for (alphabet, size, count) in [
        ("default", 21, 500),
        ("default", 8, 200),
        ("0123456789", 8, 300),
        ("0123456789abcdefghijklmnopqrstuvwxyz", 30, 300),
        ("ab", 5, 100),
        // A power of two: customAlphabet still reads each round from its last byte.
        ("0123456789ABCDEF", 12, 200),
        ("абвгдеёжзийклмнопрстуфхцчшщъыьэюя", 10, 100),
    ] {
        let theirs = node(
            &[
                "nanoid_check.mjs",
                file.to_str().unwrap(),
                alphabet,
                &size.to_string(),
                &count.to_string(),
            ],
            "",
        );
        let shape = Nanoid::new(
            if alphabet == "default" {
                DEFAULT_ALPHABET
            } else {
                alphabet
            },
            size,
        )
        .unwrap();
        let mut at = 0;
        let mut random = |buf: &mut [u8]| {
            buf.copy_from_slice(&bytes[at..at + buf.len()]);
            at += buf.len();
            Ok(())
        };
        let ours: Vec<String> = (0..count)
            .map(|_| shape.generate(&mut random).unwrap())
            .collect();
        assert_eq!(ours, theirs, "alphabet {alphabet}, size {size}");
    }
    std::fs::remove_dir_all(&dir).ok();

    // What the server and the CLI issue: the size and alphabet, no repeats, and decode
    // refuses what does not fit.
    let (dir, served) = serve(
        "[[generator]]\nname = \"n\"\nkind = \"nanoid\"\n\
         [[generator]]\nname = \"hex\"\nkind = \"nanoid\"\nalphabet = \"0123456789abcdef\"\n\
         size = 16\nexpected_rate = 1000\n",
    );
    let mut seen = HashSet::new();
    for (name, shape) in [
        ("n", Nanoid::default_shape()),
        ("hex", Nanoid::new("0123456789abcdef", 16).unwrap()),
    ] {
        for id in ids(&served, name, 10_000) {
            shape.check(&id).unwrap();
            assert!(seen.insert(id));
        }
    }
    let d = get(&served, "/v1/ids/hex/decode/0123456789abcdef");
    assert!(d["holds"].as_str().unwrap().starts_with("no fields"), "{d}");
    let (status, body) = served.get("/v1/ids/hex/decode/0123456789abcdeg", None);
    // An ID this generator cannot have names no resource: 404, saying why.
    assert_eq!(status, 404, "{body}");
    assert!(
        body.contains("'g' at byte 15") && body.contains("not in the alphabet"),
        "{body}"
    );
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
    for id in next(&[
        "--kind",
        "nanoid",
        "--alphabet",
        "xyz",
        "--size",
        "40",
        "-n",
        "100",
    ]) {
        Nanoid::new("xyz", 40).unwrap().check(&id).unwrap();
    }
}

#[test]
fn cuid2s_are_the_references_for_the_same_draws() {
    install();
    let draws: Vec<u32> = stream(4 * 4096, 9)
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // createFingerprint with given globals: the same 32 characters.
    let spec = serde_json::json!({
        "draws": draws, "time_ms": 0, "counter": 0, "fingerprint": "", "length": 2,
        "count": 0, "globals": "navigator,document,snowdrift",
    });
    let theirs = node(&["cuid2_check.mjs"], &spec.to_string());
    let mut i = 0;
    let mut draw = || {
        let v = draws[i % draws.len()];
        i += 1;
        Ok(v)
    };
    let ours = cuid2::fingerprint("navigator,document,snowdrift", &mut draw).unwrap();
    assert_eq!(ours, theirs[0]);

    for (length, time_ms, counter, fingerprint) in [
        (24, 1_700_000_000_000u64, 12_345u64, ours.as_str()),
        (2, 1, 0, "x"),
        (10, 1_795_712_584_123, 476_782_366, "abc"),
        (
            32,
            253_402_300_799_000,
            9_007_199_254_740_000,
            ours.as_str(),
        ),
    ] {
        let spec = serde_json::json!({
            "draws": draws, "time_ms": time_ms, "counter": counter,
            "fingerprint": fingerprint, "length": length, "count": 200,
        });
        let theirs = node(&["cuid2_check.mjs"], &spec.to_string());
        let g = Cuid2Generator::new(
            ManualClock::new(time_ms),
            length,
            fingerprint.to_string(),
            counter,
        )
        .unwrap();
        let mut i = 0;
        let mut draw = || {
            let v = draws[i % draws.len()];
            i += 1;
            Ok(v)
        };
        let ours: Vec<String> = (0..200).map(|_| g.next_with(&mut draw).unwrap()).collect();
        assert_eq!(
            ours, theirs,
            "length {length}, time {time_ms}, counter {counter}"
        );
    }

    // What the server issues, by the reference's isCuid and its stated properties.
    let (dir, served) = serve(
        "[[generator]]\nname = \"c\"\nkind = \"cuid2\"\n\
         [[generator]]\nname = \"c10\"\nkind = \"cuid2\"\nlength = 10\n",
    );
    let mut issued = ids(&served, "c", 2_000);
    let short = ids(&served, "c10", 2_000);
    assert!(issued.iter().all(|id| id.len() == 24));
    assert!(short.iter().all(|id| id.len() == 10));
    let d = get(&served, &format!("/v1/ids/c/decode/{}", issued[0]));
    assert!(d["holds"].as_str().unwrap().starts_with("no fields"), "{d}");
    let (status, body) = served.get(&format!("/v1/ids/c10/decode/{}", issued[0]), None);
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("it has 24 characters"), "{body}");
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
    issued.extend(short);
    let spec = serde_json::json!({
        "draws": [0], "time_ms": 0, "counter": 0, "fingerprint": "", "length": 2,
        "count": 0, "check": issued,
    });
    for line in node(&["cuid2_check.mjs"], &spec.to_string()) {
        assert!(line.ends_with(" ok"), "isCuid refuses {line}");
    }

    // A million from `snowdrift next`: 24 characters, a letter first, then a-z and 0-9,
    // none twice.
    let million = next(&["--kind", "cuid2", "-n", "1000000"]);
    assert_eq!(million.len(), 1_000_000);
    let mut seen = HashSet::with_capacity(million.len());
    for id in &million {
        cuid2::check(id, 24).unwrap();
        assert!(seen.insert(id.as_str()), "{id} twice");
    }
}
