//! The gRPC API end to end: a real server on port 0 serving HTTP and gRPC on the one listener,
//! driven by the generated tonic client (and the standard health and reflection clients).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::{TempDir, with_token};
use serde_json::Value;
use snowdrift_proto::grpc::ERROR_CODE_KEY;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{DecodeRequest, IdBatch, NextRequest, StreamRequest};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

/// Generous: a loaded 2-core CI machine may be slow, and nothing here is timed for speed.
const PATIENCE: Duration = Duration::from_secs(120);

struct TestServer {
    addr: std::net::SocketAddr,
    channel: Channel,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    running: JoinHandle<Result<(), snowdrift_server::StartError>>,
    _dir: TempDir,
}

/// A server over a fresh SQLite store with `max_count` 10,000 and `max_stream` 2,000,000,
/// plus `extra_toml`.
async fn start(extra_toml: &str) -> TestServer {
    let dir = TempDir::new("snowdrift-grpc");
    let config = crate::support::load(
        &dir.0,
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\nshutdown_timeout = \"300s\"\n\
             [limits]\nmax_count = 10000\nmax_stream = 2000000\n{extra_toml}"
        ),
    );
    let crate::support::Running {
        addr,
        stop,
        task: running,
        ..
    } = crate::support::spawn(&config).await;
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect_timeout(PATIENCE)
        .connect()
        .await
        .unwrap();
    TestServer {
        addr,
        channel,
        http: reqwest::Client::new(),
        stop,
        running,
        _dir: dir,
    }
}

impl TestServer {
    fn ids(&self) -> IdServiceClient<Channel> {
        IdServiceClient::new(self.channel.clone())
    }

    async fn next(&self, name: &str, count: Option<u64>) -> Result<IdBatch, Status> {
        let request = NextRequest {
            name: name.into(),
            count,
            format: None,
            input: None,
        };
        Ok(self.ids().next(request).await?.into_inner())
    }

    async fn http_json(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let mut request = self.http.request(
            method.parse().unwrap(),
            format!("http://{}{path}", self.addr),
        );
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
        (status, v)
    }

    /// `count` IDs of `name` over HTTP, as numbers.
    async fn http_ids(&self, name: &str, count: u64) -> Vec<u64> {
        let (status, v) = self
            .http_json("GET", &format!("/v1/ids/{name}?count={count}"), None)
            .await;
        assert_eq!(status, 200, "{v}");
        crate::support::ids_of(&v)
    }
}

fn assert_code(result: Result<IdBatch, Status>, code: Code, word: &str, what: &str) -> Status {
    let status = match result {
        Ok(batch) => panic!("{what}: expected {code:?}, got {} IDs", batch.count),
        Err(status) => status,
    };
    assert_eq!(status.code(), code, "{what}: {status:?}");
    let got = status.metadata().get(ERROR_CODE_KEY);
    assert_eq!(
        got.and_then(|v| v.to_str().ok()),
        Some(word),
        "{what}: {status:?}"
    );
    assert!(!status.message().is_empty(), "{what}: a message to act on");
    status
}

