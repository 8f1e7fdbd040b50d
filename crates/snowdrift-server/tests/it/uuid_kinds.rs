//! UUID v1, v2, v3, v5 and v6 generators end to end: over HTTP (whose single-ID GETs the
//! fast path answers), gRPC and RESP, issued, refused and decoded.

use std::collections::HashSet;

use serde_json::Value;
use snowdrift_core::kinds::uuid::{self as core_uuid, Uuid};
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{DecodeRequest, NextRequest, StreamRequest};
use tonic::Code;
use tonic::transport::Endpoint;

const GENERATORS: &str = r#"
[[generator]]
name = "u1"
kind = "uuid1"
node = "02:00:5e:10:00:01"
[[generator]]
name = "u2"
kind = "uuid2"
domain = "group"
local_id = 4242
[[generator]]
name = "u3"
kind = "uuid3"
namespace = "dns"
[[generator]]
name = "u5"
kind = "uuid5"
namespace = "DNS"
[[generator]]
name = "u5url"
kind = "uuid5"
namespace = "url"
[[generator]]
name = "u6"
kind = "uuid6"
[[generator]]
name = "u7"
kind = "uuid7"
"#;

async fn start(prefix: &str) -> crate::support::TestServer {
    crate::support::start(prefix, &format!("[limits]\nmax_count = 5000\n{GENERATORS}")).await
}

fn uuids(v: &Value) -> Vec<Uuid> {
    crate::support::ids_of(v)
}

/// The `error.code` and message of a refusal.
fn error(v: &Value) -> (&str, &str) {
    (
        v["error"]["code"].as_str().unwrap_or_default(),
        v["error"]["message"].as_str().unwrap_or_default(),
    )
}

#[tokio::test]
async fn name_based_uuids_are_the_rfc_vectors_and_need_their_name() {
    let s = start("snowdrift-uuid-named").await;
    // RFC 9562 appendix A.2 and A.4: namespace DNS, name "www.example.com".
    let v = s.json("/v1/ids/u3?input=www.example.com", 200).await;
    assert_eq!(v["ids"][0], "5df41881-3aed-3515-88a7-2f4a814cf09e");
    let v = s
        .json("/v1/ids/u5?input=www.example.com&count=1", 200)
        .await;
    assert_eq!(v["ids"][0], "2ed6657d-e927-568b-95e1-2665a8aea6a2");
    // The same name again: the same UUID.
    let again = s.json("/v1/ids/u5?input=www.example.com", 200).await;
    assert_eq!(again, v);
    // Percent-encoded UTF-8 is hashed as the bytes sent, under the generator's namespace.
    let v = s
        .json(
            "/v1/ids/u5url?input=https%3A%2F%2Fexample.com%2F%C3%A9t%C3%A9+x",
            200,
        )
        .await;
    let want = core_uuid::v5(&Uuid::NAMESPACE_URL, "https://example.com/été x".as_bytes());
    assert_eq!(v["ids"][0], want.to_string());
    let v = s.json("/v1/ids/u5?input=", 200).await;
    assert_eq!(
        v["ids"][0],
        core_uuid::v5(&Uuid::NAMESPACE_DNS, b"").to_string()
    );

    // Without a name, with more than one, with a name where none is taken: 409s saying so.
    let v = s.json("/v1/ids/u5", 409).await;
    let (code, message) = error(&v);
    assert_eq!(code, "unsupported");
    assert!(
        message.contains("input") && message.contains("\"u5\""),
        "{message}"
    );
    let v = s.json("/v1/ids/u3?input=a&count=2", 409).await;
    assert!(error(&v).1.contains("count must be 1"), "{v}");
    assert!(error(&v).1.contains("same UUID"), "{v}");
    for path in [
        "/v1/ids/u1?input=a",
        "/v1/ids/u7?input=a",
        "/v1/ids/order?input=a",
        "/v1/ids/order?input=a&form=runs",
    ] {
        let v = s.json(path, 409).await;
        assert!(error(&v).1.contains("takes no input"), "{path}: {v}");
    }
    // A name that is no UTF-8 would be hashed as another one: refused.
    let v = s.json("/v1/ids/u5?input=%FF", 400).await;
    assert!(error(&v).1.contains("UTF-8"), "{v}");
    // Runs and formats are still refused as for any text kind.
    s.json("/v1/ids/u5?input=a&form=runs", 409).await;
    s.json("/v1/ids/u5?input=a&format=hex", 409).await;
}

