//! `snowdrift_id(generator)` on PostgreSQL and MariaDB, each test's body run on both: the
//! reservation in the servers' table, a column filled by the database (PostgreSQL: a
//! column default; MariaDB: a trigger) and uninstall refusing while it is called,
//! rollbacks and killed sessions, a clock stepped back, a reservation freed by hand, and
//! sessions taking over each other's worker IDs. What only one database has is in
//! `sql_functions_pg.rs` and `sql_functions_mariadb.rs`.

use std::time::Duration;

use snowdrift_store::sql_functions::{self, RESERVATION_PREFIX};
use snowdrift_store::worker::WorkerRegistry;
use sqlx::{AnyConnection, AssertSqlSafe, Connection};

use crate::sql_functions_db::{BOTH, Db, Kind, check_unique_and_rising};

/// `db` with generator `g` installed on `workers` worker IDs, as `tweak` sets it.
async fn installed(
    kind: Kind,
    workers: u64,
    tweak: impl FnOnce(&mut sql_functions::InstallOptions),
) -> Db {
    let db = Db::empty(kind).await;
    let mut options = db.options(workers);
    tweak(&mut options);
    let installed = sql_functions::install(&db.url, &options).await.unwrap();
    assert_eq!(installed.workers.len() as u64, workers);
    assert!(installed.holder.starts_with(RESERVATION_PREFIX));
    db
}

/// What fills a column with the generator's IDs, how 2,000 rows are inserted, and how
/// the column stops calling it.
fn column(db: &Db) -> ([String; 2], &'static str, String) {
    let s = &db.schema;
    match db.kind {
        Kind::Postgres => (
            [
                format!(
                    "CREATE TABLE {s}.items (id bigint PRIMARY KEY DEFAULT {s}.snowdrift_id('g'), n int)"
                ),
                format!("INSERT INTO {s}.items (n) SELECT generate_series(1, 2000)"),
            ],
            "items.id",
            format!("ALTER TABLE {s}.items ALTER COLUMN id DROP DEFAULT"),
        ),
        // MariaDB takes no stored function as a DEFAULT.
        Kind::MariaDb => (
            [
                "CREATE TABLE items (id BIGINT NOT NULL DEFAULT 0 PRIMARY KEY, n INT) ENGINE=InnoDB; \
                 CREATE TRIGGER items_id BEFORE INSERT ON items FOR EACH ROW \
                 SET NEW.id = IF(NEW.id = 0, snowdrift_id('g'), NEW.id)"
                    .into(),
                "INSERT INTO items (n) SELECT seq FROM seq_1_to_2000".into(),
            ],
            "items_id",
            "DROP TRIGGER items_id".into(),
        ),
    }
}

#[tokio::test]
async fn reserves_issues_fills_a_column_and_gives_back() {
    for kind in BOTH {
        reserves_issues_fills_a_column_and_gives_back_on(kind).await;
    }
}

