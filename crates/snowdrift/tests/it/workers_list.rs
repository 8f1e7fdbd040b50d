//! `snowdrift workers list` against every registry kind (file, etcd, ZooKeeper, PostgreSQL,
//! MariaDB, SQLite, Redis): three live `snowdrift serve` processes are listed with their
//! worker IDs, holders, claim times, leases and marks, and the free IDs; one is killed -9,
//! and its ID is shown as expiring (the file registry: free at once, since the operating
//! system drops a dead process's lock), then free.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowdrift_testkit::{unique_name, urls};

use crate::common::Served;

mod planted;

fn list(registry: &str, ns: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "workers",
            "list",
            "--registry",
            registry,
            "--generator",
            "sf",
        ])
        .args(["--namespace", ns, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{registry}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn held(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["held"].as_array().unwrap().clone()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Three servers on `registry` (`worker` keys), one killed -9: listed live, then the killed
/// one's ID expiring (unless `at_once`: free at once), then free.
fn three_servers_and_a_kill(name: &str, registry: &str, worker: &str, at_once: bool) {
    let dir = std::env::temp_dir().join(unique_name(&format!("opc-wl-{name}")));
    std::fs::create_dir_all(&dir).unwrap();
    let ns = unique_name("opc_wl");
    let config = dir.join("snowdrift.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [worker]\n{worker}\nnamespace = \"{ns}\"\n\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"js53\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let started = now_ms();
    let servers: Vec<Served> = (0..3)
        .map(|_| {
            let mut cmd = crate::common::serve_command();
            cmd.args(["--config", config.to_str().unwrap()]);
            let s = Served::start(cmd);
            s.wait_ready();
            s
        })
        .collect();
    let workers: Vec<(u64, String)> = servers
        .iter()
        .map(|s| {
            let w = s.worker_of("sf");
            (
                w["worker_id"].as_u64().unwrap(),
                w["holder"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let v = list(registry, &ns);
    let entries = held(&v);
    assert_eq!(entries.len(), 3, "{name}: {v}");
    for (e, (id, holder)) in entries.iter().zip(&workers) {
        assert_eq!(e["worker_id"], *id, "{name}: {v}");
        assert_eq!(e["holder"], holder.as_str(), "{name}: {v}");
        assert_eq!(e["state"], "live", "{name}: {v}");
        let since = e["since_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {v}"));
        // Coordinators' clocks and this one's agree to a second or so.
        assert!(
            since + 2000 >= started && since <= now_ms() + 2000,
            "{name}: {v}"
        );
        assert!(e["mark_ms"].as_u64().unwrap() > started, "{name}: {v}");
        assert_eq!(e["layout"], "time:38,worker:5,seq:10/10/1735689600000");
        if !at_once {
            assert!(e["lease_left_ms"].as_u64().unwrap() > 0, "{name}: {v}");
        }
    }
    assert_eq!(v["space"], 32);
    assert_eq!(v["free_count"], 29, "{name}: {v}");

    // kill -9 the middle one.
    let (victim, _) = workers[1].clone();
    let status = Command::new("kill")
        .args(["-9", &servers[1].pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut saw_expiring = false;
    loop {
        let v = list(registry, &ns);
        let entry = held(&v).into_iter().find(|e| e["worker_id"] == victim);
        match entry {
            Some(e) => {
                if e["state"] == "expiring" {
                    saw_expiring = true;
                    assert!(e["lease_left_ms"].as_u64().is_some(), "{name}: {v}");
                }
            }
            None => {
                let free = v["free"].as_array().unwrap();
                assert!(
                    free.iter()
                        .any(|r| r[0].as_u64().unwrap() <= victim
                            && victim <= r[1].as_u64().unwrap()),
                    "{name}: {v}"
                );
                assert_eq!(v["free_count"], 30, "{name}: {v}");
                // The two live ones stay live.
                assert!(held(&v).iter().all(|e| e["state"] == "live"), "{name}: {v}");
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{name}: worker {victim} never freed: {v}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        saw_expiring, !at_once,
        "{name}: expiring shown: {saw_expiring}"
    );
    drop(servers);
    std::fs::remove_dir_all(&dir).ok();
}

fn sqlite(dir: &Path) -> String {
    format!("sqlite://{}/workers.db", dir.display())
}

#[test]
fn workers_list_shows_holders_leases_and_free_ids_on_every_registry() {
    let shared = std::env::temp_dir().join(unique_name("opc-wl"));
    std::fs::create_dir_all(&shared).unwrap();
    let file = format!("file://{}/workers", shared.display());
    let sqlite = sqlite(&shared);
    // Short leases so a killed server's ID frees quickly (ZooKeeper's minimum session
    // timeout is 4 s by default).
    let ttl = "ttl = \"6s\"";
    let cases: Vec<(&str, String, String, bool)> = vec![
        (
            "file",
            file.clone(),
            format!(
                "registry = \"file\"\npath = \"{}/workers\"",
                shared.display()
            ),
            true,
        ),
        (
            "etcd",
            urls::etcd(),
            format!("registry = \"etcd\"\nurl = \"{}\"\n{ttl}", urls::etcd()),
            false,
        ),
        (
            "zookeeper",
            urls::zookeeper(),
            format!(
                "registry = \"zookeeper\"\nurl = \"{}\"\n{ttl}",
                urls::zookeeper()
            ),
            false,
        ),
        (
            "postgres",
            urls::postgres(),
            format!("registry = \"sql\"\nurl = \"{}\"\n{ttl}", urls::postgres()),
            false,
        ),
        (
            "mariadb",
            urls::mysql(),
            format!("registry = \"sql\"\nurl = \"{}\"\n{ttl}", urls::mysql()),
            false,
        ),
        (
            "sqlite",
            sqlite.clone(),
            format!("registry = \"sql\"\nurl = \"{sqlite}\"\n{ttl}"),
            false,
        ),
        (
            "redis",
            urls::redis(),
            format!("registry = \"redis\"\nurl = \"{}\"\n{ttl}", urls::redis()),
            false,
        ),
    ];
    // In parallel: each waits out a lease.
    let threads: Vec<_> = cases
        .into_iter()
        .map(|(name, registry, worker, at_once)| {
            std::thread::spawn(move || three_servers_and_a_kill(name, &registry, &worker, at_once))
        })
        .collect();
    let mut failed = Vec::new();
    for t in threads {
        if let Err(e) = t.join() {
            failed.push(
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default(),
            );
        }
    }
    std::fs::remove_dir_all(&shared).ok();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

#[test]
fn workers_list_says_what_is_wrong() {
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["workers", "list", "--registry", "ftp://host"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("use file://DIR, etcd://"),
        "{err}"
    );
    // Text form, on an empty registry: nothing held, every ID of the layout free.
    let dir = std::env::temp_dir().join(unique_name("opc-wl-empty"));
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["workers", "list", "--registry"])
        .arg(format!("file://{}", dir.display()))
        .args(["--layout", "twitter"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("held      none") && text.contains("free      1024 of 1024: 0-1023"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
