//! Every segment store against the real thing: SQLite, PostgreSQL, MariaDB, Redis and
//! ZooKeeper.
//!
//! The servers are expected at their standard local ports (scripts/test starts them);
//! `SNOWDRIFT_TEST_<BACKEND>` overrides a default. Every test works in a table (key
//! prefix, root znode) of its own, so tests run in parallel.

use std::collections::BTreeMap;

use snowdrift_store::Error;
use snowdrift_store::segment::{NewTag, SegmentStore, SqlSegmentStore, TagUpdate};

use crate::common::{drop_table, raw, set_max_id, table, url};

async fn store(backend: &str, name: &str) -> (SegmentStore, String) {
    let t = table(name);
    let s = SegmentStore::connect(&url(backend), &t)
        .await
        .unwrap_or_else(|e| panic!("{backend} must be running for this test: {e}"));
    (s, t)
}

/// Drops a test's table once it passed (a failing test leaves it for inspection).
async fn cleanup(backend: &str, s: SegmentStore, table: &str) {
    if let SegmentStore::Sql(sql) = s {
        sql.close().await;
    }
    drop_table(backend, table).await;
}

fn new_tag(tag: &str, step: i64) -> NewTag {
    NewTag {
        tag: tag.into(),
        step,
        description: Some("orders".into()),
        template: None,
    }
}

async fn tags_are_created_listed_and_updated(backend: &str) {
    let (s, t) = store(backend, "crud").await;
    let created = s.create_tag(&new_tag("order", 1000)).await.unwrap();
    assert_eq!((created.max_id, created.step), (1, 1000));
    assert!(
        matches!(s.create_tag(&new_tag("order", 5)).await, Err(Error::TagExists(t)) if t == "order")
    );
    s.create_tag(&NewTag {
        tag: "user:id".into(),
        step: 1,
        description: None,
        template: None,
    })
    .await
    .unwrap();
    let names: Vec<String> = s
        .list_tags()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.tag)
        .collect();
    assert_eq!(names, ["order", "user:id"]);
    let u = s
        .update_tag(
            "order",
            &TagUpdate {
                step: Some(50),
                description: Some("new".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!((u.step, u.description.as_deref()), (50, Some("new")));
    let u = s
        .update_tag(
            "order",
            &TagUpdate {
                step: Some(70),
                description: None,
            },
        )
        .await
        .unwrap();
    assert_eq!((u.step, u.description.as_deref()), (70, Some("new")));
    assert!(matches!(
        s.update_tag(
            "nope",
            &TagUpdate {
                step: Some(1),
                description: None
            }
        )
        .await,
        Err(Error::TagNotFound(_))
    ));
    assert!(matches!(
        s.get_tag("nope").await,
        Err(Error::TagNotFound(_))
    ));
    assert!(matches!(
        s.claim("nope", None).await,
        Err(Error::TagNotFound(_))
    ));
    cleanup(backend, s, &t).await;
}

async fn bad_input_is_refused_and_writes_nothing(backend: &str) {
    let (s, t) = store(backend, "bad").await;
    let long = "x".repeat(129);
    for (tag, step) in [
        ("", 10),
        (long.as_str(), 10),
        ("a b", 10),
        ("a/b", 10),
        (".", 10),
        ("..", 10),
        ("ok", 0),
        ("ok", -1),
        ("ok", 1 << 31),
    ] {
        let err = s.create_tag(&new_tag(tag, step)).await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(_)),
            "{tag:?} {step}: {err}"
        );
    }
    let err = s
        .create_tag(&NewTag {
            tag: "ok".into(),
            step: 1,
            description: Some("d".repeat(257)),
            template: None,
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at most 256"), "{err}");
    assert!(
        s.list_tags().await.unwrap().is_empty(),
        "nothing was written"
    );
    s.create_tag(&new_tag("ok", 10)).await.unwrap();
    assert!(matches!(
        s.claim("ok", Some(0)).await,
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        s.update_tag("ok", &TagUpdate::default()).await,
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(s.get_tag("ok").await.unwrap().max_id, 1);
    let err = SegmentStore::connect(&url(backend), "bad-name")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("table name"), "{err}");
    cleanup(backend, s, &t).await;
}

async fn claims_are_consecutive_and_survive_reconnects(backend: &str) {
    let (s, t) = store(backend, "claims").await;
    s.create_tag(&new_tag("order", 1000)).await.unwrap();
    let a = s.claim("order", None).await.unwrap();
    assert_eq!((a.ids.start, a.ids.end, a.step), (1, 1001, 1000));
    let b = s.claim("order", Some(5000)).await.unwrap();
    assert_eq!((b.ids.start, b.ids.end, b.step), (1001, 6001, 5000));
    drop(s);
    // A new process (here: a new connection) continues after what was claimed.
    let s2 = SegmentStore::connect(&url(backend), &t).await.unwrap();
    let c = s2.claim("order", None).await.unwrap();
    assert_eq!((c.ids.start, c.ids.end), (6001, 7001));
    assert_eq!(s2.get_tag("order").await.unwrap().max_id, 7001);
    cleanup(backend, s2, &t).await;
}

async fn concurrent_claims_never_overlap(backend: &str) {
    let (s, t) = store(backend, "race").await;
    s.create_tag(&new_tag("hot", 100)).await.unwrap();
    let other = SegmentStore::connect(&url(backend), &t).await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = if i % 2 == 0 { s.clone() } else { other.clone() };
            tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..15 {
                    got.push(s.claim("hot", None).await.unwrap().ids);
                }
                got
            })
        })
        .collect();
    let mut ranges = BTreeMap::new();
    for t in tasks {
        for r in t.await.unwrap() {
            assert!(
                ranges.insert(r.start, r.end).is_none(),
                "two claims start at {}",
                r.start
            );
        }
    }
    // 120 claims of 100 tile [1, 12001) with no gap and no overlap.
    let mut expect = 1;
    for (start, end) in ranges {
        assert_eq!(start, expect);
        assert_eq!(end, start + 100);
        expect = end;
    }
    assert_eq!(expect, 12_001);
    drop(other);
    cleanup(backend, s, &t).await;
}

