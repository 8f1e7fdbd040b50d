//! `snowdrift layout migrate` and the server's check of a layout switch at start.
//!
//! The CLI: a move to a layout whose IDs are above (js53 to twitter) is safe; the reverse,
//! a later epoch, and Baidu's expired default layout to a wider one are not, each saying
//! why; a suggested epoch is safe when checked again.
//!
//! The server, on the file registry and etcd: Baidu's default layout run until the day
//! before its time field ran out (the test clock knob), then restarted under a wider layout,
//! is refused with the message and the `layout migrate` command, which says unsafe too; the
//! same move made while Baidu's layout was young starts, and its IDs are above every
//! earlier one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use snowdrift_testkit::{unique_name, urls};

use crate::common::Served;

fn snowdrift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .output()
        .unwrap()
}

fn migrate_json(args: &[&str]) -> (bool, serde_json::Value) {
    let mut all = vec!["layout", "migrate", "--json"];
    all.extend_from_slice(args);
    let out = snowdrift(&all);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), v)
}

const WIDER: [&str; 6] = [
    "--to",
    "time:31,worker:19,seq:13",
    "--to-unit",
    "1s",
    "--to-epoch",
    "2016-05-20",
];

#[test]
fn the_cli_says_which_moves_are_safe_and_what_to_change() {
    let (ok, v) = migrate_json(&["--from", "js53", "--to", "twitter"]);
    assert!(ok, "{v}");
    assert_eq!(v["verdict"], "safe", "{v}");
    assert_eq!(v["config"], "layout = \"twitter\"");
    assert_eq!(v["new_lifetime_end"], "2080-07-10T17:30:30.209Z");

    let (ok, v) = migrate_json(&["--from", "twitter", "--to", "js53"]);
    assert!(!ok);
    assert_eq!(v["verdict"], "unsafe", "{v}");

    // The same fields from a later epoch repeat time the old layout used: never safe.
    let (ok, v) = migrate_json(&[
        "--from",
        "twitter",
        "--to",
        "twitter",
        "--to-epoch",
        "2020-01-01",
    ]);
    assert!(!ok);
    assert_eq!(
        (&v["verdict"], &v["safe_from"]),
        (&"unsafe".into(), &serde_json::Value::Null)
    );

    // Baidu's default layout ran out on 2024-11-20 with its time field full: its last IDs
    // are within 2^35 of 2^63, above anything a 63-bit layout can issue.
    let mut args = vec!["--from", "baidu"];
    args.extend_from_slice(&WIDER);
    let (ok, v) = migrate_json(&args);
    assert!(!ok);
    assert_eq!(v["from"]["expired"], true);
    assert_eq!(v["from"]["lifetime_end"], "2024-11-20T21:24:16.000Z");
    assert_eq!(v["old_last_id"], "9223372036854775807");
    assert_eq!(v["verdict"], "unsafe");
    assert_eq!(v["safe_from"], serde_json::Value::Null);
    assert_eq!(v["safe_epoch"], serde_json::Value::Null);
    assert_eq!(v["new_lifetime_end"], "2084-06-07T03:14:08.000Z");
    let text = snowdrift(&[&["layout", "migrate", "--from", "baidu"][..], &WIDER].concat());
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("UNSAFE") && shown.contains("no epoch for these fields"),
        "{shown}"
    );
    // Had it moved a year after its epoch, a wider layout from an earlier epoch was above
    // everything it issued, as long as no node kept the old layout past 2017-06-06.
    let (ok, v) = migrate_json(&[
        "--from",
        "baidu",
        "--to",
        "time:31,worker:19,seq:13",
        "--to-unit",
        "1s",
        "--to-epoch",
        "2009-01-01",
        "--at",
        "2017-05-17",
    ]);
    assert!(ok, "{v}");
    assert_eq!(v["verdict"], "safe_if_old_stops_by");
    assert_eq!(v["old_must_stop_by"], "2017-06-06T06:00:00.000Z");

    // Issue 40's attack: node and sequence swapped, the epoch 10 ms earlier. At each
    // instant the new IDs are above the old, but an old node 10 ms after the switch issues
    // what a new node issued at it (four servers on one file registry issued 500 duplicates
    // in 5 s). Unsafe for a rolling restart, and the output says until when old stays below.
    let (ok, v) = migrate_json(&[
        "--from",
        "sonyflake",
        "--to",
        "time:39,worker:8,seq:16",
        "--to-unit",
        "10ms",
        "--to-epoch",
        "2014-08-31T23:59:59.990Z",
        "--at",
        "2026-11-28T00:00:00Z",
    ]);
    assert!(!ok, "{v}");
    assert_eq!(v["verdict"], "safe_if_old_stops_by", "{v}");
    assert_eq!(
        v["old_reaches_new_first"], "2026-11-28T00:00:00.010Z",
        "{v}"
    );
    assert_eq!(v["safe_for_rollout"], false, "{v}");
    assert_eq!(v["safe_from"], serde_json::Value::Null, "{v}");
    // Twitter to Instagram: old nodes stay below the new IDs until 2041, well past a week's
    // rollout, so the move passes, with the deadline; a rollout past 2041 does not.
    let (ok, v) = migrate_json(&[
        "--from",
        "twitter",
        "--to",
        "instagram",
        "--at",
        "2026-11-28",
    ]);
    assert!(ok, "{v}");
    assert_eq!(v["verdict"], "safe_if_old_stops_by", "{v}");
    assert!(
        v["old_must_stop_by"].as_str().unwrap().starts_with("2041-"),
        "{v}"
    );
    let (ok, v) = migrate_json(&[
        "--from",
        "twitter",
        "--to",
        "instagram",
        "--at",
        "2026-11-28",
        "--rollout",
        "150000h",
    ]);
    assert!(!ok, "{v}");
    assert_eq!(v["safe_for_rollout"], false, "{v}");

    // A new layout from too late an epoch gets an epoch that works, which checks out: its
    // IDs must start above 2^53, js53's last, 2^30 ms of its ticks.
    let new = ["--to", "time:40,worker:10,seq:13", "--to-unit", "1ms"];
    let at = ["--at", "2026-11-26T00:00:10Z"];
    let (ok, v) = migrate_json(
        &[
            &["--from", "js53", "--to-epoch", "2026-11-26"][..],
            &new,
            &at,
        ]
        .concat(),
    );
    assert!(!ok);
    assert_eq!(v["safe_epoch"], "2026-11-13T00:00:00.000Z", "{v}");
    assert_eq!(
        v["safe_epoch_config"],
        "bits = \"time:40,worker:10,seq:13\"\nunit = \"1ms\"\nepoch = \"2026-11-13T00:00:00.000Z\""
    );
    let (ok, v) = migrate_json(
        &[
            &["--from", "js53", "--to-epoch", "2026-11-13"][..],
            &new,
            &at,
        ]
        .concat(),
    );
    assert!(ok, "{v}");
    assert_eq!(v["verdict"], "safe");

    let bad = snowdrift(&["layout", "migrate", "--from", "tweeter", "--to", "twitter"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--from \"tweeter\""),
        "{err}"
    );
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A config with one snowflake generator `sf` (`generator` keys) and `worker` keys.
fn config(dir: &Path, name: &str, worker: &str, generator: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [worker]\n{worker}\nwindow = \"3s\"\n\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\n{generator}\n",
            dir.display()
        ),
    )
    .unwrap();
    path
}

