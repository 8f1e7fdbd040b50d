//! The HTTP API end to end: a real server on port 0 over a SQLite store, driven by an HTTP
//! client, checking the contract's shapes and errors.

use std::collections::HashSet;

use crate::support::{Running, TempDir};
use serde_json::{Value, json};

struct TestServer {
    base: String,
    client: reqwest::Client,
    _running: Running,
    _dir: TempDir,
}

async fn start(extra_toml: &str) -> TestServer {
    let dir = TempDir::new("snowdrift-http");
    let config = crate::support::load(
        &dir.0,
        &format!("[server]\nlisten = \"127.0.0.1:0\"\n[limits]\nmax_count = 1000\n{extra_toml}"),
    );
    let running = crate::support::spawn(&config).await;
    TestServer {
        base: running.base(),
        client: reqwest::Client::new(),
        _running: running,
        _dir: dir,
    }
}

impl TestServer {
    async fn get(&self, path: &str) -> (u16, String) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn json(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.get(path).await;
        let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        (status, v)
    }

    async fn send(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let r = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(json!({"raw": text})),
        )
    }
}

fn ids(v: &Value) -> Vec<String> {
    v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().to_string())
        .collect()
}

fn error_code(v: &Value) -> &str {
    v["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error body: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_generators_serve_every_kind() {
    let s = start("").await;
    let (status, v) = s.json("/v1/ids/snowflake?count=1000").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["name"], "snowflake");
    let got = ids(&v);
    assert_eq!(got.len(), 1000);
    let nums: Vec<u64> = got.iter().map(|i| i.parse().unwrap()).collect();
    assert!(
        nums.windows(2).all(|w| w[0] < w[1]),
        "snowflake IDs increase"
    );
    for (name, len) in [("uuid7", 36), ("ulid", 26), ("objectid", 24)] {
        let (status, v) = s.json(&format!("/v1/ids/{name}?count=50")).await;
        assert_eq!(status, 200, "{v}");
        let got = ids(&v);
        assert_eq!(got.len(), 50);
        assert!(got.iter().all(|i| i.len() == len), "{name}: {got:?}");
        assert_eq!(
            got.iter().collect::<HashSet<_>>().len(),
            50,
            "{name} unique"
        );
    }
    // Formats and decoding round-trip.
    let (_, v) = s.json("/v1/ids/snowflake?format=base62").await;
    let text = ids(&v).remove(0);
    let (status, d) = s
        .json(&format!("/v1/ids/snowflake/decode/{text}?format=base62"))
        .await;
    assert_eq!(status, 200, "{d}");
    assert_eq!(d["layout"], "twitter");
    assert!(
        d["fields"]["sequence"].is_number() || d["fields"]["seq"].is_number(),
        "{d}"
    );
    let (_, v) = s.json("/v1/ids/uuid7").await;
    let (status, d) = s
        .json(&format!("/v1/ids/uuid7/decode/{}", ids(&v)[0]))
        .await;
    assert_eq!(status, 200, "{d}");
    assert_eq!(d["version"], 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_contract_error_shape() {
    let s = start("").await;
    for (path, status, code) in [
        ("/v1/ids/snowflake?count=0", 400, "invalid_request"),
        ("/v1/ids/snowflake?count=1001", 400, "invalid_request"),
        ("/v1/ids/snowflake?count=abc", 400, "invalid_request"),
        ("/v1/ids/snowflake?cuont=1", 400, "invalid_request"),
        ("/v1/ids/snowflake?format=roman", 400, "invalid_request"),
        // Well formed, but not something a UUID generator has: it depends on the name.
        ("/v1/ids/uuid7?format=hex", 409, "unsupported"),
        ("/v1/ids/no-such-tag", 404, "not_found"),
        ("/v1/ids/bad%20name", 400, "invalid_request"),
        // The ID is part of the path: text that is no ID of the name names nothing.
        ("/v1/ids/snowflake/decode/notanid", 404, "not_found"),
        (
            "/v1/ids/ulid/decode/8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
            404,
            "not_found",
        ),
        (
            "/v1/ids/snowflake/decode/1?format=roman",
            400,
            "invalid_request",
        ),
        ("/v1/nothing", 404, "not_found"),
    ] {
        let (got, v) = s.json(path).await;
        assert_eq!(got, status, "{path}: {v}");
        assert_eq!(error_code(&v), code, "{path}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().len() > 10,
            "{path}: {v}"
        );
    }
    let (status, v) = s.send("DELETE", "/v1/tags", "").await;
    assert_eq!(status, 405, "{v}");
    assert_eq!(error_code(&v), "method_not_allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_created_served_and_updated_without_restart() {
    let s = start("").await;
    let (status, v) = s
        .send(
            "POST",
            "/v1/tags",
            r#"{"tag": "order", "step": 100, "description": "orders"}"#,
        )
        .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["tag"], "order");
    assert_eq!(v["step"], 100);
    // Served at once under its name, by the contract route and Leaf's.
    let (status, v) = s.json("/v1/ids/order?count=250").await;
    assert_eq!(status, 200, "{v}");
    let mut seen: Vec<u64> = ids(&v).iter().map(|i| i.parse().unwrap()).collect();
    let (status, text) = s.get("/api/segment/get/order").await;
    assert_eq!(status, 200, "{text}");
    seen.push(text.parse().unwrap());
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no duplicate segment IDs");
    assert_eq!(seen[0], 1, "a new tag starts at 1");
    // A format the kind does not have is refused before anything is issued.
    let (status, v) = s.json("/v1/ids/order?count=5&format=friendly").await;
    assert_eq!((status, error_code(&v)), (409, "unsupported"), "{v}");
    let (_, v) = s.json("/v1/ids/order").await;
    assert_eq!(
        ids(&v),
        [(seen.len() + 1).to_string()],
        "nothing was wasted"
    );
    seen.push(seen.len() as u64 + 1);
    // Taken names are 409s: another tag, or a generator.
    let (status, v) = s.send("POST", "/v1/tags", r#"{"tag": "order"}"#).await;
    assert_eq!((status, error_code(&v)), (409, "conflict"), "{v}");
    let (status, v) = s.send("POST", "/v1/tags", r#"{"tag": "snowflake"}"#).await;
    assert_eq!((status, error_code(&v)), (409, "conflict"), "{v}");
    // Bad bodies say what is wrong and write nothing.
    for body in [
        r#"{"tag": "x", "step": 0}"#,
        r#"{"tag": "", "step": 10}"#,
        r#"{"tag": "y", "colour": "red"}"#,
        r#"not json"#,
    ] {
        let (status, v) = s.send("POST", "/v1/tags", body).await;
        assert_eq!(status, 400, "{body}: {v}");
        assert_eq!(error_code(&v), "invalid_request", "{body}: {v}");
    }
    let (_, v) = s.json("/v1/tags").await;
    let names: Vec<&str> = v["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tag"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["order"]);
    let (status, v) = s.send("PATCH", "/v1/tags/order", r#"{"step": 500}"#).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["step"], 500);
    let (status, v) = s.json("/v1/tags/order").await;
    assert_eq!((status, v["step"].as_i64()), (200, Some(500)));
    let (status, v) = s.send("PATCH", "/v1/tags/nope", r#"{"step": 5}"#).await;
    assert_eq!((status, error_code(&v)), (404, "not_found"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_routes_answer_in_text_and_errors_are_never_zero() {
    let s = start("").await;
    let (status, text) = s.get("/api/snowflake/get/anything").await;
    assert_eq!(status, 200);
    let id: u64 = text.trim().parse().unwrap();
    assert!(id > 0);
    let (status, v) = s.json(&format!("/api/snowflake/decode/{id}")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["id"], id.to_string());
    let (status, text) = s.get("/api/segment/get/missing").await;
    assert_eq!(status, 404, "{text}");
    assert_ne!(text.trim(), "0");
    let (status, text) = s.get("/api/segment/get/uuid7").await;
    assert_eq!(status, 409, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_segment_generator_health_and_metrics() {
    let s = start("[[generator]]\nname = \"orders\"\nkind = \"segment\"\ntag = \"order-ids\"\n[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"sonyflake\"\n").await;
    // Not ready while its tag does not exist.
    let (status, v) = s.json("/readyz").await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["ready"], false);
    let (status, _) = s.send("POST", "/v1/tags", r#"{"tag": "order-ids"}"#).await;
    assert_eq!(status, 201);
    let (status, v) = s.json("/readyz").await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = s.json("/v1/ids/orders?count=5").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(ids(&v), ["1", "2", "3", "4", "5"]);
    let (status, v) = s.json("/v1/ids/sf/decode/1").await;
    assert_eq!((status, &v["layout"]), (200, &json!("sonyflake")), "{v}");
    // The defaults are replaced by the configured generators.
    let (status, _) = s.json("/v1/ids/uuid7").await;
    assert_eq!(status, 404);
    let (status, v) = s.json("/healthz").await;
    assert_eq!((status, &v["status"]), (200, &json!("ok")));
    let (status, text) = s.get("/metrics").await;
    assert_eq!(status, 200);
    assert!(text.contains("snowdrift_ids_issued_total"), "{text}");
    assert!(text.contains("generator=\"orders\""), "{text}");
    assert!(text.contains("snowdrift_segment_current_left"), "{text}");
    assert!(
        text.contains("snowdrift_request_duration_seconds"),
        "{text}"
    );
    for gauge in [
        "snowdrift_worker_ready{generator=\"sf\"} 1",
        "snowdrift_worker_lease_seconds_left",
        "snowdrift_worker_lease_renewals_total{generator=\"sf\"}",
        "snowdrift_worker_lease_losses_total{generator=\"sf\"} 0",
        "snowdrift_worker_id_changes_total{generator=\"sf\"} 0",
        "snowdrift_worker_mark_ahead_seconds",
        "snowdrift_layout_seconds_left{generator=\"sf\"}",
        "snowdrift_borrowed_seconds",
    ] {
        assert!(text.contains(gauge), "{gauge}: {text}");
    }
    let (status, v) = s.json("/v1/generators").await;
    assert_eq!(status, 200);
    assert_eq!(v["generators"].as_array().unwrap().len(), 2, "{v}");
}

/// A graceful stop finishes the response in flight, closes idle keep-alive connections at
/// once (they must not hold the stop until its timeout), and then stops accepting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_finishes_the_response_in_flight_and_closes_idle_connections() {
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    const PATIENCE: Duration = Duration::from_secs(60);
    const COUNT: usize = 1_000_000;
    let dir = TempDir::new("snowdrift-http-stop");
    // A stop timeout far beyond the test's patience: only a graceful end passes in time.
    let config = crate::support::load(
        &dir.0,
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\nshutdown_timeout = \"300s\"\n\
             [limits]\nmax_count = {COUNT}\n"
        ),
    );
    let mut running = crate::support::spawn(&config).await;
    let request = |path: &str| format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n");
    let mut idle = TcpStream::connect(running.addr).await.unwrap();
    idle.write_all(request("/healthz").as_bytes())
        .await
        .unwrap();
    let mut answer = [0u8; 1024];
    let n = idle.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 200"), "{answer:?}");
    // The same, idle on the fast path for single IDs rather than in hyper.
    let mut idle_fast = TcpStream::connect(running.addr).await.unwrap();
    idle_fast
        .write_all(request("/v1/ids/snowflake").as_bytes())
        .await
        .unwrap();
    let n = idle_fast.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 200"), "{answer:?}");
    // About 22 MB of JSON, more than the loopback socket buffers hold: once its first
    // bytes are here, the server is still writing the rest.
    let mut busy = TcpStream::connect(running.addr).await.unwrap();
    let path = format!("/v1/ids/snowflake?count={COUNT}");
    busy.write_all(request(&path).as_bytes()).await.unwrap();
    let mut response = vec![0u8; 64];
    busy.read_exact(&mut response).await.unwrap();
    assert!(response.starts_with(b"HTTP/1.1 200"), "{response:?}");

    running.stop.take().unwrap().send(()).unwrap();
    let closed = tokio::time::timeout(PATIENCE, idle.read(&mut answer))
        .await
        .expect("the idle connection is closed at once");
    assert_eq!(closed.unwrap(), 0, "the idle connection ends cleanly");
    let closed = tokio::time::timeout(PATIENCE, idle_fast.read(&mut answer))
        .await
        .expect("the idle fast-path connection is closed at once");
    assert_eq!(
        closed.unwrap(),
        0,
        "the idle fast-path connection ends cleanly"
    );
    tokio::time::timeout(PATIENCE, busy.read_to_end(&mut response))
        .await
        .expect("the response in flight ends")
        .unwrap();
    let head_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole head")
        + 4;
    let body: Value = serde_json::from_slice(&response[head_end..]).expect("a whole body");
    let ids: Vec<u64> = crate::support::ids_of(&body);
    assert_eq!(ids.len(), COUNT);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "strictly increasing");

    let ended = tokio::time::timeout(PATIENCE, &mut running.task)
        .await
        .expect("run returns long before the 300 s stop timeout");
    ended.unwrap().unwrap();
    assert!(
        TcpStream::connect(running.addr).await.is_err(),
        "nothing accepts after the stop"
    );
}

/// `form=runs`: 64-bit IDs as runs `{first, count, stride}`, on the fast path and through
/// the router alike; the same IDs `form=ids` would give (unique, in order), refused for text
/// kinds and with a format before anything is issued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_form_carries_64_bit_ids_as_runs() {
    let s = start("").await;
    let (status, _) = s
        .send("POST", "/v1/tags", r#"{"tag": "runs", "step": 300}"#)
        .await;
    assert_eq!(status, 201);
    let expand = |v: &Value| -> Vec<u64> {
        let runs: snowdrift_proto::http::Runs =
            serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
        runs.runs.iter().flat_map(|r| r.ids()).collect()
    };
    let mut seen = HashSet::new();
    // More than a segment holds (step 300): the answer spans segments, so several runs.
    for (name, kind) in [("runs", "segment"), ("snowflake", "snowflake")] {
        for path in [
            format!("/v1/ids/{name}?count=1000&form=runs"),
            format!("/v1/ids/{name}?form=runs&count=1000"),
        ] {
            let (status, v) = s.json(&path).await;
            assert_eq!(status, 200, "{path}: {v}");
            assert_eq!(
                (v["name"].as_str(), v["kind"].as_str()),
                (Some(name), Some(kind))
            );
            let got = expand(&v);
            assert_eq!(got.len(), 1000, "{path}");
            assert!(got.windows(2).all(|w| w[0] < w[1]), "{path}: not in order");
            for id in got {
                assert!(seen.insert(id), "{path}: {id} issued twice");
            }
        }
        // With a content type and a length, the request is the router's, not the fast path's.
        let (status, v) = s
            .send("GET", &format!("/v1/ids/{name}?count=3&form=runs"), "")
            .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(expand(&v).len(), 3);
    }
    let (_, v) = s.json("/v1/ids/runs?count=2&form=runs").await;
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(1), "{v}");
    // The segment's next IDs follow what the runs carried.
    let (_, after) = s.json("/v1/ids/runs").await;
    let next: u64 = ids(&after)[0].parse().unwrap();
    assert!(seen.iter().all(|&id| id != next), "{next} was in a run");
    for (path, status, code, says) in [
        ("/v1/ids/uuid7?form=runs", 409, "unsupported", "text"),
        (
            "/v1/ids/snowflake?form=runs&format=hex",
            400,
            "invalid_request",
            "format",
        ),
        (
            "/v1/ids/snowflake?form=row",
            400,
            "invalid_request",
            "form must be",
        ),
    ] {
        let (got, v) = s.json(path).await;
        assert_eq!((got, error_code(&v)), (status, code), "{path}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{path}: {v}"
        );
    }
}
