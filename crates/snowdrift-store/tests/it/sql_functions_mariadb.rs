//! `snowdrift_id(generator)` inside MariaDB, what only it has: sessions holding leases
//! (more sessions than worker IDs, a session idle past its lease), a restart emptying the
//! MEMORY table, a `kill -9` of a MariaDB of the test's own, callers of another user than
//! the installer, and user variables set by hand. What both databases have is in
//! `sql_functions_both.rs`.

use std::collections::HashSet;
use std::time::Duration;

use snowdrift_core::layout::Layout;
use snowdrift_store::sql_functions::{self, InstallOptions};
use sqlx::{AnyConnection, AssertSqlSafe, Connection};

use crate::common;
use crate::sql_functions_db::{Db, Kind, check_unique_and_rising, with_database};

async fn installed(workers: u64, tweak: impl FnOnce(&mut InstallOptions)) -> Db {
    let db = Db::empty(Kind::MariaDb).await;
    let mut options = db.options(workers);
    tweak(&mut options);
    sql_functions::install(&db.url, &options).await.unwrap();
    db
}

/// An ID, once the session that held the last worker ID has ended: the server ends a
/// session (and frees its user-level locks) a moment after its client quits, so refusals
/// are retried for up to a second, far less than a lease.
async fn id_after_an_end(db: &Db, conn: &mut AnyConnection) -> i64 {
    let started = std::time::Instant::now();
    loop {
        match db.id(conn).await {
            Ok(i) => return i,
            Err(e) if started.elapsed() < Duration::from_secs(1) => {
                assert!(e.to_string().contains("leased by other sessions"), "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("still refused 1 s after the holder ended: {e}"),
        }
    }
}

/// With every worker ID leased by a live session, the next one is refused with an error
/// naming the block; once a session ends, its worker ID is taken at once.
#[tokio::test]
async fn mariadb_more_sessions_than_worker_ids_are_refused() {
    let db = installed(2, |_| {}).await;
    let mut a = db.session().await;
    let mut b = db.session().await;
    let wa = db.worker_of(db.id(&mut a).await.unwrap());
    let wb = db.worker_of(db.id(&mut b).await.unwrap());
    assert_ne!(wa, wb);
    let mut c = db.session().await;
    let err = db.id(&mut c).await.unwrap_err().to_string();
    assert!(
        err.contains(
            "all 2 worker IDs reserved for this database (1022..1023, of the generator's 1024) are leased by other sessions"
        ),
        "{err}"
    );
    // A session that ended frees its worker ID without waiting for its lease.
    a.close().await.unwrap();
    let wc = db.worker_of(id_after_an_end(&db, &mut c).await);
    assert_eq!(wc, wa);
    db.drop().await;
}

/// A session idle past its lease loses the worker ID to another; its next call leases
/// again and never issues under the lost lease while the other holds it.
#[tokio::test]
async fn mariadb_a_session_idle_past_its_lease_leases_again() {
    let db = installed(1, |o| o.lease_ttl = Duration::from_millis(300)).await;
    let mut a = db.session().await;
    let mut b = db.session().await;
    let mut issued = vec![db.id(&mut a).await.unwrap()];
    let err = db.id(&mut b).await.unwrap_err().to_string();
    assert!(err.contains("leased by other sessions"), "{err}");
    tokio::time::sleep(Duration::from_millis(450)).await;
    // a's lease ended: b takes the worker ID and keeps it by using it.
    issued.push(db.id(&mut b).await.unwrap());
    let err = db.id(&mut a).await.unwrap_err().to_string();
    assert!(err.contains("leased by other sessions"), "{err}");
    for _ in 0..50 {
        issued.push(db.id(&mut b).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(450)).await;
    // Now b's lease ended: a leases again and goes on above b's IDs.
    for _ in 0..50 {
        issued.push(db.id(&mut a).await.unwrap());
    }
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// A restart empties the MEMORY table of leases and counters: a worker ID's row comes
/// back with its counter above its mark, and the first call waits for the clock to pass
/// it. The IDs before had run 1.5 s ahead of the clock.
#[tokio::test]
async fn mariadb_after_a_restart_counters_start_above_their_marks() {
    let db = installed(1, |o| {
        o.test_clock = true;
        o.window = Duration::from_millis(500);
    })
    .await;
    let mut s = db.session().await;
    db.set_offset(&mut s, 1500).await;
    let mut issued = db.many(&mut s, 5000).await.unwrap();
    for _ in 0..100 {
        issued.push(db.id(&mut s).await.unwrap());
    }
    let before = *issued.iter().max().unwrap();
    s.close().await.unwrap();
    // What a restart does to a MEMORY table.
    db.raw("DELETE FROM snowdrift_g_lease").await;
    let mut t = db.session().await;
    let started = std::time::Instant::now();
    let after = db.id(&mut t).await.unwrap();
    assert!(after > before, "{after} after the restart, below {before}");
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "did not wait for the mark"
    );
    issued.push(after);
    issued.extend(db.many(&mut t, 1000).await.unwrap());
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// A crash (`kill -9`) of a MariaDB of the test's own while two sessions issue IDs 1 s
/// ahead of the clock, one of them inside a transaction it never commits: the MEMORY
/// table's counters are gone after the restart, and what is left is the Aria table's
/// marks, each written (and synced) before the IDs it covers were returned. With the
/// clock after the restart inside the IDs before, every ID after the restart is above
/// every ID returned before.
#[tokio::test]
async fn mariadb_after_a_crash_counters_start_above_their_marks() {
    sqlx::any::install_default_drivers();
    let mut server = snowdrift_testkit::PrivateMariaDb::new();
    let mut admin = AnyConnection::connect(&server.url("mysql")).await.unwrap();
    sqlx::raw_sql("CREATE DATABASE crash")
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    let db = Db {
        kind: Kind::MariaDb,
        url: server.url("crash"),
        schema: "crash".into(),
        table: "snowdrift_workers_g".into(),
        layout: Layout::preset("twitter").unwrap(),
    };
    let mut options = InstallOptions::new("g", db.layout.clone(), db.table.clone());
    options.workers = 2;
    options.test_clock = true;
    // A short window: the marks move many times before the crash.
    options.window = Duration::from_millis(200);
    sql_functions::install(&db.url, &options).await.unwrap();

    let issued = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for in_transaction in [false, true] {
        let mut s = db.session().await;
        db.set_offset(&mut s, 1000).await;
        let (issued, db) = (issued.clone(), db.clone());
        tasks.push(tokio::spawn(async move {
            if in_transaction {
                sqlx::raw_sql("BEGIN").execute(&mut s).await.unwrap();
            }
            // Until the crash ends the session; only IDs returned count.
            loop {
                let got = if in_transaction {
                    db.id(&mut s).await.map(|i| vec![i])
                } else {
                    db.many(&mut s, 500).await
                };
                match got {
                    Ok(ids) => issued.lock().unwrap().extend(ids),
                    Err(_) => return,
                }
            }
        }));
    }
    // Long enough for each session to move its mark several times.
    tokio::time::sleep(Duration::from_millis(700)).await;
    server.crash();
    for t in tasks {
        t.await.unwrap();
    }
    let before = std::mem::take(&mut *issued.lock().unwrap());
    assert!(
        before.len() > 1000,
        "only {} IDs before the crash",
        before.len()
    );
    let workers: HashSet<u64> = before.iter().map(|i| db.worker_of(*i)).collect();
    assert_eq!(workers.len(), 2, "both worker IDs issued before the crash");
    let max_before = *before.iter().max().unwrap();

    server.start();
    // Each session's clock set, as it starts, to the time of the first ID before the
    // crash (1 s ahead of the clock then), inside the IDs before: a counter that went on
    // from the clock, or from a mark the crash took back, would repeat them. (One clock
    // for both would not do: the first session waits for its mark, and that wait would
    // carry the clock past the second worker ID's IDs.)
    let first_ms = db
        .layout
        .decode(*before.iter().min().unwrap() as u64)
        .unwrap()
        .time_ms as i64;
    let mut after = Vec::new();
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let mut s = db.session().await;
        let offset = first_ms
            - std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64;
        db.set_offset(&mut s, offset).await;
        after.extend(db.many(&mut s, 2000).await.unwrap());
        sessions.push(s);
    }
    for s in &mut sessions {
        for _ in 0..50 {
            after.push(db.id(s).await.unwrap());
        }
    }
    let workers: HashSet<u64> = after.iter().map(|i| db.worker_of(*i)).collect();
    assert_eq!(workers.len(), 2, "both worker IDs issued after the crash");
    for i in &after {
        assert!(
            *i > max_before,
            "worker {}: {i} after the crash, below {max_before} before it",
            db.worker_of(*i)
        );
    }
    let mut all = before;
    all.extend(after);
    check_unique_and_rising(&db, &all);
}

/// The URL `url` with user `user` (password `pw`) instead of its own.
fn as_user(url: &str, user: &str) -> String {
    let rest = &url[url.find('@').unwrap() + 1..];
    format!("mysql://{user}:pw@{rest}")
}

/// Installed by a user with every right on its database but not `PROCESS`, called by one
/// with only `EXECUTE`: the installer's functions cannot see the caller's sessions in
/// `information_schema.PROCESSLIST`, and a live session of another user must not look
/// gone. The caller cannot touch the tables, a second session is refused while the
/// first lives, and takes the worker ID at once when it ends.
#[tokio::test]
async fn mariadb_callers_of_another_user_without_process_keep_their_leases() {
    sqlx::any::install_default_drivers();
    let base = common::url("mysql");
    let name = common::table("sdu");
    let (installer, caller) = (format!("{name}_i"), format!("{name}_c"));
    let mut root = AnyConnection::connect(&base).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "CREATE DATABASE {name}; \
         CREATE USER '{installer}'@'%' IDENTIFIED BY 'pw'; GRANT ALL PRIVILEGES ON {name}.* TO '{installer}'@'%'; \
         CREATE USER '{caller}'@'%' IDENTIFIED BY 'pw'; GRANT EXECUTE ON {name}.* TO '{caller}'@'%'"
    )))
    .execute(&mut root)
    .await
    .unwrap();
    let root_db = with_database(&base, &name);
    let layout = Layout::preset("twitter").unwrap();
    let mut options = InstallOptions::new("g", layout.clone(), "snowdrift_workers_g");
    options.workers = 1;
    sql_functions::install(&as_user(&root_db, &installer), &options)
        .await
        .unwrap();
    let url = as_user(&root_db, &caller);
    let db = Db {
        kind: Kind::MariaDb,
        url: url.clone(),
        schema: name.clone(),
        table: "snowdrift_workers_g".into(),
        layout,
    };
    let mut a = AnyConnection::connect(&url).await.unwrap();
    let mut b = AnyConnection::connect(&url).await.unwrap();
    let first = db.id(&mut a).await.unwrap();
    let err = db.id(&mut b).await.unwrap_err().to_string();
    assert!(err.contains("leased by other sessions"), "{err}");
    // a still holds it, and goes on above.
    let second = db.id(&mut a).await.unwrap();
    assert!(second > first);
    let err = sqlx::raw_sql("UPDATE snowdrift_g_lease SET holder = NULL")
        .execute(&mut b)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("denied"), "{err}");
    // Once a has ended (the server ends a session a moment after its client quits), b
    // takes the worker ID without waiting for a's lease.
    a.close().await.unwrap();
    let third = id_after_an_end(&db, &mut b).await;
    assert!(third > second);
    b.close().await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "DROP DATABASE {name}; DROP USER '{installer}'@'%'; DROP USER '{caller}'@'%'"
    )))
    .execute(&mut root)
    .await
    .unwrap();
}

