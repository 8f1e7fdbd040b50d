//! `snowdrift_id(generator)` inside PostgreSQL: the reservation in the servers' table,
//! rollbacks and killed sessions, more sessions than worker IDs, a borrowed worker ID, a
//! clock stepped back, and giving the worker IDs back to the servers.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use snowdrift_core::layout::{Layout, Role};
use snowdrift_store::sql_functions::{self, InstallOptions, RESERVATION_PREFIX};
use snowdrift_store::worker::WorkerRegistry;
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection};

use crate::common;

/// A schema and a registry table of the test's own, with the functions of generator `g`.
struct Db {
    url: String,
    schema: String,
    table: String,
    layout: Layout,
}

impl Db {
    async fn new(workers: u64, tweak: impl FnOnce(&mut InstallOptions)) -> Self {
        let url = common::url("postgres");
        let schema = common::table("sdf");
        let table = common::table("sdw");
        let layout = Layout::preset("twitter").unwrap();
        let db = Self {
            url,
            schema,
            table,
            layout,
        };
        db.raw(format!("CREATE SCHEMA {}", db.schema)).await;
        let mut options = InstallOptions::new("g", db.layout.clone(), db.table.clone());
        options.schema = Some(db.schema.clone());
        options.workers = workers;
        tweak(&mut options);
        let installed = sql_functions::install(&db.url, &options).await.unwrap();
        assert_eq!(installed.workers.len() as u64, workers);
        assert!(installed.holder.starts_with(RESERVATION_PREFIX));
        db
    }

    async fn raw(&self, sql: String) {
        let mut c = PgConnection::connect(&self.url).await.unwrap();
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
    }

    async fn session(&self) -> PgConnection {
        PgConnection::connect(&self.url).await.unwrap()
    }

    fn one(&self) -> String {
        format!("SELECT {}.snowdrift_id('g')", self.schema)
    }

    fn worker_of(&self, id: i64) -> u64 {
        let d = self.layout.decode(id as u64).unwrap();
        self.layout
            .fields()
            .iter()
            .zip(&d.values)
            .filter(|(f, _)| f.role() == Role::Node)
            .fold(0, |w, (f, v)| (w << f.bits()) | v)
    }

    async fn drop(self) {
        self.raw(format!(
            "DROP SCHEMA {} CASCADE; DROP TABLE IF EXISTS {}",
            self.schema, self.table
        ))
        .await;
    }
}

async fn id(conn: &mut PgConnection, sql: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(AssertSqlSafe(sql.to_string()))
        .fetch_one(conn)
        .await
}

/// The ids are distinct and, per worker ID, rise in the order they were issued.
fn check_unique_and_rising(db: &Db, issued: &[i64]) {
    let mut seen = HashSet::new();
    let mut last: HashMap<u64, i64> = HashMap::new();
    for id in issued {
        assert!(seen.insert(*id), "ID {id} issued twice");
        let w = db.worker_of(*id);
        if let Some(before) = last.insert(w, *id) {
            assert!(*id > before, "worker {w}: {id} issued after {before}");
        }
    }
}

