//! The HTTP/1.1 fast path for `GET /v1/ids/{name}` and Leaf's single-ID routes, over raw TCP: pipelined requests, the
//! hand-over to hyper mid-connection, requests split across packets, `Connection: close`,
//! and answers (errors included) that match the router's byte for byte.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PATIENCE: Duration = Duration::from_secs(60);

/// One response read off a connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Header names lower-cased, in order, with their values.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    fn ids(&self) -> Vec<u64> {
        crate::support::ids_of(&self.json())
    }
}

/// A connection and what it has read but not yet taken as a response.
struct Conn {
    tcp: TcpStream,
    read: Vec<u8>,
}

impl Conn {
    async fn open(running: &crate::support::TestServer) -> Self {
        Self::connect(&running.base).await
    }

    async fn connect(base: &str) -> Self {
        let addr = base.trim_start_matches("http://");
        Conn {
            tcp: TcpStream::connect(addr).await.unwrap(),
            read: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.tcp.write_all(bytes).await.unwrap();
    }

    /// The next response, framed by its `content-length`.
    async fn answer(&mut self) -> Answer {
        tokio::time::timeout(PATIENCE, self.next_answer())
            .await
            .expect("an answer in time")
    }

    async fn next_answer(&mut self) -> Answer {
        loop {
            if let Some(end) = self.read.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8(self.read[..end].to_vec()).unwrap();
                let mut lines = head.split("\r\n");
                let status = lines.next().unwrap().split(' ').nth(1).unwrap();
                let headers: Vec<(String, String)> = lines
                    .map(|l| {
                        let (n, v) = l.split_once(':').unwrap();
                        (n.to_ascii_lowercase(), v.trim().to_string())
                    })
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                if self.read.len() >= end + 4 + len {
                    let body = self.read[end + 4..end + 4 + len].to_vec();
                    self.read.drain(..end + 4 + len);
                    return Answer {
                        status: status.parse().unwrap(),
                        headers,
                        body,
                    };
                }
            }
            let mut chunk = [0u8; 8192];
            let n = self.tcp.read(&mut chunk).await.unwrap();
            assert!(
                n > 0,
                "the connection closed before a whole answer: {:?}",
                self.read
            );
            self.read.extend_from_slice(&chunk[..n]);
        }
    }

    /// Whether the server closes the connection, with nothing more to read.
    async fn closes(&mut self) -> bool {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(PATIENCE, self.tcp.read_to_end(&mut rest)).await;
        matches!(read, Ok(Ok(0))) && self.read.is_empty()
    }
}

fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: test\r\n{extra}\r\n")
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order_across_the_hand_over_to_hyper() {
    let s = crate::support::start("snowdrift-fast-pipeline", "").await;
    let mut c = Conn::open(&s).await;
    let tag = r#"{"tag": "pipelined", "step": 10}"#;
    // One write: fast-path requests, then one with a body (hyper's from there on), then
    // more of what the fast path would have taken, which hyper now answers.
    let batch = [
        get("/v1/ids/snowflake?count=2", ""),
        get("/v1/ids/no-such-generator", ""),
        get("/v1/ids/snowflake?count=0", ""),
        format!(
            "POST /v1/tags HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{tag}",
            tag.len()
        ),
        get("/v1/ids/pipelined?count=3", ""),
        get("/v1/ids/snowflake", ""),
        get("/healthz", ""),
    ]
    .concat();
    c.send(batch.as_bytes()).await;
    let mut answers = Vec::new();
    for _ in 0..7 {
        answers.push(c.answer().await);
    }
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 404, 400, 201, 200, 200, 200], "{answers:?}");
    assert_eq!(answers[1].json()["error"]["code"], "not_found");
    assert_eq!(answers[2].json()["error"]["code"], "invalid_request");
    assert_eq!(answers[4].ids().len(), 3);
    let snowflakes = [answers[0].ids(), answers[5].ids()].concat();
    assert_eq!(snowflakes.len(), 3);
    assert!(snowflakes.windows(2).all(|w| w[0] < w[1]), "{snowflakes:?}");

    // The same connection goes on, now served by hyper.
    c.send(get("/v1/ids/snowflake", "").as_bytes()).await;
    let later = c.answer().await;
    assert_eq!(later.status, 200);
    assert!(later.ids()[0] > snowflakes[2]);
}

