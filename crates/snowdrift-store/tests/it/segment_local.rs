//! Per-task handles (`SegmentBuffer::handle`) on real databases: single IDs from a block each
//! handle owns, no duplicates across handles and plain `next` callers, skipped blocks never
//! served, and the same wait-then-error behaviour as `next` when the store is gone.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use snowdrift_core::segment::LocalConfig;
use snowdrift_store::Error;
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentBuffer, SqlSegmentStore};

use crate::common::{raw, table, url};

async fn store_with_tag(backend: &str, t: &str, tag: &str, step: i64) -> SqlSegmentStore {
    let store = SqlSegmentStore::connect(&url(backend), t).await.unwrap();
    store
        .create_tag(&NewTag {
            tag: tag.into(),
            step,
            description: None,
            template: None,
        })
        .await
        .unwrap();
    store
}

/// Four tasks with handles and one calling `next(3)` share a tag whose small step makes
/// them outrun the refill and wait. No ID is served twice or held by one handle and
/// served by another; each handle's IDs increase; every ID was claimed in the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_and_next_callers_never_share_an_id() {
    let t = table("local_shared");
    let store = store_with_tag("postgres", &t, "order", 50).await;
    let buffer = Arc::new(
        SegmentBuffer::start(
            store.clone(),
            "order",
            BufferConfig {
                // Generous for a loaded CI machine: waiting is allowed, failing is not.
                wait: Duration::from_secs(20),
                ..BufferConfig::default()
            },
        )
        .await
        .unwrap(),
    );
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let b = buffer.clone();
            tokio::spawn(async move {
                let mut h = b.handle();
                let mut ids = Vec::new();
                for _ in 0..5000 {
                    ids.push(h.next().await.unwrap());
                }
                assert_eq!(h.served(), 5000);
                (ids, h.held().iter().collect::<Vec<u64>>())
            })
        })
        .collect();
    let plain = {
        let b = buffer.clone();
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..2000 {
                ids.extend(b.next(3).await.unwrap().iter());
            }
            ids
        })
    };
    let mut all = HashSet::new();
    for h in handles {
        let (served, held) = h.await.unwrap();
        assert!(
            served.windows(2).all(|w| w[0] < w[1]),
            "a handle's IDs increase"
        );
        for id in served.into_iter().chain(held) {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    for id in plain.await.unwrap() {
        assert!(all.insert(id), "duplicate {id} from next()");
    }
    let max_id = store.get_tag("order").await.unwrap().max_id as u64;
    assert!(
        all.iter().all(|id| (1..=max_id).contains(id)),
        "every ID lies in a claimed range (max_id {max_id})"
    );
    assert!(
        buffer.status().starved > 0,
        "the step of 50 was meant to make callers wait for refills; it did not, so this test checked less than it says"
    );
    drop(buffer);
    store.close().await;
    raw("postgres", format!("DROP TABLE {t}")).await;
}

/// IDs a handle holds when it is dropped are gone for good: later handles and `next`
/// callers never serve them (invariant 1: no duplicate, at the price of a gap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_handle_skips_its_block() {
    let t = table("local_skip");
    let store = store_with_tag("sqlite", &t, "skip", 1000).await;
    let buffer = SegmentBuffer::start(store.clone(), "skip", BufferConfig::default())
        .await
        .unwrap();
    // A handle that serves one ID and goes out of scope.
    let (first, held) = {
        let mut h = buffer.handle();
        let first = h.next().await.unwrap();
        (first, h.held().iter().collect::<Vec<u64>>())
    };
    assert_eq!(
        held.len() as u64,
        LocalConfig::default().first_block - 1,
        "the first block, minus the ID served"
    );
    assert!(held.iter().all(|&id| id > first));
    let mut later = HashSet::new();
    let mut h2 = buffer.handle();
    for _ in 0..500 {
        later.insert(h2.next().await.unwrap());
        later.extend(buffer.next(2).await.unwrap().iter());
    }
    for id in held.iter().chain([&first]) {
        assert!(!later.contains(id), "{id} was served again");
    }
    // The IDs after the skipped block are served: only the block is lost.
    assert!(later.contains(&(held[held.len() - 1] + 1)));
    drop(buffer);
    store.close().await;
}

/// The store goes away: a handle serves its block and what the buffer holds, then fails
/// with `Exhausted` naming the cause after the wait bound, and serves again (new IDs only)
/// once the store is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_waits_then_refuses_then_recovers_like_next() {
    let t = table("local_outage");
    let store = store_with_tag("postgres", &t, "pay", 1000).await;
    let config = BufferConfig {
        wait: Duration::from_millis(300),
        ..BufferConfig::default()
    };
    let buffer = SegmentBuffer::start(store.clone(), "pay", config)
        .await
        .unwrap();
    // Let the prefetch finish, then take the database away.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = buffer.status();
    raw("postgres", format!("ALTER TABLE {t} RENAME TO {t}_gone")).await;
    let mut h = buffer.handle();
    let mut served = HashSet::new();
    let err = loop {
        match h.next().await {
            Ok(id) => assert!(served.insert(id), "duplicate {id}"),
            Err(e) => break e,
        }
    };
    assert_eq!(
        served.len() as u64,
        before.current_left + before.ids_ahead,
        "every buffered ID was served through the handle"
    );
    assert!(h.held().is_empty());
    assert!(matches!(err, Error::Exhausted { .. }), "{err}");
    assert!(
        err.to_string().contains("store unavailable"),
        "the cause is named: {err}"
    );
    raw("postgres", format!("ALTER TABLE {t}_gone RENAME TO {t}")).await;
    let id = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Ok(id) = h.next().await {
                break id;
            }
        }
    })
    .await
    .expect("recovers once the store is back");
    assert!(!served.contains(&id));
    drop(buffer);
    store.close().await;
    raw("postgres", format!("DROP TABLE {t}")).await;
}

#[tokio::test]
async fn a_bad_block_config_is_refused_with_the_reason() {
    let t = table("local_config");
    let store = store_with_tag("sqlite", &t, "cfg", 100).await;
    let buffer = SegmentBuffer::start(store.clone(), "cfg", BufferConfig::default())
        .await
        .unwrap();
    let err = buffer
        .handle_with(LocalConfig {
            first_block: 0,
            max_block: 64,
        })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("first_block"), "{err}");
    let mut h = buffer
        .handle_with(LocalConfig {
            first_block: 1,
            max_block: 1,
        })
        .unwrap();
    let a = h.next().await.unwrap();
    assert!(h.held().is_empty(), "blocks of one ID hold nothing back");
    assert_eq!(buffer.next(1).await.unwrap().start, a + 1);
    drop(buffer);
    store.close().await;
}
