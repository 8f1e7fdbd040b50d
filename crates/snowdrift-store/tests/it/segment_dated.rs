//! Segment tags with a template (`ORD{date:%Y%m%d}{seq:06}`) on SQLite, PostgreSQL and
//! MariaDB: a claim is bound to a period in the row it moves, a new period starts at 1 in
//! the claim that moves the row, a node whose clock is behind never claims in a period that
//! is over, buffered numbers are never served past their period, and a table made before
//! the template columns gets them without changing what its rows claim.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use snowdrift_core::clock::{Clock, ManualClock};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_core::segment::IdRange;
use snowdrift_store::Error;
use snowdrift_store::segment::{
    BufferConfig, DatedBuffer, NewTag, SegmentService, SegmentStore, SqlSegmentStore, TagIds,
};

use crate::common::{drop_table, raw, table, url};

/// 2026-11-22T00:00:00Z.
const NOV22: u64 = 1_795_305_600_000;
const DAY: u64 = 86_400_000;

async fn store(backend: &str, name: &str) -> (SegmentStore, String) {
    let t = table(name);
    let s = SegmentStore::connect(&url(backend), &t)
        .await
        .unwrap_or_else(|e| panic!("{backend} must be running for this test: {e}"));
    (s, t)
}

async fn cleanup(backend: &str, s: SegmentStore, table: &str) {
    if let SegmentStore::Sql(sql) = s {
        sql.close().await;
    }
    drop_table(backend, table).await;
}

fn dated(tag: &str, template: &str, step: i64) -> NewTag {
    NewTag {
        tag: tag.into(),
        step,
        description: None,
        template: Some(CounterTemplate::parse(template).unwrap()),
    }
}

/// The claim that moves the row to a new period restarts its count at 1; a claim for the
/// period the row has left is refused and changes nothing.
async fn a_new_period_starts_at_one_and_an_old_one_is_never_claimed_again(backend: &str) {
    let (s, t) = store(backend, "dated_periods").await;
    let created = s
        .create_tag(&dated("order", "ORD{date:%Y%m%d}{seq:06}", 10))
        .await
        .unwrap();
    assert_eq!((created.max_id, created.period), (1, 0));
    let claim = |period: i64| {
        let s = &s;
        async move { s.claim_dated("order", None, period).await }
    };
    let c = claim(20261122).await.unwrap();
    assert_eq!((c.claim.ids, c.period), (IdRange::new(1, 11), 20261122));
    assert_eq!(
        claim(20261122).await.unwrap().claim.ids,
        IdRange::new(11, 21)
    );
    let moved = claim(20261123).await.unwrap();
    assert_eq!(
        moved.claim.ids,
        IdRange::new(1, 11),
        "the new period starts at 1"
    );
    let err = claim(20261122).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::PeriodAhead {
                period: 20261122,
                stored: 20261123,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("check its clock"), "{err}");
    let row = s.get_tag("order").await.unwrap();
    assert_eq!(
        (row.max_id, row.period),
        (11, 20261123),
        "the refusal changed nothing"
    );
    assert_eq!(
        row.template.as_ref().map(|t| t.as_str()),
        Some("ORD{date:%Y%m%d}{seq:06}")
    );
    // A stated step counts the same way; a period after a gap of several starts at 1 too.
    let c = s.claim_dated("order", Some(3), 20261123).await.unwrap();
    assert_eq!(c.claim.ids, IdRange::new(11, 14));
    let c = s.claim_dated("order", Some(3), 20261201).await.unwrap();
    assert_eq!(c.claim.ids, IdRange::new(1, 4));
    cleanup(backend, s, &t).await;
}

/// A period's numbers stop at the template's `{seq:0N}`: the last segment is cut there and
/// the next claim is refused without changing the row, until the next period.
async fn a_period_is_full_at_the_template_width(backend: &str) {
    let (s, t) = store(backend, "dated_full").await;
    s.create_tag(&dated("t", "T{date:%Y%m%d%H}{seq:02}", 40))
        .await
        .unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(
            s.claim_dated("t", None, 2026112210)
                .await
                .unwrap()
                .claim
                .ids,
        );
    }
    assert_eq!(
        got,
        [
            IdRange::new(1, 41),
            IdRange::new(41, 81),
            IdRange::new(81, 100)
        ]
    );
    let err = s.claim_dated("t", None, 2026112210).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::PeriodFull {
                period: 2026112210,
                max: 99,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(s.get_tag("t").await.unwrap().max_id, 121);
    let next = s.claim_dated("t", None, 2026112211).await.unwrap();
    assert_eq!(next.claim.ids, IdRange::new(1, 41));
    cleanup(backend, s, &t).await;
}

