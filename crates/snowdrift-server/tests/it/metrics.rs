//! `/metrics` on a real server: its size stays a few lines per segment tag however many
//! there are, a starving tag can be found, and gRPC calls are timed beside HTTP requests.

use crate::support::TestServer;
use futures_util::StreamExt;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{IdBatch, NextRequest, StreamRequest};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

/// How many tags the size test uses: enough that anything per tag dominates the output.
const TAGS: usize = 300;

async fn scrape(s: &TestServer) -> String {
    s.text("/metrics", 200).await
}

/// The value of the sample `series` (name and labels exactly as written), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

/// Every tag costs its issued counter and two buffer counters; the batch-size histogram has
/// no per-tag series; the fill gauges cover only the ten driest tags. A tag that starved
/// shows it, by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tags_cost_three_lines_each_and_a_starving_tag_shows() {
    let s = crate::support::start("snowdrift-metrics-tags", "").await;
    let prefix = snowdrift_testkit::unique_name("mt");
    let tags: Vec<String> = (0..TAGS).map(|i| format!("{prefix}-{i}")).collect();
    futures_util::stream::iter(&tags)
        .for_each_concurrent(8, |tag| {
            let s = &s;
            async move {
                s.post("/v1/tags", &format!(r#"{{"tag": "{tag}"}}"#), 201)
                    .await;
                s.json(&format!("/v1/ids/{tag}"), 200).await;
            }
        })
        .await;
    // Step 1: every ID of a batch is a segment of its own, so requests outrun the refills.
    let starving = format!("{prefix}-starving");
    s.post(
        "/v1/tags",
        &format!(r#"{{"tag": "{starving}", "step": 1}}"#),
        201,
    )
    .await;
    for _ in 0..5 {
        s.json(&format!("/v1/ids/{starving}?count=200"), 200).await;
    }

    let text = scrape(&s).await;
    let mine: Vec<&str> = text.lines().filter(|l| l.contains(&prefix)).collect();
    // Three counters per tag (the starving one too), and three gauges for each of the ten
    // driest.
    let per_tag = 3 * (TAGS + 1) + 3 * 10;
    assert_eq!(mine.len(), per_tag, "{}", mine.join("\n"));
    // About 220 bytes per tag with these 25-character names; before, every tag had 16
    // series (a histogram of its own among them), over 1,000 bytes.
    let bytes: usize = mine.iter().map(|l| l.len() + 1).sum();
    assert!(
        bytes < 300 * (TAGS + 1),
        "{bytes} bytes of series for {} tags",
        TAGS + 1
    );
    for tag in &tags[..3] {
        let issued = format!(r#"snowdrift_ids_issued_total{{generator="{tag}",kind="segment"}}"#);
        assert_eq!(sample(&text, &issued), Some(1.0), "{issued}");
        let refills = format!(r#"snowdrift_segment_refills_total{{tag="{tag}"}}"#);
        assert!(
            sample(&text, &refills).is_some_and(|n| n >= 1.0),
            "{refills}"
        );
    }
    let starved = format!(r#"snowdrift_segment_starved_total{{tag="{starving}"}}"#);
    assert!(
        sample(&text, &starved).is_some_and(|n| n > 0.0),
        "{starved} in\n{text}"
    );
    let batches: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("snowdrift_batch_size"))
        .collect();
    assert!(
        batches.iter().all(|l| !l.contains("generator=")),
        "{batches:?}"
    );
    let count = r#"snowdrift_batch_size_count{kind="segment"}"#;
    assert!(
        sample(&text, count).is_some_and(|n| n >= (TAGS + 5) as f64),
        "{batches:?}"
    );
    let tags_buffered = sample(&text, "snowdrift_segment_buffers");
    assert!(tags_buffered.is_some_and(|n| n >= (TAGS + 1) as f64));

    // A second scrape renders the same series, not more.
    let again = scrape(&s).await;
    let mine_again = again.lines().filter(|l| l.contains(&prefix)).count();
    assert_eq!(mine_again, per_tag);
}

async fn channel(s: &TestServer) -> Channel {
    Endpoint::from_shared(s.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

fn duration_count(route: &str, status: &str) -> String {
    format!(
        r#"snowdrift_request_duration_seconds_count{{route="{route}",method="POST",status="{status}"}}"#
    )
}

/// gRPC calls land in `snowdrift_request_duration_seconds` by method and code: a stream
/// once it has ended (or the client dropped it), and a made-up method under its route
/// pattern, never under its own name. HTTP methods outside the standard ones are `other`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_calls_are_timed_by_method_and_code() {
    let s = crate::support::start("snowdrift-metrics-grpc", "").await;
    let mut ids = IdServiceClient::new(channel(&s).await);
    let next = |name: &str| NextRequest {
        name: name.into(),
        count: Some(10),
        ..Default::default()
    };
    ids.next(next("snowflake")).await.unwrap();
    ids.next(next("snowflake")).await.unwrap();
    let missing = ids.next(next("no-such-generator")).await.unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);

    let stream = |count| StreamRequest {
        name: "snowflake".into(),
        count,
        batch: Some(1_000),
        ..Default::default()
    };
    let mut whole = ids.stream(stream(3_000)).await.unwrap().into_inner();
    let mut got = 0;
    while let Some(batch) = whole.message().await.unwrap() {
        got += batch.count;
    }
    assert_eq!(got, 3_000);
    // Read one batch of a long stream, then hang up.
    let mut dropped = ids.stream(stream(1_000_000)).await.unwrap().into_inner();
    dropped.message().await.unwrap().unwrap();
    drop(dropped);

    let mut raw = tonic::client::Grpc::new(channel(&s).await);
    raw.ready().await.unwrap();
    let made_up = raw
        .unary::<NextRequest, IdBatch, _>(
            tonic::Request::new(next("snowflake")),
            "/snowdrift.v1.IdService/MadeUp".parse().unwrap(),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(made_up.code(), Code::Unimplemented);

    let brew = s
        .client
        .request("BREW".parse().unwrap(), format!("{}/healthz", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(brew.status(), 405);

    // The dropped stream is recorded when the server notices the hang-up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let cancelled = duration_count("/snowdrift.v1.IdService/Stream", "CANCELLED");
    let text = loop {
        let text = scrape(&s).await;
        if sample(&text, &cancelled).is_some() || std::time::Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    for (series, want) in [
        (duration_count("/snowdrift.v1.IdService/Next", "OK"), 2.0),
        (duration_count("/snowdrift.v1.IdService/Next", "NOT_FOUND"), 1.0),
        (duration_count("/snowdrift.v1.IdService/Stream", "OK"), 1.0),
        (cancelled, 1.0),
        (
            duration_count("/snowdrift.v1.IdService/{*method}", "UNIMPLEMENTED"),
            1.0,
        ),
        (
            r#"snowdrift_request_duration_seconds_count{route="/healthz",method="other",status="405"}"#
                .to_string(),
            1.0,
        ),
    ] {
        assert_eq!(sample(&text, &series), Some(want), "{series} in\n{text}");
    }
    assert!(!text.contains("MadeUp"), "{text}");
    // IDs issued over gRPC count as over HTTP: 2 x 10, the whole stream and the batch read
    // before hanging up (or more, if the server issued one ahead).
    let issued = r#"snowdrift_ids_issued_total{generator="snowflake",kind="snowflake"}"#;
    assert!(
        sample(&text, issued).is_some_and(|n| n >= 4_020.0),
        "{issued} in\n{text}"
    );
}

/// `/metrics` passes Prometheus' own linter (`promtool check metrics`: help text on every
/// family, counters and only counters named `_total`, base units) after traffic on every
/// transport: the fast path, the router, gRPC, RESP, segment tags and a leased snowflake
/// generator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promtool_finds_nothing_to_fix_after_traffic_on_every_transport() {
    let s = crate::support::start("snowdrift-promtool", "resp_listen = \"127.0.0.1:0\"\n").await;
    s.post("/v1/tags", r#"{"tag": "linted", "step": 100}"#, 201)
        .await;
    s.json("/v1/ids/linted?count=3", 200).await;
    s.json("/v1/ids/snowflake", 200).await;
    s.json("/v1/tags", 200).await;
    s.json("/v1/ids/no-such-name", 404).await;
    let mut ids = IdServiceClient::new(channel(&s).await);
    ids.next(NextRequest {
        name: "snowflake".into(),
        count: Some(10),
        ..Default::default()
    })
    .await
    .unwrap();
    let client = redis::Client::open(format!("redis://{}/", s.resp().unwrap())).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("INCR")
        .arg("linted")
        .query_async(&mut con)
        .await
        .unwrap();
    let text = scrape(&s).await;
    promtool_check(&text);
    // The series promtool would have flagged before are there to be checked.
    for family in [
        "snowdrift_worker_lease_renewals_total",
        "snowdrift_layout_seconds_left",
        "snowdrift_connections_open",
        "snowdrift_ids_issued_total",
    ] {
        assert!(text.contains(&format!("# HELP {family} ")), "{family}");
    }
}

/// Panics with what `promtool check metrics` says unless it finds nothing in `text`.
pub fn promtool_check(text: &str) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut promtool = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!("promtool: {e}; scripts/services installs it (Debian's prometheus)"),
    };
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Scrapes until `ok` holds for the scrape, or panics after 60 s naming `what`.
async fn scrape_until(s: &TestServer, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = scrape(s).await;
        if ok(&text) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never showed in\n{text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// What the alert rules watch for a store outage and a ticket server down
/// (`deploy/prometheus/alerts.yml`): with the segment store and one of two ticket servers cut
/// off, `snowdrift_segment_refills_failing` counts the tag whose refills fail and
/// `snowdrift_ticket_server_up` shows that server (by its class, no host) down and the other
/// up; once both are back, the metrics say so. `/metrics` still passes promtool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_and_a_ticket_server_down_show_in_metrics() {
    use snowdrift_testkit::{FaultProxy, urls};
    let (store_proxy, store_url) = FaultProxy::start_for_url(&urls::postgres()).await.unwrap();
    let (ticket_proxy, ticket_url) = FaultProxy::start_for_url(&urls::postgres()).await.unwrap();
    let table = snowdrift_testkit::unique_name("mon_store");
    let tickets = snowdrift_testkit::unique_name("mon_tickets");
    let s = crate::support::start(
        "snowdrift-metrics-outage",
        &format!(
            "[store]\nurl = \"{store_url}\"\ntable = \"{table}\"\nwait = \"200ms\"\npreload = []\n\n\
             [[generator]]\nname = \"tickets\"\nkind = \"ticket\"\ntable = \"{tickets}\"\n\
             servers = [\"{ticket_url}\", \"{}\"]\n",
            urls::mysql()
        ),
    )
    .await;
    s.post("/v1/tags", r#"{"tag": "outage", "step": 10}"#, 201)
        .await;
    s.json("/v1/ids/outage?count=3", 200).await;
    s.json("/v1/ids/tickets?count=4", 200).await;
    let up = |server: u32| {
        format!(r#"snowdrift_ticket_server_up{{generator="tickets",server="{server}"}}"#)
    };
    let text = scrape(&s).await;
    assert_eq!(
        sample(&text, "snowdrift_segment_refills_failing"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(sample(&text, &up(1)), Some(1.0), "{text}");
    assert_eq!(sample(&text, &up(2)), Some(1.0), "{text}");
    assert!(!text.contains("127.0.0.1"), "no host in /metrics: {text}");

    store_proxy.cut();
    ticket_proxy.cut();
    // Requests go on: the tag until its buffer is empty, the tickets from the other server.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let r = s
            .client
            .get(format!("{}/v1/ids/outage?count=5", s.base))
            .send()
            .await
            .unwrap();
        if r.status().as_u16() == 503 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the buffer never ran out"
        );
    }
    for _ in 0..4 {
        s.json("/v1/ids/tickets", 200).await;
    }
    let text = scrape_until(&s, "the outage", |t| {
        sample(t, "snowdrift_segment_refills_failing") == Some(1.0)
            && sample(t, &up(1)) == Some(0.0)
    })
    .await;
    assert_eq!(
        sample(&text, &up(2)),
        Some(1.0),
        "the other server is up: {text}"
    );
    promtool_check(&text);

    store_proxy.heal();
    ticket_proxy.heal();
    scrape_until(&s, "the recovery", |t| {
        sample(t, "snowdrift_segment_refills_failing") == Some(0.0)
            && sample(t, &up(1)) == Some(1.0)
    })
    .await;
}

/// The tso gauges the alert on a nearly used window compares: the window a leader saves
/// ahead (3 s by default) and what is left of it, which stays within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tso_leader_shows_its_window_and_what_is_left() {
    let name = snowdrift_testkit::unique_name("montso");
    let node = crate::tso::node(&name, &snowdrift_testkit::urls::etcd(), "10s").await;
    let http = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let leader = format!(r#"snowdrift_tso_leader{{generator="{name}"}}"#);
    let text = loop {
        let _ = http
            .get(format!("{}/v1/ids/{name}", node.base))
            .send()
            .await;
        let text = http
            .get(format!("{}/metrics", node.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if sample(&text, &leader) == Some(1.0) {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "never led: {text}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let window = format!(r#"snowdrift_tso_window_seconds{{generator="{name}"}}"#);
    let left = format!(r#"snowdrift_tso_window_seconds_left{{generator="{name}"}}"#);
    assert_eq!(sample(&text, &window), Some(3.0), "{text}");
    let left = sample(&text, &left).unwrap_or_else(|| panic!("{left} in {text}"));
    assert!(left > 0.0 && left <= 3.0, "{left}");
    promtool_check(&text);
}
