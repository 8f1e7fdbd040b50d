//! Growing a ticket pool from 2 servers to 3 ([`Grow`]) on real MariaDB and PostgreSQL:
//! tickets before, the move, tickets after from the grown pool, and no ID twice.
//!
//! Each test creates databases of its own (three MariaDB databases, or three PostgreSQL
//! databases on the `test` server) to stand for three ticket servers, since every server of
//! a pool uses the same table or sequence name; they are dropped when the test passed.

use std::collections::BTreeSet;
use std::time::Duration;

use snowdrift_store::Error;
use snowdrift_store::ticket::{Grow, ServerState, TicketPool, TicketServer};
use snowdrift_testkit::{IdChecker, urls};

use crate::ticket::{class_of, config, raw};
use sqlx::{AssertSqlSafe, Row};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Db {
    MariaDb,
    Postgres,
}

/// Three databases of their own on one server, standing for three ticket servers.
struct Servers {
    db: Db,
    admin: String,
    names: Vec<String>,
    urls: Vec<String>,
}

impl Servers {
    async fn new(db: Db, what: &str) -> Self {
        let admin = match db {
            Db::MariaDb => urls::mysql(),
            Db::Postgres => urls::postgres(),
        };
        let prefix = snowdrift_testkit::unique_name(&format!("tg_{what}"));
        let (server, _) = admin.rsplit_once('/').unwrap();
        let (mut names, mut list) = (Vec::new(), Vec::new());
        for suffix in ["a", "b", "c"] {
            let name = format!("{prefix}_{suffix}");
            raw(&admin, format!("CREATE DATABASE {name}")).await;
            list.push(format!("{server}/{name}"));
            names.push(name);
        }
        Self {
            db,
            admin,
            names,
            urls: list,
        }
    }

    /// The first `n` servers' URLs.
    fn first(&self, n: usize) -> Vec<String> {
        self.urls[..n].to_vec()
    }

    /// Waits until no session is left on the MariaDB databases (a closed connection leaves
    /// the process list a moment after the client let go of it).
    async fn until_idle(&self) {
        if self.db == Db::MariaDb {
            self.until_sessions_at_most(0).await;
        }
    }