/// A tag with a template is never claimed as a plain number (the claim is rolled back), and
/// a plain tag is never claimed for a period.
async fn plain_and_dated_claims_do_not_mix(backend: &str) {
    let (s, t) = store(backend, "dated_mix").await;
    s.create_tag(&dated("dated", "D{date:%Y}{seq}", 10))
        .await
        .unwrap();
    s.create_tag(&NewTag {
        tag: "plain".into(),
        step: 10,
        description: None,
        template: None,
    })
    .await
    .unwrap();
    let err = s.claim("dated", None).await.unwrap_err();
    assert!(matches!(err, Error::TagTemplated { .. }), "{err}");
    assert_eq!(s.get_tag("dated").await.unwrap().max_id, 1, "rolled back");
    let err = s.claim_dated("plain", None, 2026).await.unwrap_err();
    assert!(err.to_string().contains("has no template"), "{err}");
    assert_eq!(
        s.claim("plain", None).await.unwrap().ids,
        IdRange::new(1, 11)
    );
    let err = s.claim_dated("nope", None, 2026).await.unwrap_err();
    assert!(matches!(err, Error::TagNotFound(_)), "{err}");
    cleanup(backend, s, &t).await;
}

/// A table in Leaf's own layout, with rows, from before the template columns: connecting
/// adds them (several nodes at once), its rows claim exactly as before, and tags with a
/// template can be created in it.
async fn an_old_table_gets_the_columns_and_its_rows_claim_as_before(backend: &str) {
    let t = table("dated_old");
    if let Some(file) = url(backend).strip_prefix("sqlite://") {
        // The raw connection below opens an existing file only.
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file);
    }
    let engine = if backend == "mysql" {
        " ENGINE=InnoDB"
    } else {
        ""
    };
    raw(
        backend,
        format!(
            "CREATE TABLE {t} (biz_tag VARCHAR(128) NOT NULL PRIMARY KEY, max_id BIGINT NOT NULL \
             DEFAULT 1, step INT NOT NULL, description VARCHAR(256) DEFAULT NULL, update_time \
             TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP){engine}"
        ),
    )
    .await;
    raw(
        backend,
        format!(
            "INSERT INTO {t} (biz_tag, max_id, step, description) VALUES \
             ('leaf-default', 1, 2000, 'Test leaf Segment Mode Get Id'), ('order', 1000, 100, NULL)"
        ),
    )
    .await;
    let starts: Vec<_> = (0..6)
        .map(|_| {
            let (url, t) = (url(backend), t.clone());
            tokio::spawn(async move { SqlSegmentStore::connect(&url, &t).await })
        })
        .collect();
    let mut stores = Vec::new();
    for start in starts {
        stores.push(start.await.unwrap().unwrap());
    }
    let s = SegmentStore::from(stores.pop().unwrap());
    let tags = s.list_tags().await.unwrap();
    let shown: Vec<_> = tags
        .iter()
        .map(|t| {
            (
                t.tag.as_str(),
                t.max_id,
                t.step,
                t.template.is_none(),
                t.period,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("leaf-default", 1, 2000, true, 0),
            ("order", 1000, 100, true, 0)
        ]
    );
    assert_eq!(
        s.claim("order", None).await.unwrap().ids,
        IdRange::new(1000, 1100)
    );
    assert_eq!(
        s.claim("leaf-default", Some(5)).await.unwrap().ids,
        IdRange::new(1, 6)
    );
    // A row Leaf's tooling inserts after the migration names only its own columns.
    raw(
        backend,
        format!("INSERT INTO {t} (biz_tag, max_id, step) VALUES ('leaf-later', 1, 10)"),
    )
    .await;
    assert_eq!(
        s.claim("leaf-later", None).await.unwrap().ids,
        IdRange::new(1, 11)
    );
    s.create_tag(&dated("dated", "N{date:%Y%m}{seq:04}", 10))
        .await
        .unwrap();
    assert_eq!(
        s.claim_dated("dated", None, 202611)
            .await
            .unwrap()
            .claim
            .ids,
        IdRange::new(1, 11)
    );
    for other in stores {
        other.close().await;
    }
    cleanup(backend, s, &t).await;
}