#[tokio::test]
async fn postgres_reserves_issues_and_gives_back() {
    let db = Db::new(4, |_| {}).await;
    let mut s = db.session().await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let a = id(&mut s, &db.one()).await.unwrap();
    let b = id(&mut s, &db.one()).await.unwrap();
    assert!(b > a);
    let d = db.layout.decode(a as u64).unwrap();
    assert!(
        d.time_ms + 5_000 > before && d.time_ms < before + 5_000,
        "{d:?}"
    );
    let w = db.worker_of(a);
    assert!(
        (1020..1024).contains(&w),
        "worker {w} is not in the reserved block"
    );

    // Many at once, in order, under the session's worker ID.
    let many: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT * FROM {}.snowdrift_ids('g', 50000)",
        db.schema
    )))
    .fetch_all(&mut s)
    .await
    .unwrap();
    assert_eq!(many.len(), 50_000);
    assert!(many.windows(2).all(|p| p[1] > p[0]));
    assert!(many[0] > b);
    let unknown = id(
        &mut s,
        &format!("SELECT {}.snowdrift_id('nope')", db.schema),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        unknown.contains("no generator of that name") && unknown.contains("installed: g"),
        "{unknown}"
    );

    // The servers see the block as held and claim around it.
    let registry = WorkerRegistry::connect(&db.url, &db.table).await.unwrap();
    let listed = registry.list().await.unwrap();
    let reserved: Vec<u64> = listed
        .entries
        .iter()
        .filter(|e| e.holder.starts_with(RESERVATION_PREFIX))
        .map(|e| e.worker_id)
        .collect();
    assert_eq!(reserved, vec![1020, 1021, 1022, 1023]);
    assert!(listed.entries.iter().all(|e| {
        e.never_expires
            && e.problem
                .as_deref()
                .is_some_and(|p| p.contains("snowdrift sql uninstall"))
    }));
    for n in 0..4 {
        registry
            .claim(1020 + n, "server", Duration::from_secs(5))
            .await
            .unwrap_err();
    }
    let status = sql_functions::status(&db.url, Some(&db.schema), None)
        .await
        .unwrap();
    assert_eq!(status.len(), 1);
    let st = &status[0];
    assert!(st.fenced);
    let mine = st.workers.iter().find(|x| x.worker_id == w).unwrap();
    assert!(mine.reserved && mine.claimed_by.is_some() && mine.last_ms.is_some());

    // Installing again only writes the functions again.
    let mut again = InstallOptions::new("g", db.layout.clone(), db.table.clone());
    again.schema = Some(db.schema.clone());
    again.workers = 4;
    assert!(
        sql_functions::install(&db.url, &again)
            .await
            .unwrap()
            .replaced
    );
    let c = id(&mut s, &db.one()).await.unwrap();
    assert!(c > *many.last().unwrap());
    s.close().await.unwrap();

    // Uninstall writes the marks into the rows: a server claiming one waits past the IDs.
    let gone =
        sql_functions::uninstall(&db.url, "g", Some(&db.schema), Duration::from_secs(5), None)
            .await
            .unwrap();
    assert_eq!(gone.released.len(), 4);
    assert!(gone.not_reserved.is_empty());
    let mark = registry.read_mark(w).await.unwrap().unwrap();
    let last = db.layout.decode(c as u64).unwrap().time_ms;
    assert!(mark >= last, "mark {mark} below the last ID's time {last}");
    registry
        .claim(w, "server", Duration::from_secs(5))
        .await
        .unwrap();
    let mut s = db.session().await;
    let err = id(&mut s, &db.one()).await.unwrap_err().to_string();
    assert!(err.contains("snowdrift_id"), "{err}");
    db.drop().await;
}

