//! Generator options through the real binary. Snowflake: a restart
//! with the clock a minute behind the high-water mark goes on at once under the next
//! extension value (and `on_backward = "wait"` refuses it, saying why); `max_lead` serves a
//! burst past the tick's sequence at once from borrowed time; `random_sequence_start`
//! spreads low-traffic IDs over the sequence; `output = "bit-reversed"` spreads IDs and
//! decodes back; a preset under a moved epoch; the key mistakes `--check-config` refuses.
//! ObjectId: the legacy layout's machine hash and process ID. zk-version: a znode's versions.
//! Derived worker IDs from a given IP or interface, split into datacenter and worker, and
//! registered cluster-wide with `verify_with`.

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::Served;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A config with one snowflake generator `sf` whose extra keys are `generator`, worker
/// leases on lock files in `dir`.
fn config(dir: &Path, generator: &str) -> std::path::PathBuf {
    let path = dir.join("snowdrift.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [worker]\nregistry = \"file\"\npath = \"{}/workers\"\nwindow = \"2s\"\n\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\n{generator}\n",
            dir.display(),
            dir.display()
        ),
    )
    .unwrap();
    path
}

/// The config at `path` with worker ID 0 asked for: a restart must take that ID (and face
/// its mark) even when another free ID could issue sooner.
fn pin_worker_zero(path: std::path::PathBuf) -> std::path::PathBuf {
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("window = \"2s\"\n", "window = \"2s\"\nid = 0\n"),
    )
    .unwrap();
    path
}

fn serve(config: &Path, clock_offset_ms: i64) -> Served {
    let mut cmd = crate::common::serve_command();
    cmd.args(["--config", config.to_str().unwrap()]).env(
        "SNOWDRIFT_TEST_CLOCK_OFFSET_MS",
        clock_offset_ms.to_string(),
    );
    Served::start(cmd)
}