/// Nodes racing on one tag as the period turns, some still claiming for the old one: no
/// number is claimed twice in a period, the new period's numbers are exactly 1, 2, 3, ...
/// up to what was claimed, and once any claim for the new period returned, every claim for
/// the old one that starts after it is refused.
async fn nodes_racing_across_the_boundary_never_share_a_number(backend: &str) {
    let (s, t) = store(backend, "dated_race").await;
    s.create_tag(&dated("order", "ORD{date:%Y%m%d}{seq:08}", 7))
        .await
        .unwrap();
    let moved = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tasks: Vec<_> = (0..6u64)
        .map(|node| {
            let (url, t, moved) = (url(backend), t.clone(), moved.clone());
            tokio::spawn(async move {
                let s = SegmentStore::connect(&url, &t).await.unwrap();
                let mut got = Vec::new();
                for k in 0..30u64 {
                    // Node n's clock reaches the 23rd at its claim 10 + 2n: clocks disagree.
                    let period = if k < 10 + 2 * node {
                        20261122
                    } else {
                        20261123
                    };
                    let moved_before = moved.load(std::sync::atomic::Ordering::SeqCst);
                    match s.claim_dated("order", None, period).await {
                        Ok(c) => {
                            assert!(
                                !(moved_before && period == 20261122),
                                "node {node} claimed in the old period after the tag moved"
                            );
                            if period == 20261123 {
                                moved.store(true, std::sync::atomic::Ordering::SeqCst);
                            }
                            got.push((period, c.claim.ids));
                        }
                        Err(Error::PeriodAhead { .. }) => assert_eq!(period, 20261122),
                        Err(e) => panic!("node {node}: {e}"),
                    }
                }
                got
            })
        })
        .collect();
    let mut by_period: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for task in tasks {
        for (period, ids) in task.await.unwrap() {
            by_period.entry(period).or_default().extend(ids.iter());
        }
    }
    for (period, numbers) in &mut by_period {
        numbers.sort_unstable();
        let n = numbers.len() as u64;
        assert_eq!(
            *numbers,
            (1..=n).collect::<Vec<_>>(),
            "period {period}: every number once, from 1"
        );
    }
    assert!(by_period[&20261123].len() >= 6 * 10 * 7);
    cleanup(backend, s, &t).await;
}

fn shared(clock: &ManualClock) -> Arc<dyn Clock> {
    Arc::new(clock.clone())
}

fn config() -> BufferConfig {
    BufferConfig {
        wait: Duration::from_millis(300),
        ..BufferConfig::default()
    }
}