/// IDs handed to the client of a transaction that rolled back, or of a session killed in
/// the middle of one, are never issued again, and every worker ID goes on above them.
#[tokio::test]
async fn postgres_rollbacks_and_killed_sessions_never_repeat() {
    let db = Db::new(3, |_| {}).await;
    let mut issued = Vec::new();
    let mut admin = db.session().await;
    for round in 0..6 {
        let mut s = db.session().await;
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut s)
            .await
            .unwrap();
        let mut tx = s.begin().await.unwrap();
        for _ in 0..200 {
            issued.push(id(&mut tx, &db.one()).await.unwrap());
        }
        let many: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT * FROM {}.snowdrift_ids('g', 3000)",
            db.schema
        )))
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        issued.extend(many);
        if round % 2 == 0 {
            tx.rollback().await.unwrap();
            // The same session goes on after its rollback.
            issued.push(id(&mut s, &db.one()).await.unwrap());
            s.close().await.unwrap();
        } else {
            // Killed in the middle of its transaction.
            let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
                .bind(pid)
                .fetch_one(&mut admin)
                .await
                .unwrap();
            assert!(killed);
            drop(tx);
        }
        // Another session may take the same worker ID at once.
        let mut next = db.session().await;
        for _ in 0..100 {
            issued.push(id(&mut next, &db.one()).await.unwrap());
        }
        // DISCARD ALL, as a pooler does between clients, loses nothing either.
        // (It drops this client's prepared statements too: the next query is a simple one.)
        sqlx::raw_sql("DISCARD ALL")
            .execute(&mut next)
            .await
            .unwrap();
        let row = sqlx::raw_sql(AssertSqlSafe(db.one()))
            .fetch_one(&mut next)
            .await
            .unwrap();
        issued.push(sqlx::Row::get::<i64, _>(&row, 0));
    }
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// With every worker ID in use by open transactions, the next session is refused with an
/// error naming the block; a session whose worker ID is being borrowed takes another.
#[tokio::test]
async fn postgres_more_transactions_than_worker_ids_are_refused() {
    let db = Db::new(2, |_| {}).await;
    let mut sessions = [db.session().await, db.session().await];
    let mut c = db.session().await;
    let wa = db.worker_of(id(&mut sessions[0], &db.one()).await.unwrap());
    let wb = db.worker_of(id(&mut sessions[1], &db.one()).await.unwrap());
    assert_ne!(wa, wb, "two sessions claimed one worker ID");

    // c finds both claimed, borrows one while its claimer is between transactions, and
    // keeps it for its transaction.
    let mut tc = c.begin().await.unwrap();
    let borrowed = db.worker_of(id(&mut tc, &db.one()).await.unwrap());
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
    let moved = db.worker_of(id(&mut towner, &db.one()).await.unwrap());
    assert_eq!(moved, other);

    // Both worker IDs are in transactions now: a fourth session is refused.
    let mut d = db.session().await;
    let err = id(&mut d, &db.one()).await.unwrap_err().to_string();
    assert!(
        err.contains(
            "all 2 worker IDs reserved for this database (1022..1023, of the generator's 1024)"
        ),
        "{err}"
    );
    // The holder of the other worker ID is between transactions too: it cannot issue
    // either until one ends.
    let err = id(third, &db.one()).await.unwrap_err().to_string();
    assert!(err.contains("in use by other transactions"), "{err}");
    tc.commit().await.unwrap();
    let after = db.worker_of(id(&mut d, &db.one()).await.unwrap());
    assert_eq!(after, borrowed);
    towner.commit().await.unwrap();
    db.drop().await;
}

