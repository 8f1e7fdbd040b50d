//! Ticket mode against real MariaDB and PostgreSQL servers.
//!
//! Two MariaDB databases (`test_ticket_a`, `test_ticket_b`, created here) and the PostgreSQL
//! `test` database act as three ticket servers. Faults come from `snowdrift_testkit`'s TCP
//! proxy. Every test uses table and sequence names of its own, so tests run in parallel.

use std::collections::BTreeSet;
use std::time::Duration;

use snowdrift_store::Error;
use snowdrift_store::ticket::{
    MAX_TICKETS_PER_CALL, TicketConfig, TicketPool, TicketPoolBuilder, TicketServer,
};
use snowdrift_testkit::{FaultProxy, IdChecker, urls};
use sqlx::AssertSqlSafe;

/// The URL of a MariaDB database of its own, created if missing.
async fn mysql_db(db: &str) -> String {
    let base = urls::mysql();
    raw(&base, format!("CREATE DATABASE IF NOT EXISTS {db}")).await;
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{db}")
}

/// The three ticket servers: two MariaDB databases and PostgreSQL.
async fn three_servers() -> [String; 3] {
    [
        mysql_db("test_ticket_a").await,
        mysql_db("test_ticket_b").await,
        urls::postgres(),
    ]
}

/// A table/sequence name no other test (or earlier run) uses.
fn unique_name(what: &str) -> String {
    snowdrift_testkit::unique_name(&format!("tk_{what}"))
}

pub(crate) async fn raw(url: &str, sql: String) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    sqlx::query(AssertSqlSafe(sql))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// Drops a test's table or sequence once it passed (a failing test leaves it to inspect).
async fn drop_object(url: &str, name: &str) {
    let kind = if url.starts_with("postgres") {
        "SEQUENCE"
    } else {
        "TABLE"
    };
    raw(url, format!("DROP {kind} IF EXISTS {name}")).await;
}

pub(crate) fn config(increment: u32, offset: u32, name: &str) -> TicketConfig {
    let mut c = TicketConfig::new(increment, offset);
    c.name = name.to_string();
    c
}

pub(crate) fn class_of(id: u64, increment: u64) -> u64 {
    match id % increment {
        0 => increment,
        r => r,
    }
}

/// A pool builder with quick probes, for outage tests.
fn quick_pool(name: &str) -> TicketPoolBuilder {
    TicketPool::builder()
        .name(name)
        .timeout(Duration::from_millis(700))
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
}