fn serve(config: &Path, clock_at_ms: Option<i64>) -> Command {
    let mut cmd = crate::common::serve_command();
    cmd.args(["--config", config.to_str().unwrap()]);
    if let Some(at) = clock_at_ms {
        cmd.env(
            "SNOWDRIFT_TEST_CLOCK_OFFSET_MS",
            (at - now_ms()).to_string(),
        );
    }
    cmd
}

/// Whether `cmd` exits unsuccessfully within a minute (a server that started instead is
/// killed), and its standard error.
fn exits(mut cmd: Command) -> (bool, String) {
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let err = reader.join().unwrap();
    (status.is_some_and(|s| !s.success()), err)
}

fn ids(served: &Served, count: u64) -> Vec<u64> {
    let (status, body) = served.get(&format!("/v1/ids/sf?count={count}"), None);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().parse().unwrap())
        .collect()
}

const BAIDU_ENDING: i64 = 1_731_974_400_000; // 2024-11-19, a day before its end
const BAIDU_YOUNG: i64 = 1_464_739_200_000; // 2016-06-01
const WIDER_KEYS: &str =
    "bits = \"time:31,worker:19,seq:13\"\nunit = \"1s\"\nepoch = \"2016-05-20\"";

fn switch_from_baidu(worker: &dyn Fn(&str) -> String, registry: &str, dir: &Path) {
    // Run until the day before its end, then restart wider: refused.
    let ns = unique_name("opc_lm");
    let baidu = config(dir, "baidu.toml", &worker(&ns), "layout = \"baidu\"");
    let wider = config(dir, "wider.toml", &worker(&ns), WIDER_KEYS);
    let old = Served::start(serve(&baidu, Some(BAIDU_ENDING)));
    old.wait_ready();
    assert_eq!(ids(&old, 100).len(), 100);
    assert!(old.stop().success());
    let (refused, err) = exits(serve(&wider, None));
    assert!(refused, "{registry}: started: {err}");
    for says in [
        "worker ID 0's high-water mark (2024-11-19T00:0",
        "written under layout time:28,worker:22,seq:13/1000/1463702400000",
        "configured with layout time:31,worker:19,seq:13/1000/1463702400000",
        "could repeat or go below IDs already issued",
        "configure the old layout again",
    ] {
        assert!(err.contains(says), "{registry}: {says:?} not in {err}");
    }
    // The command it names says unsafe too.
    let command = err
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {err}"));
    assert!(command.starts_with("snowdrift layout migrate --from time:28,worker:22,seq:13"));
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let check = snowdrift(&args);
    assert!(!check.status.success(), "{registry}: {command} said safe");
    assert!(String::from_utf8_lossy(&check.stdout).contains("UNSAFE"));

    // The same move while Baidu's layout was young: it starts, above every earlier ID.
    let ns = unique_name("opc_lm");
    let baidu = config(dir, "baidu.toml", &worker(&ns), "layout = \"baidu\"");
    let wider = config(dir, "wider.toml", &worker(&ns), WIDER_KEYS);
    let old = Served::start(serve(&baidu, Some(BAIDU_YOUNG)));
    old.wait_ready();
    let before = ids(&old, 1000);
    assert!(old.stop().success());
    let new = Served::start(serve(&wider, None));
    new.wait_ready();
    let after = ids(&new, 1000);
    let last = *before.iter().max().unwrap();
    assert!(
        after.iter().all(|id| *id > last),
        "{registry}: {after:?} not above {last}"
    );
    // The registry now records the new layout beside the mark.
    let listed = snowdrift(&[
        "workers",
        "list",
        "--registry",
        registry,
        "--namespace",
        &format!("{ns}_sf"),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        v["held"][0]["layout"], "time:31,worker:19,seq:13/1000/1463702400000",
        "{registry}: {v}"
    );
    assert_eq!(v["space"], 1 << 19);
    assert!(new.stop().success());
}

#[test]
fn a_server_refuses_an_unsafe_layout_switch_and_starts_a_safe_one_on_the_file_registry() {
    let dir = std::env::temp_dir().join(unique_name("opc-lm-file"));
    std::fs::create_dir_all(&dir).unwrap();
    let workers = dir.join("workers");
    let worker = |ns: &str| {
        format!(
            "registry = \"file\"\npath = \"{}\"\nnamespace = \"{ns}\"",
            workers.display()
        )
    };
    switch_from_baidu(&worker, &format!("file://{}", workers.display()), &dir);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_server_refuses_an_unsafe_layout_switch_and_starts_a_safe_one_on_etcd() {
    let dir = std::env::temp_dir().join(unique_name("opc-lm-etcd"));
    std::fs::create_dir_all(&dir).unwrap();
    let url = urls::etcd();
    let worker = |ns: &str| format!("registry = \"etcd\"\nurl = \"{url}\"\nnamespace = \"{ns}\"");
    switch_from_baidu(&worker, &url, &dir);
    std::fs::remove_dir_all(&dir).ok();
}

/// A file-registry config whose node claims any free worker ID (`namespace` shared).
fn any_worker(workers: &Path, ns: &str) -> String {
    format!(
        "registry = \"file\"\npath = \"{}\"\nnamespace = \"{ns}\"",
        workers.display()
    )
}

#[test]
fn a_server_refuses_to_start_beside_a_live_peer_whose_layout_its_ids_could_meet() {
    // Issue 40's attack, as a rolling restart would run it: a node under Sonyflake's layout
    // still issuing, and a second node started under the same widths with worker and
    // sequence swapped and an epoch 10 ms earlier, on a worker ID of its own (the peer's
    // mark says nothing about it). Refused, naming the peer and the migrate command.
    let dir = std::env::temp_dir().join(unique_name("opc-lm-peer"));
    std::fs::create_dir_all(&dir).unwrap();
    let workers = dir.join("workers");
    let ns = unique_name("opc_lmp");
    let old = config(
        &dir,
        "old.toml",
        &any_worker(&workers, &ns),
        "layout = \"sonyflake\"",
    );
    let swapped = config(
        &dir,
        "new.toml",
        &any_worker(&workers, &ns),
        "bits = \"time:39,worker:8,seq:16\"\nunit = \"10ms\"\nepoch = \"2014-08-31T23:59:59.990Z\"",
    );
    let peer = Served::start(serve(&old, None));
    peer.wait_ready();
    assert_eq!(ids(&peer, 100).len(), 100);
    let (refused, err) = exits(serve(&swapped, None));
    assert!(refused, "started beside a live Sonyflake node: {err}");
    for says in [
        "which issues under layout time:39,seq:8,machine:16/10/1409529600000",
        "configured with layout time:39,worker:8,seq:16/10/1409529599990",
        "could issue the same IDs",
        "snowdrift layout migrate --from time:39,seq:8,machine:16",
    ] {
        assert!(err.contains(says), "{says:?} not in {err}");
    }
    // Once every node of the old layout has stopped, the new one starts (its IDs are above
    // everything the old one issued up to its mark, as the mark check requires).
    let before = ids(&peer, 1000);
    assert!(peer.stop().success());
    let new = Served::start(serve(&swapped, None));
    new.wait_ready();
    let after = ids(&new, 1000);
    let last = *before.iter().max().unwrap();
    assert!(
        after.iter().all(|id| *id > last),
        "{after:?} not above {last}"
    );
    assert!(new.stop().success());

    // A switch whose new IDs stay above the old ones for longer than a rollout may run
    // beside the old layout: js53 (IDs below 2^53) and then Twitter's layout.
    let ns = unique_name("opc_lmp");
    let js53 = config(
        &dir,
        "js53.toml",
        &any_worker(&workers, &ns),
        "layout = \"js53\"",
    );
    let twitter = config(
        &dir,
        "tw.toml",
        &any_worker(&workers, &ns),
        "layout = \"twitter\"",
    );
    let old = Served::start(serve(&js53, None));
    old.wait_ready();
    let new = Served::start(serve(&twitter, None));
    new.wait_ready();
    let (old_ids, new_ids) = (ids(&old, 1000), ids(&new, 1000));
    assert!(new_ids.iter().min() > old_ids.iter().max());
    // The other way round (a node restarted under the old layout while a Twitter node
    // runs) is allowed too: its IDs stay below the peer's.
    assert!(old.stop().success());
    let again = Served::start(serve(&js53, None));
    again.wait_ready();
    assert!(ids(&again, 100).iter().max() < new_ids.iter().min());
    assert!(again.stop().success());
    assert!(new.stop().success());
    std::fs::remove_dir_all(&dir).ok();
}
