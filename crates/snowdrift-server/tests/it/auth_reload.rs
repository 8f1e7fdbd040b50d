//! Reloading tokens on a running server (`Reloader`, what `snowdrift serve` runs on SIGHUP):
//! the new tokens hold at once on HTTP, gRPC and RESP while a stream let in before goes on;
//! a broken config, or one that would leave a reachable listener without auth, changes
//! nothing; auth turns on and off on a loopback server; other sections wait for a restart.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::{TempDir, with_token};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisError};
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{NextRequest, StreamRequest};
use snowdrift_server::Config;
use snowdrift_server::auth::{TokenHash, generate_token};
use snowdrift_server::{AuthSwitch, Reloaded};
use tonic::Code;
use tonic::transport::Endpoint;

/// Generous: a loaded 2-core CI machine may be slow, and nothing here is timed for speed.
const PATIENCE: Duration = Duration::from_secs(120);

/// Twitter-layout snowflakes count milliseconds from this instant in their top 41 bits.
const TWITTER_EPOCH_MS: u64 = 1_288_834_974_657;

/// `[[auth.token]]` for `secret` with `read` on every name, plus `extra` lines.
fn token(name: &str, secret: &str, extra: &str) -> String {
    format!(
        "[[auth.token]]\nname = \"{name}\"\nhash = \"{}\"\ngenerators = [\"*\"]\nrole = \
         \"read\"\n{extra}",
        TokenHash::of(secret)
    )
}

/// A server whose config file is `base` and then what each test varies (tokens, other
/// sections); it is bound to a loopback port whatever its `server.listen` says.
struct Reloading {
    dir: TempDir,
    base: String,
    running: crate::support::Running,
    http: reqwest::Client,
}

impl Reloading {
    async fn start(base: &str, rest: &str) -> Self {
        let dir = TempDir::new("snowdrift-reload");
        let config = crate::support::load(&dir.0, &format!("{base}{rest}"));
        let running = crate::support::spawn(&config).await;
        Self {
            dir,
            base: base.to_string(),
            running,
            http: reqwest::Client::builder()
                .timeout(PATIENCE)
                .build()
                .unwrap(),
        }
    }

    /// The config file written anew with `rest` after the base, loaded.
    fn config(&self, rest: &str) -> Result<Config, snowdrift_server::ConfigError> {
        crate::support::try_load(&self.dir.0, &format!("{}{rest}", self.base))
    }

    /// What `snowdrift serve` does on SIGHUP, with the file written anew with `rest`.
    fn reload(&self, rest: &str) -> Result<Reloaded, String> {
        let config = self.config(rest).map_err(|e| e.to_string())?;
        self.running
            .reloader
            .reload(&config)
            .map_err(|e| e.to_string())
    }

    /// The status of `GET path` with `token`, if any.
    async fn status(&self, path: &str, token: Option<&str>) -> u16 {
        let mut request = self.http.get(format!("{}{path}", self.running.base()));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send().await.unwrap().status().as_u16()
    }
}

async fn redis_connect(addr: std::net::SocketAddr) -> MultiplexedConnection {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(PATIENCE))
        .set_response_timeout(Some(PATIENCE));
    redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