/// Pipelined answers small and large (copied behind their heads, or written from their own
/// buffers, with queued ones flushed past a bound) arrive whole and in order.
#[tokio::test]
async fn pipelined_small_and_large_answers_arrive_whole_and_in_order() {
    let s = crate::support::start("snowdrift-fast-sizes", "").await;
    let mut c = Conn::open(&s).await;
    let counts = [1, 10_000, 1, 500, 500, 500, 5_000, 1].repeat(6);
    let batch: String = counts
        .iter()
        .map(|n| get(&format!("/v1/ids/snowflake?count={n}"), ""))
        .collect();
    c.send(batch.as_bytes()).await;
    let mut all = Vec::new();
    for &n in &counts {
        let answer = c.answer().await;
        assert_eq!(answer.status, 200);
        let ids = answer.ids();
        assert_eq!(ids.len(), n);
        all.extend(ids);
    }
    assert!(all.windows(2).all(|w| w[0] < w[1]), "in order, no repeats");
}

#[tokio::test]
async fn a_request_that_arrives_a_few_bytes_at_a_time_is_answered() {
    let s = crate::support::start("snowdrift-fast-split", "").await;
    let mut c = Conn::open(&s).await;
    let two = [
        get("/v1/ids/snowflake?count=4", ""),
        get("/v1/ids/snowflake", ""),
    ]
    .concat();
    for piece in two.as_bytes().chunks(3) {
        c.send(piece).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (first, second) = (c.answer().await, c.answer().await);
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.ids().len(), 4);
    assert!(first.ids()[3] < second.ids()[0]);
}

#[tokio::test]
async fn connection_close_is_answered_then_the_connection_closes() {
    let s = crate::support::start("snowdrift-fast-close", "").await;
    let mut c = Conn::open(&s).await;
    c.send(get("/v1/ids/snowflake", "connection: close\r\n").as_bytes())
        .await;
    let answer = c.answer().await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(c.closes().await, "the server closes after the answer");
}

#[tokio::test]
async fn an_http_1_0_request_is_served_by_hyper() {
    let s = crate::support::start("snowdrift-fast-http10", "").await;
    let mut c = Conn::open(&s).await;
    c.send(b"GET /v1/ids/snowflake?count=2 HTTP/1.0\r\n\r\n")
        .await;
    let answer = c.answer().await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.ids().len(), 2);
    assert!(c.closes().await, "HTTP/1.0 without keep-alive closes");
}

/// Every answer the fast path gives is the one the router gives: the same status, headers
/// and body (IDs aside), for `/v1/ids/{name}` and Leaf's single-ID routes. Each request goes
/// once as is (the fast path) and once with an empty body's `content-length: 0`, which only
/// hyper and the router take.
#[tokio::test]
async fn the_fast_path_answers_as_the_router_does() {
    let s = crate::support::start("snowdrift-fast-same", "").await;
    s.post("/v1/tags", r#"{"tag": "leafy", "step": 10}"#, 201)
        .await;
    let mut fast = Conn::open(&s).await;
    let mut routed = Conn::open(&s).await;
    for path in [
        "/v1/ids/no-such-generator",
        "/v1/ids/snowflake?count=0",
        "/v1/ids/snowflake?count=abc",
        "/v1/ids/snowflake?count=100001",
        "/v1/ids/snowflake?format=bogus",
        "/v1/ids/snowflake?colour=red",
        "/v1/ids/snowflake?count=1&count=2",
        "/v1/ids/snowflake?format=hex&count=2",
        "/v1/ids/snowflake",
        "/v1/ids/leafy?count=3",
        "/api/segment/get/leafy",
        "/api/segment/get/no-such-tag",
        "/api/segment/get/snowflake",
        "/api/snowflake/get/any-key",
        "/api/snowflake/get/snowflake?ignored=1",
    ] {
        fast.send(get(path, "").as_bytes()).await;
        routed
            .send(get(path, "content-length: 0\r\n").as_bytes())
            .await;
        let (a, b) = (fast.answer().await, routed.answer().await);
        assert_eq!(a.status, b.status, "{path}: {a:?} {b:?}");
        let names = |x: &Answer| x.headers.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), names(&b), "{path}");
        assert_eq!(a.header("content-type"), b.header("content-type"), "{path}");
        match (a.status, a.header("content-type")) {
            (200, Some("application/json")) => {
                assert_eq!(a.body.len(), b.body.len(), "{path}");
                assert_eq!(a.json()["name"], b.json()["name"], "{path}");
            }
            // Leaf's answer: one ID as text, a fresh one each time.
            (200, _) => {
                let id = |x: &Answer| String::from_utf8(x.body.clone()).unwrap().parse::<u64>();
                assert!(id(&a).unwrap() < id(&b).unwrap(), "{path}: {a:?} {b:?}");
            }
            _ => assert_eq!(a.body, b.body, "{path}"),
        }
    }
    // Both were timed under the route's pattern.
    let metrics = s.text("/metrics", 200).await;
    for line in [
        r#"snowdrift_request_duration_seconds_count{route="/v1/ids/{name}",method="GET",status="404"} 2"#,
        r#"snowdrift_request_duration_seconds_count{route="/api/segment/get/{tag}",method="GET",status="404"} 2"#,
        r#"snowdrift_request_duration_seconds_count{route="/api/snowflake/get/{key}",method="GET",status="200"} 4"#,
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
}

