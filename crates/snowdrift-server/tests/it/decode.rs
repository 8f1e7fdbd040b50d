//! Decoding IDs, on every route that decodes (`/v1/ids/{name}/decode/{id}`, Leaf's
//! `/api/snowflake/decode/{id}` and `/decodeSnowflakeId`): only what the generator could
//! have issued is read.

use crate::support::{TestServer, start};

/// A bit-reversed generator (the default snowflake one, so Leaf's routes use it) and a plain
/// one, both Twitter's 63-bit layout.
async fn reversed_and_plain(prefix: &str) -> TestServer {
    start(
        prefix,
        "[[generator]]\nname = \"snowflake\"\nkind = \"snowflake\"\noutput = \"bit-reversed\"\n\
         [[generator]]\nname = \"plain\"\nkind = \"snowflake\"\n",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bit_reversed_decode_refuses_ids_past_the_layout_as_the_plain_one_does() {
    let s = reversed_and_plain("decode-reversed").await;
    // 2^63 + 5 reversed within 63 bits would drop its top bit and read as some other ID
    // (it decoded to 2054); the plain generator says no ID of its reads so.
    for id in [1u64 << 63, (1 << 63) + 5, u64::MAX] {
        for name in ["plain", "snowflake"] {
            let v = s.json(&format!("/v1/ids/{name}/decode/{id}"), 404).await;
            let message = v["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("at most"), "{name} {id}: {v}");
        }
        let r = s
            .client
            .get(format!("{}/api/snowflake/decode/{id}", s.base))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        assert!(
            status == 400 || status == 404,
            "{id}: {status} {}",
            r.text().await.unwrap()
        );
        s.text(&format!("/decodeSnowflakeId?snowflakeId={id}"), 400)
            .await;
    }
    // What the generator issues still decodes, to the ID it composed.
    let v = s.json("/v1/ids/snowflake", 200).await;
    let id = v["ids"][0].as_str().unwrap().to_string();
    let d = s.json(&format!("/v1/ids/snowflake/decode/{id}"), 200).await;
    assert_eq!(d["id"], id.as_str(), "{d}");
    assert_eq!(d["output"], "bit-reversed", "{d}");
    let composed: u64 = d["composed"].as_str().unwrap().parse().unwrap();
    assert_eq!((composed.reverse_bits() >> 1).to_string(), id, "{d}");
    let leaf = s.json(&format!("/api/snowflake/decode/{id}"), 200).await;
    assert_eq!(leaf["composed"], d["composed"], "{leaf}");
    s.json(&format!("/decodeSnowflakeId?snowflakeId={id}"), 200)
        .await;
}