fn strictly_increasing(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_serves_every_default_kind() {
    let s = start("").await;
    let batch = s.next("snowflake", Some(10_000)).await.unwrap();
    assert_eq!(
        (batch.name.as_str(), batch.kind.as_str()),
        ("snowflake", "snowflake")
    );
    assert_eq!(batch.count, 10_000);
    assert!(batch.text.is_empty(), "snowflake IDs travel as runs");
    let ids: Vec<u64> = batch.ids().collect();
    assert_eq!(ids.len(), 10_000);
    assert!(strictly_increasing(&ids), "snowflake IDs increase");
    // Packed: far fewer runs than IDs (one per tick at most, 4,096 IDs a tick).
    assert!(
        batch.runs.len() < 1_000,
        "{} runs for 10,000 IDs",
        batch.runs.len()
    );
    // No count means one, as over HTTP.
    let one = s.next("snowflake", None).await.unwrap();
    assert_eq!(one.count, 1);
    assert!(one.ids().next().unwrap() > *ids.last().unwrap());
    for (name, len) in [("uuid7", 36), ("ulid", 26), ("objectid", 24)] {
        let batch = s.next(name, Some(500)).await.unwrap();
        assert_eq!((batch.kind.as_str(), batch.count), (name, 500));
        assert!(batch.runs.is_empty(), "{name} IDs travel as text");
        assert_eq!(batch.text.len(), 500);
        assert!(batch.text.iter().all(|t| t.len() == len), "{name}");
        let distinct: HashSet<_> = batch.text.iter().collect();
        assert_eq!(distinct.len(), 500, "{name} IDs are distinct");
        let mut sorted = batch.text.clone();
        sorted.sort();
        assert_eq!(sorted, batch.text, "{name} IDs come in order");
    }
}

/// Every batch names its kind twice: the string, all that clients from before `kind_code`
/// read, and the code; the two agree for every kind, in `Next` and in each message of a
/// `Stream`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_say_their_kind_as_the_old_string_and_as_the_code() {
    use snowdrift_proto::Kind;
    use snowdrift_proto::grpc::KindCode;
    let kinds = [
        Kind::Snowflake,
        Kind::Uuid1,
        Kind::Uuid2,
        Kind::Uuid4,
        Kind::Uuid6,
        Kind::Uuid7,
        Kind::Ulid,
        Kind::Objectid,
    ];
    let generators: String = kinds
        .iter()
        .map(|k| format!("[[generator]]\nname = \"g-{k}\"\nkind = \"{k}\"\n"))
        .collect();
    let s = start(&generators).await;
    let agree = |batch: &IdBatch, kind: Kind| {
        assert_eq!(batch.kind, kind.as_str(), "the string of old clients");
        assert_eq!(batch.kind_code(), KindCode::from(kind), "{kind}");
        assert_eq!(batch.kind_value(), Some(kind));
        let as_old_clients_see_it = IdBatch {
            kind_code: 0,
            ..batch.clone()
        };
        assert_eq!(as_old_clients_see_it.kind_value(), Some(kind));
    };
    for kind in kinds {
        let name = format!("g-{kind}");
        agree(&s.next(&name, Some(3)).await.unwrap(), kind);
        let request = StreamRequest {
            name,
            count: 30,
            batch: Some(10),
            format: None,
            input: None,
        };
        let mut stream = s.ids().stream(request).await.unwrap().into_inner();
        let mut messages = 0;
        while let Some(batch) = stream.message().await.unwrap() {
            agree(&batch, kind);
            messages += 1;
        }
        assert_eq!(messages, 3, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_runs_are_the_ids_http_gives() {
    // Two generators of each kind, configured alike and starting fresh: one served over
    // gRPC, the other over HTTP, must issue the same sequence.
    let counter_a = snowdrift_testkit::unique_name("grpc_counter_a");
    let counter_b = snowdrift_testkit::unique_name("grpc_counter_b");
    let redis = snowdrift_testkit::urls::redis();
    let s = start(&format!(
        "[[generator]]\nname = \"{counter_a}\"\nkind = \"counter\"\nurl = \"{redis}\"\n\
         [[generator]]\nname = \"{counter_b}\"\nkind = \"counter\"\nurl = \"{redis}\"\n"
    ))
    .await;
    for tag in ["grpc_side", "http_side"] {
        let body = format!(r#"{{"tag": "{tag}", "step": 100}}"#);
        let (status, v) = s.http_json("POST", "/v1/tags", Some(&body)).await;
        assert_eq!(status, 201, "{v}");
    }
    // 250 IDs over a step of 100: several segments, so several runs to expand.
    let batch = s.next("grpc_side", Some(250)).await.unwrap();
    assert_eq!((batch.kind.as_str(), batch.count), ("segment", 250));
    let over_grpc: Vec<u64> = batch.ids().collect();
    let over_http = s.http_ids("http_side", 250).await;
    assert_eq!(over_grpc, over_http);
    assert_eq!(over_grpc[0], 1, "a new tag starts at 1");
    // And the next ones continue where the last batch ended, by either API.
    let after = s.http_ids("grpc_side", 10).await;
    assert_eq!(after[0], over_grpc[249] + 1);

    let batch = s.next(&counter_a, Some(300)).await.unwrap();
    assert_eq!((batch.kind.as_str(), batch.count), ("counter", 300));
    let over_grpc: Vec<u64> = batch.ids().collect();
    let over_http = s.http_ids(&counter_b, 300).await;
    assert_eq!(over_grpc, over_http);
    assert!(strictly_increasing(&over_grpc));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_of_a_million_snowflake_ids() {
    let s = start("").await;
    let request = StreamRequest {
        name: "snowflake".into(),
        count: 1_000_000,
        batch: None,
        format: None,
        input: None,
    };
    let started = std::time::Instant::now();
    let mut stream = s.ids().stream(request).await.unwrap().into_inner();
    let mut ids = Vec::with_capacity(1_000_000);
    let mut messages = 0;
    let mut bytes = 0;
    while let Some(batch) = tokio::time::timeout(PATIENCE, stream.message())
        .await
        .expect("the stream keeps coming")
        .unwrap()
    {
        messages += 1;
        bytes += prost::Message::encoded_len(&batch);
        assert!(batch.count <= 10_000, "a message holds at most max_count");
        let before = ids.len();
        ids.extend(batch.ids());
        assert_eq!((ids.len() - before) as u64, batch.count);
    }
    let elapsed = started.elapsed();
    assert_eq!(ids.len(), 1_000_000, "the stream ends once all were sent");
    assert_eq!(messages, 100);
    assert!(strictly_increasing(&ids), "distinct and increasing");
    // A million 64-bit IDs are 8 MB as raw words; as runs (about one per 4,096-ID tick) they
    // are a small fraction of that.
    assert!(bytes < 1_000_000, "{bytes} bytes on the wire");
    println!(
        "1,000,000 snowflake IDs in {messages} messages, {bytes} bytes of messages, {elapsed:?}"
    );
    // A smaller batch is honoured.
    let request = StreamRequest {
        name: "snowflake".into(),
        count: 2_500,
        batch: Some(1_000),
        format: None,
        input: None,
    };
    let mut stream = s.ids().stream(request).await.unwrap().into_inner();
    let mut counts = Vec::new();
    while let Some(batch) = stream.message().await.unwrap() {
        counts.push(batch.count);
    }
    assert_eq!(counts, [1_000, 1_000, 500]);

    // Text IDs come at most 400 to a message (about 16 KiB), whatever batch asks for, so a
    // client that stops reading leaves the server holding little.
    for (name, format) in [("uuid7", None), ("snowflake", Some("hex".to_string()))] {
        let request = StreamRequest {
            name: name.into(),
            count: 1_000,
            batch: Some(10_000),
            format,
            ..Default::default()
        };
        let mut stream = s.ids().stream(request).await.unwrap().into_inner();
        let mut counts = Vec::new();
        while let Some(batch) = stream.message().await.unwrap() {
            assert_eq!(batch.text.len() as u64, batch.count, "{name}");
            assert!(prost::Message::encoded_len(&batch) < 20_000, "{name}");
            counts.push(batch.count);
        }
        assert_eq!(counts, [400, 400, 200], "{name}");
    }
}

/// Two streams on one Twitter-layout generator share its 4,096 IDs per millisecond: they
/// take turns at the ticks, so they finish close together. Without turns, the stream whose
/// task polls first after each tick takes most of them, and the other waits until the first
/// is done (about half the time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_streams_on_one_generator_share_its_ticks() {
    const COUNT: u64 = 400_000;
    let s = start("").await;
    // IDs each stream has received so far. When one stream ends, the other's count says
    // whether they took turns (here 180,000-390,000 of its 400,000) or one waited for the
    // other (near 0). Counting IDs, not timing the two ends, keeps a busy machine from
    // deciding the test; the bound is a quarter, well clear of both.
    let received: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let streams = (0..2).map(|i| {
        let mut client = s.ids();
        let received = received.clone();
        tokio::spawn(async move {
            let request = StreamRequest {
                name: "snowflake".into(),
                count: COUNT,
                ..Default::default()
            };
            let mut stream = client.stream(request).await.unwrap().into_inner();
            while let Some(batch) = tokio::time::timeout(PATIENCE, stream.message())
                .await
                .expect("the stream keeps coming")
                .unwrap()
            {
                received[i].fetch_add(batch.count, Ordering::SeqCst);
            }
            assert_eq!(received[i].load(Ordering::SeqCst), COUNT);
            (Instant::now(), received[1 - i].load(Ordering::SeqCst))
        })
    });
    let mut ends = Vec::new();
    for stream in streams.collect::<Vec<_>>() {
        ends.push(stream.await.unwrap());
    }
    ends.sort();
    // What the other stream had when the first one ended.
    let at_first_end = ends[0].1;
    println!("when the first stream ended, the other had {at_first_end} of {COUNT} IDs");
    assert!(
        at_first_end >= COUNT / 4,
        "when one stream ended the other had only {at_first_end} of {COUNT} IDs: they did not share the ticks"
    );
}

/// Single-ID requests get turns beside many bulk streams on one Twitter-layout generator:
/// each waiting request takes a share of a tick, so a single ID waits a tick or two, not
/// one tick per stream. Measured in IDs the streams took while the single requests ran
/// (about 4,096 per tick), not in time, so a slow machine cannot decide it: with turns,
/// 100 single IDs cost the streams a few hundred thousand IDs; without them (the first
/// request polled at each tick took all of it) about 40 million.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_ids_get_turns_beside_bulk_streams_on_one_generator() {
    const STREAMS: u64 = 100;
    let s = start("").await;
    let taken = Arc::new(AtomicU64::new(0));
    let flowing = Arc::new(AtomicU64::new(0));
    let mut streams = tokio::task::JoinSet::new();
    for _ in 0..STREAMS {
        let mut client = s.ids();
        let (taken, flowing) = (taken.clone(), flowing.clone());
        streams.spawn(async move {
            let request = StreamRequest {
                name: "snowflake".into(),
                // The server's max_stream: 200 million IDs in all, far more than the test
                // takes (a 4,096-a-millisecond generator needs 49 s for them).
                count: 2_000_000,
                ..Default::default()
            };
            let mut stream = client.stream(request).await.unwrap().into_inner();
            let mut first = true;
            while let Ok(Some(batch)) = stream.message().await {
                taken.fetch_add(batch.count, Ordering::SeqCst);
                if std::mem::take(&mut first) {
                    flowing.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
    }
    let deadline = Instant::now() + PATIENCE;
    while flowing.load(Ordering::SeqCst) < STREAMS {
        assert!(Instant::now() < deadline, "the streams never all started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = taken.load(Ordering::SeqCst);
    for _ in 0..100 {
        let (status, v) = s.http_json("GET", "/v1/ids/snowflake", None).await;
        assert_eq!(status, 200, "{v}");
    }
    let during = taken.load(Ordering::SeqCst) - before;
    streams.abort_all();
    println!("the streams took {during} IDs while 100 single IDs were served");
    // On average under 20 ticks per single ID.
    assert!(
        during < 100 * 20 * 4_096,
        "single IDs waited behind the streams: they took {during} IDs meanwhile"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_gives_the_fields_http_gives() {
    let s = start("").await;
    let id = s
        .next("snowflake", None)
        .await
        .unwrap()
        .ids()
        .next()
        .unwrap();
    let decode = |name: &str, id: String, format: Option<&str>| DecodeRequest {
        name: name.into(),
        id,
        format: format.map(str::to_string),
    };
    let mut client = s.ids();
    let d = client
        .decode(decode("snowflake", id.to_string(), None))
        .await
        .unwrap()
        .into_inner();
    let (status, v) = s
        .http_json("GET", &format!("/v1/ids/snowflake/decode/{id}"), None)
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(d.id, id.to_string());
    assert_eq!(
        (d.kind.as_str(), d.layout.as_str()),
        ("snowflake", "twitter")
    );
    assert_eq!(d.time.as_deref(), v["time"].as_str());
    assert_eq!(d.time_ms, v["time_ms"].as_u64());
    let http_fields: std::collections::HashMap<String, u64> = v["fields"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(d.fields, http_fields);
    assert!(d.fields.len() >= 3, "{:?}", d.fields);
    // Another format of the same ID decodes to the same fields.
    let hex = format!("{id:x}");
    let d2 = client
        .decode(decode("snowflake", hex, Some("hex")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d2, d);

    let uuid = s.next("uuid7", None).await.unwrap().text.remove(0);
    let d = client
        .decode(decode("uuid7", uuid.clone(), None))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((d.id, d.version), (uuid, Some(7)));
    assert!(d.time_ms.is_some() && d.time.is_some());
    let oid = s.next("objectid", None).await.unwrap().text.remove(0);
    let d = client
        .decode(decode("objectid", oid, None))
        .await
        .unwrap()
        .into_inner();
    assert!(d.process.is_some() && d.counter.is_some() && d.time_ms.is_some());

    for (request, what) in [
        (decode("snowflake", "not-an-id".into(), None), "garbage"),
        (
            decode("snowflake", "1".into(), Some("roman")),
            "unknown format",
        ),
        (
            decode("uuid7", "1".into(), Some("hex")),
            "format of a text kind",
        ),
        (decode("ulid", "nope".into(), None), "bad ulid"),
        (
            decode("ulid", format!("8{}", "Z".repeat(25)), None),
            "a ulid past 128 bits",
        ),
        // Ten kilobytes of ID (within limits.grpc_max_message): refused with a short
        // message, which the client can read.
        (
            decode("snowflake", "9".repeat(10_000), None),
            "10 KB of digits",
        ),
        (decode("uuid7", "u".repeat(10_000), None), "10 KB of text"),
    ] {
        let got = client.decode(request).await.map(|_| IdBatch::default());
        // INVALID_ARGUMENT either way; the error code says whether the request was wrong
        // or the generator lacks what it asks for.
        let word = if what == "format of a text kind" {
            "unsupported"
        } else {
            "invalid_request"
        };
        let status = assert_code(got, Code::InvalidArgument, word, what);
        assert!(
            status.message().len() < 512,
            "{what}: {} bytes of message",
            status.message().len()
        );
    }
    // A megabyte of ID is over limits.grpc_max_message: refused before it is read.
    let got = client
        .decode(decode("snowflake", "9".repeat(1 << 20), None))
        .await
        .map(|_| IdBatch::default());
    let status = assert_code(
        got,
        Code::ResourceExhausted,
        "invalid_request",
        "a megabyte of digits",
    );
    assert!(
        status.message().contains("limits.grpc_max_message"),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_the_matching_codes() {
    let s = start("").await;
    let missing = snowdrift_testkit::unique_name("no_such_tag");
    assert_code(
        s.next(&missing, Some(1)).await,
        Code::NotFound,
        "not_found",
        "unknown name",
    );
    for (count, what) in [(Some(0), "count 0"), (Some(10_001), "count over max_count")] {
        let status = assert_code(
            s.next("snowflake", count).await,
            Code::InvalidArgument,
            "invalid_request",
            what,
        );
        assert!(status.message().contains("10000"), "{status:?}");
    }
    assert_code(
        s.next("bad name!", Some(1)).await,
        Code::InvalidArgument,
        "invalid_request",
        "invalid name",
    );
    let stream = |count, batch| StreamRequest {
        name: "snowflake".into(),
        count,
        batch,
        format: None,
        input: None,
    };
    for (request, what) in [
        (stream(0, None), "stream count 0"),
        (stream(2_000_001, None), "stream count over max_stream"),
        (stream(10, Some(0)), "batch 0"),
        (stream(10, Some(10_001)), "batch over max_count"),
    ] {
        let got = s.ids().stream(request).await.map(|_| IdBatch::default());
        assert_code(got, Code::InvalidArgument, "invalid_request", what);
    }
    let request = StreamRequest {
        name: missing,
        count: 10,
        batch: None,
        format: None,
        input: None,
    };
    // The name is checked when the call starts, or at its first batch for a tag that the
    // store has to look up: either way the caller sees NOT_FOUND.
    let got = match s.ids().stream(request).await {
        Err(status) => Err(status),
        Ok(r) => r.into_inner().message().await.map(|_| IdBatch::default()),
    };
    assert_code(got, Code::NotFound, "not_found", "stream of an unknown tag");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_is_unavailable() {
    let (proxy, url) =
        snowdrift_testkit::FaultProxy::start_for_url(&snowdrift_testkit::urls::postgres())
            .await
            .unwrap();
    let table = snowdrift_testkit::unique_name("grpc_leaf");
    let s = start(&format!(
        "[store]\nurl = \"{url}\"\ntable = \"{table}\"\nwait = \"1s\"\n"
    ))
    .await;
    let (status, v) = s
        .http_json("POST", "/v1/tags", Some(r#"{"tag": "outage", "step": 10}"#))
        .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(s.next("outage", Some(5)).await.unwrap().count, 5);
    proxy.cut();
    // Far more than the buffers hold, so the store must be reached.
    let status = assert_code(
        s.next("outage", Some(5_000)).await,
        Code::Unavailable,
        "unavailable",
        "database cut",
    );
    println!("while the database is cut: {status:?}");
    proxy.heal();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reflection_and_http_share_the_port() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let s = start("").await;
    let mut health = HealthClient::new(s.channel.clone());
    for service in ["", "snowdrift.v1.IdService"] {
        let r = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }

    let mut reflection = ServerReflectionClient::new(s.channel.clone());
    let ask = |m| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(m),
    };
    let requests = futures_util::stream::iter([
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol(
            "snowdrift.v1.IdService".into(),
        )),
    ]);
    let mut answers = reflection
        .server_reflection_info(requests)
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::ListServicesResponse(list)) =
        answers.message().await.unwrap().unwrap().message_response
    else {
        panic!("not a service list");
    };
    let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
    for name in ["snowdrift.v1.IdService", "grpc.health.v1.Health"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let Some(MessageResponse::FileDescriptorResponse(files)) =
        answers.message().await.unwrap().unwrap().message_response
    else {
        panic!("not a file descriptor");
    };
    let file: prost_types::FileDescriptorProto =
        prost::Message::decode(files.file_descriptor_proto[0].as_slice()).unwrap();
    assert_eq!(file.package(), "snowdrift.v1");
    let methods: Vec<&str> = file.service[0].method.iter().map(|m| m.name()).collect();
    assert_eq!(methods, ["Next", "Stream", "Decode"]);

    // HTTP on the same port, between gRPC calls on a live HTTP/2 connection.
    let (status, v) = s.http_json("GET", "/healthz", None).await;
    assert_eq!(status, 200, "{v}");
    let over_http = s.http_ids("snowflake", 100).await;
    let over_grpc: Vec<u64> = s
        .next("snowflake", Some(100))
        .await
        .unwrap()
        .ids()
        .collect();
    assert!(
        over_http.last() < over_grpc.first(),
        "one generator behind both"
    );
    let (status, v) = s.http_json("GET", "/no/such/route", None).await;
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (404, Some("not_found"))
    );

    // A gRPC service the server does not have is UNIMPLEMENTED, not an HTTP page.
    let mut raw = tonic::client::Grpc::new(s.channel.clone());
    raw.ready().await.unwrap();
    let codec = tonic_prost::ProstCodec::<NextRequest, IdBatch>::default();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/nope.v1.Nope/Next");
    let got = raw
        .unary(tonic::Request::new(NextRequest::default()), path, codec)
        .await;
    assert_eq!(got.unwrap_err().code(), Code::Unimplemented);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_streams_at_a_batch_boundary() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    let mut s = start("").await;
    // A health watcher: it must see NOT_SERVING and end, not hold the shutdown open.
    let mut watch = HealthClient::new(s.channel.clone())
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.status, ServingStatus::Serving as i32);
    let request = StreamRequest {
        name: "snowflake".into(),
        count: 2_000_000,
        batch: Some(1_000),
        format: None,
        input: None,
    };
    let mut stream = s.ids().stream(request).await.unwrap().into_inner();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let batch = stream.message().await.unwrap().unwrap();
        ids.extend(batch.ids());
    }
    s.stop.take().unwrap().send(()).unwrap();
    // The stream goes on until the server notices, then ends with UNAVAILABLE saying how many
    // were sent; a stream of two million would otherwise hold the shutdown (whose timeout
    // here is 300 s) for seconds.
    let end = loop {
        match tokio::time::timeout(PATIENCE, stream.message())
            .await
            .expect("the stream ends")
        {
            Ok(Some(batch)) => {
                assert_eq!(batch.count, 1_000, "whole batches only");
                ids.extend(batch.ids());
            }
            Ok(None) => panic!("the stream ended as if complete after {} IDs", ids.len()),
            Err(status) => break status,
        }
    };
    assert_eq!(end.code(), Code::Unavailable, "{end:?}");
    assert!(end.message().contains("shutting down"), "{end:?}");
    assert!(
        end.message()
            .contains(&format!("{} of the 2000000", ids.len())),
        "{end:?} after {} IDs",
        ids.len()
    );
    assert!(ids.len() < 2_000_000);
    assert!(strictly_increasing(&ids));
    let mut seen = Vec::new();
    while let Some(update) = tokio::time::timeout(PATIENCE, watch.message())
        .await
        .expect("the health watch ends")
        .unwrap()
    {
        seen.push(update.status);
    }
    assert_eq!(seen, [ServingStatus::NotServing as i32]);
    let served = tokio::time::timeout(PATIENCE, s.running)
        .await
        .expect("the server stops once its streams have ended");
    served.unwrap().unwrap();
}

/// `message` with `authorization: Bearer {token}` metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_guard_grpc_as_they_guard_http() {
    use snowdrift_server::auth::{TokenHash, generate_token};
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    let reader = generate_token().unwrap();
    let limited = generate_token().unwrap();
    let s = start(&format!(
        "[[auth.token]]\nname = \"reader\"\nhash = \"{}\"\ngenerators = [\"snowflake\"]\n\
         role = \"read\"\n\
         [[auth.token]]\nname = \"limited\"\nhash = \"{}\"\ngenerators = [\"*\"]\n\
         role = \"read\"\nrate = 1\nburst = 1\n",
        TokenHash::of(&reader),
        TokenHash::of(&limited),
    ))
    .await;
    let next = |name: &str| NextRequest {
        name: name.into(),
        count: Some(10),
        format: None,
        input: None,
    };
    let mut client = s.ids();

    let got = client.next(next("snowflake")).await.map(|r| r.into_inner());
    assert_code(got, Code::Unauthenticated, "unauthorized", "no token");
    let stranger = generate_token().unwrap();
    let got = client.next(with_token(next("snowflake"), &stranger)).await;
    assert_code(
        got.map(|r| r.into_inner()),
        Code::Unauthenticated,
        "unauthorized",
        "unknown token",
    );

    let batch = client
        .next(with_token(next("snowflake"), &reader))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(batch.count, 10);
    let stream = StreamRequest {
        name: "snowflake".into(),
        count: 100,
        batch: None,
        format: None,
        input: None,
    };
    let mut ids = client
        .stream(with_token(stream.clone(), &reader))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ids.message().await.unwrap().unwrap().count, 100);
    let got = client.stream(stream).await.map(|_| IdBatch::default());
    assert_code(
        got,
        Code::Unauthenticated,
        "unauthorized",
        "stream, no token",
    );
    let decode = DecodeRequest {
        name: "snowflake".into(),
        id: batch.ids().next().unwrap().to_string(),
        format: None,
    };
    client
        .decode(with_token(decode.clone(), &reader))
        .await
        .unwrap();
    let got = client.decode(decode).await.map(|_| IdBatch::default());
    assert_code(
        got,
        Code::Unauthenticated,
        "unauthorized",
        "decode, no token",
    );

    // Outside the token's generators.
    let got = client.next(with_token(next("uuid7"), &reader)).await;
    assert_code(
        got.map(|r| r.into_inner()),
        Code::PermissionDenied,
        "forbidden",
        "another generator",
    );

    // Over the token's rate: RESOURCE_EXHAUSTED with the wait, as HTTP's 429 + Retry-After.
    let mut refused = None;
    for _ in 0..5 {
        if let Err(status) = client.next(with_token(next("uuid7"), &limited)).await {
            refused = Some(status);
            break;
        }
    }
    let status = refused.expect("a token of 1 request/s is refused within 5 quick calls");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let meta = |key: &str| {
        status
            .metadata()
            .get(key)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    assert_eq!(meta(ERROR_CODE_KEY).as_deref(), Some("rate_limited"));
    let wait: u64 = meta(snowdrift_proto::grpc::RETRY_AFTER_KEY)
        .expect("retry-after")
        .parse()
        .unwrap();
    assert!(wait >= 1, "{wait}");

    // Health and reflection stay open, like /healthz and /openapi.json.
    let r = HealthClient::new(s.channel.clone())
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await;
    assert!(r.is_ok(), "{r:?}");
}

/// Sends whatever bytes it is given as the message: a client that does not speak protobuf.
#[derive(Debug, Default, Clone)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use bytes::Buf;
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

/// A request that is not valid protobuf is the caller's error: INVALID_ARGUMENT with the
/// contract's error code, for unary calls and for streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_protobuf_is_invalid_argument() {
    let s = start("").await;
    for method in ["Next", "Stream", "Decode"] {
        let mut grpc = tonic::client::Grpc::new(s.channel.clone());
        grpc.ready().await.unwrap();
        let path = format!("/snowdrift.v1.IdService/{method}")
            .parse::<tonic::codegen::http::uri::PathAndQuery>()
            .unwrap();
        // A field tag with wire type 7, which protobuf does not have.
        let garbage = tonic::Request::new(vec![0x0f, 0xff, 0xff, 0xff]);
        let got = if method == "Stream" {
            grpc.server_streaming(garbage, path, RawCodec)
                .await
                .map(|_| IdBatch::default())
        } else {
            grpc.unary(garbage, path, RawCodec)
                .await
                .map(|_| IdBatch::default())
        };
        assert_code(got, Code::InvalidArgument, "invalid_request", method);
    }
}

/// `limits.max_streams` bounds the `IdService` calls in flight on the whole server: with
/// two streams open and unread, a third call is UNAVAILABLE at once (so a client tries
/// another server); once one ends, calls go through again. Health checks are not counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_max_streams_are_unavailable_until_one_ends() {
    let s = start("max_streams = 2\n").await;
    let mut ids = s.ids();
    let stream = || StreamRequest {
        name: "snowflake".into(),
        count: 2_000_000,
        batch: Some(1_000),
        ..Default::default()
    };
    let mut first = ids.stream(stream()).await.unwrap().into_inner();
    first.message().await.unwrap().unwrap();
    let mut second = ids.stream(stream()).await.unwrap().into_inner();
    second.message().await.unwrap().unwrap();
    let refused = s.next("snowflake", Some(1)).await;
    let status = assert_code(refused, Code::Unavailable, "unavailable", "a third call");
    assert!(
        status.message().contains("limits.max_streams"),
        "{status:?}"
    );
    let mut health = tonic_health::pb::health_client::HealthClient::new(s.channel.clone());
    health
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .unwrap();
    drop(first);
    let deadline = Instant::now() + PATIENCE;
    loop {
        match s.next("snowflake", Some(1)).await {
            Ok(batch) => {
                assert_eq!(batch.count, 1);
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert_eq!(e.code(), Code::Unavailable, "{e:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("a place never came back: {e:?}"),
        }
    }
    drop(second);
}

/// xid, nanoid and cuid2 over gRPC: text batches with their kind codes, of the configured
/// shapes; decode gives an xid's time, machine, process ID and counter as HTTP does, checks
/// a Nano ID or cuid2 (which hold no fields), and refuses one of the wrong shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xid_nanoid_and_cuid2_over_grpc() {
    use snowdrift_proto::Kind;
    use snowdrift_proto::grpc::KindCode;
    let s = start(
        "[[generator]]\nname = \"x\"\nkind = \"xid\"\nmachine_id = 65793\n\
         [[generator]]\nname = \"n\"\nkind = \"nanoid\"\nalphabet = \"0123456789\"\nsize = 30\n\
         [[generator]]\nname = \"c\"\nkind = \"cuid2\"\nlength = 12\n",
    )
    .await;
    for (name, kind, len) in [
        ("x", Kind::Xid, 20),
        ("n", Kind::Nanoid, 30),
        ("c", Kind::Cuid2, 12),
    ] {
        let batch = s.next(name, Some(2_000)).await.unwrap();
        assert_eq!(batch.kind_code(), KindCode::from(kind));
        assert!(batch.runs.is_empty(), "{name} IDs travel as text");
        assert_eq!(batch.text.len(), 2_000);
        assert!(batch.text.iter().all(|t| t.len() == len), "{name}");
        let distinct: HashSet<_> = batch.text.iter().collect();
        assert_eq!(distinct.len(), 2_000, "{name}");
    }
    let request = |name: &str, id: String| DecodeRequest {
        name: name.into(),
        id,
        format: None,
    };
    let mut client = s.ids();
    let xid = s.next("x", None).await.unwrap().text.remove(0);
    let d = client
        .decode(request("x", xid.clone()))
        .await
        .unwrap()
        .into_inner();
    let (status, v) = s
        .http_json("GET", &format!("/v1/ids/x/decode/{xid}"), None)
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (d.kind.as_str(), d.machine.as_deref()),
        ("xid", Some("010101"))
    );
    assert_eq!(d.pid.map(u64::from), v["pid"].as_u64());
    assert_eq!(d.counter.map(u64::from), v["counter"].as_u64());
    assert_eq!(d.time_ms, v["time_ms"].as_u64());
    let nano = s.next("n", None).await.unwrap().text.remove(0);
    let d = client
        .decode(request("n", nano.clone()))
        .await
        .unwrap()
        .into_inner();
    assert_eq!((d.id, d.time_ms, d.counter), (nano, None, None));
    for (name, id, why) in [
        (
            "n",
            "0123456789".repeat(3).replace('9', "a"),
            "not in the alphabet",
        ),
        ("c", "a".repeat(13), "it has 13 characters"),
        ("x", "9M4E2MR0UI3E8A215N4G".into(), "'M' at byte 1"),
    ] {
        let e = client.decode(request(name, id)).await.unwrap_err();
        assert!(e.message().contains(why), "{name}: {e:?}");
    }
}