async fn reserves_issues_fills_a_column_and_gives_back_on(kind: Kind) {
    let db = installed(kind, 4, |_| {}).await;
    let schema = (kind == Kind::Postgres).then_some(db.schema.as_str());
    let mut s = db.session().await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let a = db.id(&mut s).await.unwrap();
    let b = db.id(&mut s).await.unwrap();
    assert!(b > a, "{kind:?}");
    let t = db.layout.decode(a as u64).unwrap().time_ms;
    assert!(t + 5_000 > before && t < before + 5_000, "{kind:?}: {t}");
    let w = db.worker_of(a);
    assert!((1020..1024).contains(&w), "{kind:?}: worker {w}");

    // Many at once, in order, under the session's worker ID; a count out of range and an
    // unknown generator are refused, saying so.
    let ids = db.many(&mut s, 10_000).await.unwrap();
    assert_eq!(ids.len(), 10_000);
    assert!(
        ids.windows(2).all(|p| p[1] > p[0]) && ids[0] > b,
        "{kind:?}"
    );
    let err = db.many(&mut s, 20_000_000).await.unwrap_err().to_string();
    assert!(err.contains("must be 0 to"), "{kind:?}: {err}");
    let err = sqlx::query_scalar::<_, i64>(AssertSqlSafe(db.one().replace("'g'", "'nope'")))
        .fetch_one(&mut s)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("installed: g"), "{kind:?}: {err}");

    // A column filled by the database.
    let ([create, insert], caller, stop) = column(&db);
    db.raw(&create).await;
    sqlx::raw_sql(AssertSqlSafe(insert))
        .execute(&mut s)
        .await
        .unwrap();
    let rows: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT id FROM {}.items ORDER BY id",
        db.schema
    )))
    .fetch_all(&mut s)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2000, "{kind:?}");
    assert!(rows[0] > *ids.last().unwrap(), "{kind:?}");

    // The servers see the block as held and cannot claim it.
    let registry = WorkerRegistry::connect(&db.url, &db.table).await.unwrap();
    let listed = registry.list().await.unwrap();
    let reserved: Vec<u64> = listed
        .entries
        .iter()
        .filter(|e| e.holder.starts_with(RESERVATION_PREFIX))
        .map(|e| e.worker_id)
        .collect();
    assert_eq!(reserved, vec![1020, 1021, 1022, 1023], "{kind:?}");
    assert!(
        listed.entries.iter().all(|e| e.never_expires
            && e.problem
                .as_deref()
                .is_some_and(|p| p.contains("snowdrift sql uninstall"))),
        "{kind:?}"
    );
    for n in 1020..1024 {
        registry
            .claim(n, "server", Duration::from_secs(5))
            .await
            .unwrap_err();
    }
    let status = sql_functions::status(&db.url, schema, None).await.unwrap();
    assert_eq!(status.len(), 1);
    assert!(status[0].fenced, "{kind:?}");
    let mine = status[0].workers.iter().find(|x| x.worker_id == w).unwrap();
    assert!(
        mine.reserved && mine.claimed_by.is_some() && mine.last_ms.is_some(),
        "{kind:?}: {mine:?}"
    );

    // Installing again only writes the functions again.
    assert!(
        sql_functions::install(&db.url, &db.options(4))
            .await
            .unwrap()
            .replaced
    );
    let c = db.id(&mut s).await.unwrap();
    assert!(c > *rows.last().unwrap(), "{kind:?}");
    s.close().await.unwrap();

    // Uninstall refuses while the column calls the function, then writes the marks into
    // the rows: a server claiming one waits past the IDs.
    let uninstall = || sql_functions::uninstall(&db.url, "g", schema, Duration::from_secs(5), None);
    let err = uninstall().await.unwrap_err().to_string();
    assert!(
        err.contains("still call") && err.contains(caller),
        "{kind:?}: {err}"
    );
    db.raw(&stop).await;
    let gone = uninstall().await.unwrap();
    assert_eq!(gone.released.len(), 4, "{kind:?}");
    assert!(gone.not_reserved.is_empty());
    let mark = registry.read_mark(w).await.unwrap().unwrap();
    let last = db.layout.decode(c as u64).unwrap().time_ms;
    assert!(
        mark >= last,
        "{kind:?}: mark {mark} below the last ID's time {last}"
    );
    registry
        .claim(w, "server", Duration::from_secs(5))
        .await
        .unwrap();
    let mut s = db.session().await;
    let err = db.id(&mut s).await.unwrap_err().to_string();
    assert!(err.contains("snowdrift_id"), "{kind:?}: {err}");
    db.drop().await;
}

