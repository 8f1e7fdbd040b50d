//! A tag served from memory with background refills, against real databases.

use std::collections::HashSet;
use std::time::Duration;

use snowdrift_store::Error;
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentBuffer, SqlSegmentStore};

use crate::common::{raw, table, url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_share_a_tag_without_duplicates_and_with_few_claims() {
    let store = SqlSegmentStore::connect(&url("sqlite"), &table("shared"))
        .await
        .unwrap();
    store
        .create_tag(&NewTag {
            tag: "order".into(),
            step: 100,
            description: None,
            template: None,
        })
        .await
        .unwrap();
    let buffer = std::sync::Arc::new(
        SegmentBuffer::start(store.clone(), "order", BufferConfig::default())
            .await
            .unwrap(),
    );
    let tasks: Vec<_> = (0..4u64)
        .map(|i| {
            let b = buffer.clone();
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for _ in 0..3000 {
                    // A take stops at a segment's end, so ask again for the rest.
                    let mut left = 1 + i;
                    while left > 0 {
                        let got = b.next(left).await.unwrap();
                        left -= got.len();
                        ids.extend(got.iter());
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for t in tasks {
        let ids = t.await.unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a task sees increasing IDs"
        );
        for id in ids {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
    assert_eq!(all.len(), 3000 * (1 + 2 + 3 + 4));
    // The dynamic step doubles quickly under this load, so the database saw far fewer
    // claims than IDs / stored step.
    let max_id = store.get_tag("order").await.unwrap().max_id as u64;
    assert!(max_id > *all.iter().max().unwrap());
    assert!(
        buffer.status().pushed < 30_000 / 100,
        "claims: {}",
        buffer.status().pushed
    );
}

/// The store fails (its table vanishes): buffered IDs keep coming, then callers get a clear
/// error after the wait bound, and the buffer recovers by itself when the table is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_serves_buffered_ids_then_refuses_then_recovers() {
    let url = url("postgres");
    let t = table("outage");
    let store = SqlSegmentStore::connect(&url, &t).await.unwrap();
    store
        .create_tag(&NewTag {
            tag: "pay".into(),
            step: 1000,
            description: None,
            template: None,
        })
        .await
        .unwrap();
    let config = BufferConfig {
        wait: Duration::from_millis(300),
        ..BufferConfig::default()
    };
    let buffer = SegmentBuffer::start(store.clone(), "pay", config)
        .await
        .unwrap();
    // Let the prefetch finish, then take the database away.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = buffer.status();
    raw("postgres", format!("ALTER TABLE {t} RENAME TO {t}_gone")).await;
    let mut served = HashSet::new();
    let err = loop {
        match buffer.next(100).await {
            Ok(ids) => assert!(ids.iter().all(|id| served.insert(id))),
            Err(e) => break e,
        }
    };
    assert_eq!(
        served.len() as u64,
        held.current_left + held.ids_ahead,
        "every buffered ID was served"
    );
    assert!(matches!(err, Error::Exhausted { .. }), "{err}");
    assert!(
        err.to_string().contains("store unavailable"),
        "the cause is named: {err}"
    );
    raw("postgres", format!("ALTER TABLE {t}_gone RENAME TO {t}")).await;
    let ids = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(ids) = buffer.next(10).await {
                break ids;
            }
        }
    })
    .await
    .expect("recovers once the store is back");
    assert!(ids.iter().all(|id| !served.contains(&id)));
    drop(buffer);
    store.close().await;
    raw("postgres", format!("DROP TABLE {t}")).await;
}