/// Waits until `buffer`'s refill reports an error containing `needle`.
async fn refill_fails_with(buffer: &DatedBuffer, needle: &str) -> String {
    for _ in 0..200 {
        if let Some(e) = buffer.refill_error().filter(|e| e.contains(needle)) {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "no refill error with {needle:?}: {:?}",
        buffer.refill_error()
    );
}

async fn take(buffer: &DatedBuffer, n: u64) -> Result<Vec<String>, Error> {
    buffer.next_rendered(n).await
}

/// Two nodes' buffers on one tag. Node A's clock turns midnight first and moves the tag; B,
/// whose clock is behind, holds numbers of the old day: once its refill learns the tag has
/// moved it serves none of them, and it serves again, after A's numbers, when its own clock
/// turns. Numbers rendered at midnight start at 1; nothing repeats across nodes, periods or
/// a restart.
async fn buffers_move_to_the_new_period_and_drop_the_old(backend: &str) {
    let (s, t) = store(backend, "dated_buffers").await;
    let template = "T{date:%Y%m%d}-{seq}";
    s.create_tag(&dated("order", template, 10)).await.unwrap();
    let parsed = CounterTemplate::parse(template).unwrap();
    let a_clock = ManualClock::new(NOV22 + DAY - 5_000);
    let b_clock = ManualClock::new(NOV22 + DAY - 5_000);
    let start = |clock: &ManualClock| {
        DatedBuffer::start(s.clone(), "order", parsed.clone(), config(), shared(clock))
    };
    let a = start(&a_clock).await.unwrap();
    let b = start(&b_clock).await.unwrap();
    let mut old = take(&a, 3).await.unwrap();
    assert_eq!(old, ["T20261122-1", "T20261122-2", "T20261122-3"]);
    old.extend(take(&b, 3).await.unwrap());
    assert_eq!(old[3..], ["T20261122-11", "T20261122-12", "T20261122-13"]);
    // A's clock turns midnight: its next numbers are the 23rd's, from 1.
    a_clock.set(NOV22 + DAY);
    let mut new = take(&a, 2).await.unwrap();
    assert_eq!(new, ["T20261123-1", "T20261123-2"]);
    // B still reads the 22nd. It serves what it holds until its refill claims for the 22nd
    // and is refused; from then on none of its buffered numbers of the 22nd is served.
    let mut refused = None;
    for _ in 0..40 {
        match take(&b, 4).await {
            Ok(numbers) => {
                assert!(numbers.iter().all(|n| n.starts_with("T20261122-")));
                old.extend(numbers);
            }
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        }
        if b.refill_error().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cause = refill_fails_with(&b, "moved on to period 20261123").await;
    assert!(cause.contains("still reads period 20261122"), "{cause}");
    assert!(b.status().closed, "{:?}", b.status());
    let err = take(&b, 1).await.unwrap_err();
    assert!(
        err.to_string().contains("moved on to period 20261123"),
        "{err} ({refused:?})"
    );
    // B's clock turns: it serves the 23rd, after A's numbers.
    b_clock.set(NOV22 + DAY + 1);
    let later = take(&b, 2).await.unwrap();
    assert!(
        later.iter().all(|n| n.starts_with("T20261123-")),
        "{later:?}"
    );
    new.extend(later);
    // A restart of A: a new buffer claims after everything claimed before it.
    drop(a);
    let a = start(&a_clock).await.unwrap();
    let restarted = take(&a, 2).await.unwrap();
    let seq = |n: &String| n.rsplit('-').next().unwrap().parse::<u64>().unwrap();
    let before = new.iter().map(seq).max().unwrap();
    assert!(
        restarted.iter().all(|n| seq(n) > before),
        "{restarted:?} after {new:?}"
    );
    new.extend(restarted);
    let mut seen = std::collections::HashSet::new();
    for n in old.iter().chain(&new) {
        assert!(seen.insert(n.clone()), "{n} twice");
    }
    drop((a, b));
    cleanup(backend, s, &t).await;
}

/// Through the service, as the server uses it: a tag with a template issues rendered
/// numbers, a plain tag numbers, and `next` refuses the former.
async fn the_service_serves_both_kinds_of_tag(backend: &str) {
    let (s, t) = store(backend, "dated_service").await;
    s.create_tag(&dated("order", "ORD{date:%Y%m%d}{seq:06}", 100))
        .await
        .unwrap();
    s.create_tag(&NewTag {
        tag: "plain".into(),
        step: 100,
        description: None,
        template: None,
    })
    .await
    .unwrap();
    let clock = ManualClock::new(NOV22 + 3_600_000);
    let service = SegmentService::new(s.clone(), config()).with_clock(shared(&clock));
    assert_eq!(service.is_dated("order"), None, "not started yet");
    // Preloading claims the first segment of either kind of tag.
    service.preload(&["order"]).await.unwrap();
    assert_eq!(service.is_dated("order"), Some(true));
    let ids = service.issue("order", 2).await.unwrap();
    assert_eq!(
        ids,
        TagIds::Rendered(vec!["ORD20261122000001".into(), "ORD20261122000002".into()])
    );
    assert_eq!(service.is_dated("order"), Some(true));
    assert_eq!(
        service.issue("plain", 2).await.unwrap(),
        TagIds::Numbers(IdRange::new(1, 3))
    );
    assert_eq!(service.is_dated("plain"), Some(false));
    let err = service.next("order", 1).await.unwrap_err();
    assert!(matches!(err, Error::TagTemplated { .. }), "{err}");
    assert!(service.status_of("order").unwrap().current_left > 0);
    clock.set(NOV22 + DAY);
    // The period is over on this clock: nothing of it counts as servable any more.
    assert_eq!(service.status_of("order").map(|s| s.current_left), Some(0));
    assert_eq!(
        service.issue("order", 1).await.unwrap(),
        TagIds::Rendered(vec!["ORD20261123000001".into()])
    );
    drop(service);
    cleanup(backend, s, &t).await;
}

macro_rules! on_sql {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test("sqlite").await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test("postgres").await;
                }
            )*
        }
        mod mariadb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test("mysql").await;
                }
            )*
        }
    };
}

