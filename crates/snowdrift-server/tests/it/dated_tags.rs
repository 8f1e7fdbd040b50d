//! Segment tags with a template through every transport: `POST /v1/tags` takes the template
//! and the listings show it, `/v1/ids/{tag}` and Leaf's route answer rendered numbers as
//! text, gRPC carries them as a text batch, RESP as bulk strings (`INCRBY` refused, as for
//! templated counters), and a tag without a template answers exactly as before.

use std::time::{SystemTime, UNIX_EPOCH};

use redis::Value as Reply;
use serde_json::Value;
use snowdrift_core::counter::CounterTemplate;
use snowdrift_proto::grpc::NextRequest;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use tonic::transport::Endpoint;

use crate::support::TestServer;

const TEMPLATE: &str = "ORD{date:%Y%m%d}{seq:06}";

/// The day key (`20261122`) of now in UTC+8, and of a moment later: a test running across
/// midnight sees either.
fn days() -> [String; 2] {
    let day: CounterTemplate = "{date:%Y%m%d}{seq}".parse().unwrap();
    let day = day.with_utc_offset(8 * 3600).unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    [
        day.period_key(now).unwrap(),
        day.period_key(now + 120_000).unwrap(),
    ]
}

/// `n`'s sequence number, after checking it is `ORD` + today + six digits.
fn seq(n: &str) -> u64 {
    let days = days();
    let digits = n.strip_prefix("ORD").unwrap_or_else(|| panic!("{n:?}"));
    assert!(
        days.iter().any(|d| digits.starts_with(d.as_str())),
        "{n} on {days:?}"
    );
    assert_eq!(digits.len(), 14, "{n}");
    digits[8..].parse().unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

async fn refused(s: &TestServer, path: &str) -> (u16, String) {
    let r = s
        .client
        .get(format!("{}{path}", s.base))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_with_a_template_answers_rendered_numbers_everywhere() {
    let s = crate::support::start(
        "snowdrift-dated",
        "resp_listen = \"127.0.0.1:0\"\n\
         [[generator]]\nname = \"orders\"\nkind = \"segment\"\ntag = \"order\"\n",
    )
    .await;
    let created = s
        .post(
            "/v1/tags",
            &format!(
                r#"{{"tag": "order", "step": 50, "template": "{TEMPLATE}", "utc_offset": "+08:00"}}"#
            ),
            201,
        )
        .await;
    assert_eq!(created["template"], TEMPLATE);
    assert_eq!(created["utc_offset"], "+08:00");
    assert!(
        created.get("period").is_none(),
        "no period before the first claim"
    );

    let ids = strings(&s.json("/v1/ids/order?count=3", 200).await);
    assert_eq!(ids.iter().map(|n| seq(n)).collect::<Vec<_>>(), [1, 2, 3]);
    // Leaf's route: the rendered number as text.
    let leaf = s.text("/api/segment/get/order", 200).await;
    assert_eq!(seq(&leaf), 4);
    // The generator serving the tag under its own name shares its numbers.
    let named = strings(&s.json("/v1/ids/orders?count=2", 200).await);
    assert_eq!(named.iter().map(|n| seq(n)).collect::<Vec<_>>(), [5, 6]);
    let generators = s.json("/v1/generators", 200).await;
    let orders = generators["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "orders")
        .unwrap()
        .clone();
    assert_eq!(orders["template"], TEMPLATE, "{orders}");
    assert_eq!(orders["utc_offset"], "+08:00");

    // gRPC: a text batch, as a templated counter's.
    let channel = Endpoint::from_shared(s.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let batch = IdServiceClient::new(channel)
        .next(NextRequest {
            name: "order".into(),
            count: Some(2),
            format: None,
            input: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(batch.runs.is_empty());
    assert_eq!(batch.kind, "segment");
    assert_eq!(
        batch.text.iter().map(|n| seq(n)).collect::<Vec<_>>(),
        [7, 8]
    );

    // RESP: INCR answers a bulk string; INCRBY is refused, nothing issued.
    let resp = s.resp().unwrap();
    let mut con = redis::Client::open(format!("redis://{resp}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let one: Reply = redis::cmd("INCR")
        .arg("order")
        .query_async(&mut con)
        .await
        .unwrap();
    let Reply::BulkString(bytes) = one else {
        panic!("INCR answered {one:?}");
    };
    assert_eq!(seq(std::str::from_utf8(&bytes).unwrap()), 9);
    let err = redis::cmd("INCRBY")
        .arg("order")
        .arg(3)
        .query_async::<Reply>(&mut con)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "{err}");
    assert!(err.to_string().contains("template"), "{err}");

    // What applies only to 64-bit IDs is refused with a reason.
    let (status, body) = refused(&s, "/v1/ids/order?form=runs").await;
    assert!(status >= 400 && body.contains("text"), "{status} {body}");
    let (status, body) = refused(&s, "/v1/ids/order?format=base62").await;
    assert!(status >= 400 && body.contains("64-bit"), "{status} {body}");

    // The listing shows the template and the period its count is in.
    let listed = s.json("/v1/tags/order", 200).await;
    assert_eq!(listed["template"], TEMPLATE);
    assert!(
        days().contains(&listed["period"].as_str().unwrap().to_string()),
        "{listed}"
    );
    let next = strings(&s.json("/v1/ids/order", 200).await);
    assert!(
        seq(&next[0]) > 9,
        "INCRBY issued nothing it did not answer: {next:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tag_without_a_template_is_shown_and_served_as_before() {
    let s = crate::support::start("snowdrift-plain", "").await;
    let created = s
        .post("/v1/tags", r#"{"tag": "plain", "step": 10}"#, 201)
        .await;
    // Exactly Leaf's fields, in the order they always had.
    assert_eq!(
        created.to_string(),
        r#"{"tag":"plain","max_id":"1","step":10,"description":null}"#
    );
    let body = s.text("/v1/tags", 200).await;
    assert_eq!(
        body,
        r#"{"tags":[{"tag":"plain","max_id":"1","step":10,"description":null}]}"#
    );
    assert_eq!(
        s.text("/v1/ids/plain?count=3", 200).await,
        r#"{"name":"plain","ids":["1","2","3"]}"#
    );
    assert_eq!(s.text("/api/segment/get/plain", 200).await, "4");
    // Bad templates and offsets are refused, naming what is wrong.
    for (body, needle) in [
        (
            r#"{"tag": "bad", "template": "ORD{date:%m%d}{seq}"}"#,
            "no year",
        ),
        (
            r#"{"tag": "bad", "template": "{seq}", "utc_offset": "8"}"#,
            "+HH:MM",
        ),
        (
            r#"{"tag": "bad", "template": "订单{seq}"}"#,
            "printable ASCII",
        ),
        (
            r#"{"tag": "bad", "utc_offset": "+08:00"}"#,
            "applies to a tag with a template",
        ),
    ] {
        let v = s.post("/v1/tags", body, 400).await;
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{body}: {message}");
    }
}

/// openapi.json states the template rules as patterns (so schemathesis neither sends a
/// template the server refuses nor has one it forbids accepted): on 50,000 strings made of
/// the template language's pieces, the patterns and the parser agree on every one.
#[test]
fn openapi_template_patterns_agree_with_the_parser() {
    let spec: Value = serde_json::from_str(include_str!("../../openapi.json")).unwrap();
    let template = &spec["components"]["schemas"]["NewTag"]["properties"]["template"];
    let max = template["maxLength"].as_u64().unwrap() as usize;
    let patterns: Vec<regex::Regex> = template["allOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| regex::Regex::new(p["pattern"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(patterns.len(), 4);
    const PIECES: &[&str] = &[
        "{",
        "}",
        "{{",
        "}}",
        "{seq}",
        "{seq:0",
        "{seq:06}",
        "{seq:019}",
        "{seq:020}",
        "{seq:00}",
        "{seq:1}",
        "{seq:}",
        "{date:",
        "{date}",
        "%Y",
        "%y",
        "%m",
        "%d",
        "%e",
        "%j",
        "%H",
        "%F",
        "%a",
        "%b",
        "%B",
        "%h",
        "%A",
        "%%",
        "%",
        "%M",
        "%-d",
        ":",
        "-",
        "ORD",
        "x",
        " ",
        "|",
        "~",
        "\t",
        "é",
        "0",
        "{date:%Y%m%d}",
        "{date:%Y}",
        "{date:%m}",
        "{date:%H}",
        "{date:%d}",
        "{date:%j}",
        "{date:%F}",
        "{date:%%}",
        "{date:%y%m}",
        "{date:%e}",
        "{{seq}}",
        "{date:%Y-%m-%d %H}",
    ];
    // xorshift: the same strings on every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut cases: Vec<String> = (0..50_000)
        .map(|_| (0..next(8)).map(|_| PIECES[next(PIECES.len())]).collect())
        .collect();
    cases.push(format!("{}{{seq}}", "x".repeat(251)));
    cases.push(format!("{}{{seq}}", "x".repeat(252)));
    let mut valid = 0;
    for case in &cases {
        let schema = case.chars().count() <= max && patterns.iter().all(|p| p.is_match(case));
        let server = snowdrift_store::segment::validate_tag_template(case).is_ok()
            && CounterTemplate::parse(case).is_ok();
        assert_eq!(
            schema, server,
            "{case:?}: the schema says {schema}, the parser {server}"
        );
        valid += usize::from(server);
    }
    assert!(valid > 1_000, "{valid} valid templates among the cases");
}
