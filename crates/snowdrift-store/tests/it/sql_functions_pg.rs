//! `snowdrift_id(generator)` inside PostgreSQL, what only it has: more transactions than
//! worker IDs (a worker ID borrowed between its claimer's transactions), and a crash of a
//! PostgreSQL of the test's own. What both databases have is in `sql_functions_both.rs`.

use std::collections::HashMap;

use snowdrift_core::layout::Layout;
use snowdrift_store::sql_functions::{self, InstallOptions};
use sqlx::{AssertSqlSafe, Connection};

use crate::sql_functions_db::{Db, Kind, check_unique_and_rising};

async fn installed(workers: u64) -> Db {
    let db = Db::empty(Kind::Postgres).await;
    sql_functions::install(&db.url, &db.options(workers))
        .await
        .unwrap();
    db
}

/// With every worker ID in use by open transactions, the next session is refused with an
/// error naming the block; a session whose worker ID is being borrowed takes another.
#[tokio::test]
async fn postgres_more_transactions_than_worker_ids_are_refused() {
    let db = installed(2).await;
    let mut sessions = [db.session().await, db.session().await];
    let mut c = db.session().await;
    let wa = db.worker_of(db.id(&mut sessions[0]).await.unwrap());
    let wb = db.worker_of(db.id(&mut sessions[1]).await.unwrap());
    assert_ne!(wa, wb, "two sessions claimed one worker ID");

    // c finds both claimed, borrows one while its claimer is between transactions, and
    // keeps it for its transaction.
    let mut tc = c.begin().await.unwrap();
    let borrowed = db.worker_of(db.id(&mut tc).await.unwrap());
    // The claimer of the borrowed worker ID goes to the other one, which it borrows in
    // turn; it never issues under the borrowed one while c's transaction holds it.
    let (owner, other) = if borrowed == wa { (0, wb) } else { (1, wa) };
    let (first, second) = sessions.split_at_mut(1);
    let (owner, third) = if owner == 0 {
        (&mut first[0], &mut second[0])
    } else {
        (&mut second[0], &mut first[0])
    };
    let mut towner = owner.begin().await.unwrap();
    let moved = db.worker_of(db.id(&mut towner).await.unwrap());
    assert_eq!(moved, other);

    // Both worker IDs are in transactions now: a fourth session is refused.
    let mut d = db.session().await;
    let err = db.id(&mut d).await.unwrap_err().to_string();
    assert!(
        err.contains(
            "all 2 worker IDs reserved for this database (1022..1023, of the generator's 1024)"
        ),
        "{err}"
    );
    // The holder of the other worker ID is between transactions too: it cannot issue
    // either until one ends.
    let err = db.id(third).await.unwrap_err().to_string();
    assert!(err.contains("in use by other transactions"), "{err}");
    tc.commit().await.unwrap();
    let after = db.worker_of(db.id(&mut d).await.unwrap());
    assert_eq!(after, borrowed);
    towner.commit().await.unwrap();
    db.drop().await;
}

