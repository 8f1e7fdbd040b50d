//! `snowdrift_id(generator)` inside MariaDB: the reservation in the servers' table, a
//! trigger filling a column, rollbacks and killed sessions (`KILL`), more sessions than
//! worker IDs, a session idle past its lease, a clock stepped back, a restart (the MEMORY
//! table emptied), sessions taking over each other's worker IDs, and giving the worker IDs
//! back to the servers.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use snowdrift_core::layout::{Layout, Role};
use snowdrift_store::sql_functions::{self, InstallOptions, RESERVATION_PREFIX};
use snowdrift_store::worker::WorkerRegistry;
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Connection};

use crate::common;

/// A database of the test's own (the functions `snowdrift_id` and `snowdrift_ids` are one
/// per database), with the functions of generator `g`.
struct Db {
    url: String,
    name: String,
    table: String,
    layout: Layout,
}

impl Db {
    async fn new(workers: u64, tweak: impl FnOnce(&mut InstallOptions)) -> Self {
        let base = common::url("mysql");
        let name = common::table("sdm");
        let mut admin = MySqlConnection::connect(&base).await.unwrap();
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.unwrap();
        let url = match base.rfind('/') {
            Some(i) if base[..i].contains("://") && base[..i].len() > "mysql://".len() => {
                format!("{}/{name}", &base[..i])
            }
            _ => format!("{base}/{name}"),
        };
        let db = Self {
            url,
            name,
            table: "snowdrift_workers_g".into(),
            layout: Layout::preset("twitter").unwrap(),
        };
        let mut options = InstallOptions::new("g", db.layout.clone(), db.table.clone());
        options.workers = workers;
        tweak(&mut options);
        let installed = sql_functions::install(&db.url, &options).await.unwrap();
        assert_eq!(installed.workers.len() as u64, workers);
        assert!(installed.holder.starts_with(RESERVATION_PREFIX));
        db
    }

    async fn session(&self) -> MySqlConnection {
        MySqlConnection::connect(&self.url).await.unwrap()
    }

