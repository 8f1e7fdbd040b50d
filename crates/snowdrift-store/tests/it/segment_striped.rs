//! One tag striped over PostgreSQL, MariaDB and SQLite (Tinyid's delta/remainder): each
//! store serves only its residue class, and the tag stays available while one is down.

use std::sync::Arc;
use std::time::Duration;

use snowdrift_store::Error;
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentService, SegmentStore};
use snowdrift_testkit::{FaultProxy, IdChecker};

use crate::common::{table, url};

fn tag(step: i64) -> NewTag {
    NewTag {
        tag: "order".into(),
        step,
        description: None,
        template: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn striped_stores_never_collide_and_survive_one_down() {
    let t = table("striped");
    let (proxy, pg_url) = FaultProxy::start_for_url(&url("postgres")).await.unwrap();
    let stores = vec![
        SegmentStore::connect(&pg_url, &t).await.unwrap(),
        SegmentStore::connect(&url("mysql"), &t).await.unwrap(),
        SegmentStore::connect(&url("sqlite"), &t).await.unwrap(),
    ];
    let striped = SegmentStore::striped(stores.clone()).unwrap();
    striped.create_tag(&tag(30)).await.unwrap();
    for s in &stores {
        assert_eq!(
            s.get_tag("order").await.unwrap().step,
            30,
            "created everywhere"
        );
    }
    assert!(matches!(
        striped.create_tag(&tag(30)).await,
        Err(Error::TagExists(_))
    ));
    let tiny = NewTag {
        tag: "tiny".into(),
        step: 2,
        description: None,
        template: None,
    };
    let err = striped.create_tag(&tiny).await.unwrap_err();
    assert!(err.to_string().contains("at least 3"), "{err}");
    assert!(matches!(
        stores[1].get_tag("tiny").await,
        Err(Error::TagNotFound(_))
    ));

    // Claims go round the stores; each keeps to its class.
    for _ in 0..6 {
        let c = striped.claim("order", None).await.unwrap();
        assert_eq!(c.ids.len(), 10, "30 numbers, one in three");
        let class = c.ids.start % 3;
        assert!(c.ids.iter().all(|id| id % 3 == class));
    }

    let config = BufferConfig {
        claim_timeout: Duration::from_secs(2),
        ..BufferConfig::default()
    };
    let segments = Arc::new(SegmentService::new(striped.clone(), config));
    let checker = Arc::new(IdChecker::new());
    let take = |name: &'static str, n: usize| {
        let (segments, checker) = (segments.clone(), checker.clone());
        tokio::spawn(async move {
            let mut got = Vec::new();
            while got.len() < n {
                got.extend(segments.next("order", 3).await.unwrap().iter());
            }
            checker.record_unordered(name, got);
        })
    };
    let before: Vec<_> = (0..4).map(|_| take("before", 3000)).collect();
    for t in before {
        t.await.unwrap();
    }

    // PostgreSQL goes away: the other two stores carry the tag.
    proxy.cut();
    for _ in 0..3 {
        let c = striped.claim("order", None).await.unwrap();
        assert_ne!(c.ids.start % 3, 0, "class 0 is PostgreSQL's, which is down");
    }
    let during: Vec<_> = (0..4).map(|_| take("during", 3000)).collect();
    for t in during {
        t.await.unwrap();
    }
    proxy.heal();
    let after: Vec<_> = (0..2).map(|_| take("after", 3000)).collect();
    for t in after {
        t.await.unwrap();
    }
    checker.assert_clean();
    assert!(checker.distinct() >= 30_000);

    // No nesting, and at least two stores.
    assert!(SegmentStore::striped(vec![striped]).is_err());
    assert!(SegmentStore::striped(vec![stores[1].clone()]).is_err());
}