    /// Waits until at most `most` sessions are left on the MariaDB databases.
    async fn until_sessions_at_most(&self, most: i64) {
        let list = self
            .names
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let count = format!(
            "SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.PROCESSLIST WHERE DB IN ({list})"
        );
        for _ in 0..250 {
            if scalar(&self.admin, &count).await <= most {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("sessions on {list} stayed open");
    }

    async fn drop_all(&self) {
        for name in &self.names {
            let sql = match self.db {
                Db::MariaDb => format!("DROP DATABASE IF EXISTS {name}"),
                Db::Postgres => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            };
            raw(&self.admin, sql).await;
        }
    }
}

async fn scalar(url: &str, sql: &str) -> i64 {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let v = sqlx::query(AssertSqlSafe(sql.to_string()))
        .fetch_one(&pool)
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
    pool.close().await;
    v
}

/// A pool of the servers at `urls`, in their order, on table or sequence `name`.
async fn pool_of(urls: &[String], name: &str) -> TicketPool {
    urls.iter()
        .fold(TicketPool::builder().name(name), |b, url| {
            b.server(url.as_str())
        })
        .connect()
        .await
        .unwrap()
}

/// Takes `count` tickets from each server of a pool of `urls`, one server at a time, so
/// each ID's server is known; records them all.
async fn take_from_each(
    urls: &[String],
    name: &str,
    count: usize,
    checker: &IdChecker,
    what: &str,
) -> Vec<Vec<u64>> {
    let n = urls.len() as u32;
    let mut per_server = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let k = i as u32 + 1;
        let server = TicketServer::connect(url, config(n, k, name))
            .await
            .unwrap();
        let mut ids = Vec::new();
        for chunk in [1, count - 1] {
            ids.extend(server.next(chunk).await.unwrap());
        }
        server.close().await;
        assert!(
            ids.iter()
                .all(|id| class_of(*id, u64::from(n)) == u64::from(k)),
            "{what}: server {k} left class {k} of {n}: {ids:?}"
        );
        checker.record(&format!("{what} server {k}"), ids.clone());
        per_server.push(ids);
    }
    per_server
}

/// The whole story on one kind of database: a pool of 2 takes tickets, grows to 3, and a
/// pool of 3 (and each of its servers) takes more; nothing repeats.
async fn grow_two_to_three(db: Db) {
    let servers = Servers::new(db, if db == Db::MariaDb { "my" } else { "pg" }).await;
    let name = "tickets64";
    let checker = IdChecker::new();

    // Before: a pool of 2, and each of its servers on its own.
    let pool = pool_of(&servers.urls[..2], name).await;
    for _ in 0..20 {
        checker.record_unordered("pool of 2", pool.next(7).await.unwrap());
    }
    pool.close().await;
    drop(pool);
    let before = take_from_each(&servers.first(2), name, 50, &checker, "before").await;
    let highest_before = before.iter().flatten().max().copied().unwrap();
    servers.until_idle().await;

    // The plan: reads, changes nothing.
    let gap = 500;
    let plan = Grow::new(servers.urls.clone(), 2)
        .name(name)
        .gap(gap)
        .plan()
        .await
        .unwrap();
    assert_eq!((plan.from(), plan.to(), plan.gap()), (2, 3, gap));
    let current = plan.servers().iter().map(|s| s.current).max().unwrap();
    assert!(current >= highest_before, "{plan:?}");
    assert_eq!(plan.base(), current + gap);
    for (i, s) in plan.servers().iter().enumerate() {
        let k = i as u64 + 1;
        assert!(s.start > plan.base() && s.start <= plan.base() + 3, "{s:?}");
        assert_eq!(class_of(s.start, 3), k, "{s:?}");
        let expected = if k <= 2 {
            ServerState::Class {
                increment: 2,
                offset: k as u32,
            }
        } else {
            ServerState::Missing
        };
        assert_eq!(s.state, expected);
        assert!(s.sessions.is_empty(), "{s:?}");
    }
    // Planning twice gives the same plan: nothing moved.
    let again = Grow::new(servers.urls.clone(), 2)
        .name(name)
        .gap(gap)
        .plan()
        .await
        .unwrap();
    assert_eq!(again.servers(), plan.servers());

    plan.apply(false).await.unwrap();

    // After: each server of the grown pool in its class of 3, above every old ticket,
    // starting where the plan said (MySQL took the start itself as its check).
    let first_after = take_from_each(&servers.urls, name, 40, &checker, "after").await;
    for (s, ids) in plan.servers().iter().zip(&first_after) {
        let first = match db {
            Db::MariaDb => s.start + 3,
            Db::Postgres => s.start,
        };
        assert_eq!(ids[0], first, "{s:?}");
        assert!(ids.iter().all(|id| *id > plan.base()));
        assert!(ids.windows(2).all(|w| w[1] - w[0] == 3), "{ids:?}");
    }
    // And a pool of 3 with the new list, as a restarted snowdrift server runs it.
    let pool = pool_of(&servers.urls, name).await;
    let mut classes = BTreeSet::new();
    for _ in 0..30 {
        let ids = pool.next(5).await.unwrap();
        assert!(ids.iter().all(|id| *id > highest_before));
        classes.insert(class_of(ids[0], 3));
        checker.record_unordered("pool of 3", ids);
    }
    assert_eq!(classes.len(), 3, "every server took turns");
    pool.close().await;
    drop(pool);
    checker.assert_clean();
    assert_eq!(checker.distinct(), 140 + 2 * 50 + 3 * 40 + 150);

    // A pool of 2 with the old list is refused now: the servers count in classes of 3.
    let old = TicketServer::connect(&servers.urls[0], config(2, 1, name)).await;
    assert!(
        matches!(old, Err(Error::TicketServerRefused { .. })),
        "{old:?}"
    );
    servers.until_idle().await;
    servers.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_pool_grows_from_two_to_three_on_mariadb() {
    grow_two_to_three(Db::MariaDb).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_pool_grows_from_two_to_three_on_postgres() {
    grow_two_to_three(Db::Postgres).await;
}

/// MySQL keeps a server's class in its sessions: a snowdrift server still connected with
/// class k of 2 would go on counting in it from the moved counter. So applying is refused
/// while other sessions are on a ticket database, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_grow_is_refused_on_mariadb_while_a_server_is_connected() {
    let servers = Servers::new(Db::MariaDb, "busy").await;
    let name = "tickets64";
    let old = TicketServer::connect(&servers.urls[1], config(2, 2, name))
        .await
        .unwrap();
    let first = old.next(3).await.unwrap();
    let setup = TicketServer::connect(&servers.urls[0], config(2, 1, name))
        .await
        .unwrap();
    setup.next(1).await.unwrap();
    setup.close().await;
    servers.until_sessions_at_most(1).await;

    let plan = Grow::new(servers.urls.clone(), 2)
        .name(name)
        .gap(100)
        .plan()
        .await
        .unwrap();
    assert_eq!(plan.servers()[1].sessions.len(), 1, "{plan:?}");
    let refused = plan.apply(false).await.unwrap_err();
    let text = refused.to_string();
    assert!(
        matches!(refused, Error::TicketServerRefused { .. })
            && text.contains("other session")
            && text.contains("nothing was changed"),
        "{text}"
    );
    // Nothing moved: the old server goes on in its class, from where it was.
    let next = old.next(1).await.unwrap();
    assert_eq!(next[0], first[2] + 2);
    let same = Grow::new(servers.urls.clone(), 2)
        .name(name)
        .gap(100)
        .plan()
        .await
        .unwrap();
    assert_eq!(same.servers()[2].state, ServerState::Missing);
    assert_eq!(
        same.servers()[0].state,
        ServerState::Class {
            increment: 2,
            offset: 1
        }
    );
    old.close().await;
    servers.until_idle().await;
    servers.drop_all().await;
}

/// PostgreSQL keeps the increment in the sequence, so a server still running with the old
/// list during the move gets the new class's values and cannot collide; its own class check
/// refuses those outside class k of 2 (and a probe refuses the sequence).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_grow_on_postgres_leaves_a_running_old_server_no_duplicate() {
    let servers = Servers::new(Db::Postgres, "run").await;
    let name = "tickets64";
    let checker = IdChecker::new();
    let old: Vec<TicketServer> = futures_connect(&servers.first(2), 2, name).await;
    for (i, server) in old.iter().enumerate() {
        checker.record(&format!("old {i}"), server.next(10).await.unwrap());
    }
    let plan = Grow::new(servers.urls.clone(), 2)
        .name(name)
        .gap(100)
        .plan()
        .await
        .unwrap();
    plan.apply(false).await.unwrap();
    let pool = pool_of(&servers.urls, name).await;
    let (mut served_by_old, mut refused_by_old) = (0, 0);
    for round in 0..40 {
        checker.record_unordered("new pool", pool.next(3).await.unwrap());
        match old[round % 2].next(1).await {
            Ok(ids) => {
                served_by_old += 1;
                assert!(ids[0] > plan.base());
                checker.record_unordered("old, after the move", ids);
            }
            Err(Error::TicketServerRefused { .. }) => refused_by_old += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused_by_old > 0 && served_by_old + refused_by_old == 40);
    assert!(
        old[0].check().await.is_err(),
        "a probe refuses the sequence"
    );
    checker.assert_clean();
    for server in &old {
        server.close().await;
    }
    pool.close().await;
    drop(pool);
    servers.drop_all().await;
}

async fn futures_connect(urls: &[String], n: u32, name: &str) -> Vec<TicketServer> {
    let mut out = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        out.push(
            TicketServer::connect(url, config(n, i as u32 + 1, name))
                .await
                .unwrap(),
        );
    }
    out
}

/// Bad input is refused before anything is read or changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticket_grow_refuses_bad_input_and_unreachable_servers() {
    let servers = Servers::new(Db::Postgres, "bad").await;
    let name = "tickets64";
    for server in futures_connect(&servers.first(2), 2, name).await {
        server.next(2).await.unwrap();
        server.close().await;
    }
    let invalid = |r: Result<_, Error>, needle: &str| match r {
        Err(e @ Error::InvalidInput(_)) => {
            assert!(e.to_string().contains(needle), "{e}")
        }
        other => panic!("{needle}: {other:?}"),
    };
    invalid(
        Grow::new(servers.first(2), 2).name(name).plan().await,
        "needs more than 2",
    );
    invalid(
        Grow::new(servers.first(3), 3).name(name).plan().await,
        "needs more than 3",
    );
    invalid(
        Grow::new(servers.first(3), 0).name(name).plan().await,
        "--from 0",
    );
    let twice = vec![
        servers.urls[0].clone(),
        servers.urls[1].clone(),
        servers.urls[0].clone(),
    ];
    invalid(
        Grow::new(twice, 2).name(name).plan().await,
        "each ticket server needs its own database",
    );
    invalid(
        Grow::new(servers.first(3), 2).name("Bad-Name").plan().await,
        "not valid",
    );
    // Server 1's URL for the new server, spelt differently: the same database.
    let alias = servers.urls[0].replace("127.0.0.1", "localhost");
    let mut aliased = servers.first(2);
    aliased.push(alias);
    let same = Grow::new(aliased, 2).name(name).plan().await;
    assert!(
        matches!(&same, Err(e) if e.to_string().contains("are the same database")),
        "{same:?}"
    );
    // The order of the current servers matters: class 1's sequence is not class 2's.
    let swapped = vec![
        servers.urls[1].clone(),
        servers.urls[0].clone(),
        servers.urls[2].clone(),
    ];
    let wrong = Grow::new(swapped, 2).name(name).plan().await;
    assert!(
        matches!(&wrong, Err(Error::TicketServerRefused { reason, .. }) if reason.contains("check the order")),
        "{wrong:?}"
    );
    // --from 1 for a pool of 2.
    let wrong = Grow::new(servers.first(3), 1).name(name).plan().await;
    assert!(
        matches!(&wrong, Err(Error::TicketServerRefused { .. })),
        "{wrong:?}"
    );
    // A server that does not answer.
    let mut down = servers.first(2);
    down.push("postgres://root:root@127.0.0.1:1/nowhere".into());
    let unreachable = Grow::new(down, 2).name(name).plan().await;
    assert!(
        matches!(&unreachable, Err(Error::Unavailable(e)) if e.to_string().contains("127.0.0.1:1/nowhere") && !e.to_string().contains(":root@")),
        "{unreachable:?}"
    );
    // And nothing changed: the servers are still a pool of 2.
    for server in futures_connect(&servers.first(2), 2, name).await {
        server.next(1).await.unwrap();
        server.close().await;
    }
    servers.drop_all().await;
}
