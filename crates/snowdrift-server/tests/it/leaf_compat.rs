//! What a client written for Meituan Leaf notices, with the request shapes Leaf's own
//! README and monitor use: GET and POST on its routes, `leaf.errors = "leaf"` (500 with
//! Spring Boot's body), `/decodeSnowflakeId?snowflakeId=` with Leaf's field names, and the
//! monitor's `/cache` and `/db` pages.

use crate::support::{TestServer, start};

async fn send(s: &TestServer, method: &str, path: &str) -> (u16, String, String) {
    let r = s
        .client
        .request(method.parse().unwrap(), format!("{}{path}", s.base))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, content_type, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_routes_answer_get_and_post_and_errors_the_chosen_way() {
    let ours = start("leaf-ours", "").await;
    let leaf = start("leaf-errors", "[leaf]\nerrors = \"leaf\"\n").await;
    for s in [&ours, &leaf] {
        s.post(
            "/v1/tags",
            r#"{"tag": "leaf-segment-test", "step": 100}"#,
            201,
        )
        .await;
        let mut ids = Vec::new();
        for method in ["GET", "POST", "GET", "POST"] {
            let (status, _, body) = send(s, method, "/api/segment/get/leaf-segment-test").await;
            assert_eq!(status, 200, "{method}: {body}");
            ids.push(body.parse::<u64>().unwrap());
            let (status, _, body) = send(s, method, "/api/snowflake/get/test").await;
            assert_eq!(status, 200, "{method}: {body}");
            assert!(body.parse::<u64>().unwrap() > 0);
        }
        assert_eq!(ids, [1, 2, 3, 4]);
    }
    // The default: non-200 with a message, never a 0 with 200.
    let (status, content_type, body) = send(&ours, "GET", "/api/segment/get/no-such-tag").await;
    assert_eq!(status, 404, "{body}");
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    assert!(body.contains("no-such-tag"), "{body}");
    // Leaf's: 500 and the JSON Spring Boot writes for LeafServerException, by both paths
    // (GET is answered by the fast path, POST by the router).
    // Leaf answers -2 (EXCEPTION_ID_KEY_NOT_EXISTS) for every key not in its cache: an
    // unknown tag, one no tag can be called (invalid characters, too long) and a name that is
    // not a segment tag alike; -3 is only for a known tag whose segments are not loaded.
    let long = "t".repeat(129);
    for path in [
        "/api/segment/get/bad%20tag".to_string(),
        format!("/api/segment/get/{long}"),
        "/api/segment/get/snowflake".to_string(),
    ] {
        for method in ["GET", "POST"] {
            let (status, _, body) = send(&leaf, method, &path).await;
            assert_eq!(status, 500, "{method} {path}: {body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(
                v["message"], "Result{id=-2, status=EXCEPTION}",
                "{method} {path}: {v}"
            );
        }
    }
    for method in ["GET", "POST"] {
        let (status, content_type, body) =
            send(&leaf, method, "/api/segment/get/no-such-tag").await;
        assert_eq!(status, 500, "{method}: {body}");
        assert_eq!(content_type, "application/json", "{method}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], 500, "{v}");
        assert_eq!(v["error"], "Internal Server Error", "{v}");
        assert_eq!(v["message"], "Result{id=-2, status=EXCEPTION}", "{v}");
        assert_eq!(v["path"], "/api/segment/get/no-such-tag", "{v}");
        assert!(v["timestamp"].as_str().unwrap().ends_with("+0000"), "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_snowflake_id_uses_leafs_names() {
    let ours = start("leaf-decode", "").await;
    // Leaf's layout is Twitter's, the default generator's: worker 39, sequence 3448 at
    // 1567733700834 (the example in Leaf's monitor source).
    let id: u64 = ((1_567_733_700_834 - 1_288_834_974_657) << 22) | (39 << 12) | 3448;
    for method in ["GET", "POST"] {
        let (status, _, body) = send(
            &ours,
            method,
            &format!("/decodeSnowflakeId?snowflakeId={id}"),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v["timestamp"], "1567733700834(2019-09-06 01:35:00.834)",
            "{v}"
        );
        assert_eq!(v["workerId"], "39", "{v}");
        assert_eq!(v["sequenceId"], "3448", "{v}");
    }
    let (status, _, body) = send(&ours, "GET", "/decodeSnowflakeId?snowflakeId=abc").await;
    assert_eq!(status, 400, "{body}");
    let leaf = start("leaf-decode-errors", "[leaf]\nerrors = \"leaf\"\n").await;
    let (status, _, body) = send(&leaf, "GET", "/decodeSnowflakeId?snowflakeId=abc").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("errorMsg"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_pages_list_buffers_and_tags() {
    let s = start("leaf-monitor", "").await;
    s.post(
        "/v1/tags",
        r#"{"tag": "shown", "step": 50, "description": "<b>orders</b>"}"#,
        201,
    )
    .await;
    s.json("/v1/ids/shown?count=10", 200).await;
    let (status, content_type, cache) = send(&s, "GET", "/cache").await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    // Leaf's columns, in Leaf's order; the current segment (1..51, 10 used) is buffer 0.
    assert!(
        cache.contains(
            "<th>name</th><th>init</th><th>next</th><th>pos</th><th>value0</th><th>max0</th>\
             <th>step0</th><th>value1</th><th>max1</th><th>step1</th>"
        ),
        "{cache}"
    );
    assert!(cache.contains("<td>shown</td><td>true</td>"), "{cache}");
    assert!(
        cache.contains("<td>0</td><td>11</td><td>51</td><td>50</td>"),
        "{cache}"
    );
    let (status, _, db) = send(&s, "GET", "/db").await;
    assert_eq!(status, 200);
    // Claimed so far: the first segment, and the next one once a tenth of it was used.
    assert!(
        db.contains("<td>shown</td><td>51</td><td>50</td>")
            || db.contains("<td>shown</td><td>101</td><td>50</td>"),
        "{db}"
    );
    assert!(
        db.contains("&lt;b&gt;orders&lt;/b&gt;"),
        "descriptions are escaped: {db}"
    );
}