/// Every HTTP answer says `x-content-type-options: nosniff`, so no browser reads an error's
/// text or an ID as HTML: the fast path's (IDs and refusals), the router's (every route, its
/// 404 and 405, a refused body), and hyper's own answers to a malformed or oversized head.
#[tokio::test]
async fn every_answer_says_nosniff() {
    let s = crate::support::start("snowdrift-fast-nosniff", "").await;
    let mut fast = Conn::open(&s).await;
    let mut routed = Conn::open(&s).await;
    // Routes and statuses the_fast_path_answers_as_the_router_does does not count in the
    // process' metrics.
    for path in [
        "/v1/ids/snowflake",
        "/v1/ids/snowflake?count=0",
        "/api/segment/get/snowflake",
        "/api/segment/get/bad%20tag",
    ] {
        fast.send(get(path, "").as_bytes()).await;
        routed
            .send(get(path, "content-length: 0\r\n").as_bytes())
            .await;
        for (how, a) in [
            ("fast", fast.answer().await),
            ("routed", routed.answer().await),
        ] {
            assert_eq!(
                a.header("x-content-type-options"),
                Some("nosniff"),
                "{how} {path}: {a:?}"
            );
        }
    }
    for request in [
        get("/healthz", ""),
        get("/openapi.json", ""),
        get("/ui", ""),
        get("/v1/tags", ""),
        get("/v1/ids/snowflake/decode/1", ""),
        get("/no/such/route", ""),
        "DELETE /v1/ids/snowflake HTTP/1.1\r\nhost: test\r\n\r\n".to_string(),
        "POST /v1/tags HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n\
         content-length: 3\r\n\r\n{x}"
            .to_string(),
    ] {
        routed.send(request.as_bytes()).await;
        let a = routed.answer().await;
        assert_eq!(
            a.header("x-content-type-options"),
            Some("nosniff"),
            "{request}: {a:?}"
        );
    }
    // hyper's answers to what is not HTTP, or a head past limits.max_head.
    let huge = format!("x-big: {}\r\n", "a".repeat(200_000));
    for request in [
        "NOT HTTP AT ALL\r\n\r\n".to_string(),
        get("/v1/ids/snowflake", &huge),
    ] {
        let mut conn = Conn::open(&s).await;
        conn.send(request.as_bytes()).await;
        let a = conn.answer().await;
        assert!(a.status == 400 || a.status == 431, "{a:?}");
        assert_eq!(a.header("x-content-type-options"), Some("nosniff"), "{a:?}");
    }
}

/// A GET of `path` with the raw header lines `headers` and `extra`.
fn request(path: &str, headers: &[u8], extra: &[u8]) -> Vec<u8> {
    let head = format!("GET {path} HTTP/1.1\r\nhost: test\r\n").into_bytes();
    [&head[..], headers, extra, b"\r\n"].concat()
}

fn token_toml(name: &str, token: &str, generators: &str, extra: &str) -> String {
    format!(
        "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = {generators}\nrole = \
         \"read\"\n{extra}\n",
        snowdrift_server::auth::TokenHash::of(token)
    )
}

