//! Many tags of one store served by one node, against real databases.

use std::collections::HashSet;
use std::sync::Arc;

use snowdrift_store::Error;
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentService, SegmentStore, TagUpdate};

use crate::common::{raw, table, url};

fn new_tag(tag: &str, step: i64) -> NewTag {
    NewTag {
        tag: tag.into(),
        step,
        description: None,
        template: None,
    }
}

async fn service(backend: &str, name: &str) -> (SegmentService, String) {
    let t = table(name);
    let store = SegmentStore::connect(&url(backend), &t).await.unwrap();
    (SegmentService::new(store, BufferConfig::default()), t)
}

#[tokio::test]
async fn a_tag_created_while_running_is_served_without_a_restart() {
    let (segments, t) = service("sqlite", "late").await;
    let err = segments.next("late", 1).await.unwrap_err();
    assert!(
        matches!(err, Error::TagNotFound(ref t) if t == "late"),
        "{err}"
    );
    assert!(segments.status().is_empty(), "a failed start is forgotten");
    assert!(segments.status_of("late").is_none());
    // Created by someone else (another node, the CLI) while this one runs: served once the
    // service stops remembering the name as missing (a second, so unknown names do not cost
    // a database read each).
    let other = SegmentStore::connect(&url("sqlite"), &t).await.unwrap();
    other.create_tag(&new_tag("late", 10)).await.unwrap();
    let created = std::time::Instant::now();
    let ids = loop {
        match segments.next("late", 5).await {
            Ok(ids) => break ids,
            Err(Error::TagNotFound(_)) if created.elapsed() < std::time::Duration::from_secs(2) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => panic!(
                "not served {:?} after it was created: {e}",
                created.elapsed()
            ),
        }
    };
    assert_eq!((ids.start, ids.end), (1, 6));
    assert_eq!(segments.status().len(), 1);
    let held = segments.status_of("late").expect("served now");
    assert_eq!((held.current_left, held.current_len), (5, 10));
    assert_eq!(held, segments.status()[0].1);
    let err = segments.next("no such/tag", 1).await.unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert_eq!(segments.status().len(), 1, "bad names are not kept");
}

/// A pre-loaded tag serves its first IDs from memory: with the table gone, it still
/// answers, while a tag that was not pre-loaded cannot start.
#[tokio::test]
async fn a_preloaded_tag_serves_its_first_id_without_the_database() {
    let (segments, t) = service("postgres", "preload").await;
    for tag in ["hot", "cold"] {
        segments.create_tag(&new_tag(tag, 100)).await.unwrap();
    }
    segments.preload(&["hot"]).await.unwrap();
    let err = segments.preload(&["missing"]).await.unwrap_err();
    assert!(matches!(err, Error::TagNotFound(_)), "{err}");
    raw("postgres", format!("ALTER TABLE {t} RENAME TO {t}_away")).await;
    let first = segments.next("hot", 1).await.unwrap();
    assert_eq!(first.start, 1);
    assert!(segments.next("cold", 1).await.is_err());
    raw("postgres", format!("DROP TABLE {t}_away")).await;
}

/// Many tasks asking for a fresh tag at once start one buffer, and no ID repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_requests_share_one_buffer() {
    let (segments, _) = service("mysql", "race").await;
    segments.create_tag(&new_tag("order", 50)).await.unwrap();
    let segments = Arc::new(segments);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let s = segments.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                while ids.len() < 500 {
                    ids.extend(s.next("order", 7).await.unwrap().iter());
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for task in tasks {
        for id in task.await.unwrap() {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    assert_eq!(segments.status().len(), 1);
}

/// A step changed with `update_tag` reaches a running buffer: later claims are at least
/// that large.
#[tokio::test]
async fn an_updated_step_reaches_the_running_buffer() {
    let t = table("step");
    let store = SegmentStore::connect(&url("sqlite"), &t).await.unwrap();
    // A step that never grows by itself, so only the update can make it larger.
    let mut config = BufferConfig::default();
    config.step.grow_below = std::time::Duration::ZERO;
    let segments = SegmentService::new(store, config);
    segments.create_tag(&new_tag("order", 10)).await.unwrap();
    segments.preload(&["order"]).await.unwrap();
    segments
        .update_tag(
            "order",
            &TagUpdate {
                step: Some(5000),
                description: None,
            },
        )
        .await
        .unwrap();
    let mut biggest = 0;
    let mut last_max = segments.get_tag("order").await.unwrap().max_id;
    while biggest < 5000 {
        let ids = segments.next("order", 10).await.unwrap();
        assert!(ids.end < 20_000, "the new step never arrived");
        let max = segments.get_tag("order").await.unwrap().max_id;
        biggest = biggest.max(max - last_max);
        last_max = max;
    }
}
