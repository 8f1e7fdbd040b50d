//! The RESP listener end to end: a real server with `resp_listen` on port 0, driven by the
//! `redis` crate as any application would, and by raw TCP for what a client library never
//! sends (inline commands, garbage, oversized frames).

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use crate::support::TempDir;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError, Value};
use snowdrift_server::auth::TokenHash;
use snowdrift_server::config::{GeneratorConfig, Kind};
use snowdrift_server::{Config, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Generous: a loaded 2-core CI machine may be slow, and nothing here is timed for speed.
const PATIENCE: Duration = Duration::from_secs(120);

struct TestServer {
    http: SocketAddr,
    resp: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    running: JoinHandle<Result<(), snowdrift_server::StartError>>,
    _dir: TempDir,
}

/// A server over fresh SQLite store(s), with the default generators unless `extra_toml`
/// names its own, and the RESP listener on port 0.
async fn start(extra_toml: &str) -> TestServer {
    let dir = TempDir::new("snowdrift-resp");
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nresp_listen = \"127.0.0.1:0\"\n\
         shutdown_timeout = \"60s\"\n{extra_toml}"
    )
    .replace("{dir}", &dir.0.display().to_string());
    let config = crate::support::load(&dir.0, &toml);
    let crate::support::Running {
        addr: http,
        resp,
        stop,
        task: running,
        ..
    } = crate::support::spawn(&config).await;
    let resp = resp.expect("resp_listen is set");
    assert_ne!(resp.port(), 0);
    TestServer {
        http,
        resp,
        stop,
        running,
        _dir: dir,
    }
}

impl TestServer {
    fn url(&self) -> String {
        format!("redis://{}/", self.resp)
    }

    async fn connect(&self) -> MultiplexedConnection {
        connect_url(&self.url()).await.unwrap()
    }

    /// Creates segment tag `tag` over the HTTP admin API (with `token` when auth is on).
    async fn create_tag(&self, tag: &str, step: u64, token: Option<&str>) {
        let mut request = reqwest::Client::new()
            .post(format!("http://{}/v1/tags", self.http))
            .header("content-type", "application/json")
            .body(format!("{{\"tag\": \"{tag}\", \"step\": {step}}}"))
            .timeout(PATIENCE);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        assert_eq!(status, 201, "{}", r.text().await.unwrap());
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(PATIENCE, &mut self.running)
            .await
            .expect("the server stops")
            .unwrap()
            .unwrap();
    }
}

async fn connect_url(url: &str) -> Result<MultiplexedConnection, RedisError> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(PATIENCE))
        .set_response_timeout(Some(PATIENCE));
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

async fn query<T: redis::FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> Result<T, RedisError> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(con).await
}

