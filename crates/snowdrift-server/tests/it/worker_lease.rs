//! The server's snowflake generators under worker leases: a second server cannot take a held
//! worker ID, servers on a coordinator get distinct IDs, and shutdown releases the lease.

use std::collections::HashSet;
use std::path::Path;

use crate::support::Running;
use serde_json::Value;
use snowdrift_server::{Config, StartError};
use snowdrift_testkit::{unique_name, urls};

fn config(dir: &Path, worker_toml: &str) -> Config {
    std::fs::create_dir_all(dir).unwrap();
    crate::support::load(dir, &format!("[worker]\n{worker_toml}\n"))
}

/// A server on port 0: its URL, and the handle that shuts it down.
async fn serve(config: &Config) -> Result<(String, Running), StartError> {
    let running = crate::support::try_spawn(config).await?;
    Ok((running.base(), running))
}

async fn json(base: &str, path: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// The worker ID of the server's snowflake generator, once it issues (a worker ID released
/// by a server that just stopped comes with a mark a little ahead).
async fn worker_id(base: &str) -> u64 {
    ready(base).await;
    let (_, v) = json(base, "/v1/generators").await;
    let g = v["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "snowflake")
        .unwrap();
    assert_eq!(g["worker"]["state"], "issuing", "{g}");
    g["worker"]["worker_id"].as_u64().unwrap()
}

async fn ids(base: &str, n: u64) -> Vec<u64> {
    let (status, v) = json(base, &format!("/v1/ids/snowflake?count={n}")).await;
    assert_eq!(status, 200, "{v}");
    crate::support::ids_of(&v)
}

/// `snowdrift_worker_state{generator="snowflake",state=...}` from `/metrics`, by state.
async fn state_gauges(base: &str) -> std::collections::BTreeMap<String, f64> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let prefix = r#"snowdrift_worker_state{generator="snowflake",state=""#;
    text.lines()
        .filter_map(|line| {
            let (state, value) = line.strip_prefix(prefix)?.split_once("\"} ")?;
            Some((state.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Waits until `/readyz` says 200 (a restarted snowflake generator waits for its mark).
async fn ready(base: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, v) = json(base, "/readyz").await;
        if status == 200 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never ready: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A restart within the mark's window: segment tags are served at once, while the
/// snowflake generator answers 503 (and `/readyz` says it waits for its mark) until the
/// clock passes the mark; then its IDs follow the ones issued before the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_serves_tags_at_once_and_snowflakes_after_the_mark() {
    let dir = std::env::temp_dir().join(unique_name("lease-restart"));
    let workers = dir.join("workers");
    // A long window, so the restart surely lands inside it however slow the machine is;
    // worker ID 0 asked for, so the restart waits for its mark (without, it takes a free
    // ID that can issue sooner).
    let cfg = config(
        &dir,
        &format!("path = \"{}\"\nwindow = \"6s\"\nid = 0", workers.display()),
    );
    let (base, running) = serve(&cfg).await.unwrap();
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{base}/v1/tags"))
        .json(&serde_json::json!({"tag": "restart", "step": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let before = ids(&base, 1000).await;
    running.shutdown().await.unwrap();

    let started = std::time::Instant::now();
    let (base, _running) = serve(&cfg).await.unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "the server waited for the mark before serving: {:?}",
        started.elapsed()
    );
    let (status, v) = json(&base, "/v1/ids/restart?count=3").await;
    assert_eq!(status, 200, "a tag is served at once: {v}");
    let (status, v) = json(&base, "/v1/ids/snowflake").await;
    assert_eq!(status, 503, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("high-water mark"),
        "{v}"
    );
    let (status, v) = json(&base, "/readyz").await;
    assert_eq!(status, 503, "{v}");
    let snowflake = v["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "snowflake")
        .unwrap();
    assert!(
        snowflake["reason"]
            .as_str()
            .unwrap()
            .contains("waiting for the clock"),
        "{v}"
    );
    let tag = v["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "restart")
        .unwrap_or_else(|| panic!("/readyz names the tag served under its own name: {v}"));
    assert_eq!(tag["ready"], true, "{v}");
    // What the alert on a worker not issuing reads: the state by name, every one present.
    let states = state_gauges(&base).await;
    assert_eq!(states.get("waiting_for_mark"), Some(&1.0), "{states:?}");
    assert_eq!(states.get("issuing"), Some(&0.0), "{states:?}");
    assert_eq!(states.len(), 6, "{states:?}");

    ready(&base).await;
    let states = state_gauges(&base).await;
    assert_eq!(states.get("issuing"), Some(&1.0), "{states:?}");
    assert_eq!(
        states.values().sum::<f64>(),
        1.0,
        "one state at a time: {states:?}"
    );
    let after = ids(&base, 1000).await;
    assert!(
        after[0] > *before.last().unwrap(),
        "the restart continues after the mark"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_file_lease_refuses_a_second_server_until_released() {
    let dir = std::env::temp_dir().join(unique_name("lease-file"));
    let workers = dir.join("workers");
    let cfg = config(&dir, &format!("path = \"{}\"\nid = 0", workers.display()));
    let (base, running) = serve(&cfg).await.unwrap();
    assert_eq!(worker_id(&base).await, 0);
    let (status, v) = json(&base, "/readyz").await;
    assert_eq!(status, 200, "{v}");
    // Pinned to 0: refused while another server holds it.
    let err = serve(&cfg).await.map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("worker ID 0 is held"), "{err}");
    // Unpinned (the default): the lowest ID no server on the machine holds.
    let lowest = config(&dir, &format!("path = \"{}\"", workers.display()));
    let (other_base, other_running) = serve(&lowest).await.unwrap();
    assert_eq!(worker_id(&other_base).await, 1);
    other_running.shutdown().await.unwrap();
    let first = ids(&base, 1000).await;
    // Shutdown releases the lease and leaves a mark, so the next server continues after it
    // (once its clock has passed the mark: see the test below).
    running.shutdown().await.unwrap();
    let (base, _running) = serve(&cfg).await.unwrap();
    ready(&base).await;
    let later = ids(&base, 1000).await;
    assert!(
        later[0] > *first.last().unwrap(),
        "the restart continues after the mark"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_a_coordinator_get_distinct_worker_ids() {
    let namespace = unique_name("lease_srv");
    let worker_toml = format!(
        "registry = \"sql\"\nurl = \"{}\"\nnamespace = \"{namespace}\"\nttl = \"3s\"",
        urls::postgres()
    );
    let dirs: Vec<_> = (0..3)
        .map(|k| std::env::temp_dir().join(unique_name(&format!("lease-sql-{k}"))))
        .collect();
    let mut servers = Vec::new();
    for dir in &dirs {
        servers.push(serve(&config(dir, &worker_toml)).await.unwrap());
    }
    let mut workers = HashSet::new();
    let mut all = HashSet::new();
    for (base, _) in &servers {
        assert!(workers.insert(worker_id(base).await), "distinct worker IDs");
        for id in ids(base, 2000).await {
            assert!(all.insert(id), "{id} issued by two servers");
        }
    }
    assert_eq!(workers, HashSet::from([0, 1, 2]));
    // The worker ID of a stopped server is free at once for the next one that asks for
    // it (one asking for any ID takes a free one whose mark passed: 3).
    let (_, running) = servers.remove(1);
    running.shutdown().await.unwrap();
    let dir = std::env::temp_dir().join(unique_name("lease-sql-next"));
    let (base, _running) = serve(&config(&dir, &format!("{worker_toml}\nid = 1")))
        .await
        .unwrap();
    assert_eq!(worker_id(&base).await, 1);
    let dir = std::env::temp_dir().join(unique_name("lease-sql-any"));
    let (base, _other) = serve(&config(&dir, &worker_toml)).await.unwrap();
    assert_eq!(worker_id(&base).await, 3);
}

#[test]
fn bad_worker_settings_are_refused_before_start() {
    let dir = std::env::temp_dir().join(unique_name("lease-bad"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("snowdrift.toml");
    for (toml, expect) in [
        ("registry = \"etcd\"", "needs worker.url"),
        (
            "registry = \"sql\"\nurl = \"redis://127.0.0.1\"",
            "not a SQL URL",
        ),
        ("registry = \"raft\"", "not one of"),
        (
            "registry = \"derived\"\nderive = \"mac\"",
            "hostname, ip, statefulset",
        ),
        ("registry = \"file\"\nurl = \"etcd://x\"", "worker.path"),
    ] {
        std::fs::write(&file, format!("[worker]\n{toml}\n")).unwrap();
        let err = Config::load(Some(&file), Vec::new())
            .and_then(|c| c.plan())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expect), "{toml}: {err}");
    }
}

/// A server whose snowflake generator leases its worker ID (2 s ttl) from PostgreSQL behind
/// a fault proxy, so a test can black-hole the coordinator: its URL, the proxy and the
/// handle that shuts it down.
async fn serve_behind_fault_proxy(what: &str) -> (String, snowdrift_testkit::FaultProxy, Running) {
    let (proxy, url) = snowdrift_testkit::FaultProxy::start_for_url(&urls::postgres())
        .await
        .unwrap();
    let dir = std::env::temp_dir().join(unique_name(what));
    let cfg = config(
        &dir,
        &format!(
            "registry = \"sql\"\nurl = \"{url}\"\nnamespace = \"{}\"\nttl = \"2s\"",
            unique_name(what)
        ),
    );
    let (base, running) = serve(&cfg).await.unwrap();
    (base, proxy, running)
}

/// The coordinator stops answering (black-holed behind the fault proxy): once the lease
/// deadline passes, the server refuses snowflake IDs with 503 and `/readyz` says not ready;
/// when the coordinator answers again, it regains a worker ID and issues again, after every
/// ID it issued before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_is_503_and_not_ready_until_regained() {
    let (base, proxy, _running) = serve_behind_fault_proxy("lease_lost").await;
    let before = ids(&base, 500).await;
    proxy.black_hole();
    // The fence closes at the last renewal + ttl - margin (under 2 s); allow for a slow CI.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, v) = json(&base, "/v1/ids/snowflake").await;
        if status == 503 {
            assert_eq!(v["error"]["code"], "unavailable", "{v}");
            break;
        }
        assert_eq!(status, 200, "{v}");
        assert!(
            std::time::Instant::now() < deadline,
            "still issuing long after the lease ran out"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (status, v) = json(&base, "/readyz").await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["ready"], false);
    proxy.heal();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, _) = json(&base, "/readyz").await;
        if status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the lease was not regained"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let after = ids(&base, 500).await;
    assert!(
        after[0] > *before.last().unwrap(),
        "issuing resumes after the mark"
    );
}

/// The gRPC health service follows `/readyz`: the server (`""`) and `snowdrift.v1.IdService`
/// are SERVING while the lease holds, NOT_SERVING within seconds of `/readyz` turning 503
/// (a Watch stream hears it), and SERVING again once the lease is regained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_health_follows_readyz_through_a_lost_lease() {
    use std::time::{Duration, Instant};
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    let (base, proxy, _running) = serve_behind_fault_proxy("health_lost").await;
    let channel = tonic::transport::Endpoint::from_shared(base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let health = HealthClient::new(channel);
    let request = |service: &str| HealthCheckRequest {
        service: service.into(),
    };
    let both = |want: ServingStatus| {
        let health = health.clone();
        async move {
            for service in ["", "snowdrift.v1.IdService"] {
                let got = health.clone().check(request(service)).await.unwrap();
                assert_eq!(got.into_inner().status, want as i32, "{service:?}");
            }
        }
    };
    both(ServingStatus::Serving).await;
    let mut watch = health
        .clone()
        .watch(request(""))
        .await
        .unwrap()
        .into_inner();
    let mut heard = async || {
        let next = tokio::time::timeout(Duration::from_secs(10), watch.message()).await;
        let next = next.expect("a change is announced within seconds");
        next.unwrap().expect("the watch goes on").status
    };
    assert_eq!(heard().await, ServingStatus::Serving as i32);

    proxy.black_hole();
    let deadline = Instant::now() + Duration::from_secs(30);
    while json(&base, "/readyz").await.0 != 503 {
        assert!(Instant::now() < deadline, "the lease never ran out");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(heard().await, ServingStatus::NotServing as i32);
    both(ServingStatus::NotServing).await;

    proxy.heal();
    let regained = tokio::time::timeout(Duration::from_secs(60), watch.message())
        .await
        .expect("the lease is regained")
        .unwrap()
        .unwrap();
    assert_eq!(regained.status, ServingStatus::Serving as i32);
    both(ServingStatus::Serving).await;
    let (status, v) = json(&base, "/readyz").await;
    assert_eq!(status, 200, "{v}");
}
