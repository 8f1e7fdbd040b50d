//! What a request's body may cost before and after auth (issue 27, items 6-8): a gRPC call
//! without a known token is refused from its headers, before its message is read; a gRPC
//! message over `limits.grpc_max_message` is refused at its length prefix; a body that is
//! not whole within `limits.body_timeout` is cut, over HTTP/1.1, HTTP/2, gRPC and RESP, even
//! with an admin token; a RESP request over `limits.resp_max_frame` is refused at its length
//! line. The memory these bound is measured in the `snowdrift` crate's `memory_limits`
//! tests, against `snowdrift serve` as a process of its own.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use snowdrift_server::auth::{TokenHash, generate_token};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use tower::Service;

/// Generous bounds for a loaded 2-core machine: liveness, not speed.
const PATIENCE: Duration = Duration::from_secs(15);

/// A request body: `queue` at once, then (with `drip`) one byte every interval, never ending.
struct Trickle {
    queue: VecDeque<Bytes>,
    drip: Option<tokio::time::Interval>,
}

impl Trickle {
    fn new(first: impl Into<Bytes>, drip: Option<Duration>) -> Self {
        Self {
            queue: VecDeque::from([first.into()]),
            drip: drip.map(|every| {
                let mut interval = tokio::time::interval(every);
                interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                interval
            }),
        }
    }
}

impl http_body::Body for Trickle {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(part) = self.queue.pop_front() {
            return Poll::Ready(Some(Ok(Frame::data(part))));
        }
        match self.drip.as_mut() {
            Some(interval) => {
                ready!(interval.poll_tick(cx));
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"1")))))
            }
            None => Poll::Pending,
        }
    }
}

/// A gRPC message's length prefix for `len` bytes, uncompressed.
fn prefix(len: u32) -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend_from_slice(&len.to_be_bytes());
    v
}

/// Sends `body` as a call to `path` over `channel` (HTTP/2), and returns the answer's
/// status code and headers once they come: a call refused before or while its body is read
/// is answered trailers-only, so the gRPC status is in them.
async fn call(
    channel: &mut Channel,
    method: &str,
    path: &str,
    content_type: &str,
    token: Option<&str>,
    body: Trickle,
) -> axum::http::Response<tonic::body::Body> {
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .header("te", "trailers");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(tonic::body::Body::new(body)).unwrap();
    std::future::poll_fn(|cx| channel.poll_ready(cx))
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, channel.call(request))
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {PATIENCE:?}"))
        .unwrap()
}

/// The gRPC status of a trailers-only answer.
fn status_of(response: &axum::http::Response<tonic::body::Body>) -> Status {
    Status::from_header_map(response.headers())
        .unwrap_or_else(|| panic!("not a trailers-only gRPC answer: {response:?}"))
}

/// A server with RESP, an admin token (returned) and `limits`.
async fn start(prefix: &str, limits: &str) -> (crate::support::TestServer, String, Channel) {
    let admin = generate_token().unwrap();
    let s = crate::support::start(
        prefix,
        &format!(
            "resp_listen = \"127.0.0.1:0\"\n\
             [[auth.token]]\nname = \"admin\"\nhash = \"{}\"\ngenerators = [\"*\"]\n\
             role = \"admin\"\n[limits]\n{limits}",
            TokenHash::of(&admin)
        ),
    )
    .await;
    // A fresh file-registry claim issues only after a short guard: wait until it does.
    let started = Instant::now();
    while s
        .client
        .get(format!("{}/readyz", s.base))
        .send()
        .await
        .map_or(true, |r| r.status() != 200)
    {
        assert!(started.elapsed() < Duration::from_secs(60), "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let channel = Endpoint::from_shared(s.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    (s, admin, channel)
}

/// Everything the server sends on `tcp` until it closes it, or `None` if it is still open
/// after `within`.
async fn until_closed(tcp: &mut TcpStream, within: Duration) -> Option<String> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    });
    read.await.ok()?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// Writes a byte every `every` into `tcp`'s write half until a write fails, while the
/// caller reads: a body (or RESP request) sent as slowly as the attack sends it.
fn drip(
    tcp: TcpStream,
    every: Duration,
) -> (tokio::net::tcp::OwnedReadHalf, tokio::task::JoinHandle<()>) {
    let (read, mut write) = tcp.into_split();
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if write.write_all(b"1").await.is_err() {
                return;
            }
        }
    });
    (read, task)
}

