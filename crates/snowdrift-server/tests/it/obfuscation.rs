//! Obfuscated IDs end to end: generators with an `obfuscate_key` served by a real server on
//! port 0, asked for `format=obfuscated...` over HTTP, gRPC and RESP, and decoded back. The
//! checks compare with the same generators' plain IDs, so a format that wrote IDs plain, lost
//! the key or skipped a value would fail.

use std::collections::HashSet;
use std::time::Duration;

use crate::support::TempDir;
use serde_json::Value;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{DecodeRequest, NextRequest, StreamRequest};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

/// Generous: a loaded 2-core CI machine may be slow, and nothing here is timed for speed.
const PATIENCE: Duration = Duration::from_secs(120);

const KEY: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";

/// Every obfuscated format.
const FORMATS: [&str; 6] = [
    "obfuscated",
    "obfuscated-hex",
    "obfuscated-base62",
    "obfuscated-crockford32",
    "obfuscated-tsid",
    "obfuscated-sqids",
];

struct TestServer {
    http: crate::support::TestServer,
    channel: Channel,
}

/// A server with the generators this file uses: `sf` (Twitter layout) and `orders`
/// (segment tag `order`, 53 bits) with the key, `tiny` (tag `tiny-ids`, 4 bits) with the
/// key, `plain` (tag `plain-ids`) and `sf-plain` without, and `uuid7`; RESP on port 0.
async fn start() -> TestServer {
    let http = crate::support::start(
        "snowdrift-obfuscation",
        &format!(
            "resp_listen = \"127.0.0.1:0\"\n[limits]\nmax_count = 1000\n\
             [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nobfuscate_key = \"{KEY}\"\n\
             [[generator]]\nname = \"sf-plain\"\nkind = \"snowflake\"\n\
             [[generator]]\nname = \"orders\"\nkind = \"segment\"\ntag = \"order\"\n\
             obfuscate_key = \"{KEY}\"\nobfuscate_bits = 53\n\
             [[generator]]\nname = \"tiny\"\nkind = \"segment\"\ntag = \"tiny-ids\"\n\
             obfuscate_key = \"{KEY}\"\nobfuscate_bits = 4\n\
             [[generator]]\nname = \"plain\"\nkind = \"segment\"\ntag = \"plain-ids\"\n\
             [[generator]]\nname = \"uuid7\"\nkind = \"uuid7\"\n"
        ),
    )
    .await;
    let channel = Endpoint::from_shared(http.base.clone())
        .unwrap()
        .connect_timeout(PATIENCE)
        .connect()
        .await
        .unwrap();
    for tag in ["order", "tiny-ids", "plain-ids"] {
        let body = format!("{{\"tag\": \"{tag}\", \"step\": 100}}");
        http.post("/v1/tags", &body, 201).await;
    }
    TestServer { http, channel }
}

impl TestServer {
    /// `/v1/ids/{name}?{query}`, which must answer 200: the IDs as text.
    async fn ids(&self, name: &str, query: &str) -> Vec<String> {
        let v = self
            .http
            .json(&format!("/v1/ids/{name}?{query}"), 200)
            .await;
        v["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_str().unwrap().to_string())
            .collect()
    }

    /// Decodes `id` of `name` in `format` over HTTP, which must answer 200.
    async fn decode(&self, name: &str, id: &str, format: &str) -> Value {
        let path = format!("/v1/ids/{name}/decode/{id}?format={format}");
        self.http.json(&path, 200).await
    }

    /// A request that must be refused with `status`, its message containing `word`: the
    /// error's code.
    async fn refused(&self, path: &str, status: u16, word: &str) -> String {
        let v = self.http.json(path, status).await;
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(word), "{path}: {v}");
        v["error"]["code"].as_str().unwrap_or_default().to_string()
    }

    fn grpc(&self) -> IdServiceClient<Channel> {
        IdServiceClient::new(self.channel.clone())
    }

    async fn resp(&self) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(PATIENCE))
            .set_response_timeout(Some(PATIENCE));
        let addr = self.http.resp().expect("resp_listen is set");
        redis::Client::open(format!("redis://{addr}/"))
            .unwrap()
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .unwrap()
    }
}

fn number(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a number in a string: {v}"))
}