async fn overflow_is_an_error_not_a_wrap(backend: &str) {
    let (s, t) = store(backend, "overflow").await;
    s.create_tag(&new_tag("big", 1000)).await.unwrap();
    set_max_id(backend, &t, "big", i64::MAX - 500).await;
    let err = s.claim("big", None).await.unwrap_err();
    assert!(matches!(err, Error::Overflow { step: 1000, .. }), "{err}");
    assert!(err.to_string().contains("i64::MAX"), "{err}");
    assert_eq!(
        s.get_tag("big").await.unwrap().max_id,
        i64::MAX - 500,
        "nothing claimed"
    );
    let last = s.claim("big", Some(500)).await.unwrap();
    assert_eq!(last.ids.end, i64::MAX as u64);
    assert!(matches!(
        s.claim("big", Some(1)).await,
        Err(Error::Overflow { .. })
    ));
    cleanup(backend, s, &t).await;
}

/// A table made by Leaf's own MySQL DDL, with a row from Leaf's README, works unchanged.
#[tokio::test]
async fn existing_leaf_table_works_unchanged_mysql() {
    let t = table("leaf");
    raw("mysql", format!(
        "CREATE TABLE `{t}` (`biz_tag` varchar(128) NOT NULL DEFAULT '', `max_id` bigint(20) NOT NULL DEFAULT '1', \
         `step` int(11) NOT NULL, `description` varchar(256) DEFAULT NULL, \
         `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, \
         PRIMARY KEY (`biz_tag`)) ENGINE=InnoDB"
    )).await;
    raw("mysql", format!(
        "insert into {t}(biz_tag, max_id, step, description) values('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')"
    )).await;
    let s = SqlSegmentStore::connect(&url("mysql"), &t).await.unwrap();
    let c = s.claim("leaf-segment-test", None).await.unwrap();
    assert_eq!((c.ids.start, c.ids.end), (1, 2001));
    cleanup("mysql", s.into(), &t).await;
}

macro_rules! on_every_backend {
    ($($check:ident),* $(,)?) => {
        mod sqlite { $( #[tokio::test] async fn $check() { super::$check("sqlite").await } )* }
        mod postgres { $( #[tokio::test] async fn $check() { super::$check("postgres").await } )* }
        mod mysql { $( #[tokio::test] async fn $check() { super::$check("mysql").await } )* }
        mod redis { $( #[tokio::test] async fn $check() { super::$check("redis").await } )* }
        mod zookeeper { $( #[tokio::test] async fn $check() { super::$check("zookeeper").await } )* }
    };
}

on_every_backend!(
    tags_are_created_listed_and_updated,
    bad_input_is_refused_and_writes_nothing,
    claims_are_consecutive_and_survive_reconnects,
    concurrent_claims_never_overlap,
    overflow_is_an_error_not_a_wrap,
);
