//! Carrying another system's state in: tags raised to a floor on every segment backend
//! (created at the floor, moved up, never lowered, all or nothing where the backend has
//! transactions), a SQL table read without changing it, and worker marks raised under
//! the ID's lease on registries (never lowered, a held ID refused, every lease given back).

use std::time::Duration;

use snowdrift_store::segment::{NewTag, SegmentStore, TagFloor, inspect};
use snowdrift_store::worker::{Mark, MarkFloor, WorkerRegistry};
use snowdrift_testkit::urls;

use crate::common::{drop_table, table, url};

fn floor(tag: &str, next_id: i64, step: i64) -> TagFloor {
    TagFloor {
        tag: tag.into(),
        next_id,
        step,
        description: Some("carried".into()),
    }
}

async fn tags_raise_and_never_lower(backend: &str) {
    let t = table("raise");
    let s = SegmentStore::connect(&url(backend), &t).await.unwrap();
    s.create_tag(&NewTag {
        tag: "low".into(),
        step: 10,
        description: None,
        template: None,
    })
    .await
    .unwrap();
    s.create_tag(&NewTag {
        tag: "high".into(),
        step: 100,
        description: None,
        template: None,
    })
    .await
    .unwrap();
    for _ in 0..100 {
        s.claim("high", None).await.unwrap();
    }
    let floors = [
        floor("fresh", 5_000, 100),
        floor("low", 5_000, 100),
        floor("high", 5_000, 100),
    ];
    let changes = s.raise_to(&floors).await.unwrap();
    assert_eq!(changes[0].before, None);
    assert_eq!(changes[0].after, (5_000, 100));
    assert_eq!(changes[1].before, Some((1, 10)));
    assert_eq!(changes[1].after, (5_000, 100));
    assert_eq!(changes[2].before, Some((10_001, 100)));
    assert_eq!(changes[2].after, (10_001, 100), "kept: never lowered");
    // The first claim of a created tag starts at its floor, not at 1.
    let claim = s.claim("fresh", None).await.unwrap();
    assert_eq!((claim.ids.start, claim.ids.end), (5_000, 5_100));
    assert_eq!(
        s.get_tag("fresh").await.unwrap().description.as_deref(),
        Some("carried")
    );
    let again = s.raise_to(&floors[1..]).await.unwrap();
    assert!(again.iter().all(|c| !c.changes()), "{again:?}");
    // A bad floor writes nothing, the good ones before it included.
    let bad = [floor("low", 9_000, 100), floor("full", i64::MAX - 5, 100)];
    assert!(s.raise_to(&bad).await.is_err());
    assert_eq!(s.get_tag("low").await.unwrap().max_id, 5_000);
    if backend != "redis" && backend != "zookeeper" {
        let found = inspect::inspect(&url(backend), &t).await.unwrap();
        assert!(found.exists && found.problems().is_empty(), "{found:?}");
        let names: Vec<_> = found.tags.iter().map(|t| t.tag.as_str()).collect();
        assert_eq!(names, ["fresh", "high", "low"]);
        let missing = inspect::inspect(&url(backend), &table("nothing"))
            .await
            .unwrap();
        assert!(!missing.exists && missing.tags.is_empty());
        assert!(missing.check("the store").is_err());
    }
    drop_table(backend, &t).await;
}

/// A template tag in the floors rolls the whole raise back on SQL (one transaction).
async fn a_refused_tag_rolls_the_others_back(backend: &str) {
    let t = table("raise_tx");
    let s = SegmentStore::connect(&url(backend), &t).await.unwrap();
    s.create_tag(&NewTag {
        tag: "dated".into(),
        step: 10,
        description: None,
        template: Some(snowdrift_core::counter::CounterTemplate::parse("ORD{seq:04}").unwrap()),
    })
    .await
    .unwrap();
    let e = s
        .raise_to(&[floor("first", 700, 10), floor("dated", 700, 10)])
        .await
        .unwrap_err();
    assert!(e.to_string().contains("template"), "{e}");
    assert!(matches!(
        s.get_tag("first").await,
        Err(snowdrift_store::Error::TagNotFound(_))
    ));
    drop_table(backend, &t).await;
}

async fn marks_raise_under_a_lease(registry_url: &str) {
    let ns = snowdrift_testkit::unique_name("raise_marks");
    let r = WorkerRegistry::connect(registry_url, &ns).await.unwrap();
    const L: &str = "time:41,worker:10,seq:12/1/1288834974657";
    let floors = [
        MarkFloor {
            worker_id: 1,
            at_least_ms: 1_800_000_000_000,
            from_clock: false,
        },
        MarkFloor {
            worker_id: 2,
            at_least_ms: 1_800_000_000_000,
            from_clock: false,
        },
    ];
    // Worker 2 already has a higher mark under the same layout.
    r.claim(2, "node", Duration::from_secs(10)).await.unwrap();
    r.write_layout(2, "node", L).await.unwrap();
    r.write_mark(2, "node", 1_900_000_000_000).await.unwrap();
    let preview = r.preview_marks(&floors, L).await.unwrap();
    assert_eq!(preview[0].before, None);
    assert!(!preview[1].changes(), "held, but nothing to change: fine");
    // Held and in need of a raise: refused, nothing written.
    let e = r
        .preview_marks(
            &[MarkFloor {
                worker_id: 2,
                at_least_ms: 2_000_000_000_000,
                from_clock: false,
            }],
            L,
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("held by \"node\""), "{e}");
    let e = r
        .raise_marks(&floors, L, "import", Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("worker ID 2"), "{e}");
    assert_eq!(r.read_mark(1).await.unwrap(), None, "nothing written");
    assert!(
        r.holders()
            .await
            .unwrap()
            .iter()
            .all(|(_, h)| h != "import"),
        "the leases taken are given back"
    );
    r.release(2, "node").await.unwrap();
    let done = r
        .raise_marks(&floors, L, "import", Duration::from_secs(10))
        .await
        .unwrap();
    assert!(done[0].changes() && !done[1].changes());
    assert_eq!(
        r.read_mark(1)
            .await
            .unwrap()
            .map(Mark::from_stored)
            .map(|m| m.ms),
        Some(1_800_000_000_000)
    );
    assert_eq!(r.read_layout(1).await.unwrap().as_deref(), Some(L));
    assert_eq!(
        r.read_mark(2).await.unwrap(),
        Some(1_900_000_000_000),
        "never lowered"
    );
    assert!(r.holders().await.unwrap().is_empty());
}

macro_rules! on {
    ($test:ident: $($backend:ident),*) => {
        mod $test {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $backend() {
                    super::$test(stringify!($backend)).await;
                }
            )*
        }
    };
}

on!(tags_raise_and_never_lower: sqlite, postgres, mysql, redis, zookeeper);
on!(a_refused_tag_rolls_the_others_back: sqlite, postgres, mysql);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_raise_under_a_lease_on_postgres() {
    marks_raise_under_a_lease(&urls::postgres()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_raise_under_a_lease_on_zookeeper() {
    marks_raise_under_a_lease(&urls::zookeeper()).await;
}
