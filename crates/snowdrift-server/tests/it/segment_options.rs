//! `[store] prefetch_at` and `max_step` as a server runs them: the next segment is claimed
//! only once that share of the current one is used, and the dynamic step never grows a
//! tag's segments past the cap.

use serde_json::Value;

use crate::support::{TestServer, start};

/// A `[store]` section with `keys`, on a SQLite file of its own (a `[store]` in a test's
/// config replaces the support's per-test store).
fn store(keys: &str) -> String {
    let file = std::env::temp_dir().join(snowdrift_testkit::unique_name("segment-options"));
    format!(
        "[store]\nurl = \"sqlite://{}.db\"\n{keys}\n",
        file.display()
    )
}

async fn buffer(s: &TestServer, tag: &str) -> Value {
    let g = s.json("/v1/generators", 200).await;
    g["segment_buffers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["tag"] == tag)
        .cloned()
        .unwrap_or_else(|| panic!("no buffer for {tag}: {g}"))
}

async fn take(s: &TestServer, tag: &str, count: u64) -> Vec<u64> {
    let v = s.json(&format!("/v1/ids/{tag}?count={count}"), 200).await;
    crate::support::ids_of(&v)
}

/// Waits for the refill task to do whatever it will do after a take.
async fn settle() {
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetch_at_claims_the_next_segment_only_past_that_share() {
    let late = start("prefetch-late", &store("prefetch_at = 0.8")).await;
    let early = start("prefetch-early", "").await;
    for s in [&late, &early] {
        s.post("/v1/tags", r#"{"tag": "p", "step": 1000}"#, 201)
            .await;
        assert_eq!(take(s, "p", 500).await.len(), 500);
    }
    settle().await;
    // Half of the first segment used: Leaf's 0.1 has claimed the next one, 0.8 has not.
    let b = buffer(&early, "p").await;
    assert!(b["segments_ahead"].as_u64().unwrap() >= 1, "{b}");
    let b = buffer(&late, "p").await;
    assert_eq!(b["segments_ahead"], 0, "{b}");
    assert_eq!(b["current_left"], 500, "{b}");
    // Past 80%: now it claims.
    take(&late, "p", 350).await;
    settle().await;
    let b = buffer(&late, "p").await;
    assert!(b["segments_ahead"].as_u64().unwrap() >= 1, "{b}");
    // Nothing lost or repeated on the way.
    let rest = take(&late, "p", 1000).await;
    assert_eq!(rest.first(), Some(&851));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_step_caps_the_dynamic_step() {
    let s = start("max-step", &store("max_step = 40")).await;
    s.post("/v1/tags", r#"{"tag": "m", "step": 10}"#, 201).await;
    let mut longest = 0;
    let mut next = 1;
    for _ in 0..40 {
        let ids = take(&s, "m", 20).await;
        assert_eq!(
            ids[0], next,
            "IDs continue with no gap while the server runs"
        );
        next = ids.last().unwrap() + 1;
        let b = buffer(&s, "m").await;
        longest = longest.max(b["current_len"].as_u64().unwrap());
    }
    // Segments used up in far less than 15 minutes double the step: 10, 20, 40, then the cap.
    assert_eq!(longest, 40, "longest segment {longest}");
}