/// Waits until the pool reports the server of class `offset` up. The bound only keeps a
/// broken pool from hanging the test run.
async fn until_up(pool: &TicketPool, offset: u32) {
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while !pool.status().iter().any(|s| s.offset == offset && s.up) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "server {offset} never came back: {:?}",
        pool.status()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_issues_only_its_class() {
    let urls = three_servers().await;
    let name = unique_name("class");
    for (i, url) in urls.iter().enumerate() {
        let k = i as u32 + 1;
        let server = TicketServer::connect(url, config(3, k, &name))
            .await
            .unwrap_or_else(|e| panic!("{url} must be running for this test: {e}"));
        let mut all = Vec::new();
        // 250 takes three of MySQL's 100-ticket round trips.
        for count in [1, 5, 250] {
            let ids = server.next(count).await.unwrap();
            assert_eq!(ids.len(), count);
            all.extend(ids);
        }
        assert!(
            all.iter()
                .all(|id| *id > 0 && class_of(*id, 3) == u64::from(k)),
            "{url}: an ID outside class {k} of 3"
        );
        assert!(
            all.windows(2).all(|w| w[0] < w[1]),
            "{url}: one connection's tickets must increase"
        );
        // Flickr's tickets are consecutive members of the class when nobody else takes any.
        assert!(all.windows(2).all(|w| w[1] - w[0] == 3), "{url}: a gap");
        server.check().await.unwrap();
        server.close().await;
        drop_object(url, &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_of_two_mariadb_and_one_postgres_never_collides() {
    let urls = three_servers().await;
    let name = unique_name("pool");
    let mut builder = TicketPool::builder().name(&name);
    for url in &urls {
        builder = builder.server(url);
    }
    let pool = builder.connect().await.unwrap();
    let checker = std::sync::Arc::new(IdChecker::new());
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..6 {
        let (pool, checker) = (pool.clone(), checker.clone());
        tasks.spawn(async move {
            let (mut classes, mut taken) = (BTreeSet::new(), 0);
            for call in 0..40 {
                let count = if call % 10 == 0 { 120 } else { call % 7 + 1 };
                let ids = pool.next(count).await.unwrap();
                assert_eq!(ids.len(), count);
                classes.insert(class_of(ids[0], 3));
                taken += count;
                checker.record_unordered(&format!("task {task}"), ids);
            }
            (classes, taken)
        });
    }
    let (mut classes, mut taken) = (BTreeSet::new(), 0);
    while let Some(done) = tasks.join_next().await {
        let (c, t) = done.unwrap();
        classes.extend(c);
        taken += t;
    }
    let report = checker.assert_clean();
    assert_eq!(checker.distinct(), taken, "{report:?}");
    assert_eq!(
        classes,
        BTreeSet::from([1, 2, 3]),
        "round-robin reaches every server"
    );
    assert!(pool.status().iter().all(|s| s.up));
    pool.close().await;
    for url in &urls {
        drop_object(url, &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_sharing_a_server_share_its_class() {
    // Flickr ran many web servers against each ticket database: each of these connections
    // stands for one process.
    let urls = [mysql_db("test_ticket_a").await, urls::postgres()];
    for url in &urls {
        let name = unique_name("shared");
        let checker = std::sync::Arc::new(IdChecker::new());
        let mut tasks = tokio::task::JoinSet::new();
        for process in 0..3 {
            let (url, name, checker) = (url.clone(), name.clone(), checker.clone());
            tasks.spawn(async move {
                let server = TicketServer::connect(&url, config(4, 2, &name))
                    .await
                    .unwrap();
                for _ in 0..30 {
                    let ids = server.next(7).await.unwrap();
                    assert!(ids.iter().all(|id| id % 4 == 2), "{url}: {ids:?}");
                    // One connection's tickets increase even with others in between.
                    checker.record(&format!("process {process}"), ids);
                }
                server.close().await;
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
        checker.assert_clean();
        assert_eq!(checker.distinct(), 3 * 30 * 7);
        drop_object(url, &name).await;
    }
}

fn assert_refused(result: Result<TicketServer, Error>, needle: &str) {
    match result {
        Err(Error::TicketServerRefused { reason, .. }) => {
            assert!(reason.contains(needle), "{reason:?} lacks {needle:?}")
        }
        other => panic!("expected a refusal mentioning {needle:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn postgres_sequence_of_another_class_is_refused() {
    let url = urls::postgres();
    let other_increment = unique_name("incr");
    raw(
        &url,
        format!("CREATE SEQUENCE {other_increment} INCREMENT BY 2 START WITH 1"),
    )
    .await;
    assert_refused(
        TicketServer::connect(&url, config(3, 1, &other_increment)).await,
        "INCREMENT BY 2",
    );

    let other_start = unique_name("start");
    raw(
        &url,
        format!("CREATE SEQUENCE {other_start} INCREMENT BY 3 START WITH 2"),
    )
    .await;
    assert_refused(
        TicketServer::connect(&url, config(3, 1, &other_start)).await,
        "starts at 2",
    );
    // The class it does belong to is accepted.
    let ok = TicketServer::connect(&url, config(3, 2, &other_start))
        .await
        .unwrap();
    assert!(ok.next(4).await.unwrap().iter().all(|id| id % 3 == 2));
    ok.close().await;

    let cycling = unique_name("cycle");
    raw(
        &url,
        format!("CREATE SEQUENCE {cycling} INCREMENT BY 3 START WITH 1 CYCLE"),
    )
    .await;
    assert_refused(
        TicketServer::connect(&url, config(3, 1, &cycling)).await,
        "CYCLE",
    );

    let restarted = unique_name("restart");
    let server = TicketServer::connect(&url, config(3, 1, &restarted))
        .await
        .unwrap();
    server.next(3).await.unwrap();
    raw(&url, format!("ALTER SEQUENCE {restarted} RESTART WITH 5")).await;
    let check = server.check().await;
    assert!(
        matches!(&check, Err(Error::TicketServerRefused { reason, .. }) if reason.contains("is at 5")),
        "{check:?}"
    );
    assert_refused(
        TicketServer::connect(&url, config(3, 1, &restarted)).await,
        "is at 5",
    );
    server.close().await;

    let table = unique_name("table");
    raw(&url, format!("CREATE TABLE {table} (id bigint)")).await;
    assert_refused(
        TicketServer::connect(&url, config(3, 1, &table)).await,
        "not a sequence",
    );

    for name in [other_increment, other_start, cycling, restarted] {
        drop_object(&url, &name).await;
    }
    raw(&url, format!("DROP TABLE {table}")).await;
}

#[tokio::test]
async fn mysql_table_of_another_class_is_refused_and_flickrs_table_is_adopted() {
    let url = mysql_db("test_ticket_a").await;
    let name = unique_name("mine");
    let first = TicketServer::connect(&url, config(2, 1, &name))
        .await
        .unwrap();
    first.next(2).await.unwrap();
    assert_refused(
        TicketServer::connect(&url, config(3, 1, &name)).await,
        "created for increment=2 offset=1",
    );
    assert_refused(
        TicketServer::connect(&url, config(2, 2, &name)).await,
        "this server is configured for increment=2 offset=2",
    );
    first.close().await;
    drop_object(&url, &name).await;

    // Flickr's own table, already in use: no class recorded, counter at 100.
    let flickr = unique_name("flickr");
    raw(
        &url,
        format!(
            "CREATE TABLE {flickr} (id bigint(20) unsigned NOT NULL auto_increment, \
             stub char(1) NOT NULL default '', PRIMARY KEY (id), UNIQUE KEY stub (stub)) \
             ENGINE=InnoDB AUTO_INCREMENT=100"
        ),
    )
    .await;
    let adopted = TicketServer::connect(&url, config(4, 3, &flickr))
        .await
        .unwrap();
    let ids = adopted.next(3).await.unwrap();
    assert_eq!(ids, [103, 107, 111]);
    adopted.close().await;
    drop_object(&url, &flickr).await;
}

#[tokio::test]
async fn a_lost_connection_is_replaced_with_its_session_variables() {
    // A database of its own, so killing every connection to it hits only this test's.
    let db = "test_ticket_kill";
    let url = mysql_db(db).await;
    let name = unique_name("reconnect");
    let server = TicketServer::connect(&url, config(5, 4, &name))
        .await
        .unwrap();
    let mut ids = server.next(3).await.unwrap();

    // The server closes the idle connection (as `wait_timeout` or a restart would): the
    // next call finds it dead, opens another, and its session must get 5 / 4 again.
    let sessions = format!("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '{db}'");
    sqlx::any::install_default_drivers();
    let admin = sqlx::AnyPool::connect(&urls::mysql()).await.unwrap();
    let victims: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(sessions))
        .fetch_all(&admin)
        .await
        .unwrap();
    assert_eq!(victims.len(), 1, "the server holds one connection");
    sqlx::query(AssertSqlSafe(format!("KILL {}", victims[0])))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
    ids.extend(server.next(3).await.unwrap());

    // Cut by the network: calls fail while it lasts, then it reconnects.
    let (proxy, proxied) = FaultProxy::start_for_url(&url).await.unwrap();
    let through = TicketServer::connect(&proxied, config(5, 4, &name))
        .await
        .unwrap();
    ids.extend(through.next(3).await.unwrap());
    proxy.cut();
    assert!(through.next(1).await.is_err());
    proxy.heal();
    ids.extend(through.next(3).await.unwrap());

    assert!(ids.iter().all(|id| id % 5 == 4), "{ids:?}");
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    server.close().await;
    through.close().await;
    drop_object(&url, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_goes_on_while_a_server_is_cut_and_takes_it_back() {
    let urls = three_servers().await;
    let name = unique_name("cut");
    let (proxy, proxied) = FaultProxy::start_for_url(&urls[0]).await.unwrap();
    let pool = quick_pool(&name)
        .server(&proxied)
        .server(&urls[1])
        .server(&urls[2])
        .connect()
        .await
        .unwrap();
    let checker = IdChecker::new();
    for _ in 0..6 {
        checker.record_unordered("before", pool.next(10).await.unwrap());
    }

    proxy.cut();
    let mut during = Vec::new();
    for _ in 0..30 {
        during.extend(pool.next(10).await.unwrap());
    }
    assert!(
        during.iter().all(|id| class_of(*id, 3) != 1),
        "a cut server issued tickets"
    );
    let down = &pool.status()[0];
    assert!(!down.up && down.failures >= 1, "{down:?}");
    assert!(down.last_error.is_some());
    checker.record_unordered("during", during);

    proxy.heal();
    until_up(&pool, 1).await;
    let mut classes = BTreeSet::new();
    for _ in 0..3 {
        let ids = pool.next(10).await.unwrap();
        classes.insert(class_of(ids[0], 3));
        checker.record_unordered("after", ids);
    }
    assert_eq!(classes, BTreeSet::from([1, 2, 3]), "back in turn");
    checker.assert_clean();
    pool.close().await;
    for url in &urls {
        drop_object(url, &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_server_is_skipped_after_its_timeout() {
    let [a, _, pg] = three_servers().await;
    let name = unique_name("hole");
    let (proxy, proxied) = FaultProxy::start_for_url(&pg).await.unwrap();
    let pool = quick_pool(&name)
        .server(&a)
        .server(&proxied)
        .connect()
        .await
        .unwrap();
    proxy.black_hole();
    // Without per-call timeouts the first call to reach PostgreSQL would hang forever; the
    // outer bound only turns such a hang into a failure.
    let calls = tokio::time::timeout(Duration::from_secs(60), async {
        let mut ids = Vec::new();
        for _ in 0..10 {
            ids.extend(pool.next(5).await.unwrap());
        }
        ids
    })
    .await
    .expect("a call hung on the black-holed server");
    assert!(calls.iter().all(|id| id % 2 == 1), "only server 1 answers");
    let status = &pool.status()[1];
    assert!(!status.up, "{status:?}");
    assert!(
        status
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("no answer within")),
        "{status:?}"
    );
    proxy.heal();
    until_up(&pool, 2).await;
    let both: BTreeSet<u64> = [
        pool.next(1).await.unwrap()[0] % 2,
        pool.next(1).await.unwrap()[0] % 2,
    ]
    .into();
    assert_eq!(both, BTreeSet::from([0, 1]));
    pool.close().await;
    drop_object(&a, &name).await;
    drop_object(&pg, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_queued_behind_a_black_holed_server_move_on() {
    let [a, _, pg] = three_servers().await;
    let name = unique_name("queue");
    let (proxy, proxied) = FaultProxy::start_for_url(&pg).await.unwrap();
    // No probe during the test: every connection through the proxy is a caller's.
    let pool = TicketPool::builder()
        .name(&name)
        .timeout(Duration::from_millis(500))
        .backoff(Duration::from_secs(600), Duration::from_secs(600))
        .server(&a)
        .server(&proxied)
        .connect()
        .await
        .unwrap();
    proxy.black_hole();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let pool = pool.clone();
        tasks.spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..5 {
                ids.extend(pool.next(3).await.unwrap());
            }
            ids
        });
    }
    let all = tokio::time::timeout(Duration::from_secs(60), async {
        let mut all = Vec::new();
        while let Some(done) = tasks.join_next().await {
            all.extend(done.unwrap());
        }
        all
    })
    .await
    .expect("callers hung on the black-holed server");
    let distinct: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), 6 * 5 * 3);
    assert!(!pool.status()[1].up);
    // Only the connection made at connect: the callers queued behind the one that timed out
    // gave way instead of each opening a new connection into the black hole.
    assert_eq!(proxy.connections(), 1);
    pool.close().await;
    drop_object(&a, &name).await;
    drop_object(&pg, &name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_down_names_each_one() {
    // Nothing listens on a port just released.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let unreachable = TicketPool::builder()
        .server(format!("mysql://root@127.0.0.1:{closed}/test"))
        .server(format!("postgres://root:secret@127.0.0.1:{closed}/test"))
        .connect()
        .await;
    match unreachable {
        Err(Error::TicketServersDown { servers }) => {
            assert_eq!(servers.len(), 2, "{servers:?}");
            assert!(servers[0].starts_with(&format!("mysql://root@127.0.0.1:{closed}/test")));
            assert!(
                servers[1].starts_with(&format!("postgres://root:***@127.0.0.1:{closed}/test"))
            );
            assert!(
                servers.iter().all(|s| !s.contains("secret")),
                "password leaked"
            );
        }
        other => panic!("expected every server down, got {other:?}"),
    }

    let [a, b, _] = three_servers().await;
    let name = unique_name("alldown");
    let (proxy_a, url_a) = FaultProxy::start_for_url(&a).await.unwrap();
    let (proxy_b, url_b) = FaultProxy::start_for_url(&b).await.unwrap();
    let pool = quick_pool(&name)
        .server(&url_a)
        .server(&url_b)
        .connect()
        .await
        .unwrap();
    pool.next(1).await.unwrap();
    proxy_a.cut();
    proxy_b.cut();
    match pool.next(1).await {
        Err(Error::TicketServersDown { servers }) => {
            assert_eq!(servers.len(), 2, "{servers:?}");
            for (server, url) in servers.iter().zip([&url_a, &url_b]) {
                assert!(server.starts_with(url.as_str()), "{server} names {url}");
                assert!(server.contains("failed"), "{server} gives its error");
            }
        }
        other => panic!("expected every server down, got {other:?}"),
    }
    proxy_a.heal();
    proxy_b.heal();
    until_up(&pool, 1).await;
    until_up(&pool, 2).await;
    assert_eq!(pool.next(4).await.unwrap().len(), 4);
    pool.close().await;
    drop_object(&a, &name).await;
    drop_object(&b, &name).await;
}

fn assert_invalid<T: std::fmt::Debug>(result: Result<T, Error>, needle: &str) {
    match result {
        Err(Error::InvalidInput(message))
        | Err(Error::InvalidUrl {
            reason: message, ..
        }) => {
            assert!(message.contains(needle), "{message:?} lacks {needle:?}")
        }
        other => panic!("expected bad input mentioning {needle:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_input_is_refused() {
    let pg = urls::postgres();
    assert_invalid(
        TicketServer::connect("sqlite://tickets.db", TicketConfig::new(2, 1)).await,
        "SQLite is not a ticket server",
    );
    assert_invalid(
        TicketServer::connect("http://127.0.0.1/", TicketConfig::new(2, 1)).await,
        "mysql://",
    );
    for (n, k, needle) in [
        (0, 1, "increment 0"),
        (65_536, 1, "increment 65536"),
        (3, 0, "offset 0"),
        (3, 4, "offset 4"),
    ] {
        assert_invalid(
            TicketServer::connect(&pg, TicketConfig::new(n, k)).await,
            needle,
        );
    }
    let long = "t".repeat(64);
    for name in [
        "",
        "Tickets",
        "1tickets",
        "t;drop table x",
        "t-1",
        long.as_str(),
    ] {
        assert_invalid(TicketServer::connect(&pg, config(2, 1, name)).await, "name");
    }
    let mut zero = TicketConfig::new(2, 1);
    zero.timeout = Duration::ZERO;
    assert_invalid(TicketServer::connect(&pg, zero).await, "timeout");

    let name = unique_name("bad");
    let server = TicketServer::connect(&pg, config(2, 1, &name))
        .await
        .unwrap();
    assert_invalid(server.next(0).await, "count 0");
    assert_invalid(server.next(MAX_TICKETS_PER_CALL + 1).await, "count 10001");
    server.close().await;

    assert_invalid(TicketPool::builder().connect().await, "at least one server");
    assert_invalid(
        TicketPool::builder()
            .name(&name)
            .server(&pg)
            .server_with_offset(&pg, 1)
            .connect()
            .await,
        "both have offset 1",
    );
    // Three servers do not fit in two classes.
    assert_invalid(
        TicketPool::builder()
            .name(&name)
            .increment(2)
            .server(&pg)
            .server(&pg)
            .server(&pg)
            .connect()
            .await,
        "offset 3",
    );
    assert_invalid(
        TicketPool::builder()
            .name(&name)
            .server(&pg)
            .backoff(Duration::from_secs(2), Duration::from_secs(1))
            .connect()
            .await,
        "backoff",
    );
    let pool = TicketPool::builder()
        .name(&name)
        .increment(2)
        .server(&pg)
        .connect()
        .await
        .unwrap();
    assert_invalid(pool.next(0).await, "count 0");
    pool.close().await;
    drop_object(&pg, &name).await;
}
