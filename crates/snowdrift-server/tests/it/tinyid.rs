//! Didi Tinyid's routes as Tinyid's client and callers see them: every answer byte for byte
//! (JSON field order, content types, HTTP 200 for every error, the `*Simple` routes' empty
//! body), each error form on each route, the token as a query or form parameter, the
//! config switch, and the proof that a segment's five fields make Tinyid's client issue
//! exactly the claimed IDs, on one store and on striped stores (`delta`, `remainder`).

use std::collections::BTreeSet;

use snowdrift_proto::tinyid::Segment;
use snowdrift_server::auth::TokenHash;
use snowdrift_store::segment::SegmentStore;

use crate::support::{Running, TempDir, load, spawn};

/// The Tinyid-style token (32 hex digits, as `tiny_id_token` rows hold) the servers know,
/// scoped to `order`, `seg`, `snowflake` and `uuid7`.
const TOKEN: &str = "0f673adf80504e2eaa552f5d791b644c";
/// A token scoped to `other` only.
const OTHER: &str = "sd_other_scope_token";
/// An admin token, for creating tags.
const ADMIN: &str = "sd_admin_token_for_tags";

struct Server {
    base: String,
    client: reqwest::Client,
    running: Running,
    _dir: TempDir,
}

/// What a request got: status, content type, body.
#[derive(Debug)]
struct Got {
    status: u16,
    content_type: String,
    body: String,
}

impl Server {
    /// A server with the three tokens, `extra` in its config and a SQLite store of its own
    /// (unless `extra` has a `[store]`), with the tags `tags` (name, step) created.
    async fn start(prefix: &str, extra: &str, tags: &[(&str, u32)]) -> Server {
        let dir = TempDir::new(prefix);
        let token = |name: &str, secret: &str, generators: &str, role: &str| {
            format!(
                "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = {generators}\n\
                 role = \"{role}\"\n",
                TokenHash::of(secret)
            )
        };
        let toml = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n{extra}\n\
             [[generator]]\nname = \"snowflake\"\nkind = \"snowflake\"\nlayout = \"twitter\"\n\
             [[generator]]\nname = \"uuid7\"\nkind = \"uuid7\"\n{}{}{}",
            token(
                "tinyid",
                TOKEN,
                r#"["order", "seg", "dated", "snowflake", "uuid7", "nope"]"#,
                "read"
            ),
            token("other", OTHER, r#"["other"]"#, "read"),
            token("admin", ADMIN, r#"["*"]"#, "admin"),
        );
        let config = load(&dir.0, &toml);
        let running = spawn(&config).await;
        let server = Server {
            base: running.base(),
            client: reqwest::Client::builder()
                .timeout(std::time::Duration::from_secs(60))
                .build()
                .unwrap(),
            running,
            _dir: dir,
        };
        for (tag, step) in tags {
            let r = server
                .client
                .post(format!("{}/v1/tags", server.base))
                .bearer_auth(ADMIN)
                .json(&serde_json::json!({"tag": tag, "step": step}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
        }
        server
    }

    /// `method path` with `form` as a form body (none when empty), as Tinyid's client sends
    /// it: `application/x-www-form-urlencoded`.
    async fn send(&self, method: &str, path: &str, form: &str) -> Got {
        let mut request = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base));
        if !form.is_empty() || method == "POST" {
            request = request
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form.to_string());
        }
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        let content_type = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = r.text().await.unwrap();
        Got {
            status,
            content_type,
            body,
        }
    }

    /// POST to `route` (a name under `/tinyid/id/`) with `query`, an empty form body:
    /// what Tinyid's client does. Asserts HTTP 200, as every Tinyid answer is, and the
    /// route's content type.
    async fn tinyid(&self, route: &str, query: &str) -> String {
        let got = self
            .send("POST", &format!("/tinyid/id/{route}?{query}"), "")
            .await;
        assert_eq!(got.status, 200, "{route}?{query}: {got:?}");
        let want = if route.ends_with("Simple") {
            "text/plain;charset=UTF-8"
        } else {
            "application/json;charset=UTF-8"
        };
        assert_eq!(got.content_type, want, "{route}?{query}");
        got.body
    }
}

