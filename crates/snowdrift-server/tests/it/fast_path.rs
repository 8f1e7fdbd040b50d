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
        self.json()["ids"]
            .as_array()
            .unwrap_or_else(|| panic!("no ids: {self:?}"))
            .iter()
            .map(|id| id.as_str().unwrap().parse().unwrap())
            .collect()
    }
}

/// A connection and what it has read but not yet taken as a response.
struct Conn {
    tcp: TcpStream,
    read: Vec<u8>,
}

impl Conn {
    async fn open(running: &crate::support::TestServer) -> Self {
        let addr = running.base.trim_start_matches("http://");
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
