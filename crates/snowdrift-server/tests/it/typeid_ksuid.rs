//! TypeID and KSUID generators end to end: configured (and refused when misconfigured),
//! issued over HTTP (single IDs through the fast path, batches through the router), gRPC
//! and RESP, listed by `/v1/generators`, and decoded, a malformed or foreign ID refused
//! with a message saying what is wrong.

use std::collections::HashSet;

use serde_json::Value;
use snowdrift_core::kinds::ksuid::Ksuid;
use snowdrift_core::kinds::typeid::TypeId;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{DecodeRequest, KindCode, NextRequest};
use tonic::transport::Endpoint;

const GENERATORS: &str = r#"
[[generator]]
name = "users"
kind = "typeid"
prefix = "user"
[[generator]]
name = "bare"
kind = "typeid"
prefix = ""
[[generator]]
name = "keys"
kind = "typeid"
prefix = "api__key"
[[generator]]
name = "ksuid"
kind = "ksuid"
"#;

async fn start(prefix: &str, server: &str) -> crate::support::TestServer {
    crate::support::start(
        prefix,
        &format!("{server}\n[limits]\nmax_count = 5000\n{GENERATORS}"),
    )
    .await
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The `error.message` of a refusal.
fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typeids_are_v7_of_their_prefix_in_order_and_decode() {
    let s = start("snowdrift-typeid-http", "").await;
    let mut issued = Vec::new();
    for _ in 0..3 {
        issued.extend(crate::support::ids_of::<String>(
            &s.json("/v1/ids/users?count=5000", 200).await,
        ));
        // One at a time: the fast path's answers.
        for _ in 0..20 {
            issued.extend(crate::support::ids_of::<String>(
                &s.json("/v1/ids/users", 200).await,
            ));
        }
    }
    assert!(
        issued.windows(2).all(|w| w[0] < w[1]),
        "TypeIDs of one generator increase in the order issued"
    );
    let unique: HashSet<_> = issued.iter().collect();
    assert_eq!(unique.len(), issued.len());
    for text in &issued {
        let id: TypeId = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(id.prefix(), "user");
        assert_eq!(id.uuid().get_version_num(), 7, "{text}");
        assert_eq!(text.len(), "user_".len() + 26);
    }

    let last = issued.last().unwrap();
    let d = s.json(&format!("/v1/ids/users/decode/{last}"), 200).await;
    let id: TypeId = last.parse().unwrap();
    assert_eq!(d["id"], last.as_str());
    assert_eq!(d["prefix"], "user");
    assert_eq!(d["uuid"], id.uuid().to_string());
    let time_ms = d["time_ms"].as_u64().unwrap();
    assert!(now_ms().abs_diff(time_ms) < 60_000, "{d}");
    assert!(d["time"].as_str().unwrap().starts_with("20"), "{d}");

    // No prefix: the suffix alone; a prefix with two underscores in a row is the spec's too.
    let bare = crate::support::ids_of::<String>(&s.json("/v1/ids/bare", 200).await).remove(0);
    assert!(bare.len() == 26 && !bare.contains('_'), "{bare}");
    let d = s.json(&format!("/v1/ids/bare/decode/{bare}"), 200).await;
    assert_eq!(d["prefix"], "");
    let key = crate::support::ids_of::<String>(&s.json("/v1/ids/keys", 200).await).remove(0);
    assert!(key.starts_with("api__key_"), "{key}");
    let d = s.json(&format!("/v1/ids/keys/decode/{key}"), 200).await;
    assert_eq!(d["prefix"], "api__key");

    // Refused, saying what is wrong: another prefix than the generator's, each malformation
    // of the specification.
    let other = last.replacen("user", "order", 1);
    let v = s.json(&format!("/v1/ids/users/decode/{other}"), 404).await;
    assert!(
        message(&v).contains("\"order\"") && message(&v).contains("\"user\""),
        "{v}"
    );
    let v = s.json(&format!("/v1/ids/bare/decode/{last}"), 404).await;
    assert!(message(&v).contains("prefix"), "{v}");
    let suffix = &last["user_".len()..];
    for (bad, says) in [
        (format!("user_{}", &suffix[1..]), "25 bytes"),
        (format!("user_8{}", &suffix[1..]), "starts above 7"),
        (format!("user_{}", suffix.to_uppercase()), "lowercase"),
        (format!("User_{suffix}"), "'U'"),
        (format!("_{suffix}"), "no prefix"),
        (format!("user_{}u", &suffix[..25]), "'u'"),
    ] {
        let v = s.json(&format!("/v1/ids/users/decode/{bad}"), 404).await;
        assert!(
            message(&v).contains(says) && message(&v).contains("not a valid typeid"),
            "{bad}: {v}"
        );
    }

    // Text kinds: no runs, no formats.
    s.json("/v1/ids/users?form=runs", 409).await;
    s.json("/v1/ids/users?format=hex", 409).await;
    s.json("/v1/ids/users?input=a", 409).await;

    // /v1/generators shows the prefix of each.
    let g = s.json("/v1/generators", 200).await;
    let listed = |name: &str| {
        g["generators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not in {g}"))
    };
    assert_eq!(listed("users")["kind"], "typeid");
    assert_eq!(listed("users")["prefix"], "user");
    assert_eq!(listed("bare")["prefix"], "");
    assert_eq!(listed("ksuid")["kind"], "ksuid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ksuids_carry_the_second_and_decode() {
    let s = start("snowdrift-ksuid-http", "").await;
    let before = now_ms() / 1000;
    let mut issued: Vec<String> = Vec::new();
    for _ in 0..3 {
        issued.extend(crate::support::ids_of::<String>(
            &s.json("/v1/ids/ksuid?count=5000", 200).await,
        ));
        issued.extend(crate::support::ids_of::<String>(
            &s.json("/v1/ids/ksuid", 200).await,
        ));
    }
    let after = now_ms() / 1000;
    let unique: HashSet<_> = issued.iter().collect();
    assert_eq!(unique.len(), issued.len());
    for text in &issued {
        assert_eq!(text.len(), 27, "{text}");
        let id: Ksuid = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!((before..=after).contains(&id.unix_secs()), "{text}");
    }

    let d = s
        .json(&format!("/v1/ids/ksuid/decode/{}", issued[0]), 200)
        .await;
    let id: Ksuid = issued[0].parse().unwrap();
    assert_eq!(d["id"], issued[0].as_str());
    assert_eq!(d["time_ms"], id.unix_secs() * 1000);
    assert_eq!(d["timestamp"], id.timestamp());
    // segmentio's README: `ksuid -f inspect 0ujtsYcgvSTl8PAuAdqWYSMnLOv`.
    let d = s
        .json("/v1/ids/ksuid/decode/0ujtsYcgvSTl8PAuAdqWYSMnLOv", 200)
        .await;
    assert_eq!(d["time"], "2017-10-10T04:00:47.000Z");
    assert_eq!(d["timestamp"], 107_608_047);
    assert_eq!(d["payload"], "b5a1cd34b5f99d1154fb6853345c9735");

    for (bad, says) in [
        ("0ujtsYcgvSTl8PAuAdqWYSMnLO", "26 bytes"),
        ("0ujtsYcgvSTl8PAuAdqWYSMnLO-", "'-' at byte 26"),
        ("aWgEPTl1tmebfsQzFP4bxwgy80W", "larger than 160 bits"),
    ] {
        let v = s.json(&format!("/v1/ids/ksuid/decode/{bad}"), 404).await;
        assert!(
            message(&v).contains(says) && message(&v).contains("not a valid ksuid"),
            "{bad}: {v}"
        );
    }
    s.json("/v1/ids/ksuid?form=runs", 409).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_resp_issue_and_decode_both() {
    let s = start(
        "snowdrift-typeid-ksuid-wire",
        "resp_listen = \"127.0.0.1:0\"",
    )
    .await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = IdServiceClient::new(channel);
    let next = |name: &str| NextRequest {
        name: name.into(),
        count: Some(10),
        ..Default::default()
    };
    let batch = grpc.next(next("users")).await.unwrap().into_inner();
    assert_eq!(batch.kind, "typeid");
    assert_eq!(batch.kind_code, i32::from(KindCode::Typeid));
    assert_eq!(batch.text.len(), 10);
    assert!(batch.runs.is_empty());
    let d = grpc
        .decode(DecodeRequest {
            name: "users".into(),
            id: batch.text[0].clone(),
            format: None,
        })
        .await
        .unwrap()
        .into_inner();
    let id: TypeId = batch.text[0].parse().unwrap();
    assert_eq!(d.prefix.as_deref(), Some("user"));
    assert_eq!(d.uuid, Some(id.uuid().to_string()));
    assert_eq!(d.time_ms, id.unix_ms());

    let batch = grpc.next(next("ksuid")).await.unwrap().into_inner();
    assert_eq!(batch.kind, "ksuid");
    assert_eq!(batch.kind_code, i32::from(KindCode::Ksuid));
    let d = grpc
        .decode(DecodeRequest {
            name: "ksuid".into(),
            id: batch.text[0].clone(),
            format: None,
        })
        .await
        .unwrap()
        .into_inner();
    let id: Ksuid = batch.text[0].parse().unwrap();
    assert_eq!(d.timestamp, Some(u64::from(id.timestamp())));
    assert_eq!(d.payload.as_deref().map(str::len), Some(32));
    let status = grpc
        .decode(DecodeRequest {
            name: "ksuid".into(),
            id: "not-a-ksuid".into(),
            format: None,
        })
        .await
        .expect_err("malformed");
    assert!(status.message().contains("27 characters"), "{status:?}");

    let url = format!("redis://{}/", s.resp().expect("resp_listen is set"));
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let a: String = redis::cmd("INCR")
        .arg("users")
        .query_async(&mut conn)
        .await
        .unwrap();
    let b: String = redis::cmd("INCR")
        .arg("users")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(a.starts_with("user_") && a < b, "{a} {b}");
    let k: String = redis::cmd("INCR")
        .arg("ksuid")
        .query_async(&mut conn)
        .await
        .unwrap();
    k.parse::<Ksuid>().unwrap();
}

#[test]
fn misconfigured_generators_are_refused_saying_why() {
    let dir = crate::support::TempDir::new("snowdrift-typeid-config");
    for (generator, says) in [
        (
            "name = \"u\"\nkind = \"typeid\"",
            "kind typeid needs prefix",
        ),
        (
            "name = \"u\"\nkind = \"typeid\"\nprefix = \"User\"",
            "'U' at byte 0",
        ),
        (
            "name = \"u\"\nkind = \"typeid\"\nprefix = \"user_\"",
            "ends with an underscore",
        ),
        (
            "name = \"u\"\nkind = \"typeid\"\nprefix = \"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl\"",
            "64 characters",
        ),
        (
            "name = \"k\"\nkind = \"ksuid\"\nprefix = \"user\"",
            "it is a key of kind typeid",
        ),
        (
            "name = \"u\"\nkind = \"uuid7\"\nprefix = \"user\"",
            "it is a key of kind typeid",
        ),
    ] {
        let e = crate::support::try_load(&dir.0, &format!("[[generator]]\n{generator}\n"))
            .expect_err(generator)
            .to_string();
        assert!(e.contains(says), "{generator}: {e}");
    }
}