/// A session that sets the functions' user variables by hand (`@snowdrift_g_mark`,
/// `_next`, `_checked`: they were its cache) can neither issue past the durable mark nor
/// skip the check of the reservation: both live in the lease row, which only the
/// functions write.
#[tokio::test]
async fn mariadb_user_variables_set_by_hand_change_nothing() {
    let db = installed(1, |o| {
        o.test_clock = true;
        o.window = Duration::from_millis(200);
    })
    .await;
    let mut s = db.session().await;
    let mut issued = vec![db.id(&mut s).await.unwrap()];
    let far = 4_000_000_000_000_i64;
    let forge = format!(
        "SET @snowdrift_g_mark = {far}, @snowdrift_g_next = {far}, @snowdrift_g_checked = {far}"
    );
    sqlx::raw_sql(AssertSqlSafe(forge.clone()))
        .execute(&mut s)
        .await
        .unwrap();
    // 2 s ahead of the clock, past every mark written so far.
    db.set_offset(&mut s, 2000).await;
    for _ in 0..200 {
        issued.push(db.id(&mut s).await.unwrap());
    }
    issued.extend(db.many(&mut s, 3000).await.unwrap());
    let mut root = db.session().await;
    let mark: i64 = sqlx::query_scalar("SELECT mark_ms FROM snowdrift_g_mark")
        .fetch_one(&mut root)
        .await
        .unwrap();
    let last = db
        .layout
        .decode(*issued.iter().max().unwrap() as u64)
        .unwrap()
        .time_ms as i64;
    assert!(
        mark >= last,
        "the durable mark {mark} is below an ID issued at {last}"
    );
    check_unique_and_rising(&db, &issued);

    // The reservation freed by hand: within the recheck (1 s), calls refuse.
    sqlx::raw_sql(AssertSqlSafe(format!(
        "UPDATE {} SET holder = NULL, lease_expires_ms = 0",
        db.table
    )))
    .execute(&mut root)
    .await
    .unwrap();
    sqlx::raw_sql(AssertSqlSafe(forge))
        .execute(&mut s)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let err = db.id(&mut s).await.unwrap_err().to_string();
    assert!(err.contains("no longer reserved"), "{err}");
    let err = db.many(&mut s, 10).await.unwrap_err().to_string();
    assert!(err.contains("no longer reserved"), "{err}");
    db.drop().await;
}