#[tokio::test]
async fn time_based_uuids_are_unique_ordered_and_decode() {
    let s = start("snowdrift-uuid-time").await;
    let mut seen = HashSet::new();
    let mut v6 = Vec::new();
    for _ in 0..4 {
        let v1 = uuids(&s.json("/v1/ids/u1?count=5000", 200).await);
        for id in &v1 {
            assert_eq!(id.get_version_num(), 1);
            assert_eq!(
                id.get_node_id(),
                Some([0x02, 0, 0x5e, 0x10, 0, 1]),
                "the configured node"
            );
            assert!(seen.insert(*id), "{id} twice");
        }
        v6.extend(uuids(&s.json("/v1/ids/u6?count=5000", 200).await));
        // One at a time: the fast path's answers.
        v6.extend(uuids(&s.json("/v1/ids/u6", 200).await));
    }
    assert!(v6.windows(2).all(|w| w[0] < w[1]), "v6 in the order issued");
    for id in &v6 {
        assert_eq!(id.get_version_num(), 6);
        let node = id.get_node_id().expect("a node");
        assert_eq!(node[0] & 1, 1, "a random node has the multicast bit");
        assert!(seen.insert(*id));
    }

    let one = uuids(&s.json("/v1/ids/u1", 200).await)[0];
    let d = s.json(&format!("/v1/ids/u1/decode/{one}"), 200).await;
    let (ticks, seq) = one.get_timestamp().unwrap().to_gregorian();
    assert_eq!(d["version"], 1);
    assert_eq!(d["variant"], "rfc9562");
    assert_eq!(d["timestamp"], ticks);
    assert_eq!(d["clock_seq"], seq);
    assert_eq!(d["node"], "02005e100001");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let time_ms = d["time_ms"].as_u64().unwrap();
    assert!(now_ms.abs_diff(time_ms) < 60_000, "{d}");
    let d = s.json(&format!("/v1/ids/u6/decode/{}", v6[0]), 200).await;
    assert_eq!(
        (d["version"].as_u64(), d["variant"].as_str()),
        (Some(6), Some("rfc9562"))
    );
    assert!(d["time"].as_str().unwrap().starts_with("20"), "{d}");

    // /v1/generators shows the node in use.
    let g = s.json("/v1/generators", 200).await;
    let listed = |name: &str| {
        g["generators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(listed("u1")["node"], "02005e100001");
    assert_eq!(listed("u2")["domain"], "group");
    assert_eq!(listed("u5")["namespace"], Uuid::NAMESPACE_DNS.to_string());
}

#[tokio::test]
async fn dce_security_uuids_carry_domain_and_id_and_stop_at_64_a_window() {
    let s = start("snowdrift-uuid-dce").await;
    let first = uuids(&s.json("/v1/ids/u2?count=60", 200).await);
    // A batch the window cannot hold takes nothing from it (unless a new window began).
    let r = s
        .client
        .get(format!("{}/v1/ids/u2?count=10", s.base))
        .send()
        .await
        .unwrap();
    if r.status().as_u16() == 200 {
        let next = uuids(&r.json().await.unwrap());
        assert_ne!(next[0].as_bytes()[4..8], first[0].as_bytes()[4..8]);
    } else {
        assert_eq!(r.status().as_u16(), 429);
    }
    let rest = uuids(&s.json("/v1/ids/u2?count=4", 200).await);
    let all: HashSet<_> = first.iter().chain(&rest).collect();
    assert_eq!(all.len(), 64);
    let d = s
        .json(&format!("/v1/ids/u2/decode/{}", first[0]), 200)
        .await;
    assert_eq!(d["version"], 2);
    assert_eq!(d["domain"], "group");
    assert_eq!(d["local_id"], 4242);
    assert_eq!(first[0].as_bytes()[..4], 4242u32.to_be_bytes());
    // The 65th of one window is refused, not repeated; only a new window (every 7 min
    // 9.5 s, which may just have begun) gives more.
    let r = s
        .client
        .get(format!("{}/v1/ids/u2", s.base))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let retry_after: Option<u64> = r
        .headers()
        .get("retry-after")
        .and_then(|h| h.to_str().ok()?.parse().ok());
    let v: Value = r.json().await.unwrap();
    if status == 200 {
        let next = uuids(&v)[0];
        assert!(!all.contains(&next));
        let window = |id: &Uuid| id.as_bytes()[4..8].to_vec();
        assert_ne!(
            window(&next),
            window(&first[0]),
            "a 65th UUID in the same window"
        );
    } else {
        // A rate the format sets, with the time it ends: 429 with Retry-After.
        assert_eq!(status, 429, "{v}");
        assert_eq!(error(&v).0, "rate_limited");
        assert!(error(&v).1.contains("64 UUIDs"), "{v}");
        assert!(retry_after.is_some_and(|s| s <= 430), "{retry_after:?}");
    }
    let v = s.json("/v1/ids/u2?count=65", 409).await;
    assert!(error(&v).1.contains("at most 64"), "{v}");
}

#[tokio::test]
async fn grpc_takes_input_and_decodes_uuid_fields() {
    let s = start("snowdrift-uuid-grpc").await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut ids = IdServiceClient::new(channel);
    let next = |name: &str, count: Option<u64>, input: Option<&str>| NextRequest {
        name: name.into(),
        count,
        input: input.map(str::to_string),
        ..Default::default()
    };
    let batch = ids
        .next(next("u5", None, Some("www.example.com")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(batch.kind, "uuid5");
    assert_eq!(batch.text, ["2ed6657d-e927-568b-95e1-2665a8aea6a2"]);
    for (request, says) in [
        (next("u5", None, None), "input"),
        (next("u3", Some(3), Some("a")), "count must be 1"),
        (next("u6", None, Some("a")), "takes no input"),
    ] {
        let status = ids.next(request).await.expect_err(says);
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(says), "{status:?}");
    }
    let stream = StreamRequest {
        name: "u3".into(),
        count: 1,
        input: Some("www.example.com".into()),
        ..Default::default()
    };
    let mut stream = ids.stream(stream).await.unwrap().into_inner();
    let batch = stream.message().await.unwrap().unwrap();
    assert_eq!(batch.text, ["5df41881-3aed-3515-88a7-2f4a814cf09e"]);
    // A stream of 1,000 UUIDs of one name is refused for the count the client sent, not the
    // size of the first batch (400).
    let many = StreamRequest {
        name: "u5".into(),
        count: 1000,
        input: Some("www.example.com".into()),
        ..Default::default()
    };
    let status = match ids.stream(many).await {
        Err(status) => status,
        Ok(stream) => stream
            .into_inner()
            .message()
            .await
            .expect_err("a stream of 1,000 UUIDs of one name is refused"),
    };
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("got 1000"),
        "names the count sent: {status:?}"
    );

    // `input` is the same name over both transports: HTTP reads its query as a form does
    // (what requests, URLSearchParams and reqwest write), so `+` is a space and a plus is
    // `%2B`; gRPC takes the string as it is.
    for (query, name) in [("a+b", "a b"), ("a%20b", "a b"), ("a%2Bb", "a+b")] {
        let over_http = s.json(&format!("/v1/ids/u5?input={query}"), 200).await["ids"][0]
            .as_str()
            .unwrap()
            .to_string();
        let over_grpc = ids
            .next(next("u5", None, Some(name)))
            .await
            .unwrap()
            .into_inner()
            .text[0]
            .clone();
        assert_eq!(
            over_http, over_grpc,
            "input={query} over HTTP is {name:?} over gRPC"
        );
        let want = core_uuid::v5(&Uuid::NAMESPACE_DNS, name.as_bytes()).to_string();
        assert_eq!(over_grpc, want, "{name:?}");
    }

    let v2 = ids
        .next(next("u2", None, None))
        .await
        .unwrap()
        .into_inner()
        .text[0]
        .clone();
    let d = ids
        .decode(DecodeRequest {
            name: "u2".into(),
            id: v2,
            format: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.version, Some(2));
    assert_eq!(d.variant.as_deref(), Some("rfc9562"));
    assert_eq!(d.domain.as_deref(), Some("group"));
    assert_eq!(d.local_id, Some(4242));
    assert!(d.node.is_some() && d.clock_seq.is_some() && d.timestamp.is_some());
    let v1 = ids
        .next(next("u1", None, None))
        .await
        .unwrap()
        .into_inner()
        .text[0]
        .clone();
    let d = ids
        .decode(DecodeRequest {
            name: "u1".into(),
            id: v1,
            format: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(d.node.as_deref(), Some("02005e100001"));
    assert!(d.time.is_some() && d.domain.is_none());
}

#[tokio::test]
async fn resp_serves_time_based_uuids_and_points_name_based_ones_to_input() {
    let s = crate::support::start(
        "snowdrift-uuid-resp",
        &format!("resp_listen = \"127.0.0.1:0\"\n{GENERATORS}"),
    )
    .await;
    let url = format!("redis://{}/", s.resp().expect("resp_listen is set"));
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let a: String = redis::cmd("INCR")
        .arg("u6")
        .query_async(&mut conn)
        .await
        .unwrap();
    let b: String = redis::cmd("INCR")
        .arg("u6")
        .query_async(&mut conn)
        .await
        .unwrap();
    let (a, b): (Uuid, Uuid) = (a.parse().unwrap(), b.parse().unwrap());
    assert!(a < b && a.get_version_num() == 6);
    let err = redis::cmd("INCR")
        .arg("u5")
        .query_async::<String>(&mut conn)
        .await
        .expect_err("a uuid5 generator needs a name");
    assert!(err.to_string().contains("input"), "{err}");
}