fn json(served: &Served, path: &str) -> serde_json::Value {
    let (status, body) = served.get(path, None);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn ids(served: &Served, count: u64) -> Vec<u64> {
    json(served, &format!("/v1/ids/sf?count={count}"))["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().parse().unwrap())
        .collect()
}

fn clock_of(served: &Served) -> serde_json::Value {
    let g = json(served, "/v1/generators");
    g["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "sf")
        .unwrap()["clock"]
        .clone()
}

fn field(served: &Served, id: u64, name: &str) -> u64 {
    let d = json(served, &format!("/v1/ids/sf/decode/{id}"));
    d["fields"][name].as_u64().unwrap_or_else(|| panic!("{d}"))
}

/// `snowdrift serve --config FILE --check-config`: its exit and standard error.
fn check_config(path: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--check-config",
        ])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp_dir(prefix: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name(prefix));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_restart_a_minute_behind_the_mark_goes_on_under_the_next_extension_value() {
    let dir = temp_dir("sf-ext");
    let extension = pin_worker_zero(config(
        &dir,
        "bits = \"ext:2,time:39,worker:10,seq:12\"\nepoch = \"2025-01-01\"\n\
         on_backward = \"extension\"\nbackward_wait = \"1s\"",
    ));
    let first = serve(&extension, 0);
    first.wait_ready();
    let before = ids(&first, 100);
    assert_eq!(field(&first, before[0], "ext"), 0);
    assert!(first.stop().success());

    // A minute behind: the mark is 60 s ahead, beyond the 1 s wait bound.
    let behind = serve(&extension, -60_000);
    behind.wait_ready();
    let after = ids(&behind, 100);
    assert!(
        after[0] > *before.last().unwrap(),
        "{} after {}",
        after[0],
        before.last().unwrap()
    );
    assert_eq!(field(&behind, after[0], "ext"), 1);
    let clock = clock_of(&behind);
    assert_eq!(clock["extension"], 1, "{clock}");
    assert_eq!(clock["extension_max"], 3, "{clock}");
    assert_eq!(clock["on_backward"], "extension", "{clock}");
    let (_, metrics) = behind.get("/metrics", None);
    assert!(
        metrics.contains("snowdrift_snowflake_extension{generator=\"sf\"} 1"),
        "{metrics}"
    );
    assert!(behind.stop().success());

    // The same restart under on_backward = "wait" refuses, and says what to do.
    let wait = pin_worker_zero(config(
        &dir,
        "bits = \"ext:2,time:39,worker:10,seq:12\"\nepoch = \"2025-01-01\"\n\
         on_backward = \"wait\"\nbackward_wait = \"1s\"",
    ));
    let out = crate::common::serve_command()
        .args(["--config", wait.to_str().unwrap()])
        .env("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "-120000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started: {err}");
    assert!(err.contains("ahead of this node's clock"), "{err}");
    assert!(err.contains("on_backward = \"wait\""), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn max_lead_serves_a_burst_from_borrowed_time_at_once() {
    let dir = temp_dir("sf-lead");
    // 16 IDs per millisecond: 10,000 IDs take 625 ms of ticks.
    let lead = config(
        &dir,
        "bits = \"time:41,worker:10,seq:4\"\nmax_lead = \"1s\"",
    );
    let served = serve(&lead, 0);
    served.wait_ready();
    assert_eq!(clock_of(&served)["max_lead_ms"], 1000);
    let burst = ids(&served, 10_000);
    let answered = now_ms();
    let last = json(
        &served,
        &format!("/v1/ids/sf/decode/{}", burst.last().unwrap()),
    );
    let last_ms = last["time_ms"].as_u64().unwrap();
    // Without borrowing, the answer comes after the last ID's tick; with it, long before.
    assert!(
        last_ms > answered + 300,
        "the last ID's time {last_ms} is not well past the answer at {answered}"
    );
    assert!(burst.windows(2).all(|w| w[0] < w[1]));
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn random_sequence_start_spreads_low_traffic_ids() {
    let dir = temp_dir("sf-random");
    let random = config(&dir, "layout = \"twitter\"\nrandom_sequence_start = 100");
    let served = serve(&random, 0);
    served.wait_ready();
    let mut seqs = Vec::new();
    for _ in 0..20 {
        let id = ids(&served, 1)[0];
        seqs.push(id & 0xfff);
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    assert!(seqs.iter().all(|s| *s < 100), "{seqs:?}");
    assert!(
        seqs.iter().any(|s| s % 2 == 1),
        "every ID even, as without a random start: {seqs:?}"
    );
    drop(served);

    std::fs::remove_dir_all(&dir).ok();

    // A preset under a moved epoch: baidu's time field ran out in 2024. Its own worker
    // registry: after twitter's IDs on the same worker ID, the switch is refused (see
    // layout_migrate.rs).
    let dir = temp_dir("sf-baidu");
    let baidu = config(&dir, "layout = \"baidu\"\nepoch = \"2025-01-01\"");
    let served = serve(&baidu, 0);
    served.wait_ready();
    let id = ids(&served, 1)[0];
    let d = json(&served, &format!("/v1/ids/sf/decode/{id}"));
    assert_eq!(d["layout"], "baidu");
    assert!(
        d["time_ms"].as_u64().unwrap().abs_diff(now_ms()) < 60_000,
        "{d}"
    );
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_config_refuses_clock_option_mistakes_naming_the_key() {
    let dir = temp_dir("sf-check");
    for (keys, says) in [
        (
            "layout = \"twitter\"\non_backward = \"extension\"",
            "generator[0].on_backward",
        ),
        ("layout = \"twitter\"\non_backward = \"later\"", "later"),
        ("layout = \"twitter\"\nmax_lead = \"5s\"", "worker.window"),
        (
            "layout = \"sonyflake\"\nmax_lead = \"5ms\"",
            "less than one tick",
        ),
        (
            "layout = \"twitter\"\nrandom_sequence_start = 5000",
            "generator[0].random_sequence_start",
        ),
        ("layout = \"baidu\"\nunit = \"1ms\"", "a preset has its own"),
    ] {
        let path = config(&dir, keys);
        let (ok, err) = check_config(&path);
        assert!(!ok, "{keys}: accepted");
        assert!(err.contains(says), "{keys}: {err}");
    }
    let uuid = dir.join("uuid.toml");
    std::fs::write(
        &uuid,
        "[[generator]]\nname = \"u\"\nkind = \"uuid7\"\nmax_lead = \"1ms\"\n",
    )
    .unwrap();
    let (ok, err) = check_config(&uuid);
    assert!(!ok && err.contains("\"max_lead\" does not apply"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bit_reversed_output_spreads_ids_and_decodes_back() {
    let dir = temp_dir("sf-reversed");
    let reversed = config(&dir, "layout = \"twitter\"\noutput = \"bit-reversed\"");
    let served = serve(&reversed, 0);
    served.wait_ready();
    let issued = ids(&served, 2_000);
    let unique: std::collections::HashSet<_> = issued.iter().collect();
    assert_eq!(unique.len(), issued.len());
    assert!(issued.iter().all(|&id| id < 1 << 63));
    // Consecutive IDs land far apart: about half of the neighbours fall, not none.
    let falls = issued.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(
        (600..1400).contains(&falls),
        "{falls} of 1999 neighbours fall"
    );
    let before = now_ms();
    let d = json(&served, &format!("/v1/ids/sf/decode/{}", issued[0]));
    assert_eq!(d["id"], issued[0].to_string(), "{d}");
    assert_eq!(d["output"], "bit-reversed", "{d}");
    let composed: u64 = d["composed"].as_str().unwrap().parse().unwrap();
    assert_eq!(composed.reverse_bits() >> 1, issued[0], "{d}");
    assert!(
        d["time_ms"].as_u64().unwrap().abs_diff(before) < 60_000,
        "{d}"
    );
    let (status, body) = served.get("/v1/ids/sf?format=friendly", None);
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("bit-reversed"), "{body}");
    let g = json(&served, "/v1/generators");
    assert!(g.to_string().contains("\"output\":\"bit-reversed\""), "{g}");
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}

/// ObjectIds under `layout = "legacy"` carry this host's name hashed as Python's legacy
/// `bson` hashed it (checked with Python's own `hashlib` and `socket.gethostname`) and the
/// server's process ID; decode shows both.
#[test]
fn legacy_objectids_carry_the_machine_hash_and_process_id() {
    let dir = temp_dir("oid-legacy");
    let path = dir.join("oid.toml");
    // The store in the test's directory: the default one is `snowdrift.db` in the working
    // directory, the crate's source tree.
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [[generator]]\nname = \"oid\"\nkind = \"objectid\"\nlayout = \"legacy\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let served = serve(&path, 0);
    served.wait_ready();
    let body = json(&served, "/v1/ids/oid?count=3");
    let ids: Vec<String> = body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let python = Command::new("python3")
        .args([
            "-c",
            "import hashlib, socket; print(hashlib.md5(socket.gethostname().encode()).hexdigest()[:6])",
        ])
        .output()
        .unwrap();
    let machine = String::from_utf8(python.stdout).unwrap().trim().to_string();
    let pid = format!("{:04x}", served.pid() % 0xFFFF);
    for id in &ids {
        assert_eq!(&id[8..14], machine, "{id}");
        assert_eq!(&id[14..18], pid, "{id}");
    }
    let d = json(&served, &format!("/v1/ids/oid/decode/{}", ids[0]));
    assert_eq!(d["machine"], machine.as_str(), "{d}");
    assert_eq!(d["pid"], u64::from(served.pid() % 0xFFFF), "{d}");
    drop(served);

    std::fs::write(
        &path,
        "[[generator]]\nname = \"oid\"\nkind = \"objectid\"\nlayout = \"twitter\"\n",
    )
    .unwrap();
    let (ok, err) = check_config(&path);
    assert!(!ok && err.contains("not an ObjectId layout"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `kind = "zk-version"`: each ID one `setData` on the znode, the version ZooKeeper answers;
/// two servers on one znode never hand out the same ID, and `/v1/generators` names it.
#[test]
fn zk_version_ids_are_the_znodes_versions_across_servers() {
    let dir = temp_dir("zk-version");
    let znode = format!(
        "/snowdrift_test/{}",
        snowdrift_testkit::unique_name("zkv-cli")
    );
    let path = dir.join("zk.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [[generator]]\nname = \"zv\"\nkind = \"zk-version\"\nurl = \"{}\"\nznode = \"{znode}\"\n",
            dir.display(),
            snowdrift_testkit::urls::zookeeper()
        ),
    )
    .unwrap();
    let servers = [serve(&path, 0), serve(&path, 0)];
    let mut all = std::collections::BTreeSet::new();
    for round in 0..5 {
        for s in &servers {
            let v = json(s, "/v1/ids/zv?count=50");
            let ids: Vec<u64> = v["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap().parse().unwrap())
                .collect();
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "round {round}: {ids:?}"
            );
            for id in ids {
                assert!(all.insert(id), "{id} handed out twice");
            }
        }
    }
    assert_eq!(all, (1..=500).collect(), "every version of the znode, once");
    let g = json(&servers[0], "/v1/generators");
    assert!(
        g.to_string().contains(&format!("\"znode\":\"{znode}\"")),
        "{g}"
    );
    let (ok, err) = check_config(&{
        let bad = dir.join("bad.toml");
        std::fs::write(
            &bad,
            "[[generator]]\nname = \"zv\"\nkind = \"zk-version\"\nurl = \"redis://127.0.0.1:6379\"\n",
        )
        .unwrap();
        bad
    });
    assert!(!ok && err.contains("not a ZooKeeper URL"), "{err}");
    drop(servers);
    std::fs::remove_dir_all(&dir).ok();
}

/// `derive = "ip"` takes the low bits of `worker.ip`, or of `worker.interface`'s address
/// (`lo` is 127.0.0.1 on every Linux host); the keys are refused elsewhere.
#[test]
fn derived_worker_ids_come_from_a_given_ip_or_interface() {
    let dir = temp_dir("derive-ip");
    for (keys, worker_id) in [("ip = \"10.1.2.3\"", 0x203), ("interface = \"lo\"", 1)] {
        let path = worker_config(
            &dir,
            &format!("registry = \"derived\"\nderive = \"ip\"\n{keys}"),
        );
        let served = serve(&path, 0);
        served.wait_ready();
        let worker = served.worker_of("snowflake");
        assert_eq!(worker["worker_id"], worker_id, "{keys}: {worker}");
        drop(served);
    }
    let path = dir.join("ip.toml");
    for (keys, says) in [
        (
            "registry = \"file\"\nip = \"10.1.2.3\"",
            "apply to registry = \"derived\"",
        ),
        (
            "registry = \"derived\"\nderive = \"ip\"\nip = \"10.1.2.3\"\ninterface = \"lo\"",
            "not both",
        ),
        (
            "registry = \"derived\"\nderive = \"ip\"\nip = \"10.1.2\"",
            "worker.ip",
        ),
    ] {
        std::fs::write(&path, format!("[worker]\n{keys}\n")).unwrap();
        let (ok, err) = check_config(&path);
        assert!(!ok && err.contains(says), "{keys}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A config whose `[worker]` has `keys`, leasing on lock files in `dir/workers`.
fn worker_config(dir: &Path, keys: &str) -> std::path::PathBuf {
    let path = dir.join("worker.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{dir}/ids.db\"\n\n\
             [worker]\npath = \"{dir}/workers\"\n{keys}\n",
            dir = dir.display()
        ),
    )
    .unwrap();
    path
}

/// A derived worker ID in a datacenter/worker layout (the default, Twitter's): octets
/// `10.1.3.7` give datacenter 3, worker 7; `datacenter` pins the high field; the IDs decode
/// with those fields. An octet too wide for its field refuses to start; the split's
/// mistakes are refused by `--check-config` naming the key.
#[test]
fn derived_worker_ids_split_into_datacenter_and_worker() {
    let dir = temp_dir("derive-split");
    let derived = "registry = \"derived\"\nderive = \"ip\"";
    for (keys, datacenter, worker) in [
        ("ip = \"10.1.3.7\"\nbits_from = \"octets\"", 3, 7),
        (
            "ip = \"10.1.3.7\"\nbits_from = \"octets\"\ndatacenter = 30",
            30,
            7,
        ),
        // Low bits of 10.1.2.3 (0x0203) below the pinned datacenter: 3.
        ("ip = \"10.1.2.3\"\ndatacenter = 2", 2, 3),
    ] {
        let served = serve(&worker_config(&dir, &format!("{derived}\n{keys}")), 0);
        served.wait_ready();
        let w = served.worker_of("snowflake");
        assert_eq!(w["worker_id"], datacenter << 5 | worker, "{keys}: {w}");
        assert_eq!(w["fields"]["datacenter"], datacenter, "{keys}: {w}");
        assert_eq!(w["fields"]["worker"], worker, "{keys}: {w}");
        let id = json(&served, "/v1/ids/snowflake?count=1")["ids"][0]
            .as_str()
            .unwrap()
            .to_string();
        let d = json(&served, &format!("/v1/ids/snowflake/decode/{id}"));
        assert_eq!(d["fields"]["datacenter"], datacenter, "{d}");
        assert_eq!(d["fields"]["worker"], worker, "{d}");
        drop(served);
    }
    // 40 does not fit the 5-bit worker field: refused at start, not cut to 8.
    let out = crate::common::serve_command()
        .args(["--config"])
        .arg(worker_config(
            &dir,
            &format!("{derived}\nip = \"10.1.3.40\"\nbits_from = \"octets\""),
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started: {err}");
    assert!(err.contains("fourth octet of 10.1.3.40 (40)"), "{err}");
    for (keys, says) in [
        (
            format!("{derived}\nip = \"10.1.3.7\"\ndatacenter = 32"),
            "datacenter 32 does not fit the layout's datacenter field",
        ),
        (
            "registry = \"derived\"\nderive = \"hostname\"\nbits_from = \"octets\"".into(),
            "needs derive = \"ip\"",
        ),
        (
            "registry = \"file\"\ndatacenter = 1".into(),
            "apply to registry = \"derived\"",
        ),
        (
            format!("{derived}\nbits_from = \"middle\""),
            "bits_from",
        ),
        (
            format!(
                "{derived}\ndatacenter = 1\n\n[[generator]]\nname = \"t\"\nkind = \"snowflake\"\n\
                 layout = \"tsid\""
            ),
            "two node fields",
        ),
        (
            "registry = \"etcd\"\nurl = \"etcd://127.0.0.1:2379\"\nverify_with = \"etcd://127.0.0.1:2379\"".into(),
            "verify_with applies to registry = \"static\" or \"derived\"",
        ),
        (
            "registry = \"static\"\nurl = \"etcd://a:2379\"\nverify_with = \"etcd://b:2379\"".into(),
            "not both",
        ),
        (
            "registry = \"static\"\nverify_with = \"consul://a:8500\"".into(),
            "worker.verify_with \"consul://a:8500\" is not a registry URL",
        ),
    ] {
        let (ok, err) = check_config(&worker_config(&dir, &keys));
        assert!(!ok && err.contains(says), "{keys}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Two machines (here: two lock directories) given the same static ID, or deriving the
/// same one, both start when each only locks it locally; with `verify_with` on etcd the
/// second refuses to start, naming both nodes and where its ID came from, and the first
/// shows `verified: true` while listening beyond loopback.
#[test]
fn verify_with_refuses_a_second_node_with_the_same_id_cluster_wide() {
    let etcd = snowdrift_testkit::urls::etcd();
    for keys in [
        "registry = \"static\"\nid = 5".to_string(),
        "registry = \"derived\"\nderive = \"ip\"\nip = \"10.1.3.7\"\nbits_from = \"octets\""
            .to_string(),
    ] {
        let ns = snowdrift_testkit::unique_name("vw").replace('-', "_");
        let machines: Vec<_> = (0..2).map(|_| temp_dir("verify-with")).collect();
        let write = |dir: &Path, verify: bool| {
            let path = dir.join("v.toml");
            let verify = if verify {
                format!("verify_with = \"{etcd}\"\n")
            } else {
                String::new()
            };
            std::fs::write(
                &path,
                format!(
                    "[server]\nlisten = \"0.0.0.0:0\"\ninsecure_bind = true\n\n\
                     [store]\nurl = \"sqlite://{dir}/ids.db\"\n\n\
                     [worker]\npath = \"{dir}/workers\"\nnamespace = \"{ns}\"\n{keys}\n{verify}",
                    dir = dir.display()
                ),
            )
            .unwrap();
            path
        };
        // Locked only on each machine: both start, under the same worker ID, unverified.
        let a = serve(&write(&machines[0], false), 0);
        let b = serve(&write(&machines[1], false), 0);
        a.wait_ready();
        b.wait_ready();
        let (wa, wb) = (a.worker_of("snowflake"), b.worker_of("snowflake"));
        assert_eq!(wa["worker_id"], wb["worker_id"], "{keys}");
        assert_eq!(wa["verified"], false, "{keys}: {wa}");
        drop((a, b));
        // Registered on etcd: the second is refused.
        let a = serve(&write(&machines[0], true), 0);
        a.wait_ready();
        let wa = a.worker_of("snowflake");
        assert_eq!(wa["verified"], true, "{keys}: {wa}");
        assert_eq!(wa["registry"], "etcd", "{keys}: {wa}");
        let out = crate::common::serve_command()
            .arg("--config")
            .arg(write(&machines[1], true))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{keys}: second node started: {err}");
        let holder = wa["holder"].as_str().unwrap();
        assert!(
            err.contains(holder),
            "{keys}: first node {holder:?} not named: {err}"
        );
        assert!(err.contains("this node, \""), "{keys}: {err}");
        assert_eq!(err.matches("is held by").count(), 1, "said once: {err}");
        let source = if keys.contains("static") {
            "static ID 5"
        } else {
            "derived from IP 10.1.3.7"
        };
        assert!(err.contains(source), "{keys}: {err}");
        drop(a);
        for d in machines {
            std::fs::remove_dir_all(d).ok();
        }
    }
}