on_sql!(
    a_new_period_starts_at_one_and_an_old_one_is_never_claimed_again,
    a_period_is_full_at_the_template_width,
    plain_and_dated_claims_do_not_mix,
    an_old_table_gets_the_columns_and_its_rows_claim_as_before,
    nodes_racing_across_the_boundary_never_share_a_number,
    buffers_move_to_the_new_period_and_drop_the_old,
    the_service_serves_both_kinds_of_tag,
);

/// Stores that cannot move a period and `max_id` in one transaction refuse templates.
#[tokio::test]
async fn templates_need_a_sql_store() {
    let (s, t) = store("redis", "dated_redis").await;
    let err = s
        .create_tag(&dated("order", "ORD{date:%Y%m%d}{seq:06}", 10))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("need a SQL store"), "{err}");
    assert!(err.to_string().contains("kind \"counter\""), "{err}");
    assert!(s.claim_dated("order", None, 1).await.is_err());
    drop_table("redis", &t).await;
}

/// A Leaf table the store's user may read and write but not alter (PostgreSQL: only the
/// owner alters a table; the user may create tables, as `CREATE TABLE IF NOT EXISTS` at
/// every start has always needed): the store starts and serves Leaf's tags exactly as
/// before, and a tag with a template is refused with the statement that would allow it.
#[tokio::test]
async fn a_table_the_store_may_not_alter_serves_leafs_tags_and_refuses_templates() {
    let t = table("dated_locked");
    let role = snowdrift_testkit::unique_name("noalter").to_lowercase();
    raw(
        "postgres",
        format!(
            "CREATE TABLE {t} (biz_tag VARCHAR(128) NOT NULL PRIMARY KEY, max_id BIGINT NOT NULL \
             DEFAULT 1, step INT NOT NULL, description VARCHAR(256) DEFAULT NULL, update_time \
             TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        ),
    )
    .await;
    raw(
        "postgres",
        format!("INSERT INTO {t} (biz_tag, max_id, step) VALUES ('order', 1000, 100)"),
    )
    .await;
    raw(
        "postgres",
        format!("CREATE ROLE {role} LOGIN PASSWORD 'pw'"),
    )
    .await;
    raw(
        "postgres",
        format!("GRANT SELECT, INSERT, UPDATE ON {t} TO {role}"),
    )
    .await;
    raw(
        "postgres",
        format!("GRANT CREATE ON SCHEMA public TO {role}"),
    )
    .await;
    let admin = url("postgres");
    let (scheme, rest) = admin.split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let s = SegmentStore::connect(&format!("{scheme}://{role}:pw@{host}"), &t)
        .await
        .unwrap();
    assert_eq!(
        s.claim("order", None).await.unwrap().ids,
        IdRange::new(1000, 1100)
    );
    s.create_tag(&NewTag {
        tag: "plain".into(),
        step: 5,
        description: None,
        template: None,
    })
    .await
    .unwrap();
    let err = s
        .create_tag(&dated("dated", "D{date:%Y}{seq}", 10))
        .await
        .unwrap_err();
    let said = err.to_string();
    assert!(
        said.contains("ALTER TABLE") && said.contains("id_template"),
        "{said}"
    );
    let tags = s.list_tags().await.unwrap();
    assert_eq!(tags.len(), 2);
    assert!(tags.iter().all(|t| t.template.is_none()));
    if let SegmentStore::Sql(sql) = s {
        sql.close().await;
    }
    drop_table("postgres", &t).await;
    raw(
        "postgres",
        format!("REVOKE CREATE ON SCHEMA public FROM {role}"),
    )
    .await;
    raw("postgres", format!("DROP ROLE {role}")).await;
}
