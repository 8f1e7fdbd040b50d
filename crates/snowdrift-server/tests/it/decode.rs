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
        s.json(&format!("/api/snowflake/decode/{id}"), 404).await;
        s.text(&format!("/decodeSnowflakeId?snowflakeId={id}"), 404)
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

/// An ID is read as sent: a space, tab or newline around it (which decode used to trim, so
/// `/api/snowflake/decode/1%09` answered 200 where the API says digits only) or inside it is
/// a 400 naming the character and where it is, on every decode route and for every kind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_reads_the_id_as_sent_and_names_a_stray_character() {
    let s = start("decode-strict", "").await;
    let v = s.json("/v1/ids/snowflake", 200).await;
    let id = v["ids"][0].as_str().unwrap().to_string();
    let uuid = s.json("/v1/ids/uuid7", 200).await["ids"][0]
        .as_str()
        .unwrap()
        .to_string();
    for (stray, named) in [
        ("%09", "a tab (U+0009)"),
        ("%20", "a space"),
        ("%0A", "a newline (U+000A)"),
        ("%0D", "a carriage return (U+000D)"),
        ("%0B", "U+000B"),
        ("%C2%A0", "U+00A0"),
    ] {
        for (path, at) in [
            (
                format!("/v1/ids/snowflake/decode/{id}{stray}"),
                id.len() + 1,
            ),
            (format!("/v1/ids/snowflake/decode/{stray}{id}"), 1),
            (
                format!("/v1/ids/uuid7/decode/{uuid}{stray}"),
                uuid.len() + 1,
            ),
            (format!("/api/snowflake/decode/{id}{stray}"), id.len() + 1),
            (format!("/api/snowflake/decode/{stray}{id}"), 1),
            (
                format!("/decodeSnowflakeId?snowflakeId={id}{stray}"),
                id.len() + 1,
            ),
        ] {
            let v = s.json(&path, 400).await;
            let message = v["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(named) && message.contains(&format!("at character {at}")),
                "{path}: {v}"
            );
        }
    }
    // Leaf's routes take digits only: a sign or a letter is a 400 naming it; digits that no
    // ID reads as are a 404, as on /v1.
    for bad in ["+1", "-1", "1e5", "0x10"] {
        let v = s.json(&format!("/api/snowflake/decode/{bad}"), 400).await;
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("digits only"),
            "{v}"
        );
        s.json(
            &format!("/decodeSnowflakeId?snowflakeId={}", bad.replace('+', "%2B")),
            400,
        )
        .await;
    }
    let huge = "9".repeat(30);
    s.json(&format!("/api/snowflake/decode/{huge}"), 404).await;
    s.json(&format!("/decodeSnowflakeId?snowflakeId={huge}"), 404)
        .await;
    // Leading zeros are digits: the same ID.
    let padded = s.json(&format!("/api/snowflake/decode/000{id}"), 200).await;
    assert_eq!(padded["id"], id.as_str(), "{padded}");
    s.json(&format!("/v1/ids/snowflake/decode/{id}"), 200).await;
    s.json(&format!("/api/snowflake/decode/{id}"), 200).await;
}