/// Reads `read` until the server closes it: what it sent, or `None` after `within`.
async fn read_until_closed(
    read: &mut tokio::net::tcp::OwnedReadHalf,
    within: Duration,
) -> Option<String> {
    let mut got = Vec::new();
    let done = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    });
    done.await.ok()?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_call_without_a_token_is_refused_before_its_message_is_read() {
    let (s, admin, mut channel) = start("snowdrift-grpc-first", "").await;
    // What HTTP answers a request without a token.
    let r = s
        .client
        .get(format!("{}/v1/ids/snowflake", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let http: serde_json::Value = r.json().await.unwrap();
    let http_message = http["error"]["message"].as_str().unwrap().to_string();

    // The attack: a 4 MiB message, its prefix and a first part sent, the rest never. Before
    // the fix the server read (and held) it, waiting for the last byte.
    let mut first = prefix(4 * 1024 * 1024);
    first.extend(vec![0u8; 60_000]);
    for (path, token) in [
        ("/snowdrift.v1.IdService/Next", None),
        ("/snowdrift.v1.IdService/Decode", None),
        ("/snowdrift.v1.IdService/Stream", Some("sd_not_a_token")),
    ] {
        let response = call(
            &mut channel,
            "POST",
            path,
            "application/grpc",
            token,
            Trickle::new(first.clone(), None),
        )
        .await;
        let status = status_of(&response);
        assert_eq!(status.code(), Code::Unauthenticated, "{path}: {status:?}");
        if token.is_none() {
            assert_eq!(status.message(), http_message, "{path}");
        }
        assert_eq!(
            status
                .metadata()
                .get(snowdrift_proto::grpc::ERROR_CODE_KEY)
                .unwrap(),
            "unauthorized"
        );
    }

    // With a token, a message over the cap is refused at its prefix, naming the cap.
    for (path, token) in [
        ("/snowdrift.v1.IdService/Next", Some(admin.as_str())),
        // The health service is open: its messages are capped all the same.
        ("/grpc.health.v1.Health/Check", None),
    ] {
        let response = call(
            &mut channel,
            "POST",
            path,
            "application/grpc",
            token,
            Trickle::new(first.clone(), None),
        )
        .await;
        let status = status_of(&response);
        assert_eq!(status.code(), Code::ResourceExhausted, "{path}: {status:?}");
        assert_eq!(
            status.message(),
            "request message of 4194304 bytes is over the limit of 16384 \
             (limits.grpc_max_message)",
            "{path}"
        );
    }

    // A real call with the token is served as before.
    let mut ids = snowdrift_proto::grpc::id_service_client::IdServiceClient::new(channel);
    let request = snowdrift_proto::grpc::NextRequest {
        name: "snowflake".into(),
        count: Some(3),
        format: None,
        input: None,
    };
    let batch = ids
        .next(crate::support::with_token(request, &admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(batch.ids().count(), 3);
}

/// Item 7: bodies that come a byte at a time are cut at `body_timeout` over every protocol,
/// with an admin token (auth lets them in, so only the deadline can end them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_are_cut_at_the_body_timeout_on_every_protocol() {
    // The header and idle timeouts are far away: only the body deadline can close these.
    let (s, admin, mut channel) = start(
        "snowdrift-slow-bodies",
        "body_timeout = \"1s\"\nheader_timeout = \"60s\"\nidle_timeout = \"60s\"\n",
    )
    .await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let every = Duration::from_millis(300);
    let started = Instant::now();

    // HTTP/1.1: 20 POSTs declaring 65536 bytes and sending one every 300 ms.
    let mut http1 = Vec::new();
    for _ in 0..20 {
        let mut tcp = TcpStream::connect(&addr).await.unwrap();
        tcp.write_all(
            format!(
                "POST /v1/tags HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {admin}\r\n\
                 content-type: application/json\r\ncontent-length: 65536\r\n\r\n{{"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        http1.push(drip(tcp, every));
    }
    // RESP: 20 authenticated connections, each sending a request a byte at a time.
    let mut resp = Vec::new();
    for _ in 0..20 {
        let mut tcp = TcpStream::connect(s.resp().unwrap()).await.unwrap();
        let auth = format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{admin}\r\n", admin.len());
        tcp.write_all(auth.as_bytes()).await.unwrap();
        let mut ok = [0u8; 5];
        tcp.read_exact(&mut ok).await.unwrap();
        assert_eq!(&ok, b"+OK\r\n");
        tcp.write_all(b"*2\r\n$4\r\nINCR\r\n$1000\r\nsnow")
            .await
            .unwrap();
        resp.push(drip(tcp, every));
    }
    // HTTP/2 (prior knowledge, as gRPC speaks it): the same POST, and a gRPC call whose
    // message comes a byte at a time.
    let h2 = call(
        &mut channel,
        "POST",
        "/v1/tags",
        "application/json",
        Some(&admin),
        Trickle::new(&b"{"[..], Some(every)),
    )
    .await;
    assert_eq!(h2.status().as_u16(), 408);
    let body = http_body_util_collect(h2.into_body()).await;
    assert!(
        body.contains(r#""code":"invalid_request""#) && body.contains("limits.body_timeout (1s)"),
        "{body}"
    );
    let mut first = prefix(100);
    first.extend_from_slice(b"\x0a\x09snowflake");
    let grpc = call(
        &mut channel,
        "POST",
        "/snowdrift.v1.IdService/Next",
        "application/grpc",
        Some(&admin),
        Trickle::new(first, Some(every)),
    )
    .await;
    let status = status_of(&grpc);
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(
        status.message().contains("limits.body_timeout (1s)"),
        "{status:?}"
    );

    for (i, (mut read, dripping)) in http1.into_iter().enumerate() {
        let got = read_until_closed(&mut read, PATIENCE)
            .await
            .unwrap_or_else(|| panic!("HTTP/1.1 connection {i} still open"));
        dripping.abort();
        assert!(got.starts_with("HTTP/1.1 408"), "{got:?}");
        assert!(got.contains("connection: close"), "{got:?}");
        assert!(got.contains("limits.body_timeout (1s)"), "{got:?}");
    }
    for (i, (mut read, dripping)) in resp.into_iter().enumerate() {
        let got = read_until_closed(&mut read, PATIENCE).await;
        dripping.abort();
        assert!(got.is_some(), "RESP connection {i} still open");
    }
    // Far below the 60 s header and idle timeouts.
    assert!(started.elapsed() < Duration::from_secs(30));
    // A body sent whole is served as before.
    let created = s
        .client
        .post(format!("{}/v1/tags", s.base))
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body(r#"{"tag": "whole", "step": 100}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
}

/// Item 8: a RESP request whose length line says it is over `limits.resp_max_frame` is
/// refused at that line, without auth, before its bytes are sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resp_frame_over_the_limit_is_refused_at_its_length_line() {
    let s = crate::support::start(
        "snowdrift-resp-frame",
        "resp_listen = \"127.0.0.1:0\"\n[limits]\nresp_max_frame = 2048\n",
    )
    .await;
    let resp = s.resp().unwrap();
    let mut added_up = b"*3\r\n$4\r\nINCR\r\n$1000\r\n".to_vec();
    added_up.extend(vec![b'x'; 1000]);
    added_up.extend_from_slice(b"\r\n$1100\r\n");
    for (sent, size) in [
        // One argument of 1 MiB, and its first bytes.
        (b"*1\r\n$1048576\r\nabc".to_vec(), 1_048_592),
        // Arguments each within what an argument may hold, too many bytes together.
        (added_up, 2132),
        // The 1 MiB request of sixteen 64 KiB arguments.
        (b"*16\r\n$65536\r\n".to_vec(), 65_551),
    ] {
        let mut tcp = TcpStream::connect(resp).await.unwrap();
        tcp.write_all(&sent).await.unwrap();
        let got = until_closed(&mut tcp, PATIENCE)
            .await
            .unwrap_or_else(|| panic!("{sent:?}: still open"));
        assert_eq!(
            got,
            format!(
                "-ERR frame of {size} bytes is over the limit of 2048 (limits.resp_max_frame)\r\n"
            )
        );
    }
    // Other connections are served as before.
    let mut tcp = TcpStream::connect(resp).await.unwrap();
    tcp.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    let mut pong = [0u8; 7];
    tcp.read_exact(&mut pong).await.unwrap();
    assert_eq!(&pong, b"+PONG\r\n");
}

/// A response body, whole, as text.
async fn http_body_util_collect(mut body: tonic::body::Body) -> String {
    let mut got = Vec::new();
    while let Some(frame) =
        std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx)).await
    {
        if let Ok(data) = frame.unwrap().into_data() {
            got.extend_from_slice(&data);
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}