fn with_token(query: &str) -> String {
    format!("token={TOKEN}&{query}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_tinyid_s_byte_for_byte() {
    let s = Server::start(
        "snowdrift-tinyid-bytes",
        "[limits]\nmax_count = 5\n",
        &[("order", 1000), ("seg", 100)],
    )
    .await;
    // A fresh tag's IDs from the server's buffer, in Tinyid's JSON and text.
    assert_eq!(
        s.tinyid("nextId", &with_token("bizType=order&batchSize=3"))
            .await,
        r#"{"data":[1,2,3],"code":200,"message":""}"#
    );
    assert_eq!(
        s.tinyid("nextIdSimple", &with_token("bizType=order&batchSize=2"))
            .await,
        "4,5"
    );
    // batchSize missing or empty is 1; above limits.max_count it is cut to it.
    assert_eq!(
        s.tinyid("nextIdSimple", &with_token("bizType=order")).await,
        "6"
    );
    assert_eq!(
        s.tinyid("nextIdSimple", &with_token("bizType=order&batchSize="))
            .await,
        "7"
    );
    assert_eq!(
        s.tinyid(
            "nextIdSimple",
            &with_token("bizType=order&batchSize=999999")
        )
        .await,
        "8,9,10,11,12"
    );
    // Segments: claimed from the store for the client, the next one above the last.
    assert_eq!(
        s.tinyid("nextSegmentIdSimple", &with_token("bizType=seg"))
            .await,
        "0,10,100,1,0"
    );
    assert_eq!(
        s.tinyid("nextSegmentId", &with_token("bizType=seg")).await,
        r#"{"data":{"maxId":200,"loadingId":110,"currentId":100,"delta":1,"remainder":0},"code":200,"message":""}"#
    );
    // Parameters from a form body on the methods Tinyid's server reads one on (Tomcat's POST,
    // Spring Boot's PUT and PATCH), any method, and the bearer header when no token
    // parameter is sent.
    let form = format!("bizType=snowflake&token={TOKEN}");
    for method in ["POST", "PUT", "PATCH"] {
        let got = s
            .send(method, "/tinyid/id/nextIdSimple?batchSize=2", &form)
            .await;
        assert_eq!(got.status, 200, "{method}");
        let ids: Vec<u64> = got.body.split(',').map(|i| i.parse().unwrap()).collect();
        assert!(ids.len() == 2 && ids[0] < ids[1], "{method}: {got:?}");
    }
    // On GET and DELETE the form is left unread, as Tinyid's server leaves it: no bizType.
    for method in ["GET", "DELETE"] {
        let got = s.send(method, "/tinyid/id/nextId", &form).await;
        assert_eq!(
            (got.status, got.body.as_str()),
            (200, r#"{"data":null,"code":5,"message":"token is error"}"#),
            "{method}"
        );
        let query = format!(
            "/tinyid/id/nextIdSimple?{}",
            with_token("bizType=snowflake")
        );
        let got = s.send(method, &query, "").await;
        assert!(got.body.parse::<u64>().is_ok(), "{method}: {got:?}");
    }
    let r = s
        .client
        .get(format!("{}/tinyid/id/nextIdSimple?bizType=order", s.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.text().await.unwrap(), "13");

    // Names the routes do not take are ignored, as Spring ignores them (batchSize too, on
    // the segment routes), and so is a body that is not a form.
    assert_eq!(
        s.tinyid(
            "nextIdSimple",
            &with_token("bizType=order&size=3&batchSize=2&biztype=seg&x")
        )
        .await,
        "14,15"
    );
    assert_eq!(
        s.tinyid(
            "nextSegmentIdSimple",
            &with_token("bizType=seg&batchSize=3&x=1")
        )
        .await,
        "200,210,300,1,0"
    );
    let json_body = |query: String| {
        s.client
            .post(format!("{}/tinyid/id/nextIdSimple?{query}", s.base))
            .json(&serde_json::json!({"bizType": "seg", "batchSize": 3}))
            .send()
    };
    let got = json_body(with_token("bizType=order")).await.unwrap();
    assert_eq!(got.text().await.unwrap(), "16");
    let got = json_body(String::new()).await.unwrap();
    assert_eq!(got.text().await.unwrap(), "");

    // batchSize zero or below asks for no IDs: nextId answers an empty list, nextIdSimple
    // an empty body, as Tinyid's do, and neither issues one; an unknown bizType is still
    // refused. What Spring reads as an int is read so: hex, spaces anywhere.
    for none in ["0", "-3", "-0", "0x0", "-2147483648"] {
        let query = with_token(&format!("bizType=order&batchSize={none}"));
        assert_eq!(
            s.tinyid("nextId", &query).await,
            r#"{"data":[],"code":200,"message":""}"#,
            "{none}"
        );
        assert_eq!(s.tinyid("nextIdSimple", &query).await, "", "{none}");
    }
    let got = s
        .tinyid("nextId", &with_token("bizType=nope&batchSize=0"))
        .await;
    assert!(
        got.starts_with(r#"{"data":null,"code":6,"message":""#) && got.contains("does not exist"),
        "{got}"
    );
    assert_eq!(
        s.tinyid("nextIdSimple", &with_token("bizType=order&batchSize=0x2"))
            .await,
        "17,18"
    );
    assert_eq!(
        s.tinyid(
            "nextIdSimple",
            &with_token("bizType=order&batchSize=+1+%09")
        )
        .await,
        "19"
    );

    // OPTIONS is answered as Spring answers it for a mapping without a method: 200, the
    // methods in Allow, no body, nothing issued. TRACE is refused, as Tomcat refuses it.
    for route in [
        "nextId",
        "nextIdSimple",
        "nextSegmentId",
        "nextSegmentIdSimple",
    ] {
        let url = format!(
            "{}/tinyid/id/{route}?{}",
            s.base,
            with_token("bizType=order")
        );
        let r = s
            .client
            .request(reqwest::Method::OPTIONS, &url)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{route}");
        assert_eq!(
            r.headers()["allow"].to_str().unwrap(),
            "GET,HEAD,POST,PUT,PATCH,DELETE,OPTIONS",
            "{route}"
        );
        assert_eq!(r.text().await.unwrap(), "", "{route}");
        let r = s
            .client
            .request(reqwest::Method::TRACE, &url)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 405, "{route}");
    }
    assert_eq!(
        s.tinyid("nextIdSimple", &with_token("bizType=order")).await,
        "20"
    );

    // A tag with a template issues text: it has no segment for a client.
    let r = s
        .client
        .post(format!("{}/v1/tags", s.base))
        .bearer_auth(ADMIN)
        .json(&serde_json::json!({"tag": "dated", "template": "ORD{seq:06}"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);

    // Every error is HTTP 200: code 5 for the token, 6 with the reason for the rest; the
    // Simple routes answer an empty body.
    let token_error = r#"{"data":null,"code":5,"message":"token is error"}"#;
    let cases: &[(&str, &str, Option<&str>)] = &[
        // (query, what a JSON route's message says; None: code 5)
        ("token=wrong&bizType=order", "", None),
        ("bizType=order", "", None),
        ("token=&bizType=order", "", None),
        // A real token, not for this bizType (nor for a name no tag can have).
        (&format!("token={OTHER}&bizType=order"), "", None),
        (&with_token("bizType=bad%20name"), "", None),
        (&with_token("bizType=nope"), "does not exist", Some("6")),
        // No bizType: Tinyid's token check fails for one, whatever the token.
        (&with_token(""), "", None),
        (&with_token("bizType="), "", None),
        (&with_token("batchSize=2"), "", None),
        // Given twice, Spring joins its values: a name no token is scoped to.
        (&with_token("bizType=order&bizType=seg"), "", None),
        (
            &with_token("bizType=order&batchSize=abc"),
            "\"abc\"",
            Some("ids"),
        ),
        (
            &with_token("bizType=order&batchSize=2147483648"),
            "fits a Java int",
            Some("ids"),
        ),
        (&with_token("bizType=uuid7"), "text IDs", Some("ids")),
        (
            &with_token("bizType=uuid7&batchSize=0"),
            "text IDs",
            Some("ids"),
        ),
        (
            &with_token("bizType=dated&batchSize=0"),
            "text IDs",
            Some("ids"),
        ),
        (
            &with_token("bizType=snowflake"),
            "not a segment tag",
            Some("segment"),
        ),
        (
            &with_token("bizType=dated"),
            "has a template",
            Some("segment"),
        ),
    ];
    for (query, reason, only) in cases {
        for route in [
            "nextId",
            "nextIdSimple",
            "nextSegmentId",
            "nextSegmentIdSimple",
        ] {
            let segment = route.starts_with("nextSegment");
            match only {
                Some("ids") if segment => continue,
                Some("segment") if !segment => continue,
                _ => {}
            }
            let body = s.tinyid(route, query).await;
            if route.ends_with("Simple") {
                assert_eq!(body, "", "{route}?{query}");
            } else if only.is_none() {
                assert_eq!(body, token_error, "{route}?{query}");
            } else {
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                assert!(
                    body.starts_with(r#"{"data":null,"code":6,"message":""#),
                    "{route}?{query}: {body}"
                );
                let message = v["message"].as_str().unwrap();
                assert!(message.contains(reason), "{route}?{query}: {message}");
                assert!(!message.contains(TOKEN), "{route}?{query}: {message}");
            }
        }
    }
    // None of the refusals took an ID: the tag goes on where it was.
    assert_eq!(
        s.tinyid("nextIdSimple", &with_token("bizType=order")).await,
        "21"
    );

    // The metrics count answers by route and Tinyid code, and time them by route.
    let metrics = s
        .client
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in [
        r#"snowdrift_tinyid_answers_total{route="/tinyid/id/nextId",code="5"} 11"#,
        r#"snowdrift_tinyid_answers_total{route="/tinyid/id/nextSegmentIdSimple",code="200"} 2"#,
        r#"route="/tinyid/id/nextSegmentIdSimple",method="POST",status="200""#,
    ] {
        assert!(metrics.contains(line), "no {line} in:\n{metrics}");
    }
    s.running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tinyid_routes_can_be_turned_off() {
    let s = Server::start("snowdrift-tinyid-off", "[tinyid]\nenabled = false\n", &[]).await;
    let got = s
        .send(
            "POST",
            &format!(
                "/tinyid/id/nextIdSimple?{}",
                with_token("bizType=snowflake")
            ),
            "",
        )
        .await;
    assert_eq!(got.status, 404, "{got:?}");
    assert!(got.body.contains("not_found"), "{got:?}");
    let doc: serde_json::Value =
        serde_json::from_str(&s.send("GET", "/openapi.json", "").await.body).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(
        paths.keys().all(|p| !p.starts_with("/tinyid/")),
        "the served document lists Tinyid's routes"
    );
    assert!(paths.contains_key("/api/segment/get/{tag}"));
    s.running.shutdown().await.unwrap();
}

/// What Tinyid's client issues from an answer of `nextSegmentIdSimple`.
fn issued(answer: &str) -> (Segment, Vec<u64>) {
    let segment = Segment::parse_simple(answer).unwrap();
    let ids = segment
        .client_ids()
        .unwrap_or_else(|| panic!("{answer}: not a clean segment"))
        .map(|id| u64::try_from(id).unwrap())
        .collect();
    (segment, ids)
}

/// The numbers below `max_id` (a tag's next free number) that are `k` modulo `n`: every ID
/// a store has handed out when nothing else took from it.
fn class(max_id: i64, n: u64, k: u64) -> BTreeSet<u64> {
    (1..u64::try_from(max_id).unwrap())
        .filter(|id| id % n == k)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_issues_exactly_the_claimed_ids_striped_or_not() {
    // Two SQLite stores striped, and one plain: each tag is claimed by the client only, so
    // what every client issued must be every number each store handed out, no more.
    let dir = TempDir::new("snowdrift-tinyid-stores");
    let urls: Vec<String> = ["a", "b"]
        .iter()
        .map(|f| format!("sqlite://{}", dir.0.join(format!("{f}.db")).display()))
        .collect();
    let striped = Server::start(
        "snowdrift-tinyid-striped",
        &format!("[store]\nurls = [\"{}\", \"{}\"]\n", urls[0], urls[1]),
        &[("seg", 10)],
    )
    .await;
    let mut by_store: [BTreeSet<u64>; 2] = Default::default();
    for _ in 0..20 {
        let answer = striped
            .tinyid("nextSegmentIdSimple", &with_token("bizType=seg"))
            .await;
        let (segment, ids) = issued(&answer);
        assert_eq!(segment.delta, 2, "{answer}");
        let k = usize::try_from(segment.remainder).unwrap();
        assert!(k < 2, "{answer}");
        assert!(!ids.is_empty(), "{answer}");
        for id in ids {
            assert_eq!(id % 2, k as u64, "{answer}: {id}");
            assert!(by_store[k].insert(id), "{id} issued twice ({answer})");
        }
    }
    striped.running.shutdown().await.unwrap();
    for (k, url) in urls.iter().enumerate() {
        let store = SegmentStore::connect(url, "leaf_alloc").await.unwrap();
        let max_id = store.get_tag("seg").await.unwrap().max_id;
        assert!(max_id > 1, "store {k} was never claimed from");
        assert_eq!(
            by_store[k],
            class(max_id, 2, k as u64),
            "store {k}: the IDs the client issued are not the ones claimed"
        );
    }

    let plain = Server::start("snowdrift-tinyid-plain", "", &[("seg", 7)]).await;
    let mut all = BTreeSet::new();
    for i in 0..15 {
        let route = if i % 2 == 0 {
            "nextSegmentIdSimple"
        } else {
            "nextSegmentId"
        };
        let answer = plain.tinyid(route, &with_token("bizType=seg")).await;
        let simple = if route == "nextSegmentId" {
            let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
            let d = &v["data"];
            format!(
                "{},{},{},{},{}",
                d["currentId"], d["loadingId"], d["maxId"], d["delta"], d["remainder"]
            )
        } else {
            answer
        };
        let (segment, ids) = issued(&simple);
        assert_eq!((segment.delta, segment.remainder), (1, 0), "{simple}");
        for id in ids {
            assert!(all.insert(id), "{id} issued twice");
        }
    }
    let tags = plain
        .client
        .get(format!("{}/v1/tags/seg", plain.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    let max_id: i64 = tags["max_id"].as_str().unwrap().parse().unwrap();
    assert_eq!(max_id, 1 + 15 * 7);
    assert_eq!(all, class(max_id, 1, 0));
    plain.running.shutdown().await.unwrap();
}