async fn int(con: &mut MultiplexedConnection, args: &[&str]) -> i64 {
    query(con, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The error `args` get: its code (`ERR`, `WRONGTYPE`, ...) and text.
async fn refused(con: &mut MultiplexedConnection, args: &[&str]) -> (String, String) {
    match query::<Value>(con, args).await {
        Ok(v) => panic!("{args:?}: expected an error, got {v:?}"),
        Err(e) => (
            e.code().unwrap_or_default().to_string(),
            e.detail().unwrap_or_default().to_string(),
        ),
    }
}

/// Raw bytes to the listener; everything it answers until it closes the connection.
async fn raw_exchange(addr: SocketAddr, send: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(send).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(PATIENCE, s.read_to_end(&mut got))
        .await
        .expect("the server closes the connection")
        .unwrap();
    got
}

/// The reply to inline command `line`, read up to the `+PONG` of a `PING` sent after it
/// (so replies of any length are read whole).
async fn raw_command(s: &mut TcpStream, line: &str) -> String {
    s.write_all(format!("{line}\r\nPING\r\n").as_bytes())
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"+PONG\r\n") {
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(
            n > 0,
            "{line}: closed after {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    got.truncate(got.len() - "+PONG\r\n".len());
    String::from_utf8(got).unwrap()
}

/// Raw bytes to the listener; the first `want` bytes of the answer (the connection stays
/// open).
async fn raw_reply(s: &mut TcpStream, send: &[u8], want: usize) -> String {
    s.write_all(send).await.unwrap();
    let mut got = vec![0; want];
    tokio::time::timeout(PATIENCE, s.read_exact(&mut got))
        .await
        .expect("the server answers")
        .unwrap();
    String::from_utf8(got).unwrap()
}

fn tag_name() -> String {
    snowdrift_testkit::unique_name("resp_tag")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incr_on_a_tag_counts_up_from_one() {
    let server = start("").await;
    let tag = tag_name();
    server.create_tag(&tag, 100, None).await;
    let mut con = server.connect().await;
    for want in 1..=5 {
        assert_eq!(int(&mut con, &["INCR", &tag]).await, want);
    }
    // Lower-case commands, as some clients send them.
    assert_eq!(int(&mut con, &["incr", &tag]).await, 6);
    // Past the first segment (step 100) the count goes on.
    let mut last = 6;
    for _ in 0..150 {
        let id = int(&mut con, &["INCR", &tag]).await;
        assert!(id > last, "{id} after {last}");
        last = id;
    }
    assert_eq!(last, 156);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incrby_answers_the_last_of_n_consecutive_ids() {
    let server = start("").await;
    let tag = tag_name();
    server.create_tag(&tag, 100, None).await;
    let mut con = server.connect().await;
    assert_eq!(int(&mut con, &["INCRBY", &tag, "10"]).await, 10);
    assert_eq!(int(&mut con, &["INCR", &tag]).await, 11);
    // 89 IDs are left in the first segment [1, 101): 95 do not fit, so they come from the
    // next segment, which starts at 101; the tail 12..=100 is skipped, never handed out.
    assert_eq!(int(&mut con, &["INCRBY", &tag, "95"]).await, 195);
    assert_eq!(int(&mut con, &["INCR", &tag]).await, 196);

    let (code, text) = refused(&mut con, &["INCRBY", &tag, "0"]).await;
    assert_eq!(code, "ERR");
    assert!(text.contains("from 1 to 10000"), "{text}");
    assert_eq!(refused(&mut con, &["INCRBY", &tag, "-5"]).await.0, "ERR");
    assert_eq!(refused(&mut con, &["INCRBY", &tag, "10001"]).await.0, "ERR");
    let (code, text) = refused(&mut con, &["INCRBY", &tag, "ten"]).await;
    assert_eq!(code, "ERR");
    assert!(text.contains("not an integer"), "{text}");

    // More than any segment of the tag holds: refused, with the step named.
    let small = tag_name();
    server.create_tag(&small, 10, None).await;
    let (code, text) = refused(&mut con, &["INCRBY", &small, "5000"]).await;
    assert_eq!(code, "ERR");
    assert!(text.contains("step"), "{text}");
    // Segments follow Leaf's dynamic step: claimed quickly, they grow past the stored
    // step, so a count a little above it is served from a grown segment (the short ones
    // before it are skipped), as docs/src/api/resp.md says.
    let grows = tag_name();
    server.create_tag(&grows, 10, None).await;
    let last = int(&mut con, &["INCRBY", &grows, "15"]).await;
    assert!(last > 15, "{last}");
    assert_eq!(int(&mut con, &["INCR", &grows]).await, last + 1);

    // Kinds whose batches are not one run are refused before anything is issued.
    for name in ["snowflake", "uuid7", "ulid", "objectid"] {
        let (code, text) = refused(&mut con, &["INCRBY", name, "3"]).await;
        assert_eq!(code, "WRONGTYPE", "{name}: {text}");
        assert!(text.contains("INCR"), "{text}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_and_text_kinds() {
    let server = start("").await;
    let mut con = server.connect().await;
    let a = int(&mut con, &["SNOWFLAKE"]).await;
    let b = int(&mut con, &["SNOWFLAKE", "snowflake"]).await;
    let c = int(&mut con, &["INCR", "snowflake"]).await;
    assert!(0 < a && a < b && b < c, "{a} {b} {c}");
    // The Twitter layout: the worker (0) and a timestamp near now.
    let ms = (c >> 22) + 1_288_834_974_657;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!((now - ms).abs() < 600_000, "{c} decodes to {ms}, now {now}");

    let uuid: String = query(&mut con, &["INCR", "uuid7"]).await.unwrap();
    assert_eq!(uuid.len(), 36, "{uuid}");
    assert_eq!(&uuid[14..15], "7", "{uuid}");
    let ulid: String = query(&mut con, &["INCR", "ulid"]).await.unwrap();
    assert_eq!(ulid.len(), 26, "{ulid}");

    let (code, text) = refused(&mut con, &["SNOWFLAKE", "uuid7"]).await;
    assert_eq!(code, "WRONGTYPE", "{text}");
    let (code, text) = refused(&mut con, &["SNOWFLAKE", "nosuch"]).await;
    assert_eq!(code, "ERR");
    assert!(text.contains("nosuch"), "{text}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_replies_and_the_connection_goes_on() {
    let server = start("").await;
    let mut con = server.connect().await;
    let (code, text) = refused(&mut con, &["GET", "order"]).await;
    assert_eq!(code, "ERR");
    assert!(
        text.starts_with("unknown command 'GET', with args beginning with: 'order'")
            && text.contains("INCR name"),
        "{text}"
    );
    assert!(
        refused(&mut con, &["SET", "a", "1"])
            .await
            .1
            .contains("unknown command")
    );
    let (code, text) = refused(&mut con, &["INCR"]).await;
    assert_eq!(
        (code.as_str(), text.as_str()),
        ("ERR", "wrong number of arguments for 'incr' command")
    );
    let missing = tag_name();
    let (code, text) = refused(&mut con, &["INCR", &missing]).await;
    assert_eq!(code, "ERR");
    assert!(text.contains(&missing), "{text}");
    let (code, text) = refused(&mut con, &["INCR", "bad name!"]).await;
    assert_eq!(code, "ERR");
    assert!(text.contains("not valid"), "{text}");
    assert_eq!(refused(&mut con, &["SELECT", "1"]).await.0, "ERR");
    assert_eq!(
        refused(&mut con, &["AUTH", "sd_anything"]).await.0,
        "ERR",
        "AUTH without auth configured"
    );
    // Still the same, working connection.
    let pong: String = query(&mut con, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
    let echo: String = query(&mut con, &["ECHO", "hi there"]).await.unwrap();
    assert_eq!(echo, "hi there");
    assert!(int(&mut con, &["SNOWFLAKE"]).await > 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelining_a_thousand_incrs_gives_a_thousand_distinct_ids() {
    let server = start("").await;
    let tag = tag_name();
    server.create_tag(&tag, 300, None).await;
    let mut con = server.connect().await;
    for name in [tag.as_str(), "snowflake"] {
        let mut pipe = redis::pipe();
        for _ in 0..1000 {
            pipe.cmd("INCR").arg(name);
        }
        let ids: Vec<i64> = pipe.query_async(&mut con).await.unwrap();
        assert_eq!(ids.len(), 1000);
        let distinct: HashSet<i64> = ids.iter().copied().collect();
        assert_eq!(distinct.len(), 1000, "{name}");
        // Answers come in request order, and IDs of one generator go up.
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{name}");
        if name == tag {
            assert_eq!((ids[0], ids[999]), (1, 1000));
        }
    }
    // The same in one write over raw TCP, answered in one go.
    let mut s = TcpStream::connect(server.resp).await.unwrap();
    let request = format!("*2\r\n$4\r\nINCR\r\n${}\r\n{tag}\r\n", tag.len()).repeat(1000);
    s.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.iter().filter(|&&b| b == b'\n').count() < 1000 {
        let n = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(got).unwrap();
    let ids: Vec<i64> = text
        .lines()
        .map(|l| l.strip_prefix(':').unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids, (1001..=2000).collect::<Vec<_>>());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_or_huge_frames_close_only_their_connection() {
    let server = start("").await;
    let tag = tag_name();
    server.create_tag(&tag, 100, None).await;
    let mut bystander = server.connect().await;
    assert_eq!(int(&mut bystander, &["INCR", &tag]).await, 1);

    let nested = b"*1\r\n".repeat(16 * 1024);
    let mut inline = vec![b'a'; 70 * 1024];
    inline.extend_from_slice(b"\r\n");
    let cases: [(&str, &[u8], &str); 7] = [
        ("a bad count", b"*abc\r\n", "invalid multibulk length"),
        (
            "a negative bulk length",
            b"*2\r\n$4\r\nINCR\r\n$-5\r\n",
            "invalid bulk length",
        ),
        ("too many arguments", b"*1000\r\n", "limit of 16"),
        ("a non-bulk element", b"*1\r\n:5\r\n", "expected '$'"),
        ("64 KiB of nested arrays", &nested, "expected '$'"),
        (
            "an over-long inline line",
            &inline,
            "too big inline request",
        ),
        ("a bulk without CRLF", b"*1\r\n$4\r\nPINGxx", "\\r\\n"),
    ];
    for (what, bytes, says) in cases {
        let got = raw_exchange(server.resp, bytes).await;
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("-ERR Protocol error: ")
                && text.contains(says)
                && text.ends_with("\r\n"),
            "{what}: {text:?}"
        );
        assert_eq!(
            text.matches("\r\n").count(),
            1,
            "{what}: one reply, then closed: {text:?}"
        );
    }
    // A request over limits.resp_max_frame is refused at its length line, saying so.
    let got = raw_exchange(server.resp, b"*2\r\n$4\r\nINCR\r\n$100000000\r\n").await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR frame of 100000028 bytes is over the limit of 4096 (limits.resp_max_frame)\r\n"
    );
    // Requests before the bad one are answered, then the connection closes.
    let got = raw_exchange(server.resp, b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\n").await;
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("+PONG\r\n+PONG\r\n-ERR Protocol error"),
        "{text:?}"
    );

    // The other connection never noticed.
    assert_eq!(int(&mut bystander, &["INCR", &tag]).await, 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_commands_hello_and_client_commands() {
    let server = start("").await;
    let mut s = TcpStream::connect(server.resp).await.unwrap();
    assert_eq!(raw_reply(&mut s, b"PING\r\n", 7).await, "+PONG\r\n");
    assert_eq!(raw_reply(&mut s, b"\r\n  \r\nPING\n", 7).await, "+PONG\r\n");
    let hello = raw_command(&mut s, "HELLO 2").await;
    assert!(
        hello.starts_with("*14\r\n$6\r\nserver\r\n$9\r\nsnowdrift\r\n")
            && hello.contains("$5\r\nproto\r\n:2\r\n"),
        "{hello:?}"
    );
    assert!(
        raw_command(&mut s, "HELLO 4")
            .await
            .starts_with("-NOPROTO ")
    );
    assert_eq!(raw_command(&mut s, "CLIENT GETNAME").await, "$-1\r\n");
    assert_eq!(raw_command(&mut s, "CLIENT SETNAME app1").await, "+OK\r\n");
    assert_eq!(
        raw_command(&mut s, "CLIENT GETNAME").await,
        "$4\r\napp1\r\n"
    );
    assert!(
        raw_command(&mut s, "CLIENT SETNAME a\tb")
            .await
            .starts_with("-ERR ")
    );
    assert!(
        raw_command(&mut s, "CLIENT KILL x")
            .await
            .starts_with("-ERR ")
    );
    // RESP3 from here on: a map, and the null of a name cleared is `_`.
    let hello = raw_command(&mut s, "HELLO 3 SETNAME app2").await;
    assert!(
        hello.starts_with("%7\r\n") && hello.contains(":3\r\n"),
        "{hello:?}"
    );
    assert_eq!(
        raw_command(&mut s, "CLIENT GETNAME").await,
        "$4\r\napp2\r\n"
    );
    let clear = b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$0\r\n\r\n";
    assert_eq!(raw_reply(&mut s, clear, 5).await, "+OK\r\n");
    assert_eq!(raw_command(&mut s, "CLIENT GETNAME").await, "_\r\n");
    assert_eq!(raw_command(&mut s, "SELECT 0").await, "+OK\r\n");
    assert!(raw_command(&mut s, "INCR snowflake").await.starts_with(':'));
    assert_eq!(raw_reply(&mut s, b"QUIT\r\n", 5).await, "+OK\r\n");
    let mut rest = Vec::new();
    tokio::time::timeout(PATIENCE, s.read_to_end(&mut rest))
        .await
        .expect("QUIT closes the connection")
        .unwrap();
    assert!(rest.is_empty(), "{rest:?}");

    // Client libraries in RESP3 mode work too.
    let mut con = connect_url(&format!("{}?protocol=resp3", server.url()))
        .await
        .unwrap();
    assert!(int(&mut con, &["SNOWFLAKE"]).await > 0);
    let info: String = query(&mut con, &["CLIENT", "INFO"]).await.unwrap();
    assert!(
        info.contains("resp=3") && info.contains("lib-name=redis-rs"),
        "{info}"
    );
    let id = int(&mut con, &["CLIENT", "ID"]).await;
    assert!(info.starts_with(&format!("id={id} ")), "{info}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_is_required_and_scoped_when_tokens_are_configured() {
    let allowed = tag_name();
    let other = tag_name();
    let token = |name: &str, secret: &str, generators: &str, role: &str, extra: &str| {
        format!(
            "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = {generators}\n\
             role = \"{role}\"\n{extra}",
            TokenHash::of(secret)
        )
    };
    let server = start(&format!(
        "{}{}{}",
        token("admin", "sd_admin", "[\"*\"]", "admin", ""),
        token("app", "sd_app", &format!("[\"{allowed}\"]"), "read", ""),
        token(
            "slow",
            "sd_slow",
            "[\"*\"]",
            "read",
            "rate = 1\nburst = 3\n"
        ),
    ))
    .await;
    server.create_tag(&allowed, 100, Some("sd_admin")).await;
    server.create_tag(&other, 100, Some("sd_admin")).await;

    // Before AUTH a request may be only small (Redis bounds unauthenticated requests too):
    // a declared argument over 1 KiB is a protocol error at once, before its bytes come.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut raw = tokio::net::TcpStream::connect(server.resp).await.unwrap();
        raw.write_all(b"*2\r\n$4\r\nINCR\r\n$2000\r\n")
            .await
            .unwrap();
        let mut reply = Vec::new();
        tokio::time::timeout(PATIENCE, raw.read_to_end(&mut reply))
            .await
            .unwrap()
            .unwrap();
        let reply = String::from_utf8_lossy(&reply);
        assert!(reply.starts_with("-ERR Protocol error"), "{reply}");
        // After AUTH the listener's usual bounds hold: a 3 KB argument is read (within
        // limits.resp_max_frame).
        let mut authed = server.connect().await;
        let _: () = redis::cmd("AUTH")
            .arg("sd_app")
            .query_async(&mut authed)
            .await
            .unwrap();
        let long = "x".repeat(3_000);
        let echoed: String = redis::cmd("ECHO")
            .arg(&long)
            .query_async(&mut authed)
            .await
            .unwrap();
        assert_eq!(echoed, long);
    }
    let mut con = server.connect().await;
    let (code, text) = refused(&mut con, &["INCR", &allowed]).await;
    assert_eq!(code, "NOAUTH", "{text}");
    assert!(text.contains("AUTH"), "{text}");
    assert_eq!(refused(&mut con, &["PING"]).await.0, "NOAUTH");
    assert_eq!(refused(&mut con, &["HELLO", "3"]).await.0, "NOAUTH");
    assert_eq!(
        refused(&mut con, &["AUTH", "sd_wrong"]).await.0,
        "WRONGPASS"
    );
    assert_eq!(
        refused(&mut con, &["AUTH", "default", ""]).await.0,
        "WRONGPASS"
    );
    assert_eq!(refused(&mut con, &["INCR", &allowed]).await.0, "NOAUTH");
    let ok: String = query(&mut con, &["AUTH", "sd_app"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(int(&mut con, &["INCR", &allowed]).await, 1);
    let (code, text) = refused(&mut con, &["INCR", &other]).await;
    assert_eq!(code, "NOPERM");
    assert!(text.contains(&other), "{text}");
    assert_eq!(refused(&mut con, &["SNOWFLAKE"]).await.0, "NOPERM");
    // A refused AUTH keeps the token already given.
    assert_eq!(
        refused(&mut con, &["AUTH", "sd_wrong"]).await.0,
        "WRONGPASS"
    );
    assert_eq!(int(&mut con, &["INCR", &allowed]).await, 2);

    // The token in the URL, as applications configure a Redis password.
    let mut admin = connect_url(&format!("redis://default:sd_admin@{}/", server.resp))
        .await
        .unwrap();
    assert_eq!(int(&mut admin, &["INCR", &other]).await, 1);
    assert!(int(&mut admin, &["SNOWFLAKE"]).await > 0);
    let mut resp3 = connect_url(&format!("redis://:sd_app@{}/?protocol=resp3", server.resp))
        .await
        .unwrap();
    assert_eq!(int(&mut resp3, &["INCR", &allowed]).await, 3);
    let bad = connect_url(&format!("redis://:sd_nope@{}/", server.resp)).await;
    assert!(bad.is_err(), "an unknown token must not connect");

    // A token over its rate is told to try again.
    let mut slow = connect_url(&format!("redis://:sd_slow@{}/", server.resp))
        .await
        .unwrap();
    let mut refusal = None;
    for _ in 0..20 {
        if let Err(e) = query::<i64>(&mut slow, &["INCR", &allowed]).await {
            refusal = Some((e.code().unwrap_or_default().to_string(), e.to_string()));
            break;
        }
    }
    let (code, text) = refusal.expect("the rate limit refuses within 20 requests");
    assert_eq!(code, "TRYAGAIN", "{text}");
    assert!(text.contains("retry in"), "{text}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_redis_counter_takes_incrby_a_templated_one_does_not() {
    let plain = snowdrift_testkit::unique_name("resp_counter");
    let templated = snowdrift_testkit::unique_name("resp_order");
    let url = snowdrift_testkit::urls::redis();
    let server = start(&format!(
        "[[generator]]\nname = \"{plain}\"\nkind = \"counter\"\nurl = \"{url}\"\n\
         [[generator]]\nname = \"{templated}\"\nkind = \"counter\"\nurl = \"{url}\"\n\
         template = \"ORD{{seq:06}}\"\n"
    ))
    .await;
    let mut con = server.connect().await;
    assert_eq!(int(&mut con, &["INCR", &plain]).await, 1);
    assert_eq!(int(&mut con, &["INCRBY", &plain, "5"]).await, 6);
    assert_eq!(int(&mut con, &["INCR", &plain]).await, 7);
    let order: String = query(&mut con, &["INCR", &templated]).await.unwrap();
    assert_eq!(order, "ORD000001");
    let (code, text) = refused(&mut con, &["INCRBY", &templated, "2"]).await;
    assert_eq!(code, "WRONGTYPE", "{text}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn striped_stores_serve_incr_and_refuse_incrby() {
    let server =
        start("[store]\nurls = [\"sqlite://{dir}/a.db\", \"sqlite://{dir}/b.db\"]\n").await;
    let tag = tag_name();
    server.create_tag(&tag, 100, None).await;
    let mut con = server.connect().await;
    let a = int(&mut con, &["INCR", &tag]).await;
    let b = int(&mut con, &["INCR", &tag]).await;
    assert!(a < b, "{a} {b}");
    let (code, text) = refused(&mut con, &["INCRBY", &tag, "2"]).await;
    assert_eq!(code, "WRONGTYPE", "{text}");
    assert!(text.contains("striped"), "{text}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_connections_and_stops_accepting() {
    let server = start("").await;
    let addr = server.resp;
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(raw_reply(&mut idle, b"PING\r\n", 7).await, "+PONG\r\n");
    server.stop().await;
    // The idle connection was closed, and nothing listens any more.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(PATIENCE, idle.read_to_end(&mut rest))
        .await
        .expect("closed at shutdown");
    assert!(
        !matches!(read, Ok(n) if n > 0),
        "nothing more is sent: {rest:?}"
    );
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_is_off_without_resp_listen_and_a_taken_address_is_refused() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("snowdrift-resp-off"));
    std::fs::create_dir_all(&dir).unwrap();
    let _dir = TempDir(dir.clone());
    let mut config = Config::default();
    config.store.url = format!("sqlite://{}", dir.join("ids.db").display());
    config.generators = vec![GeneratorConfig::new("u", Kind::Uuid7)];
    let server = Server::start(&config).await.unwrap();
    assert_eq!(server.resp_addr(), None);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    config.server.resp_listen = Some(taken.local_addr().unwrap());
    let e = Server::start(&config).await.unwrap_err();
    assert!(e.to_string().contains("server.resp_listen"), "{e}");
}

/// A zk-version generator's IDs are numbers, each one write of its znode: `INCRBY` with a
/// count above 1 is refused for that reason, not as if its IDs were text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_version_incrby_says_why_a_batch_is_no_run() {
    let server = start(&zk_version_generator("resp_zk")).await;
    let mut con = server.connect().await;
    let v = int(&mut con, &["INCR", "zk"]).await;
    assert_eq!(int(&mut con, &["INCR", "zk"]).await, v + 1);
    let (code, text) = refused(&mut con, &["INCRBY", "zk", "3"]).await;
    assert_eq!(code, "WRONGTYPE", "{text}");
    assert!(
        text.contains("znode") && !text.contains("text"),
        "says why a zk-version batch is no run, not that its IDs are text: {text}"
    );
    server.stop().await;
}

/// A zk-version generator called `zk` on a fresh znode of the test ZooKeeper.
fn zk_version_generator(prefix: &str) -> String {
    let znode = format!("/snowdrift-test/{}", snowdrift_testkit::unique_name(prefix));
    format!(
        "[[generator]]\nname = \"zk\"\nkind = \"zk-version\"\nurl = \"{}\"\nznode = \"{znode}\"\n",
        snowdrift_testkit::urls::zookeeper()
    )
}

/// redis-py's `r.incr(name)` sends `INCRBY name 1`: every kind answers it as `INCR`. A
/// larger count stays refused where a batch is not one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incrby_one_is_incr_for_every_kind() {
    let server = start(&format!(
        "[[generator]]\nname = \"snowflake\"\nkind = \"snowflake\"\n\
         [[generator]]\nname = \"uuid7\"\nkind = \"uuid7\"\n\
         [[generator]]\nname = \"ulid\"\nkind = \"ulid\"\n{}",
        zk_version_generator("resp_zk_one")
    ))
    .await;
    let mut con = server.connect().await;
    let a = int(&mut con, &["INCRBY", "snowflake", "1"]).await;
    let b = int(&mut con, &["INCR", "snowflake"]).await;
    assert!(0 < a && a < b, "{a} {b}");
    let uuid: String = query(&mut con, &["INCRBY", "uuid7", "1"]).await.unwrap();
    assert_eq!(uuid.len(), 36, "{uuid}");
    let ulid: String = query(&mut con, &["INCRBY", "ulid", "1"]).await.unwrap();
    assert_eq!(ulid.len(), 26, "{ulid}");
    let v = int(&mut con, &["INCRBY", "zk", "1"]).await;
    assert_eq!(int(&mut con, &["INCR", "zk"]).await, v + 1);
    for name in ["snowflake", "uuid7", "zk"] {
        let (code, text) = refused(&mut con, &["INCRBY", name, "2"]).await;
        assert_eq!(code, "WRONGTYPE", "{name}: {text}");
    }
    server.stop().await;
}

/// Length of the first whole RESP reply in `b`, if it is all there.
fn whole_reply(b: &[u8]) -> Option<usize> {
    let line = b.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&b[1..line]).ok()?;
    match b.first()? {
        b'$' => {
            let n: i64 = head.parse().ok()?;
            let end = line + 2 + usize::try_from(n).map_or(0, |n| n + 2);
            (b.len() >= end).then_some(end)
        }
        b'*' => {
            let mut at = line + 2;
            for _ in 0..head.parse::<usize>().ok()? {
                at += whole_reply(&b[at..])?;
            }
            Some(at)
        }
        _ => Some(line + 2),
    }
}

/// The next `n` replies to inline command(s) `line`, read whole (inside MULTI a `PING`
/// would be queued, so `raw_command`'s marker cannot be used).
async fn tx_n(s: &mut TcpStream, line: &str, n: usize) -> String {
    s.write_all(format!("{line}\r\n").as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let mut at = 0;
        let mut count = 0;
        while count < n {
            match whole_reply(&got[at..]) {
                Some(len) => {
                    at += len;
                    count += 1;
                }
                None => break,
            }
        }
        if count == n {
            assert_eq!(at, got.len(), "{line}: more than {n} replies");
            return String::from_utf8(got).unwrap();
        }
        let read = tokio::time::timeout(PATIENCE, s.read(&mut buf))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(
            read > 0,
            "{line}: closed after {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..read]);
    }
}

/// The reply to inline command `line`.
async fn tx(s: &mut TcpStream, line: &str) -> String {
    tx_n(s, line, 1).await
}

/// redis-py's default `pipeline()` and ioredis' `multi()` wrap commands in MULTI/EXEC: the
/// commands are queued (`+QUEUED`) and EXEC answers their replies in order, errors in
/// place; DISCARD drops them; a command refused while queueing aborts the EXEC, as in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_queues_and_exec_runs_in_order() {
    let server = start("").await;
    let tag = tag_name();
    server.create_tag(&tag, 100, None).await;
    let mut s = TcpStream::connect(server.resp).await.unwrap();
    assert_eq!(tx(&mut s, "MULTI").await, "+OK\r\n");
    assert_eq!(tx(&mut s, &format!("INCR {tag}")).await, "+QUEUED\r\n");
    assert_eq!(tx(&mut s, "INCRBY snowflake 2").await, "+QUEUED\r\n");
    assert_eq!(tx(&mut s, &format!("INCRBY {tag} 1")).await, "+QUEUED\r\n");
    let exec = tx(&mut s, "EXEC").await;
    assert!(exec.starts_with("*3\r\n:1\r\n-WRONGTYPE "), "{exec:?}");
    assert!(exec.ends_with("\r\n:2\r\n"), "{exec:?}");

    assert_eq!(tx(&mut s, "MULTI").await, "+OK\r\n");
    assert_eq!(tx(&mut s, &format!("INCR {tag}")).await, "+QUEUED\r\n");
    assert!(
        tx(&mut s, "MULTI")
            .await
            .starts_with("-ERR MULTI calls can not be nested")
    );
    assert_eq!(tx(&mut s, "DISCARD").await, "+OK\r\n");
    assert_eq!(tx(&mut s, &format!("INCR {tag}")).await, ":3\r\n");
    assert!(
        tx(&mut s, "EXEC")
            .await
            .starts_with("-ERR EXEC without MULTI")
    );
    assert!(
        tx(&mut s, "DISCARD")
            .await
            .starts_with("-ERR DISCARD without MULTI")
    );

    // A command with the wrong arity is refused at once, and EXEC then runs nothing.
    assert_eq!(tx(&mut s, "MULTI").await, "+OK\r\n");
    assert_eq!(tx(&mut s, &format!("INCR {tag}")).await, "+QUEUED\r\n");
    assert!(tx(&mut s, "INCR").await.starts_with("-ERR wrong number"));
    assert!(tx(&mut s, "EXEC").await.starts_with("-EXECABORT "));
    assert_eq!(tx(&mut s, &format!("INCR {tag}")).await, ":4\r\n");

    // A transaction is bounded (1,000 commands, 64 KiB): the command past the bound is
    // refused, later ones are answered +QUEUED but not kept, and EXEC aborts.
    assert_eq!(tx(&mut s, "MULTI").await, "+OK\r\n");
    let mut many = String::new();
    for _ in 0..1200 {
        many.push_str(&format!("INCR {tag}\r\n"));
    }
    let replies = tx_n(&mut s, many.trim_end(), 1200).await;
    let queued = replies.matches("+QUEUED\r\n").count();
    assert_eq!(queued, 1199, "{}", &replies[..200]);
    let refusal = replies
        .split("\r\n")
        .find(|r| r.starts_with('-'))
        .unwrap_or_default()
        .to_string();
    assert!(
        refusal.starts_with("-ERR a transaction holds at most 1000 commands of 64 KiB")
            && refusal.ends_with("(redis-py: pipeline(transaction=False))"),
        "{refusal}"
    );
    assert!(tx(&mut s, "EXEC").await.starts_with("-EXECABORT "));
    assert_eq!(tx(&mut s, &format!("INCR {tag}")).await, ":5\r\n");

    // INFO answers the server section client libraries read before their first command.
    let info = tx(&mut s, "INFO").await;
    assert!(
        info.starts_with("$") && info.contains("# Server\r\n"),
        "{info:?}"
    );
    assert!(info.contains("\r\nloading:0\r\n"), "{info:?}");
    assert!(info.contains("\r\nredis_version:"), "{info:?}");
    assert_eq!(tx(&mut s, "INFO server").await, info);
    server.stop().await;
}

/// The Redis clients people use, run as their users would (scripts/resp-clients installs
/// them): redis-py's `incr` on a snowflake name, its default `pipeline()` (MULTI/EXEC) and
/// `info()`; ioredis connecting (its ready check sends INFO) and taking IDs; node-redis
/// taking a snowflake ID whole as a string with `SNOWFLAKE name decimal`, where `INCR`'s
/// JavaScript number cannot hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_redis_clients_take_ids() {
    let server = start("").await;
    let tag = tag_name();
    server.create_tag(&tag, 1000, None).await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (resp, http) = (server.resp.to_string(), format!("http://{}", server.http));
    let script = root.join("scripts/resp-clients");
    let args = [resp, http, tag];
    // Installing the clients the first time may take a minute; a blocking thread waits.
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("bash")
            .arg(script)
            .args(args)
            .output()
    })
    .await
    .unwrap()
    .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "scripts/resp-clients failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("redis-py") && stdout.contains("ioredis and node-redis"),
        "{stdout}"
    );
    server.stop().await;
}

/// xid, nanoid and cuid2 over RESP: `INCR` answers one as text; `INCRBY` is refused (their
/// batches are not one run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xid_nanoid_and_cuid2_are_text() {
    let server = start(
        "[[generator]]\nname = \"x\"\nkind = \"xid\"\n\
         [[generator]]\nname = \"n\"\nkind = \"nanoid\"\n\
         [[generator]]\nname = \"c\"\nkind = \"cuid2\"\n",
    )
    .await;
    let mut con = server.connect().await;
    for (name, len) in [("x", 20), ("n", 21), ("c", 24)] {
        let a: String = query(&mut con, &["INCR", name]).await.unwrap();
        let b: String = query(&mut con, &["INCR", name]).await.unwrap();
        assert_eq!((a.len(), b.len()), (len, len), "{a} {b}");
        assert_ne!(a, b);
        let (code, text) = refused(&mut con, &["INCRBY", name, "3"]).await;
        assert_eq!(code, "WRONGTYPE", "{name}: {text}");
    }
    server.stop().await;
}
