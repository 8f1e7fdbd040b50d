//! FaultProxy against a real TCP echo server and a real PostgreSQL.
//!
//! The timeouts below bound how long a test may hang when the proxy is broken; the only
//! time-based assertions are lower bounds (a delayed round trip cannot be faster than the
//! delay) and "nothing arrived" through a black hole, neither of which a slow machine can
//! make fail.

use std::net::SocketAddr;
use std::time::Duration;

use snowdrift_testkit::{FaultProxy, Mode, urls};
use sqlx::Connection;
use sqlx::postgres::PgConnection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout};

/// Longest a step may take before the test calls it hung.
const HUNG: Duration = Duration::from_secs(10);
/// How long a black hole is watched for leaks.
const QUIET: Duration = Duration::from_millis(300);

async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Sends `msg` and reads the same number of bytes back.
async fn round_trip(s: &mut TcpStream, msg: &[u8]) -> Vec<u8> {
    s.write_all(msg).await.unwrap();
    let mut back = vec![0u8; msg.len()];
    timeout(HUNG, s.read_exact(&mut back))
        .await
        .expect("echo hung")
        .unwrap();
    back
}

/// True once the peer closed the connection (EOF or reset).
async fn is_closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 16];
    match timeout(HUNG, s.read(&mut buf))
        .await
        .expect("connection neither closed nor answered")
    {
        Ok(0) | Err(_) => true,
        Ok(_) => false,
    }
}

#[tokio::test]
async fn pass_forwards_both_ways() {
    let proxy = FaultProxy::start(echo_server().await).await.unwrap();
    assert_eq!(proxy.mode(), Mode::Pass);
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(round_trip(&mut s, b"hello").await, b"hello");
    let big = vec![7u8; 1 << 20];
    assert_eq!(round_trip(&mut s, &big).await, big);
    assert_eq!(proxy.connections(), 1);
}

#[tokio::test]
async fn cut_closes_live_connections_and_new_ones_until_healed() {
    let proxy = FaultProxy::start(echo_server().await).await.unwrap();
    let mut live = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(round_trip(&mut live, b"a").await, b"a");
    proxy.cut();
    assert!(is_closed(&mut live).await, "a live connection is closed");
    let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
    assert!(is_closed(&mut fresh).await, "a new connection is closed");
    proxy.heal();
    let mut after = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(round_trip(&mut after, b"back").await, b"back");
}

#[tokio::test]
async fn black_hole_stalls_live_and_new_connections_and_heal_delivers() {
    let proxy = FaultProxy::start(echo_server().await).await.unwrap();
    let mut live = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(round_trip(&mut live, b"a").await, b"a");
    proxy.black_hole();
    live.write_all(b"ping").await.unwrap();
    let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
    fresh.write_all(b"pong").await.unwrap();
    let mut buf = [0u8; 4];
    assert!(
        timeout(QUIET, live.read(&mut buf)).await.is_err(),
        "nothing comes back through a black hole, not even EOF"
    );
    assert!(timeout(QUIET, fresh.read(&mut buf)).await.is_err());
    proxy.heal();
    timeout(HUNG, live.read_exact(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf, b"ping", "held bytes are delivered after the heal");
    timeout(HUNG, fresh.read_exact(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf, b"pong");
}

#[tokio::test]
async fn delay_adds_latency_to_each_round_trip_of_live_connections() {
    let proxy = FaultProxy::start(echo_server().await).await.unwrap();
    let mut live = TcpStream::connect(proxy.addr()).await.unwrap();
    assert_eq!(round_trip(&mut live, b"a").await, b"a");
    let latency = Duration::from_millis(60);
    proxy.delay(latency);
    for _ in 0..3 {
        let t = Instant::now();
        assert_eq!(round_trip(&mut live, b"slow").await, b"slow");
        assert!(t.elapsed() >= latency, "{:?}", t.elapsed());
    }
    proxy.heal();
    assert_eq!(round_trip(&mut live, b"ok").await, b"ok");
}

#[tokio::test]
async fn trickle_delivers_answers_a_byte_at_a_time() {
    let proxy = FaultProxy::start(echo_server().await).await.unwrap();
    let mut live = TcpStream::connect(proxy.addr()).await.unwrap();
    let pause = Duration::from_millis(20);
    proxy.trickle(pause);
    assert_eq!(proxy.mode(), Mode::Trickle(pause));
    let t = Instant::now();
    assert_eq!(round_trip(&mut live, b"0123456789").await, b"0123456789");
    // Ten bytes, each written a pause after the one before.
    assert!(t.elapsed() >= pause * 9, "{:?}", t.elapsed());
    proxy.heal();
    assert_eq!(round_trip(&mut live, b"ok").await, b"ok");
}

#[tokio::test]
async fn dropping_the_proxy_closes_its_connections_and_listener() {
    let proxy = FaultProxy::start(echo_server().await).await.unwrap();
    let addr = proxy.addr();
    let mut live = TcpStream::connect(addr).await.unwrap();
    assert_eq!(round_trip(&mut live, b"a").await, b"a");
    drop(proxy);
    assert!(is_closed(&mut live).await);
    // The abort lands on the runtime's next turn; wait for the listener to go.
    timeout(HUNG, async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the listener closes");
}

async fn pg(url: &str) -> sqlx::Result<PgConnection> {
    PgConnection::connect(url).await
}

async fn select_one(conn: &mut PgConnection) -> sqlx::Result<i32> {
    sqlx::query_scalar::<_, i32>("SELECT 1")
        .fetch_one(conn)
        .await
}

#[tokio::test]
async fn postgres_through_each_mode() {
    let (proxy, url) = FaultProxy::start_for_url(&urls::postgres()).await.unwrap();
    assert_ne!(url, urls::postgres());
    assert!(url.contains(&proxy.addr().to_string()));

    // pass
    let mut live = pg(&url).await.unwrap();
    assert_eq!(select_one(&mut live).await.unwrap(), 1);

    // delay: a statement is one round trip, so it takes at least the delay
    let latency = Duration::from_millis(50);
    proxy.delay(latency);
    let t = Instant::now();
    assert_eq!(select_one(&mut live).await.unwrap(), 1);
    assert!(t.elapsed() >= latency, "{:?}", t.elapsed());

    // black hole: the live connection hangs, and so does a new one
    proxy.black_hole();
    assert!(
        timeout(QUIET, select_one(&mut live)).await.is_err(),
        "a statement hangs in a black hole"
    );
    assert!(timeout(QUIET, pg(&url)).await.is_err(), "connecting hangs");

    // cut: live connections fail, new ones are refused
    proxy.heal();
    let mut second = pg(&url).await.unwrap();
    assert_eq!(select_one(&mut second).await.unwrap(), 1);
    proxy.cut();
    assert!(
        timeout(HUNG, select_one(&mut second))
            .await
            .unwrap()
            .is_err()
    );
    assert!(timeout(HUNG, pg(&url)).await.unwrap().is_err());

    // heal: new connections work again
    proxy.heal();
    let mut third = pg(&url).await.unwrap();
    assert_eq!(select_one(&mut third).await.unwrap(), 1);
}