/// A crash loses the counters' last moves; a transaction had handed out IDs 5 s ahead of
/// the clock (its mark written and made durable by another session's commit) and never
/// committed. After the restart the clock reads inside the IDs the crash lost: the first
/// call moves the counters above their marks and waits for the clock, so nothing is
/// issued twice and no worker ID goes below an ID it issued.
#[tokio::test]
async fn postgres_after_a_crash_counters_start_above_their_marks() {
    let pg = snowdrift_testkit::PrivatePostgres::new();
    let layout = Layout::preset("twitter").unwrap();
    let mut options = InstallOptions::new("g", layout.clone(), "snowdrift_workers_g");
    options.workers = 2;
    options.test_clock = true;
    sql_functions::install(&pg.url(), &options).await.unwrap();
    let db = Db {
        kind: Kind::Postgres,
        url: pg.url(),
        schema: "public".into(),
        table: "snowdrift_workers_g".into(),
        layout,
    };
    let mut issued = Vec::new();
    let mut a = db.session().await;
    sqlx::raw_sql("BEGIN").execute(&mut a).await.unwrap();
    issued.extend(db.many(&mut a, 2000).await.unwrap());
    // The clock 5 s ahead: its next ID writes a mark 8 s ahead...
    db.set_offset(&mut a, 5000).await;
    issued.extend(db.many(&mut a, 1).await.unwrap());
    // ... which another session's commit puts on disk, with everything before it.
    let mut b = db.session().await;
    issued.push(db.id(&mut b).await.unwrap());
    // More IDs, about 100 ms of ticks, whose counter moves the crash loses.
    issued.extend(db.many(&mut a, 400_000).await.unwrap());
    // Crashed with A's transaction open (closing it first would write its abort, which
    // the WAL writer puts on disk with everything before it).
    pg.crash();
    drop((a, b));
    pg.start();

    // What the WAL kept of the counters: the clock is set just above the tick of the one
    // that lost most, inside the IDs it lost, so without the marks the counter would go
    // on from there and repeat them.
    let mut admin = db.session().await;
    let mut target = 0;
    let mut lost_most = 0;
    for w in [1022u64, 1023] {
        let kept: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT pg_sequence_last_value('public.snowdrift_g_w{w}')"
        )))
        .fetch_one(&mut admin)
        .await
        .unwrap();
        let issued_max = issued
            .iter()
            .filter(|i| db.worker_of(**i) == w)
            .map(|i| ((*i as u64 >> 22) << 12) | (*i as u64 & 4095))
            .max()
            .unwrap();
        let lost = issued_max as i64 - kept;
        if lost >= lost_most {
            lost_most = lost;
            target = (kept >> 12) + 1_288_834_974_657 + 2;
        }
    }
    // One offset for both sessions: the database has one clock.
    let offset = target
        - std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let mut c = db.session().await;
        db.set_offset(&mut c, offset).await;
        sqlx::raw_sql("BEGIN").execute(&mut c).await.unwrap();
        issued.extend(db.many(&mut c, 5000).await.unwrap());
        sessions.push(c);
    }
    let before: HashMap<u64, i64> =
        issued[..issued.len() - 10_000]
            .iter()
            .fold(HashMap::new(), |mut m, id| {
                let w = db.worker_of(*id);
                let e = m.entry(w).or_insert(*id);
                *e = (*e).max(*id);
                m
            });
    for id in &issued[issued.len() - 10_000..] {
        let w = db.worker_of(*id);
        if let Some(max) = before.get(&w) {
            assert!(
                id > max,
                "worker {w}: {id} after the crash, below {max} before it"
            );
        }
    }
    check_unique_and_rising(&db, &issued);
}

/// `snowdrift_id` runs without `SET search_path` (its cost): a caller whose search_path
/// puts a schema of its own before pg_catalog, with a `nextval` that always answers 42 and
/// a `pg_try_advisory_xact_lock` that always says yes, still gets IDs that never repeat,
/// and a second session in an open transaction still cannot issue under the first one's
/// worker ID. (With the names unqualified, the IDs repeat within a millisecond.)
#[tokio::test]
async fn postgres_a_search_path_of_the_caller_changes_nothing() {
    let db = installed(1).await;
    let evil = crate::common::table("evil");
    db.raw(&format!(
        "CREATE SCHEMA {evil};
         CREATE FUNCTION {evil}.nextval(regclass) RETURNS bigint LANGUAGE sql AS 'SELECT 42::bigint';
         CREATE FUNCTION {evil}.pg_try_advisory_xact_lock(integer, integer) RETURNS boolean
           LANGUAGE sql AS 'SELECT true';
         CREATE FUNCTION {evil}.lie(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT false';
         CREATE OPERATOR {evil}.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = {evil}.lie)"
    ))
    .await;
    let path = format!("SET search_path = {evil}, pg_catalog, public");
    let mut a = db.session().await;
    let mut b = db.session().await;
    for s in [&mut a, &mut b] {
        sqlx::raw_sql(AssertSqlSafe(path.clone()))
            .execute(&mut *s)
            .await
            .unwrap();
    }
    // b claims the only worker ID, then a borrows it for its transaction.
    let mut issued = vec![db.id(&mut b).await.unwrap()];
    sqlx::raw_sql("BEGIN").execute(&mut a).await.unwrap();
    for _ in 0..2000 {
        issued.push(db.id(&mut a).await.unwrap());
    }
    check_unique_and_rising(&db, &issued);
    // b's next call tries the worker ID it claimed: a's transaction holds it, and b is
    // refused, whatever its own lock function says.
    let err = db.id(&mut b).await.unwrap_err().to_string();
    assert!(err.contains("in use by other transactions"), "{err}");
    sqlx::raw_sql("COMMIT").execute(&mut a).await.unwrap();
    db.raw(&format!("DROP SCHEMA {evil} CASCADE")).await;
    db.drop().await;
}