/// IDs handed to the client of a transaction that rolled back, or of a session killed in
/// the middle of one, are never issued again, and every worker ID goes on above them.
#[tokio::test]
async fn rollbacks_and_killed_sessions_never_repeat() {
    for kind in BOTH {
        let db = installed(kind, 3, |_| {}).await;
        let mut issued = Vec::new();
        let mut admin = db.session().await;
        for round in 0..6 {
            let mut s = db.session().await;
            let session = db.session_id(&mut s).await;
            sqlx::raw_sql("BEGIN").execute(&mut s).await.unwrap();
            for _ in 0..200 {
                issued.push(db.id(&mut s).await.unwrap());
            }
            issued.extend(db.many(&mut s, 3000).await.unwrap());
            if round % 2 == 0 {
                sqlx::raw_sql("ROLLBACK").execute(&mut s).await.unwrap();
                // The same session goes on after its rollback.
                issued.push(db.id(&mut s).await.unwrap());
                s.close().await.unwrap();
            } else {
                db.kill(&mut admin, session).await;
                drop(s);
            }
            // Another session may take the same worker ID at once.
            let mut next = db.session().await;
            for _ in 0..100 {
                issued.push(db.id(&mut next).await.unwrap());
            }
            if kind == Kind::Postgres {
                // DISCARD ALL, as a pooler does between clients, loses nothing either.
                // (It drops this client's prepared statements too: the next query is a
                // simple one.)
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
            next.close().await.unwrap();
        }
        check_unique_and_rising(&db, &issued);
        db.drop().await;
    }
}

/// A clock stepped back by less than the bound is waited out; by more, the call refuses
/// and says so; every ID stays above the ones issued before.
#[tokio::test]
async fn clock_stepped_back_waits_or_refuses() {
    for kind in BOTH {
        let db = installed(kind, 1, |o| {
            o.test_clock = true;
            o.backward_wait = Duration::from_millis(50);
        })
        .await;
        let mut s = db.session().await;
        let mut issued = Vec::new();
        for _ in 0..100 {
            issued.push(db.id(&mut s).await.unwrap());
        }
        // 30 ms back: within the 50 ms bound, the call waits and goes on above.
        db.set_offset(&mut s, -30).await;
        let started = std::time::Instant::now();
        issued.push(db.id(&mut s).await.unwrap());
        assert!(
            started.elapsed() >= Duration::from_millis(20),
            "{kind:?}: did not wait"
        );
        // Two seconds back: refused, naming the bound.
        db.set_offset(&mut s, -2000).await;
        let err = db.id(&mut s).await.unwrap_err().to_string();
        assert!(
            err.contains("behind the last ID") && err.contains("a call waits at most 50 ms"),
            "{kind:?}: {err}"
        );
        if kind == Kind::Postgres {
            // Another session borrowing the worker ID, with the same clock, is refused
            // too. (On MariaDB it would be refused for s's lease.) The error reaches t
            // before its server has ended the failed transaction, and until then t holds
            // the worker ID's lock: wait for t to be idle before s goes on.
            let mut t = db.session().await;
            db.set_offset(&mut t, -2000).await;
            let err = db.id(&mut t).await.unwrap_err().to_string();
            assert!(err.contains("behind the last ID"), "{err}");
            sqlx::raw_sql("SELECT 1").execute(&mut t).await.unwrap();
        }
        // Back to the right time: on above everything.
        db.set_offset(&mut s, 0).await;
        for _ in 0..100 {
            issued.push(db.id(&mut s).await.unwrap());
        }
        check_unique_and_rising(&db, &issued);
        db.drop().await;
    }
}

/// A reservation freed by hand (the row's lease set to end) stops the database at once
/// for a new session and within a second for a running one: it never issues under a
/// worker ID a server could take.
#[tokio::test]
async fn a_reservation_freed_by_hand_stops_the_database() {
    for kind in BOTH {
        let db = installed(kind, 1, |_| {}).await;
        let mut s = db.session().await;
        db.id(&mut s).await.unwrap();
        db.raw(&format!(
            "UPDATE {} SET lease_expires_ms = 0 WHERE worker_id = 1023",
            db.table
        ))
        .await;
        if kind == Kind::Postgres {
            // MariaDB's lease keeps the worker ID with s: a new session there is refused
            // for that, not for the reservation.
            let mut fresh = db.session().await;
            let err = db.id(&mut fresh).await.unwrap_err().to_string();
            assert!(err.contains("no longer reserved"), "{kind:?}: {err}");
        }
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let err = db.id(&mut s).await.unwrap_err().to_string();
        assert!(err.contains("no longer reserved"), "{kind:?}: {err}");
        let err = db.many(&mut s, 10).await.unwrap_err().to_string();
        assert!(err.contains("no longer reserved"), "{kind:?}: {err}");
        db.drop().await;
    }
}

/// Six sessions on two worker IDs, all making IDs at once: a call finding both worker IDs
/// taken is refused (and retried), and no ID is issued twice. On PostgreSQL the sessions
/// keep their connections and borrow worker IDs between each other's transactions (the
/// transaction lock keeps a borrowed one to one transaction); on MariaDB a live session
/// keeps its lease, so they reconnect every three calls to let the others in.
#[tokio::test]
async fn sessions_sharing_worker_ids_never_collide() {
    for kind in BOTH {
        let (per_call, calls_per_session) = match kind {
            Kind::Postgres => (50, usize::MAX),
            Kind::MariaDb => (1000, 3),
        };
        let db = installed(kind, 2, |_| {}).await;
        let db = std::sync::Arc::new(db);
        let mut tasks = Vec::new();
        for _ in 0..6 {
            let db = db.clone();
            tasks.push(tokio::spawn(async move {
                let mut ids = Vec::new();
                while ids.len() < 6000 {
                    let mut c: AnyConnection = db.session().await;
                    let mut calls = 0;
                    while calls < calls_per_session && ids.len() < 6000 {
                        calls += 1;
                        match db.many(&mut c, per_call).await {
                            Ok(got) => ids.extend(got),
                            Err(e)
                                if e.to_string()
                                    .contains("worker IDs reserved for this database") =>
                            {
                                tokio::time::sleep(Duration::from_millis(20)).await
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    c.close().await.unwrap();
                }
                ids
            }));
        }
        let mut issued = Vec::new();
        for t in tasks {
            let ids = t.await.unwrap();
            // Each session's IDs rise per worker ID in its own order.
            check_unique_and_rising(&db, &ids);
            issued.extend(ids);
        }
        issued.sort_unstable();
        let dups = issued.windows(2).filter(|p| p[0] == p[1]).count();
        assert_eq!(dups, 0, "{kind:?}: {dups} IDs issued twice");
        std::sync::Arc::into_inner(db).unwrap().drop().await;
    }
}