async fn redis_query(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> Result<redis::Value, RedisError> {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(con).await
}

/// The error code (`NOAUTH`, `WRONGPASS`, ...) `args` get, or `OK` when they pass.
async fn redis_code(con: &mut MultiplexedConnection, args: &[&str]) -> String {
    match redis_query(con, args).await {
        Ok(_) => "OK".to_string(),
        Err(e) => e.code().unwrap_or("?").to_string(),
    }
}

/// `message` with `authorization: Bearer {token}` metadata.
fn now_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_tokens_hold_at_once_on_http_grpc_and_resp_and_a_stream_let_in_goes_on() {
    let (old, new) = (generate_token().unwrap(), generate_token().unwrap());
    let s = Reloading::start(
        "[server]\nlisten = \"127.0.0.1:0\"\nresp_listen = \"127.0.0.1:0\"\n\
         [limits]\nmax_stream = 10000000\n",
        &token("old", &old, ""),
    )
    .await;
    assert_eq!(s.status("/v1/ids/snowflake", Some(&old)).await, 200);
    assert_eq!(s.status("/v1/ids/snowflake", Some(&new)).await, 401);
    let resp = s.running.resp.expect("resp_listen is set");
    let mut before = redis_connect(resp).await;
    assert_eq!(redis_code(&mut before, &["AUTH", &old]).await, "OK");
    assert_eq!(redis_code(&mut before, &["INCR", "snowflake"]).await, "OK");

    // A stream let in under the old token. Four million Twitter-layout snowflakes take at
    // least 977 ms of ID time (4,096 a millisecond), so it is still issuing when the reload
    // lands a moment after its first message.
    let channel = Endpoint::from_shared(s.running.base())
        .unwrap()
        .connect_timeout(PATIENCE)
        .connect()
        .await
        .unwrap();
    let mut grpc = IdServiceClient::new(channel);
    let total = 4_000_000u64;
    let request = StreamRequest {
        name: "snowflake".into(),
        count: total,
        batch: None,
        format: None,
        input: None,
    };
    let mut stream = grpc
        .stream(with_token(request, &old))
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().expect("a first batch");
    let mut received = first.count;

    let reloaded_at = now_ms();
    let reloaded = s.reload(&token("new", &new, "")).unwrap();
    assert_eq!(
        (
            reloaded.tokens,
            &reloaded.added,
            &reloaded.removed,
            reloaded.switch
        ),
        (
            1,
            &vec!["new".to_string()],
            &vec!["old".to_string()],
            AuthSwitch::Unchanged
        )
    );
    assert!(reloaded.needs_restart.is_empty(), "{reloaded:?}");

    // HTTP.
    assert_eq!(s.status("/v1/ids/snowflake", Some(&old)).await, 401);
    assert_eq!(s.status("/v1/ids/snowflake", Some(&new)).await, 200);
    assert_eq!(s.status("/v1/generators", Some(&new)).await, 200);
    // gRPC: a new call is judged by the new tokens.
    let next = |t: &str| {
        with_token(
            NextRequest {
                name: "snowflake".into(),
                count: Some(3),
                format: None,
                input: None,
            },
            t,
        )
    };
    let refused = grpc.next(next(&old)).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    assert_eq!(grpc.next(next(&new)).await.unwrap().into_inner().count, 3);
    // RESP: the connection that gave the old token is refused from its next command on; a
    // new one gets in with the new token only.
    assert_eq!(
        redis_code(&mut before, &["INCR", "snowflake"]).await,
        "NOAUTH"
    );
    let mut after = redis_connect(resp).await;
    assert_eq!(redis_code(&mut after, &["AUTH", &old]).await, "WRONGPASS");
    assert_eq!(redis_code(&mut after, &["AUTH", &new]).await, "OK");
    assert_eq!(redis_code(&mut after, &["INCR", "snowflake"]).await, "OK");

    // The stream let in before the reload went on to its end, issuing after the reload: its
    // last ID's time is past the reload (snowflakes never run ahead of the clock by default).
    let mut last = first.ids().last().expect("ids");
    while let Some(batch) = tokio::time::timeout(PATIENCE, stream.message())
        .await
        .expect("the stream keeps coming")
        .unwrap()
    {
        received += batch.count;
        last = batch.ids().last().unwrap_or(last);
    }
    assert_eq!(received, total, "the stream ends once all were sent");
    let last_ms = (last >> 22) + TWITTER_EPOCH_MS;
    assert!(
        last_ms >= reloaded_at,
        "the stream's last ID ({last_ms}) is from before the reload ({reloaded_at})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_that_fails_keeps_the_tokens_in_force() {
    let kept = generate_token().unwrap();
    // Reachable from other machines: only tokens make that allowed.
    let s = Reloading::start(
        "[server]\nlisten = \"0.0.0.0:0\"\n",
        &token("kept", &kept, ""),
    )
    .await;
    let works = || async {
        assert_eq!(s.status("/v1/ids/snowflake", Some(&kept)).await, 200);
        assert_eq!(s.status("/v1/ids/snowflake", None).await, 401);
    };
    works().await;

    // A token's hash pasted wrong: the config does not load.
    let e = s
        .reload(&token("kept", &kept, "").replace("sha256:", "sha256:zz"))
        .unwrap_err();
    assert!(e.contains("auth.token[0]"), "{e}");
    works().await;
    // A config that loads but fails in another section: refused whole, as at start.
    let config = s.config(&token("other", "sd_other", "")).unwrap();
    let mut broken = config.clone();
    broken.limits.max_count = 0;
    let e = s.running.reloader.reload(&broken).unwrap_err().to_string();
    assert!(e.contains("limits.max_count"), "{e}");
    assert_eq!(s.status("/v1/ids/snowflake", Some("sd_other")).await, 401);
    works().await;
    // No tokens on a listener reachable from other machines: refused, like at start.
    let e = s.reload("").unwrap_err();
    assert!(
        e.contains("server.listen") && e.contains("0.0.0.0") && e.contains("insecure_bind"),
        "{e}"
    );
    works().await;
    // Even if the file also moves the listener to loopback: that takes a restart, so the
    // running listener still decides.
    let mut moved = config;
    moved.server.listen = "127.0.0.1:0".parse().unwrap();
    moved.auth.tokens.clear();
    let e = s.running.reloader.reload(&moved).unwrap_err().to_string();
    assert!(e.contains("running server"), "{e}");
    works().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_turns_on_and_off_by_reload_on_a_loopback_server() {
    let s = Reloading::start("[server]\nlisten = \"127.0.0.1:0\"\n", "").await;
    assert_eq!(s.status("/v1/generators", None).await, 200);
    let secret = generate_token().unwrap();
    let on = s.reload(&token("first", &secret, "")).unwrap();
    assert_eq!((on.switch, on.tokens), (AuthSwitch::TurnedOn, 1));
    assert_eq!(s.status("/v1/generators", None).await, 401);
    assert_eq!(s.status("/v1/ids/uuid7", None).await, 401);
    assert_eq!(s.status("/v1/ids/uuid7", Some(&secret)).await, 200);
    assert_eq!(s.status("/healthz", None).await, 200);
    let off = s.reload("").unwrap();
    assert_eq!((off.switch, off.tokens), (AuthSwitch::TurnedOff, 0));
    assert_eq!(off.removed, ["first"]);
    assert_eq!(s.status("/v1/ids/uuid7", None).await, 200);
    assert_eq!(s.status("/v1/generators", None).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sections_wait_for_a_restart_and_an_unchanged_token_keeps_its_spent_rate() {
    let (slow, added) = (generate_token().unwrap(), generate_token().unwrap());
    let limited = token("slow", &slow, "rate = 1\nburst = 1\n");
    let limits = "[limits]\nmax_count = 5\n";
    let s = Reloading::start(
        "[server]\nlisten = \"127.0.0.1:0\"\n",
        &format!("{limits}{limited}"),
    )
    .await;
    // The burst of 1 spent; the next request within the second is refused.
    assert_eq!(s.status("/v1/ids/uuid7", Some(&slow)).await, 200);
    assert_eq!(s.status("/v1/ids/uuid7", Some(&slow)).await, 429);

    let extra = "[[generator]]\nname = \"extra\"\nkind = \"uuid7\"\n";
    let reloaded = s
        .reload(&format!(
            "{limits}{extra}{limited}{}",
            token("added", &added, "")
        ))
        .unwrap();
    assert_eq!(reloaded.needs_restart, ["generator"], "{reloaded:?}");
    assert_eq!(reloaded.added, ["added"]);
    assert!(reloaded.changed.is_empty(), "{reloaded:?}");
    // The tokens are in force; the generators are still the running ones.
    assert_eq!(s.status("/v1/ids/extra", Some(&added)).await, 404);
    assert_eq!(s.status("/v1/ids/uuid7?count=5", Some(&added)).await, 200);
    assert_eq!(s.status("/v1/ids/uuid7?count=6", Some(&added)).await, 400);
    // The slow token, unchanged, still has its burst spent: a reload is no way around a
    // rate limit.
    assert_eq!(s.status("/v1/ids/uuid7", Some(&slow)).await, 429);

    // A new limit is a new limiter, with its burst to spend.
    let faster = token("slow", &slow, "rate = 1\nburst = 5\n");
    let reloaded = s
        .reload(&format!("[limits]\nmax_count = 50\n{faster}"))
        .unwrap();
    assert_eq!(
        (
            reloaded.needs_restart.as_slice(),
            reloaded.changed.as_slice(),
            reloaded.removed.as_slice()
        ),
        (
            &["limits".to_string()][..],
            &["slow".to_string()][..],
            &["added".to_string()][..]
        )
    );
    assert_eq!(s.status("/v1/ids/uuid7", Some(&slow)).await, 200);
    assert_eq!(s.status("/v1/ids/uuid7?count=6", Some(&slow)).await, 400);
}
