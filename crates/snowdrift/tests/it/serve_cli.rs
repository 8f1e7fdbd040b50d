//! `snowdrift serve` as a user runs it: the real binary on port 0, stopped with SIGTERM and
//! started again on the same files, never issuing an ID twice.

use std::collections::HashSet;
use std::path::Path;

use crate::common::Served;

/// `snowdrift serve` with no config in `dir`, once it is ready: the machine-wide worker
/// registry may hand it an ID whose mark another server left ahead of the clock.
fn serve(dir: &Path) -> Served {
    let mut cmd = crate::common::serve_command();
    cmd.args(["--listen", "127.0.0.1:0"])
        .env("SNOWDRIFT_SERVER__RESP_LISTEN", "127.0.0.1:0")
        .current_dir(dir);
    let served = Served::start(cmd);
    served.wait_ready();
    served
}

/// Runs `cmd`, which must succeed: its standard output.
fn succeeds(cmd: &mut std::process::Command) -> Vec<u8> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `snowdrift tags --server URL create TAG EXTRA...`, which must succeed.
fn create_tag(served: &Served, tag: &str, extra: &[&str]) {
    succeeds(
        std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"))
            .args(["tags", "--server", &served.url(), "create", tag])
            .args(extra),
    );
}

/// The IDs of one `/v1/ids` answer.
fn ids(served: &Served, path: &str) -> Vec<u64> {
    let (status, body) = served.get(path, None);
    assert_eq!(status, 200, "{path}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn a_sigterm_as_soon_as_the_server_listens_is_a_graceful_stop() {
    // The signals are listened for before the "listening" line: a SIGTERM sent the moment
    // it appears (a supervisor stopping a server it just started, or a test that reads
    // the line and stops it under load) ends the process through the graceful stop that
    // hands its worker ID back, never through the signal's default action.
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-early-term"));
    std::fs::create_dir_all(&dir).unwrap();
    for round in 0..20 {
        let mut cmd = crate::common::serve_command();
        cmd.args(["--listen", "127.0.0.1:0"]).current_dir(&dir);
        let served = Served::start(cmd);
        let status = served.stop();
        assert!(status.success(), "round {round}: {status}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_id_is_issued_twice_across_sigterm_and_restart() {
    // The defaults: ./snowdrift.db and a lock file for worker 0 in ./snowdrift-workers.
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-restart"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = HashSet::new();
    let mut last_snowflake = 0;
    for round in 0..3 {
        let served = serve(&dir);
        if round == 0 {
            create_tag(&served, "order", &["--step", "100"]);
        } else {
            // The tag is served at once; the snowflake generator after its mark.
            ids(&served, "/v1/ids/order?count=1")
                .iter()
                .for_each(|&id| {
                    assert!(
                        seen.insert(("order", id)),
                        "round {round}: order {id} twice"
                    );
                });
            served.wait_ready();
        }
        for _ in 0..5 {
            let snowflakes = ids(&served, "/v1/ids/snowflake?count=1000");
            assert!(
                snowflakes[0] > last_snowflake,
                "round {round}: snowflakes go on increasing"
            );
            last_snowflake = *snowflakes.last().unwrap();
            for id in snowflakes {
                assert!(
                    seen.insert(("snowflake", id)),
                    "round {round}: snowflake {id} twice"
                );
            }
            for id in ids(&served, "/v1/ids/order?count=250") {
                assert!(
                    seen.insert(("order", id)),
                    "round {round}: order {id} twice"
                );
            }
        }
        let status = served.stop();
        assert!(
            status.success(),
            "round {round}: SIGTERM is a clean exit: {status:?}"
        );
    }
    assert_eq!(seen.len(), 3 * 5 * (1000 + 250) + 2);
    let _ = std::fs::remove_dir_all(&dir);
}

const KEY: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";

/// `[[generator]]`s with obfuscation keys: `sf` from the file, `orders` from the
/// environment.
fn obfuscating_config(dir: &Path) -> std::path::PathBuf {
    let file = dir.join("snowdrift.toml");
    std::fs::write(
        &file,
        format!(
            "[store]\nurl = \"sqlite://{}\"\n[worker]\npath = \"{}\"\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nobfuscate_key = \"{KEY}\"\n\
             [[generator]]\nname = \"orders\"\nkind = \"segment\"\n",
            dir.join("ids.db").display(),
            dir.join("workers").display()
        ),
    )
    .unwrap();
    file
}

#[test]
fn check_config_masks_obfuscation_keys_from_the_file_and_the_environment() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-obfuscation"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = obfuscating_config(&dir);
    let out = crate::common::serve_command()
        .arg("--config")
        .arg(&file)
        .arg("--check-config")
        .env("SNOWDRIFT_GENERATOR__1__OBFUSCATE_KEY", KEY.to_uppercase())
        .env("SNOWDRIFT_GENERATOR__1__OBFUSCATE_BITS", "53")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("obfuscate_key = \"***\"").count(), 2, "{text}");
    assert!(text.contains("obfuscate_bits = 53"), "{text}");
    assert!(!text.to_lowercase().contains(&KEY[..8]), "{text}");
    // A bad key stops the start, naming where it is and never showing it.
    let out = crate::common::serve_command()
        .arg("--config")
        .arg(&file)
        .arg("--check-config")
        .env("SNOWDRIFT_GENERATOR__1__OBFUSCATE_KEY", &KEY[..30])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("generator[1].obfuscate_key") && err.contains("has 30 characters"),
        "{err}"
    );
    assert!(!err.contains(&KEY[..8]), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cli_reverses_what_the_server_obfuscated() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-obfuscated"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = crate::common::serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(obfuscating_config(&dir));
    let served = Served::start(cmd);
    // Not /readyz: the tag "orders" is never created. `sf` issues once its worker ID is
    // held (a first claim on a new lock file waits out any earlier holder's check).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while served.get("/v1/ids/sf", None).0 != 200 {
        assert!(std::time::Instant::now() < deadline, "sf never issued");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (status, body) = served.get("/v1/ids/sf?count=20&format=obfuscated-sqids", None);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    for public in v["ids"].as_array().unwrap() {
        let public = public.as_str().unwrap();
        let (status, body) = served.get(
            &format!("/v1/ids/sf/decode/{public}?format=obfuscated-sqids"),
            None,
        );
        assert_eq!(status, 200, "{body}");
        let by_server: serde_json::Value = serde_json::from_str(&body).unwrap();
        let by_cli: serde_json::Value = serde_json::from_slice(&succeeds(
            std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"))
                .args(["decode", public, "--format", "obfuscated-sqids"])
                .env("SNOWDRIFT_OBFUSCATE_KEY", KEY),
        ))
        .unwrap();
        assert_eq!(by_cli, by_server, "{public}");
    }
    assert!(served.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The numbers `snowdrift bench` printed on the line starting with `label`: the count and
/// its rate.
fn bench_line(out: &str, label: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in:\n{out}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit() && c != ',')
        .map(|n| n.replace(',', ""))
        .filter(|n| !n.is_empty())
        .map(|n| n.parse().unwrap())
        .collect();
    (numbers[0], numbers[1])
}

/// `snowdrift bench --client`: threads on the blocking client, and async tasks on one handle
/// of the async client, take IDs of a running server's generator through one cache.
#[test]
fn bench_takes_ids_through_the_client_from_threads_and_from_tasks() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-bench-client"));
    std::fs::create_dir_all(&dir).unwrap();
    let served = serve(&dir);
    for callers in [
        &["--threads", "2"][..],
        &["--tasks", "16", "--threads", "1"][..],
    ] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"));
        cmd.args(["bench", "--target", &served.url(), "--client", "snowflake"])
            .args(["--duration", "1s"])
            .args(callers);
        let out = String::from_utf8(succeeds(&mut cmd)).unwrap();
        let (ids, _) = bench_line(&out, "ids");
        assert!(ids > 1_000, "{callers:?}:\n{out}");
        assert!(out.contains("errors     0\n"), "{callers:?}:\n{out}");
        assert!(out.contains(" fetches, batch now "), "{callers:?}:\n{out}");
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"));
    cmd.args(["bench", "--target", &served.url(), "--client", "snowflake"])
        .args(["--tasks", "0"]);
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--tasks must be between 1 and 100000"),
        "{err}"
    );
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_drives_a_running_server_closed_loop_and_at_a_fixed_rate() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-bench"));
    std::fs::create_dir_all(&dir).unwrap();
    let served = serve(&dir);
    let target = format!("{}/v1/ids/snowflake?count=10", served.url());
    let bench = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"));
        cmd.args(["bench", "--target", &target, "--connections", "4"])
            .args(["--duration", "2s"])
            .args(extra);
        String::from_utf8(succeeds(&mut cmd)).unwrap()
    };

    let closed = bench(&[]);
    let (requests, _) = bench_line(&closed, "requests");
    let (ids, _) = bench_line(&closed, "ids");
    assert!(requests > 0, "{closed}");
    assert_eq!(ids, requests * 10, "ten IDs per answer:\n{closed}");
    assert!(closed.contains(", 0 error(s)"), "{closed}");

    // At a fixed rate the client sends what is due, no more: 200/s for 2 s.
    let paced = bench(&["--rate", "200"]);
    let (requests, rate) = bench_line(&paced, "requests");
    assert!((380..=401).contains(&requests), "{paced}");
    assert!((190..=201).contains(&rate), "{paced}");
    assert!(paced.contains("\nclient     stalled "), "{paced}");

    // The same client speaks RESP: INCR on the server's RESP listener, one ID each.
    let resp = served.resp_url.clone().expect("the RESP listener is on");
    create_tag(&served, "order", &[]);
    let incr = |key: &str| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"));
        cmd.args(["bench", "--target", &resp, "--incr", key]).args([
            "--connections",
            "4",
            "--duration",
            "1s",
            "--rate",
            "300",
        ]);
        cmd.output().unwrap()
    };
    let out = incr("order");
    let out = String::from_utf8(out.stdout).unwrap();
    let (requests, _) = bench_line(&out, "requests");
    let (ids, _) = bench_line(&out, "ids");
    assert!((290..=301).contains(&requests), "{out}");
    assert_eq!(ids, requests, "{out}");
    assert!(out.contains(", 0 error(s)"), "{out}");
    // A tag that does not exist: the server's own error, before any load.
    let out = incr("no-such-tag");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("INCR no-such-tag") && err.contains("ERR"),
        "{err}"
    );
    served.stop();

    // Nothing listening: a clear error, not a table of failures.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"));
    let out = cmd.args(["bench", "--target", &target]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_taken_port_is_named_once_and_the_server_exits() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-taken"));
    std::fs::create_dir_all(&dir).unwrap();
    let out = crate::common::serve_command()
        .args(["--listen", "127.0.0.1:0"])
        .env("SNOWDRIFT_SERVER__RESP_LISTEN", &addr)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let said = format!("server.resp_listen {addr}: ");
    assert_eq!(err.matches(&said).count(), 1, "{err}");
    assert!(err.contains("in use"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The worker ID of the default snowflake generator, from `/v1/generators`.
fn generator_worker(served: &Served) -> serde_json::Value {
    served.worker_of("snowflake")
}

/// Two servers started with no config from two directories share the machine-wide worker
/// registry, so they take different worker IDs and issue different IDs (with a registry per
/// working directory both took worker 0 and issued the same IDs).
#[test]
fn servers_started_from_two_directories_never_share_a_worker_id() {
    let dirs: Vec<_> = (0..2)
        .map(|_| {
            let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-machine"));
            std::fs::create_dir_all(&dir).unwrap();
            dir
        })
        .collect();
    let servers: Vec<Served> = dirs.iter().map(|d| serve(d)).collect();
    let workers: Vec<_> = servers.iter().map(generator_worker).collect();
    assert_ne!(
        workers[0]["worker_id"], workers[1]["worker_id"],
        "{workers:?}"
    );
    assert_eq!(
        workers[0]["verified"], true,
        "loopback only: {:?}",
        workers[0]
    );
    let a: HashSet<u64> = ids(&servers[0], "/v1/ids/snowflake?count=1000")
        .into_iter()
        .collect();
    let b: HashSet<u64> = ids(&servers[1], "/v1/ids/snowflake?count=1000")
        .into_iter()
        .collect();
    assert!(a.is_disjoint(&b));
    drop(servers);
    for d in dirs {
        std::fs::remove_dir_all(d).ok();
    }
}

/// Listening beyond loopback on a machine-local lease: `verified: false` in /v1/generators
/// and `snowdrift_worker_unverified 1` (and a warning at start).
#[test]
fn a_machine_local_lease_beyond_loopback_is_flagged() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-exposed"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = crate::common::serve_command();
    cmd.args(["--listen", "0.0.0.0:0", "--insecure-bind"])
        .current_dir(&dir);
    let served = Served::start(cmd);
    served.wait_ready();
    assert_eq!(generator_worker(&served)["verified"], false);
    let (_, metrics) = served.get("/metrics", None);
    assert!(
        metrics.contains("snowdrift_worker_unverified{generator=\"snowflake\"} 1"),
        "{metrics}"
    );
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 27's attack on the file registry, through two real servers: delete a running
/// server's lock file and start a second server on the same worker directory at once.
/// Both took worker 0 and served millions of identical IDs; now the first stops within a
/// check (20 ms) and the two servers hold different worker IDs, and no ID is served twice.
#[test]
fn a_deleted_lock_file_never_lets_two_servers_serve_the_same_ids() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let root = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-rmlock"));
    let workers = root.join("workers");
    let start = |name: &str| {
        let cwd = root.join(name);
        std::fs::create_dir_all(&cwd).unwrap();
        let mut cmd = crate::common::serve_command();
        cmd.args(["--listen", "127.0.0.1:0"])
            .env("SNOWDRIFT_WORKER__PATH", &workers)
            .current_dir(cwd);
        let served = Served::start(cmd);
        served.wait_ready();
        Arc::new(served)
    };
    let a = start("a");
    assert_eq!(generator_worker(&a)["worker_id"], 0);
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let duplicates = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    // Each server is asked for IDs continuously, as a busy application would.
    let hammer = |served: Arc<Served>| {
        let (seen, duplicates, stop) = (seen.clone(), duplicates.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut served_ids = 0;
            while !stop.load(Ordering::Relaxed) {
                let (status, body) = served.get("/v1/ids/snowflake?count=1000", None);
                if status != 200 {
                    continue;
                }
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                let mut seen = seen.lock().unwrap();
                for id in v["ids"].as_array().unwrap() {
                    served_ids += 1;
                    if !seen.insert(id.as_str().unwrap().to_string()) {
                        duplicates.lock().unwrap().push(id.to_string());
                    }
                }
            }
            served_ids
        })
    };
    let a_thread = hammer(a.clone());
    std::thread::sleep(std::time::Duration::from_millis(300));
    for entry in std::fs::read_dir(&workers).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "lock") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let b = start("b");
    let b_thread = hammer(b.clone());
    std::thread::sleep(std::time::Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    let (a_ids, b_ids) = (a_thread.join().unwrap(), b_thread.join().unwrap());
    assert!(a_ids > 0 && b_ids > 0, "a served {a_ids}, b {b_ids}");
    let duplicates = duplicates.lock().unwrap();
    assert!(
        duplicates.is_empty(),
        "{} IDs served twice (a served {a_ids}, b {b_ids}), first {:?}",
        duplicates.len(),
        duplicates.first()
    );
    // Whichever took worker 0 again first (the first server noticing the lost lock within a
    // check, or the second), the two hold different IDs now.
    assert_ne!(
        generator_worker(&a)["worker_id"],
        generator_worker(&b)["worker_id"],
        "two servers issue under one worker ID"
    );
    drop((a, b));
    std::fs::remove_dir_all(&root).ok();
}

/// A log written to a pipe or a file holds no ANSI colour codes (they are for a terminal):
/// the server's log lines, read here through a pipe, are plain text.
#[test]
fn logs_written_to_a_pipe_hold_no_colour_codes() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("serve-plain-log"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = crate::common::serve_command();
    // NO_COLOR would turn colours off by itself: the test is that a pipe does.
    cmd.args(["--listen", "127.0.0.1:0"])
        .env_remove("NO_COLOR")
        .current_dir(&dir);
    let served = Served::start(cmd);
    served.wait_ready();
    let from = served.log_len();
    served.signal("TERM");
    served.wait_for_log(from, "snowdrift stopped");
    let log = served.log_lines();
    assert!(
        log.iter()
            .any(|l| l.contains("INFO") && l.contains("shutting down")),
        "{log:?}"
    );
    for line in &log {
        assert!(!line.contains('\x1b'), "an escape code in {line:?}");
    }
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_version_names_the_commit_in_the_cli_healthz_and_metrics() {
    // The commit this test binary's `snowdrift` was built from: the checkout's HEAD (CI
    // builds a clean clone, so it is also not dirty there; here it may be).
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_string();
    assert_eq!(head.len(), 40, "not a git checkout? {head:?}");
    let version =
        succeeds(std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift")).arg("--version"));
    let version = String::from_utf8(version).unwrap();
    let expected = format!(
        "snowdrift {} (commit {head}, dirty: ",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        version.starts_with(&expected),
        "{version:?} does not start with {expected:?}"
    );
    let dirty = version.contains("dirty: true");

    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("opc-version"));
    std::fs::create_dir_all(&dir).unwrap();
    let served = serve(&dir);
    let (status, body) = served.get("/healthz", None);
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{v}");
    assert_eq!(v["commit"], head.as_str(), "{v}");
    assert_eq!(v["dirty"], dirty, "{v}");
    let (status, metrics) = served.get("/metrics", None);
    assert_eq!(status, 200);
    let commit = if dirty { format!("{head}-dirty") } else { head };
    let line = format!(
        "snowdrift_build_info{{version=\"{}\",commit=\"{commit}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    assert!(metrics.lines().any(|l| l == line), "{line} not in /metrics");
    served.stop();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_registry_or_store_that_takes_anyones_writes_is_warned_about() {
    // Issue 40: the test machine's etcd and Redis take writes from clients without
    // credentials; a server leasing worker IDs on the one and claiming segments on the other
    // says so at start (a warning: a tso refuses such an etcd, these keep single-machine
    // setups working).
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("opc-open"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("snowdrift.toml");
    std::fs::write(
        &config,
        format!(
            "[store]\nurl = \"{}\"\ntable = \"{}\"\n[worker]\nregistry = \"etcd\"\nurl = \"{}\"\n\
             namespace = \"{}\"\n",
            snowdrift_testkit::urls::redis(),
            snowdrift_testkit::unique_name("open_tags"),
            snowdrift_testkit::urls::etcd(),
            snowdrift_testkit::unique_name("open_ns"),
        ),
    )
    .unwrap();
    let mut cmd = crate::common::serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&config);
    let served = Served::start(cmd);
    served.wait_ready();
    let line = served.wait_for_log(0, "worker IDs are leased on etcd, which takes writes");
    assert!(
        line.contains("WARN") && line.contains("etcdctl auth enable"),
        "{line}"
    );
    let line = served.wait_for_log(0, "segment tags are claimed on Redis, which takes writes");
    assert!(line.contains("WARN"), "{line}");
    served.stop();
    std::fs::remove_dir_all(&dir).ok();
}
