//! Generators on real backends through the server: ticket servers on PostgreSQL and MariaDB,
//! a Redis counter with a date template, a tag striped over two stores, and `/readyz` through
//! a store outage.

use std::collections::HashSet;

use crate::support::TempDir;
use serde_json::Value;
use snowdrift_testkit::{unique_name, urls};

/// A server for `toml` (`@DIR@` stands for its directory): its URL, and what must live as
/// long as the test uses it.
async fn serve(toml: &str) -> (String, (crate::support::Running, TempDir)) {
    let dir = TempDir::new("snowdrift-backends");
    let config = crate::support::load(&dir.0, &toml.replace("@DIR@", &dir.0.display().to_string()));
    let running = crate::support::spawn(&config).await;
    (running.base(), (running, dir))
}

async fn get(base: &str, path: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

fn ids(v: &Value) -> Vec<String> {
    v["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids: {v}"))
        .iter()
        .map(|i| i.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_generator_interleaves_two_databases() {
    let table = unique_name("srv_tickets");
    let (base, _server) = serve(&format!(
        "[[generator]]\nname = \"tickets\"\nkind = \"ticket\"\ntable = \"{table}\"\nservers = [\"{}\", \"{}\"]\n",
        urls::mysql(),
        urls::postgres()
    ))
    .await;
    let mut all = HashSet::new();
    let mut classes = HashSet::new();
    for _ in 0..6 {
        let (status, v) = get(&base, "/v1/ids/tickets?count=150").await;
        assert_eq!(status, 200, "{v}");
        for id in ids(&v) {
            let n: u64 = id.parse().unwrap();
            classes.insert(n % 2);
            assert!(all.insert(n), "ticket {n} issued twice");
        }
    }
    assert_eq!(all.len(), 900);
    assert_eq!(classes.len(), 2, "both servers served");
    let (status, v) = get(&base, "/readyz").await;
    assert_eq!(status, 200, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_generator_renders_its_template() {
    let name = unique_name("srv-order");
    let (base, _server) = serve(&format!(
        "[[generator]]\nname = \"{name}\"\nkind = \"counter\"\nurl = \"{}\"\ntemplate = \"ORD{{date:%Y%m%d}}{{seq:06}}\"\nbatch = 10\n",
        urls::redis()
    ))
    .await;
    let (status, v) = get(&base, &format!("/v1/ids/{name}?count=25")).await;
    assert_eq!(status, 200, "{v}");
    let got = ids(&v);
    assert_eq!(got.len(), 25);
    assert!(
        got[0].starts_with("ORD") && got[0].ends_with("000001"),
        "{got:?}"
    );
    assert!(got[24].ends_with("000025"), "{got:?}");
    // Well formed, but a templated counter's IDs are text: nothing to write in hex.
    let (status, v) = get(&base, &format!("/v1/ids/{name}?format=hex")).await;
    assert_eq!(status, 409, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_striped_over_two_stores_never_collides() {
    let (base, _server) =
        serve("[store]\nurls = [\"sqlite://@DIR@/a.db\", \"sqlite://@DIR@/b.db\"]\npreload = []\n")
            .await;
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{base}/v1/tags"))
        .json(&serde_json::json!({"tag": "order", "step": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let mut all = HashSet::new();
    let mut residues = HashSet::new();
    for _ in 0..20 {
        let (status, v) = get(&base, "/v1/ids/order?count=7").await;
        assert_eq!(status, 200, "{v}");
        for id in ids(&v) {
            let n: u64 = id.parse().unwrap();
            residues.insert(n % 2);
            assert!(all.insert(n), "{n} issued twice");
        }
    }
    assert_eq!(all.len(), 140);
    assert_eq!(residues.len(), 2, "both stores served: {all:?}");
}

/// A tag served under its own name counts for `/readyz`: while its store is cut and its
/// buffer is empty, requests for it fail and `/readyz` says 503 naming the tag and why; once
/// the store is back, both recover. (A node that said ready while a tag it serves failed
/// would keep a load balancer sending it requests it cannot answer.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_names_a_tag_whose_store_is_cut_once_its_buffer_is_empty() {
    let (proxy, url) = snowdrift_testkit::FaultProxy::start_for_url(&urls::postgres())
        .await
        .unwrap();
    let table = unique_name("srv_ready");
    let (base, _server) = serve(&format!(
        "[store]\nurl = \"{url}\"\ntable = \"{table}\"\nwait = \"200ms\"\npreload = []\n"
    ))
    .await;
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{base}/v1/tags"))
        .json(&serde_json::json!({"tag": "outage", "step": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let (status, v) = get(&base, "/v1/ids/outage?count=3").await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = get(&base, "/readyz").await;
    assert_eq!(status, 200, "{v}");

    proxy.cut();
    // Use up what is buffered: the tag then fails.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, v) = get(&base, "/v1/ids/outage?count=5").await;
        if status == 503 {
            break;
        }
        assert_eq!(status, 200, "{v}");
        assert!(
            std::time::Instant::now() < deadline,
            "the buffer never ran out"
        );
    }
    let (status, v) = get(&base, "/readyz").await;
    assert_eq!(status, 503, "a tag that fails is not ready: {v}");
    let tag = v["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "outage")
        .unwrap_or_else(|| panic!("/readyz names the tag: {v}"));
    assert_eq!(tag["ready"], false, "{v}");
    assert!(
        tag["reason"].as_str().unwrap().contains("refills fail"),
        "{v}"
    );

    proxy.heal();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (status, _) = get(&base, "/v1/ids/outage").await;
        let (ready, v) = get(&base, "/readyz").await;
        if status == 200 && ready == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never recovered: {v}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