    async fn raw(&self, sql: &str) {
        let mut c = self.session().await;
        sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
            .execute(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
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
        self.raw(&format!("DROP DATABASE {}", self.name)).await;
    }
}

async fn id(conn: &mut MySqlConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT snowdrift_id('g')")
        .fetch_one(conn)
        .await
}

async fn many(conn: &mut MySqlConnection, n: u32) -> Result<Vec<i64>, sqlx::Error> {
    let json: String = sqlx::query_scalar(AssertSqlSafe(format!("SELECT snowdrift_ids('g', {n})")))
        .fetch_one(conn)
        .await?;
    Ok(serde_json::from_str(&json).unwrap())
}

/// An ID, once the session that held the last worker ID has ended: the server ends a
/// session (and frees its user-level locks) a moment after its client quits, so refusals
/// are retried for up to a second, far less than a lease.
async fn id_after_an_end(conn: &mut MySqlConnection) -> i64 {
    let started = std::time::Instant::now();
    loop {
        match id(conn).await {
            Ok(i) => return i,
            Err(e) if started.elapsed() < Duration::from_secs(1) => {
                assert!(e.to_string().contains("leased by other sessions"), "{e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("still refused 1 s after the holder ended: {e}"),
        }
    }
}

/// The IDs are distinct and, per worker ID, rise in the order they were issued.
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

async fn set_offset(conn: &mut MySqlConnection, ms: i64) {
    sqlx::raw_sql(AssertSqlSafe(format!(
        "SET @snowdrift_test_clock_offset_ms = {ms}"
    )))
    .execute(conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn mariadb_reserves_issues_fills_a_column_and_gives_back() {
    let db = Db::new(4, |_| {}).await;
    let mut s = db.session().await;
    let a = id(&mut s).await.unwrap();
    let b = id(&mut s).await.unwrap();
    assert!(b > a);
    let w = db.worker_of(a);
    assert!((1020..1024).contains(&w), "worker {w}");
    let ids = many(&mut s, 10_000).await.unwrap();
    assert_eq!(ids.len(), 10_000);
    assert!(ids.windows(2).all(|p| p[1] > p[0]) && ids[0] > b);
    let err = many(&mut s, 10_001).await.unwrap_err().to_string();
    assert!(err.contains("n must be 0 to 10000"), "{err}");
    let err = sqlx::query_scalar::<_, i64>("SELECT snowdrift_id('nope')")
        .fetch_one(&mut s)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("installed: g"), "{err}");

    // A column filled by a trigger (MariaDB takes no stored function as a DEFAULT).
    db.raw(
        "CREATE TABLE items (id BIGINT NOT NULL DEFAULT 0 PRIMARY KEY, n INT) ENGINE=InnoDB; \
         CREATE TRIGGER items_id BEFORE INSERT ON items FOR EACH ROW \
         SET NEW.id = IF(NEW.id = 0, snowdrift_id('g'), NEW.id)",
    )
    .await;
    sqlx::raw_sql("INSERT INTO items (n) SELECT seq FROM seq_1_to_2000")
        .execute(&mut s)
        .await
        .unwrap();
    let rows: Vec<i64> = sqlx::query_scalar("SELECT id FROM items ORDER BY id")
        .fetch_all(&mut s)
        .await
        .unwrap();
    assert_eq!(rows.len(), 2000);
    assert!(rows[0] > *ids.last().unwrap());

    // The servers see the block as held.
    let registry = WorkerRegistry::connect(&db.url, &db.table).await.unwrap();
    let listed = registry.list().await.unwrap();
    assert_eq!(
        listed
            .entries
            .iter()
            .filter(|e| e.holder.starts_with(RESERVATION_PREFIX))
            .map(|e| e.worker_id)
            .collect::<Vec<_>>(),
        vec![1020, 1021, 1022, 1023]
    );
    registry
        .claim(w, "server", Duration::from_secs(5))
        .await
        .unwrap_err();
    let status = sql_functions::status(&db.url, None, None).await.unwrap();
    let mine = status[0].workers.iter().find(|x| x.worker_id == w).unwrap();
    assert!(mine.reserved && mine.in_use_by.is_some());
    s.close().await.unwrap();

    // Uninstall refuses while the trigger calls the function, then gives the worker IDs
    // back with marks above every ID.
    let err = sql_functions::uninstall(&db.url, "g", None, Duration::from_secs(5), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("triggers still call") && err.contains("items_id"),
        "{err}"
    );
    db.raw("DROP TRIGGER items_id").await;
    let gone = sql_functions::uninstall(&db.url, "g", None, Duration::from_secs(5), None)
        .await
        .unwrap();
    assert_eq!(gone.released.len(), 4);
    let mark = registry.read_mark(w).await.unwrap().unwrap();
    let last = db
        .layout
        .decode(*rows.last().unwrap() as u64)
        .unwrap()
        .time_ms;
    assert!(mark >= last, "mark {mark} below the last ID's time {last}");
    registry
        .claim(w, "server", Duration::from_secs(5))
        .await
        .unwrap();
    db.drop().await;
}

/// Rolled-back transactions and sessions killed in the middle of one (`KILL`) never make
/// an ID issue twice; the next session under the worker ID goes on above.
#[tokio::test]
async fn mariadb_rollbacks_and_killed_sessions_never_repeat() {
    let db = Db::new(2, |_| {}).await;
    let mut admin = db.session().await;
    let mut issued = Vec::new();
    for round in 0..6 {
        let mut s = db.session().await;
        let conn_id: i64 = sqlx::query_scalar("SELECT CAST(CONNECTION_ID() AS SIGNED)")
            .fetch_one(&mut s)
            .await
            .unwrap();
        sqlx::raw_sql("BEGIN").execute(&mut s).await.unwrap();
        for _ in 0..100 {
            issued.push(id(&mut s).await.unwrap());
        }
        issued.extend(many(&mut s, 3000).await.unwrap());
        if round % 2 == 0 {
            sqlx::raw_sql("ROLLBACK").execute(&mut s).await.unwrap();
            issued.push(id(&mut s).await.unwrap());
            s.close().await.unwrap();
        } else {
            sqlx::raw_sql(AssertSqlSafe(format!("KILL {conn_id}")))
                .execute(&mut admin)
                .await
                .unwrap();
            drop(s);
        }
        let mut next = db.session().await;
        for _ in 0..100 {
            issued.push(id(&mut next).await.unwrap());
        }
        next.close().await.unwrap();
    }
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// With every worker ID leased by a live session, the next one is refused with an error
/// naming the block; once a session ends, its worker ID is taken at once.
#[tokio::test]
async fn mariadb_more_sessions_than_worker_ids_are_refused() {
    let db = Db::new(2, |_| {}).await;
    let mut a = db.session().await;
    let mut b = db.session().await;
    let wa = db.worker_of(id(&mut a).await.unwrap());
    let wb = db.worker_of(id(&mut b).await.unwrap());
    assert_ne!(wa, wb);
    let mut c = db.session().await;
    let err = id(&mut c).await.unwrap_err().to_string();
    assert!(
        err.contains(
            "all 2 worker IDs reserved for this database (1022..1023, of the generator's 1024) are leased by other sessions"
        ),
        "{err}"
    );
    // A session that ended frees its worker ID without waiting for its lease.
    a.close().await.unwrap();
    let wc = db.worker_of(id_after_an_end(&mut c).await);
    assert_eq!(wc, wa);
    db.drop().await;
}

/// A session idle past its lease loses the worker ID to another; its next call leases
/// again and never issues under the lost lease while the other holds it.
#[tokio::test]
async fn mariadb_a_session_idle_past_its_lease_leases_again() {
    let db = Db::new(1, |o| o.lease_ttl = Duration::from_millis(300)).await;
    let mut a = db.session().await;
    let mut b = db.session().await;
    let mut issued = vec![id(&mut a).await.unwrap()];
    let err = id(&mut b).await.unwrap_err().to_string();
    assert!(err.contains("leased by other sessions"), "{err}");
    tokio::time::sleep(Duration::from_millis(450)).await;
    // a's lease ended: b takes the worker ID and keeps it by using it.
    issued.push(id(&mut b).await.unwrap());
    let err = id(&mut a).await.unwrap_err().to_string();
    assert!(err.contains("leased by other sessions"), "{err}");
    for _ in 0..50 {
        issued.push(id(&mut b).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(450)).await;
    // Now b's lease ended: a leases again and goes on above b's IDs.
    for _ in 0..50 {
        issued.push(id(&mut a).await.unwrap());
    }
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// A clock stepped back by less than the bound is waited out; by more, the call refuses.
#[tokio::test]
async fn mariadb_clock_stepped_back_waits_or_refuses() {
    let db = Db::new(1, |o| {
        o.test_clock = true;
        o.backward_wait = Duration::from_millis(50);
    })
    .await;
    let mut s = db.session().await;
    let mut issued = Vec::new();
    for _ in 0..100 {
        issued.push(id(&mut s).await.unwrap());
    }
    set_offset(&mut s, -30).await;
    let started = std::time::Instant::now();
    issued.push(id(&mut s).await.unwrap());
    assert!(
        started.elapsed() >= Duration::from_millis(20),
        "did not wait"
    );
    set_offset(&mut s, -2000).await;
    let err = id(&mut s).await.unwrap_err().to_string();
    assert!(
        err.contains("the database clock is behind the last ID") && err.contains("50 ms"),
        "{err}"
    );
    set_offset(&mut s, 0).await;
    for _ in 0..100 {
        issued.push(id(&mut s).await.unwrap());
    }
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// A restart empties the MEMORY table of leases and counters: a worker ID's row comes
/// back with its counter above its mark, and the first call waits for the clock to pass
/// it. The IDs before had run 1.5 s ahead of the clock.
#[tokio::test]
async fn mariadb_after_a_restart_counters_start_above_their_marks() {
    let db = Db::new(1, |o| {
        o.test_clock = true;
        o.window = Duration::from_millis(500);
    })
    .await;
    let mut s = db.session().await;
    set_offset(&mut s, 1500).await;
    let mut issued = many(&mut s, 5000).await.unwrap();
    for _ in 0..100 {
        issued.push(id(&mut s).await.unwrap());
    }
    let before = *issued.iter().max().unwrap();
    s.close().await.unwrap();
    // What a restart does to a MEMORY table.
    db.raw("DELETE FROM snowdrift_g_lease").await;
    let mut t = db.session().await;
    let started = std::time::Instant::now();
    let after = id(&mut t).await.unwrap();
    assert!(after > before, "{after} after the restart, below {before}");
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "did not wait for the mark"
    );
    issued.push(after);
    issued.extend(many(&mut t, 1000).await.unwrap());
    check_unique_and_rising(&db, &issued);
    db.drop().await;
}

/// Six sessions on two worker IDs: those refused retry, and take a worker ID as soon as a
/// session holding one ends; no ID is issued twice.
#[tokio::test]
async fn mariadb_sessions_taking_over_worker_ids_never_collide() {
    let db = Db::new(2, |_| {}).await;
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let url = db.url.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            while ids.len() < 6000 {
                let mut c = MySqlConnection::connect(&url).await.unwrap();
                for _ in 0..3 {
                    match many(&mut c, 1000).await {
                        Ok(got) => ids.extend(got),
                        Err(e) if e.to_string().contains("leased by other sessions") => {
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
        check_unique_and_rising(&db, &ids);
        issued.extend(ids);
    }
    issued.sort_unstable();
    let dups = issued.windows(2).filter(|p| p[0] == p[1]).count();
    assert_eq!(dups, 0, "{dups} IDs issued twice");
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
    let mut server = snowdrift_testkit::PrivateMariaDb::new();
    let mut admin = MySqlConnection::connect(&server.url("mysql"))
        .await
        .unwrap();
    sqlx::raw_sql("CREATE DATABASE crash")
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    let db = Db {
        url: server.url("crash"),
        name: "crash".into(),
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
        set_offset(&mut s, 1000).await;
        let issued = issued.clone();
        tasks.push(tokio::spawn(async move {
            if in_transaction {
                sqlx::raw_sql("BEGIN").execute(&mut s).await.unwrap();
            }
            // Until the crash ends the session; only IDs returned count.
            loop {
                let got = if in_transaction {
                    id(&mut s).await.map(|i| vec![i])
                } else {
                    many(&mut s, 500).await
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
        set_offset(&mut s, offset).await;
        after.extend(many(&mut s, 2000).await.unwrap());
        sessions.push(s);
    }
    for s in &mut sessions {
        for _ in 0..50 {
            after.push(id(s).await.unwrap());
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
    let base = common::url("mysql");
    let name = common::table("sdu");
    let (installer, caller) = (format!("{name}_i"), format!("{name}_c"));
    let mut root = MySqlConnection::connect(&base).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "CREATE DATABASE {name}; \
         CREATE USER '{installer}'@'%' IDENTIFIED BY 'pw'; GRANT ALL PRIVILEGES ON {name}.* TO '{installer}'@'%'; \
         CREATE USER '{caller}'@'%' IDENTIFIED BY 'pw'; GRANT EXECUTE ON {name}.* TO '{caller}'@'%'"
    )))
    .execute(&mut root)
    .await
    .unwrap();
    let root_db = match base.rfind('/') {
        Some(i) if base[..i].len() > "mysql://".len() => format!("{}/{name}", &base[..i]),
        _ => format!("{base}/{name}"),
    };
    let layout = Layout::preset("twitter").unwrap();
    let mut options = InstallOptions::new("g", layout.clone(), "snowdrift_workers_g");
    options.workers = 1;
    sql_functions::install(&as_user(&root_db, &installer), &options)
        .await
        .unwrap();
    let url = as_user(&root_db, &caller);
    let mut a = MySqlConnection::connect(&url).await.unwrap();
    let mut b = MySqlConnection::connect(&url).await.unwrap();
    let first = id(&mut a).await.unwrap();
    let err = id(&mut b).await.unwrap_err().to_string();
    assert!(err.contains("leased by other sessions"), "{err}");
    // a still holds it, and goes on above.
    let second = id(&mut a).await.unwrap();
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
    let third = id_after_an_end(&mut b).await;
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
    let db = Db::new(1, |o| {
        o.test_clock = true;
        o.window = Duration::from_millis(200);
    })
    .await;
    let mut s = db.session().await;
    let mut issued = vec![id(&mut s).await.unwrap()];
    let far = 4_000_000_000_000_i64;
    let forge = format!(
        "SET @snowdrift_g_mark = {far}, @snowdrift_g_next = {far}, @snowdrift_g_checked = {far}"
    );
    sqlx::raw_sql(AssertSqlSafe(forge.clone()))
        .execute(&mut s)
        .await
        .unwrap();
    // 2 s ahead of the clock, past every mark written so far.
    set_offset(&mut s, 2000).await;
    for _ in 0..200 {
        issued.push(id(&mut s).await.unwrap());
    }
    issued.extend(many(&mut s, 3000).await.unwrap());
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
    let err = id(&mut s).await.unwrap_err().to_string();
    assert!(err.contains("no longer reserved"), "{err}");
    let err = many(&mut s, 10).await.unwrap_err().to_string();
    assert!(err.contains("no longer reserved"), "{err}");
    db.drop().await;
}