/// How many neighbours rise: about half for a random order, all for a sequence.
fn rises(values: &[u64]) -> usize {
    values.windows(2).filter(|w| w[1] > w[0]).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_ids_come_out_scrambled_and_decode_to_the_issued_values() {
    let s = start().await;
    let mut originals = Vec::new();
    for format in FORMATS {
        let public = s.ids("orders", &format!("count=40&format={format}")).await;
        assert_eq!(public.len(), 40);
        let unique: HashSet<_> = public.iter().collect();
        assert_eq!(unique.len(), 40, "{format}: {public:?}");
        let mut values = Vec::new();
        for id in &public {
            let d = s.decode("orders", id, format).await;
            assert_eq!(d.as_object().map(|o| o.len()), Some(1), "{d}");
            values.push(number(&d["id"]));
        }
        if format == "obfuscated" {
            // Decimal of the permuted values: 53 bits at most, and in no order.
            let shown: Vec<u64> = public.iter().map(|i| i.parse().unwrap()).collect();
            assert!(shown.iter().all(|&v| v < 1 << 53), "{shown:?}");
            assert!((8..32).contains(&rises(&shown)), "{shown:?}");
        }
        originals.extend(values);
    }
    // The tag is new: the originals are exactly what plain requests would have got, and the
    // next plain ID follows them.
    let n = 40 * FORMATS.len() as u64;
    assert_eq!(originals, (1..=n).collect::<Vec<u64>>());
    assert_eq!(s.ids("orders", "").await, [(n + 1).to_string()]);
    // A plain segment ID has no fields: decoding reads the number, in any plain format.
    for path in [
        "/v1/ids/orders/decode/201",
        "/v1/ids/orders/decode/c9?format=hex",
    ] {
        let v = s.http.json(path, 200).await;
        assert_eq!(v["id"], "201", "{path}: {v}");
    }
    // Text that no obfuscated ID of 53 bits can be is refused, never mapped to some value.
    s.refused(
        &format!("/v1/ids/orders/decode/{}?format=obfuscated", 1u64 << 60),
        404,
        "outside the obfuscation domain",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_ids_decode_to_the_fields_of_the_issued_ids() {
    let s = start().await;
    let public = s.ids("sf", "count=300&format=obfuscated-base62").await;
    let mut plain = Vec::new();
    for id in &public {
        let d = s.decode("sf", id, "obfuscated-base62").await;
        assert_eq!(d["layout"], "twitter", "{d}");
        assert!(d["fields"]["seq"].is_number(), "{d}");
        let id = number(&d["id"]);
        // The same ID decoded plain gives the same fields.
        let again = s.http.json(&format!("/v1/ids/sf/decode/{id}"), 200).await;
        assert_eq!(again, d);
        plain.push(id);
    }
    assert!(
        plain.windows(2).all(|w| w[0] < w[1]),
        "the originals are the generator's increasing IDs: {plain:?}"
    );
    let shown: Vec<u64> = s
        .ids("sf", "count=300&format=obfuscated")
        .await
        .iter()
        .map(|i| i.parse().unwrap())
        .collect();
    assert!((100..200).contains(&rises(&shown)), "{shown:?}");
    assert_eq!(shown.iter().collect::<HashSet<_>>().len(), 300);
    let next: u64 = s.ids("sf", "").await[0].parse().unwrap();
    assert!(next > *plain.last().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn formats_a_generator_cannot_serve_are_refused_before_issuing() {
    let s = start().await;
    assert_eq!(s.ids("plain", "count=3").await, ["1", "2", "3"]);
    for format in FORMATS {
        s.refused(
            &format!("/v1/ids/plain?count=5&format={format}"),
            409,
            "has no obfuscation key",
        )
        .await;
        s.refused(
            &format!("/v1/ids/plain/decode/abc?format={format}"),
            409,
            "has no obfuscation key",
        )
        .await;
    }
    // A tag served under its own name has no key, though a generator serves it with one.
    s.refused(
        "/v1/ids/order?format=obfuscated",
        409,
        "has no obfuscation key",
    )
    .await;
    s.refused(
        "/v1/ids/sf-plain?format=obfuscated-hex",
        409,
        "no obfuscation key",
    )
    .await;
    s.refused("/v1/ids/sf?format=obfuscated-friendly", 400, "scrambles")
        .await;
    s.refused("/v1/ids/uuid7?format=obfuscated", 409, "64-bit IDs")
        .await;
    // Nothing was issued by the refused requests.
    assert_eq!(s.ids("plain", "").await, ["4"]);
    assert_eq!(s.ids("order", "").await, ["1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_beyond_the_obfuscation_width_is_an_error_never_a_wrong_id() {
    let s = start().await;
    // 4 bits hold 0..=15: the tag's IDs 1..=15 have obfuscated forms, 16 has none.
    let public = s.ids("tiny", "count=15&format=obfuscated").await;
    let shown: HashSet<u64> = public.iter().map(|i| i.parse().unwrap()).collect();
    assert_eq!(shown.len(), 15);
    assert!(shown.iter().all(|&v| v < 16), "{shown:?}");
    let code = s
        .refused(
            "/v1/ids/tiny?format=obfuscated",
            503,
            "issued 16, beyond its obfuscate_bits of 4",
        )
        .await;
    assert_eq!(code, "exhausted");
    // Plain formats still serve the tag.
    assert_eq!(s.ids("tiny", "").await, ["17"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_next_stream_and_decode_speak_the_same_formats() {
    let s = start().await;
    let mut grpc = s.grpc();
    let next = |name: &str, format: Option<&str>| NextRequest {
        name: name.into(),
        count: Some(50),
        format: format.map(str::to_string),
        input: None,
    };
    let batch = grpc
        .next(next("orders", Some("obfuscated-sqids")))
        .await
        .unwrap()
        .into_inner();
    assert!(batch.runs.is_empty(), "{batch:?}");
    assert_eq!((batch.count, batch.text.len()), (50, 50));
    let mut originals = Vec::new();
    for id in &batch.text {
        let d = grpc
            .decode(DecodeRequest {
                name: "orders".into(),
                id: id.clone(),
                format: Some("obfuscated-sqids".into()),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(d.kind, "segment");
        originals.push(d.id.parse::<u64>().unwrap());
    }
    assert_eq!(originals, (1..=50).collect::<Vec<u64>>());
    // A format set asks for text even when it is decimal.
    let batch = grpc
        .next(next("orders", Some("decimal")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(batch.text.first().map(String::as_str), Some("51"));
    // Refused before issuing: the next plain batch starts right after.
    for (name, format, word) in [
        ("plain", "obfuscated", "has no obfuscation key"),
        ("sf", "obfuscated-friendly", "scrambles"),
        ("uuid7", "hex", "64-bit IDs"),
    ] {
        let refused = grpc.next(next(name, Some(format))).await.expect_err(format);
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(refused.message().contains(word), "{refused:?}");
    }
    let batch = grpc.next(next("plain", None)).await.unwrap().into_inner();
    assert_eq!(batch.ids().next(), Some(1));

    let request = StreamRequest {
        name: "orders".into(),
        count: 2_500,
        batch: Some(1_000),
        format: Some("obfuscated-hex".into()),
        input: None,
    };
    let mut stream = grpc.stream(request).await.unwrap().into_inner();
    let mut texts = Vec::new();
    while let Some(batch) = tokio::time::timeout(PATIENCE, stream.message())
        .await
        .expect("the stream keeps coming")
        .unwrap()
    {
        assert!(batch.runs.is_empty());
        texts.extend(batch.text);
    }
    assert_eq!(texts.len(), 2_500);
    let (first, last) = (&texts[0], &texts[2_499]);
    for (text, want) in [(first, 101u64), (last, 2_600)] {
        let d = s.decode("orders", text, "obfuscated-hex").await;
        assert_eq!(number(&d["id"]), want, "{text}");
    }
    let shown: Vec<u64> = texts
        .iter()
        .map(|t| u64::from_str_radix(t, 16).unwrap())
        .collect();
    assert!(
        (1000..1500).contains(&rises(&shown)),
        "rises: {}",
        rises(&shown)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp_snowflake_takes_a_format_and_incr_stays_an_integer() {
    let s = start().await;
    let mut con = s.resp().await;
    let mut query = async |args: &[&str]| {
        let mut cmd = redis::cmd(args[0]);
        cmd.arg(&args[1..]);
        cmd.query_async::<redis::Value>(&mut con).await
    };
    let text = match query(&["SNOWFLAKE", "sf", "obfuscated-crockford32"]).await {
        Ok(redis::Value::BulkString(text)) => String::from_utf8(text).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    };
    let d = s.decode("sf", &text, "obfuscated-crockford32").await;
    let issued = number(&d["id"]);
    let plain = match query(&["SNOWFLAKE", "sf"]).await {
        Ok(redis::Value::Int(plain)) => plain as u64,
        other => panic!("not an integer: {other:?}"),
    };
    assert!(plain > issued, "{plain} after {issued}");
    let hex = match query(&["SNOWFLAKE", "sf", "hex"]).await {
        Ok(redis::Value::BulkString(hex)) => String::from_utf8(hex).unwrap(),
        other => panic!("not a bulk string: {other:?}"),
    };
    assert!(u64::from_str_radix(&hex, 16).unwrap() > plain);
    let refused = query(&["SNOWFLAKE", "sf-plain", "obfuscated"])
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("has no obfuscation key"),
        "{refused}"
    );
    assert_eq!(
        query(&["INCR", "orders"]).await.unwrap(),
        redis::Value::Int(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_keys_stop_the_start_naming_the_key() {
    let dir = TempDir::new("snowdrift-obfuscation-config");
    for (generator, path, word) in [
        (
            "name = \"o\"\nkind = \"segment\"\nobfuscate_key = \"0123\"\n",
            "generator[0].obfuscate_key",
            "has 4 characters",
        ),
        (
            &format!(
                "name = \"o\"\nkind = \"segment\"\nobfuscate_key = \"{KEY}\"\nobfuscate_bits = 65\n"
            ),
            "generator[0].obfuscate_bits",
            "1 to 64 bits",
        ),
        (
            &format!(
                "name = \"o\"\nkind = \"snowflake\"\nobfuscate_key = \"{KEY}\"\nobfuscate_bits = 53\n"
            ),
            "generator[0].obfuscate_bits",
            "53 bits cannot hold the IDs of a layout that takes 63 bits",
        ),
        (
            &format!("name = \"o\"\nkind = \"uuid7\"\nobfuscate_key = \"{KEY}\"\n"),
            "obfuscate_key",
            "does not apply to kind uuid7",
        ),
    ] {
        let e = crate::support::try_load(&dir.0, &format!("[[generator]]\n{generator}"))
            .expect_err(path)
            .to_string();
        assert!(e.contains(path) && e.contains(word), "{e}");
        assert!(!e.contains(KEY), "{e}");
    }
}
