//! Slow and hostile clients are held off by `[limits]`: a request head (HTTP/1.1 on the fast
//! path and on hyper) or a RESP request not whole within `header_timeout` closes its
//! connection; a connection idle for `idle_timeout` is closed; a head over `max_head` gets a
//! 431 without being read whole; connections over `max_connections` are closed at once.
//! Meanwhile real clients go on being served.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Whether the server closes `tcp` within `within` (reading and dropping what it sends).
async fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

/// One keep-alive request on `tcp`: the status of its answer.
async fn get(tcp: &mut TcpStream, path: &str) -> u16 {
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nhost: t\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before an answer: {read:?}");
        read.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&read);
        if let Some(end) = text.find("\r\n\r\n") {
            let len: usize = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |v| v.trim().parse().unwrap());
            if read.len() >= end + 4 + len {
                return text[9..12].parse().unwrap();
            }
        }
    }
}

async fn connect(addr: &str) -> TcpStream {
    TcpStream::connect(addr).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_requests_are_cut_at_the_header_timeout_while_real_clients_go_on() {
    let s = crate::support::start(
        "snowdrift-slow-heads",
        "resp_listen = \"127.0.0.1:0\"\n[limits]\nheader_timeout = \"1s\"\nidle_timeout = \"60s\"\n",
    )
    .await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let resp = s.resp().unwrap().to_string();
    let mut slow = Vec::new();
    for i in 0..150 {
        let mut tcp = connect(&addr).await;
        let partial: &[u8] = match i % 3 {
            // Half a head the fast path would take.
            0 => b"GET /v1/ids/snowflake HTTP/1.1\r\nhost: t\r\n",
            // Half of one it would hand to hyper.
            1 => b"POST /v1/tags HTTP/1.1\r\nhost: t\r\ncontent-type: app",
            // A request hyper answered, then half of the next: hyper's own timer.
            _ => b"GET /v1/tags HTTP/1.1\r\nhost: t\r\n\r\nGET /v1/tags HTTP/1.1\r\nho",
        };
        tcp.write_all(partial).await.unwrap();
        slow.push(tcp);
    }
    for _ in 0..50 {
        let mut tcp = connect(&resp).await;
        tcp.write_all(b"*2\r\n$4\r\nINCR\r\n$3\r\nab")
            .await
            .unwrap();
        slow.push(tcp);
    }
    // A real client all along, on one keep-alive connection.
    let mut real = connect(&addr).await;
    let started = Instant::now();
    let mut answered = 0;
    while started.elapsed() < Duration::from_millis(1500) {
        assert_eq!(get(&mut real, "/v1/ids/snowflake").await, 200);
        answered += 1;
    }
    assert!(answered > 10, "{answered}");
    // Every slow one is closed once its second is up (with room for a loaded machine).
    for (i, tcp) in slow.iter_mut().enumerate() {
        assert!(
            closed_within(tcp, Duration::from_secs(10)).await,
            "slow connection {i} still open"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(12));
    // The real client's connection was never cut.
    assert_eq!(get(&mut real, "/v1/ids/snowflake").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_and_busy_ones_kept() {
    let s = crate::support::start(
        "snowdrift-idle",
        "resp_listen = \"127.0.0.1:0\"\n[limits]\nidle_timeout = \"1s\"\n",
    )
    .await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut idle_http = connect(&addr).await;
    let mut idle_resp = connect(&s.resp().unwrap().to_string()).await;
    let mut busy = connect(&addr).await;
    // A request every 400 ms keeps `busy` open past three idle timeouts.
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        assert_eq!(get(&mut busy, "/v1/ids/snowflake").await, 200);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert!(closed_within(&mut idle_http, Duration::from_millis(100)).await);
    assert!(closed_within(&mut idle_resp, Duration::from_millis(100)).await);
    assert_eq!(get(&mut busy, "/v1/ids/snowflake").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_over_max_head_gets_431_and_a_malformed_one_400_with_the_error_body() {
    let s = crate::support::start("snowdrift-big-head", "[limits]\nmax_head = 16384\n").await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut tcp = connect(&addr).await;
    // 400 KB of header, sent as long as the server reads it.
    let line = format!("x-filler: {}\r\n", "a".repeat(1000));
    let mut sent = 0;
    tcp.write_all(b"GET /v1/ids/snowflake HTTP/1.1\r\nhost: t\r\n")
        .await
        .unwrap();
    for _ in 0..400 {
        match tokio::time::timeout(Duration::from_secs(5), tcp.write_all(line.as_bytes())).await {
            Ok(Ok(())) => sent += line.len(),
            _ => break,
        }
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.starts_with("HTTP/1.1 431"),
        "after {sent} bytes: {text:?}"
    );
    // With the contract's error body, not hyper's empty one.
    assert!(
        text.contains(r#"{"error":{"code":"invalid_request","message":"the request head"#),
        "{text:?}"
    );
    // A malformed head: 400, the same shape, and the connection closed.
    let mut bad = connect(&addr).await;
    bad.write_all(b"GET /v1/ids/snowflake HTTP/1.1\r\nbad header\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), bad.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 400"), "{text:?}");
    assert!(text.contains(r#""code":"invalid_request""#), "{text:?}");
    // The same after the fast path handed the connection to hyper (a route of hyper's
    // first): hyper's own 400 and 431 get the body too.
    for (bad_head, status, says) in [
        (
            "GET /v1/ids/snowflake HTTP/1.1\r\nbad header\r\n\r\n".to_string(),
            "HTTP/1.1 400",
            "not valid HTTP/1.1",
        ),
        (
            format!(
                "GET /v1/ids/snowflake HTTP/1.1\r\nhost: t\r\nx-filler: {}\r\n\r\n",
                "a".repeat(40_000)
            ),
            "HTTP/1.1 431",
            "limits.max_head",
        ),
    ] {
        let mut handed = connect(&addr).await;
        assert_eq!(get(&mut handed, "/v1/generators").await, 200);
        handed.write_all(bad_head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), handed.read_to_end(&mut answer))
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with(status), "{text:?}");
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(
            body.contains(r#""code":"invalid_request""#) && body.contains(says),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_closed_at_once_and_issuing_goes_on() {
    let s = crate::support::start(
        "snowdrift-cap",
        "resp_listen = \"127.0.0.1:0\"\n[limits]\nmax_connections = 20\n",
    )
    .await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let resp = s.resp().unwrap().to_string();
    let mut working = connect(&addr).await;
    assert_eq!(get(&mut working, "/v1/ids/snowflake").await, 200);
    // 19 more fill the cap (HTTP and RESP share it); every one after is closed at once.
    let mut held = Vec::new();
    for i in 0..19 {
        held.push(connect(if i % 2 == 0 { &addr } else { &resp }).await);
    }
    for i in 0..30 {
        let mut over = connect(if i % 2 == 0 { &addr } else { &resp }).await;
        assert!(
            closed_within(&mut over, Duration::from_secs(5)).await,
            "connection {i} over the cap was kept"
        );
    }
    // The connection that was in before the flood is served as before.
    for _ in 0..100 {
        assert_eq!(get(&mut working, "/v1/ids/snowflake").await, 200);
    }
    // Room again once some leave.
    drop(held.drain(..5));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fresh = connect(&addr).await;
    assert_eq!(get(&mut fresh, "/v1/ids/snowflake").await, 200);
    let metrics = s.text("/metrics", 200).await;
    for line in [
        "snowdrift_connections_refused_total 30",
        "snowdrift_connections_max 20",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in {metrics}");
    }
}

/// A body declared over `limits.max_body` is refused before it is sent: a client that asks
/// `Expect: 100-continue` gets 413, not `100 Continue`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_body_over_max_body_is_refused_before_it_is_sent() {
    let s = crate::support::start("snowdrift-expect", "").await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut tcp = connect(&addr).await;
    tcp.write_all(
        b"POST /v1/tags HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n\
          content-length: 1000000\r\nexpect: 100-continue\r\n\r\n",
    )
    .await
    .unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(text.starts_with("HTTP/1.1 413"), "{text:?}");
    assert!(text.contains("limits.max_body"), "{text:?}");
}