/// A clock stepped back by less than the bound is waited out; by more, the call refuses
/// and says so; every ID stays above the ones issued before.
#[tokio::test]
async fn postgres_clock_stepped_back_waits_or_refuses() {
    let db = Db::new(1, |o| {
        o.test_clock = true;
        o.backward_wait = Duration::from_millis(50);
    })
    .await;
    let mut s = db.session().await;
    let mut issued = Vec::new();
    for _ in 0..100 {
        issued.push(id(&mut s, &db.one()).await.unwrap());
    }
    // 30 ms back: within the 50 ms bound, the call waits and goes on above.
    sqlx::raw_sql("SET snowdrift.test_clock_offset_ms = '-30'")
        .execute(&mut s)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    issued.push(id(&mut s, &db.one()).await.unwrap());
    assert!(
        started.elapsed() >= Duration::from_millis(20),
        "did not wait"
    );
    // Two seconds back: refused, naming the gap and the bound.
    sqlx::raw_sql("SET snowdrift.test_clock_offset_ms = '-2000'")
        .execute(&mut s)
        .await
        .unwrap();
    let err = id(&mut s, &db.one()).await.unwrap_err().to_string();
    assert!(
        err.contains("the database clock is") && err.contains("a call waits at most 50 ms"),
        "{err}"
    );
    // Another session on the same worker ID with the same clock is refused too.
    let mut t = db.session().await;
    sqlx::raw_sql("SET snowdrift.test_clock_offset_ms = '-2000'")
        .execute(&mut t)
        .await
        .unwrap();
    let err = id(&mut t, &db.one()).await.unwrap_err().to_string();
    assert!(err.contains("behind the last ID"), "{err}");
    // The error reaches t before its server has ended the failed transaction (it does at
    // the Sync that follows), and until then t holds the worker ID's use lock: a call of
    // s in between is refused (SDWRK), as it should be. Wait for t to be idle first.
    sqlx::raw_sql("SELECT 1").execute(&mut t).await.unwrap();
    // Back to the right time: on above everything.
    sqlx::raw_sql("RESET snowdrift.test_clock_offset_ms")
        .execute(&mut s)
        .await
        .unwrap();
    for _ in 0..100 {
        issued.push(id(&mut s, &db.one()).await.unwrap());
    }
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// A reservation freed by hand (the row's lease set to end) stops the database at once
/// for a new session and within a second for a running one: it never issues under a
/// worker ID a server could take.
#[tokio::test]
async fn postgres_a_reservation_freed_by_hand_stops_the_database() {
    let db = Db::new(1, |_| {}).await;
    let mut s = db.session().await;
    id(&mut s, &db.one()).await.unwrap();
    db.raw(format!(
        "UPDATE {} SET lease_expires_ms = 0 WHERE worker_id = 1023",
        db.table
    ))
    .await;
    let mut fresh = db.session().await;
    let err = id(&mut fresh, &db.one()).await.unwrap_err().to_string();
    assert!(
        err.contains("worker ID 1023 is no longer reserved for this database"),
        "{err}"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let err = id(&mut s, &db.one()).await.unwrap_err().to_string();
    assert!(err.contains("no longer reserved"), "{err}");
    db.drop().await;
}

async fn set_offset(conn: &mut PgConnection, ms: i64) {
    sqlx::raw_sql(AssertSqlSafe(format!(
        "SET snowdrift.test_clock_offset_ms = '{ms}'"
    )))
    .execute(conn)
    .await
    .unwrap();
}

async fn many(conn: &mut PgConnection, n: u32) -> Vec<i64> {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT * FROM public.snowdrift_ids('g', {n})"
    )))
    .fetch_all(conn)
    .await
    .unwrap()
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
        url: pg.url(),
        schema: "public".into(),
        table: "snowdrift_workers_g".into(),
        layout,
    };
    let mut issued = Vec::new();
    let mut a = db.session().await;
    sqlx::raw_sql("BEGIN").execute(&mut a).await.unwrap();
    issued.extend(many(&mut a, 2000).await);
    // The clock 5 s ahead: its next ID writes a mark 8 s ahead...
    set_offset(&mut a, 5000).await;
    issued.extend(many(&mut a, 1).await);
    // ... which another session's commit puts on disk, with everything before it.
    let mut b = db.session().await;
    issued.push(id(&mut b, &db.one()).await.unwrap());
    // More IDs, about 100 ms of ticks, whose counter moves the crash loses.
    issued.extend(many(&mut a, 400_000).await);
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
        set_offset(&mut c, offset).await;
        sqlx::raw_sql("BEGIN").execute(&mut c).await.unwrap();
        issued.extend(many(&mut c, 5000).await);
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

/// Six sessions on two worker IDs, all making IDs at once: a call finding both worker IDs
/// in use is refused (and retried), one borrowing a worker ID issues under it alone, and
/// no ID is issued twice.
#[tokio::test]
async fn postgres_sessions_sharing_worker_ids_never_collide() {
    let db = Db::new(2, |_| {}).await;
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (url, sql) = (
            db.url.clone(),
            format!("SELECT * FROM {}.snowdrift_ids('g', 50)", db.schema),
        );
        tasks.push(tokio::spawn(async move {
            let mut c = PgConnection::connect(&url).await.unwrap();
            let (mut ids, mut refused) = (Vec::new(), 0);
            while ids.len() < 10_000 {
                match sqlx::query_scalar::<_, i64>(AssertSqlSafe(sql.clone()))
                    .fetch_all(&mut c)
                    .await
                {
                    Ok(got) => ids.extend(got),
                    Err(e) if e.to_string().contains("in use by other transactions") => {
                        refused += 1
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            (ids, refused)
        }));
    }
    let mut issued = Vec::new();
    for t in tasks {
        let (ids, _) = t.await.unwrap();
        // Each session's IDs rise per worker ID in its own order.
        check_unique_and_rising(&db, &ids);
        issued.extend(ids);
    }
    issued.sort_unstable();
    let dups = issued.windows(2).filter(|p| p[0] == p[1]).count();
    assert_eq!(dups, 0, "{dups} IDs issued twice");
    db.drop().await;
}