/// With auth on, the fast path refuses as the router's layer does: the same status,
/// `www-authenticate`, `retry-after` and body, for every kind of refusal. A connection that
/// keeps presenting its token still has each request counted against the token's rate, and
/// after a reload that removes the token its next request is refused.
#[tokio::test]
async fn with_auth_on_the_fast_path_refuses_as_the_router_does() {
    use snowdrift_server::auth::generate_token;
    let (reader, limited, root) = (
        generate_token().unwrap(),
        generate_token().unwrap(),
        generate_token().unwrap(),
    );
    let dir = crate::support::TempDir::new("snowdrift-fast-auth");
    let base = "[server]\nlisten = \"127.0.0.1:0\"\n".to_string()
        + &token_toml("root", &root, r#"["*"]"#, "").replace("\"read\"", "\"admin\"");
    let readers = token_toml("reader", &reader, r#"["snowflake", "leafy"]"#, "")
        + &token_toml(
            "limited",
            &limited,
            r#"["snowflake"]"#,
            "rate = 1\nburst = 1",
        );
    let config = crate::support::load(&dir.0, &format!("{base}{readers}"));
    let running = crate::support::spawn(&config).await;
    let created = reqwest::Client::new()
        .post(format!("{}/v1/tags", running.base()))
        .bearer_auth(&root)
        .body(r#"{"tag": "leafy", "step": 10}"#)
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let mut fast = Conn::connect(&running.base()).await;
    let mut routed = Conn::connect(&running.base()).await;
    let bearer = |t: &str| format!("authorization: Bearer {t}\r\n").into_bytes();
    // The limited token's one request of this second, so both below get its 429.
    fast.send(&request("/v1/ids/snowflake", &bearer(&limited), b""))
        .await;
    assert_eq!(fast.answer().await.status, 200);
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("/v1/ids/snowflake", Vec::new(), 401),
        (
            "/v1/ids/snowflake",
            b"authorization: Basic abc\r\n".to_vec(),
            401,
        ),
        (
            "/v1/ids/snowflake",
            b"authorization: Bearer\r\n".to_vec(),
            401,
        ),
        ("/v1/ids/snowflake", bearer("sd_not_a_token"), 401),
        (
            "/v1/ids/snowflake",
            b"authorization: Bearer \xff\xfe\r\n".to_vec(),
            401,
        ),
        ("/v1/ids/no-such-name", bearer(&reader), 403),
        ("/api/segment/get/other", bearer(&reader), 403),
        ("/v1/ids/snowflake", bearer(&limited), 429),
        ("/v1/ids/snowflake?count=2", bearer(&reader), 200),
        ("/api/segment/get/leafy", bearer(&reader), 200),
        ("/api/snowflake/get/any-key", bearer(&reader), 200),
        ("/v1/ids/snowflake?count=0", bearer(&reader), 400),
    ];
    let fast_answers = || async {
        let text = reqwest::get(format!("{}/metrics", running.base()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("snowdrift_http_fast_requests_total "))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no fast-path count in {text}"))
    };
    let before = fast_answers().await;
    for (path, header, want) in &cases {
        fast.send(&request(path, header, b"")).await;
        routed
            .send(&request(path, header, b"content-length: 0\r\n"))
            .await;
        let (a, b) = (fast.answer().await, routed.answer().await);
        assert_eq!((a.status, b.status), (*want, *want), "{path}: {a:?} {b:?}");
        let names = |x: &Answer| x.headers.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), names(&b), "{path}");
        for h in ["content-type", "www-authenticate", "retry-after"] {
            assert_eq!(a.header(h), b.header(h), "{path}: {h}");
        }
        if a.status != 200 {
            assert_eq!(a.body, b.body, "{path}");
        }
    }
    // The fast path answered every one of them itself; the router, the others.
    assert_eq!(fast_answers().await - before, cases.len() as u64);
    // The same token again on the same connection: its rate still counts per request.
    let again = request("/v1/ids/snowflake", &bearer(&limited), b"");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for want in [200, 429] {
        fast.send(&again).await;
        assert_eq!(fast.answer().await.status, want);
    }
    // A reload without the reader's token: its next request on this connection is refused.
    let read = request("/v1/ids/snowflake", &bearer(&reader), b"");
    fast.send(&read).await;
    assert_eq!(fast.answer().await.status, 200);
    let without = crate::support::load(&dir.0, &base);
    running.reloader.reload(&without).unwrap();
    fast.send(&read).await;
    let refused = fast.answer().await;
    assert_eq!(refused.status, 401, "{refused:?}");
}
