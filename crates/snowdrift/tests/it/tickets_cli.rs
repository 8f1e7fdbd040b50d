//! `snowdrift tickets grow` through the binary: a pool of 2 ticket servers grows to 3 on
//! MariaDB and on PostgreSQL. The plan alone changes nothing and exits non-zero; `--yes`
//! applies it; bad input and an unreachable server give one line and change nothing.
//!
//! Three databases of the test's own stand for three ticket servers (a pool's servers all
//! use the same table or sequence name).

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use snowdrift_store::ticket::{Grow, ServerState, TicketConfig, TicketPool, TicketServer};
use snowdrift_testkit::{IdChecker, urls};
use sqlx::{AssertSqlSafe, Row};

const TABLE: &str = "tickets64";

fn snowdrift(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn grow_args(servers: &[String], extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["tickets", "grow", "--table", TABLE, "--gap", "1000"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push("--servers".into());
    args.push(servers.join(","));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Fails with one line on stderr, which is returned.
fn fails(args: &[String]) -> String {
    let out = snowdrift(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

struct Databases {
    admin: String,
    names: Vec<String>,
    urls: Vec<String>,
    mysql: bool,
}

impl Databases {
    async fn new(mysql: bool) -> Self {
        let admin = if mysql {
            urls::mysql()
        } else {
            urls::postgres()
        };
        let prefix = snowdrift_testkit::unique_name("tgcli");
        let (server, _) = admin.rsplit_once('/').unwrap();
        let (mut names, mut list) = (Vec::new(), Vec::new());
        for suffix in ["a", "b", "c"] {
            let name = format!("{prefix}_{suffix}");
            raw(&admin, &format!("CREATE DATABASE {name}")).await;
            list.push(format!("{server}/{name}"));
            names.push(name);
        }
        Self {
            admin,
            names,
            urls: list,
            mysql,
        }
    }

    /// Waits until a closed connection has left MariaDB's process list.
    async fn until_idle(&self) {
        if !self.mysql {
            return;
        }
        let list: Vec<String> = self.names.iter().map(|n| format!("'{n}'")).collect();
        let count = format!(
            "SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.PROCESSLIST WHERE DB IN ({})",
            list.join(", ")
        );
        for _ in 0..250 {
            if scalar(&self.admin, &count).await == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("sessions stayed open on {list:?}");
    }

    /// What each server's table or sequence is now, read without changing anything.
    async fn states(&self) -> Vec<(ServerState, u64)> {
        let plan = Grow::new(self.urls.clone(), 2)
            .name(TABLE)
            .plan()
            .await
            .unwrap();
        self.until_idle().await;
        plan.servers()
            .iter()
            .map(|s| (s.state.clone(), s.current))
            .collect()
    }

    async fn drop_all(&self) {
        for name in &self.names {
            let sql = if self.mysql {
                format!("DROP DATABASE IF EXISTS {name}")
            } else {
                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            };
            raw(&self.admin, &sql).await;
        }
    }
}

async fn raw(url: &str, sql: &str) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    sqlx::query(AssertSqlSafe(sql.to_string()))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
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

fn config(n: u32, k: u32) -> TicketConfig {
    let mut c = TicketConfig::new(n, k);
    c.name = TABLE.to_string();
    c
}

async fn grow_through_the_binary(mysql: bool) {
    let dbs = Databases::new(mysql).await;
    let checker = IdChecker::new();
    // Before: two servers, class 1 and 2 of 2.
    for k in 1..=2 {
        let server = TicketServer::connect(&dbs.urls[k - 1], config(2, k as u32))
            .await
            .unwrap();
        checker.record(&format!("before {k}"), server.next(25).await.unwrap());
        server.close().await;
    }
    dbs.until_idle().await;
    let before = dbs.states().await;
    let highest_before = before.iter().map(|(_, v)| *v).max().unwrap();

    // The plan alone: printed, nothing changed, non-zero exit saying how to apply.
    let out = snowdrift(&grow_args(&dbs.urls, &["--from", "2"]));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("nothing was changed") && stderr.contains("--yes"),
        "{stderr}"
    );
    assert!(
        stdout.contains("from 2 to 3 servers") && stdout.contains("stop every snowdrift server"),
        "{stdout}"
    );
    assert!(!stdout.contains(":root@"), "no password printed: {stdout}");
    let base: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Base: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(base, highest_before + 1000);
    dbs.until_idle().await;
    assert_eq!(dbs.states().await, before, "the plan changed nothing");

    // Applied with --yes.
    let out = snowdrift(&grow_args(
        &dbs.urls,
        &["--from", "2", "--to", "3", "--yes"],
    ));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Applied"), "{stdout}");
    dbs.until_idle().await;

    // After: the grown pool, as restarted snowdrift servers run it.
    let mut builder = TicketPool::builder().name(TABLE);
    for url in &dbs.urls {
        builder = builder.server(url);
    }
    let pool = builder.connect().await.unwrap();
    let mut classes = std::collections::BTreeSet::new();
    for _ in 0..12 {
        let ids = pool.next(4).await.unwrap();
        assert!(ids.iter().all(|id| *id > base), "{ids:?} above {base}");
        classes.insert(ids[0] % 3);
        checker.record_unordered("after", ids);
    }
    assert_eq!(classes.len(), 3);
    pool.close().await;
    drop(pool);
    checker.assert_clean();
    assert_eq!(checker.distinct(), 50 + 48);
    dbs.until_idle().await;
    dbs.drop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickets_grow_plans_then_applies_on_mariadb() {
    grow_through_the_binary(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickets_grow_plans_then_applies_on_postgres() {
    grow_through_the_binary(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickets_grow_refuses_bad_input_and_changes_nothing() {
    let dbs = Databases::new(true).await;
    for k in 1..=2 {
        let server = TicketServer::connect(&dbs.urls[k - 1], config(2, k as u32))
            .await
            .unwrap();
        server.next(3).await.unwrap();
        server.close().await;
    }
    dbs.until_idle().await;
    let before = dbs.states().await;

    let err = fails(&grow_args(&dbs.urls, &["--from", "3"]));
    assert!(err.contains("needs more than 3"), "{err}");
    let err = fails(&grow_args(&dbs.urls, &["--from", "2", "--to", "4"]));
    assert!(err.contains("--to 4 but --servers lists 3"), "{err}");
    let err = fails(&grow_args(&dbs.urls[..2], &["--from", "2", "--yes"]));
    assert!(err.contains("needs more than 2"), "{err}");
    let mut down = dbs.urls[..2].to_vec();
    down.push("mysql://root:secret@127.0.0.1:1/nowhere".into());
    let err = fails(&grow_args(&down, &["--from", "2", "--yes"]));
    assert!(
        err.contains("mysql://root:***@127.0.0.1:1/nowhere")
            && !err.contains("secret")
            && err.contains("nothing was changed"),
        "{err}"
    );
    let err = fails(&grow_args(
        &["sqlite://x.db".to_string(), dbs.urls[1].clone()],
        &["--from", "1", "--yes"],
    ));
    assert!(err.contains("SQLite is not a ticket server"), "{err}");
    dbs.until_idle().await;

    // A server still connected (a snowdrift server left running): refused, nothing changed.
    let running = TicketServer::connect(&dbs.urls[0], config(2, 1))
        .await
        .unwrap();
    let err = fails(&grow_args(&dbs.urls, &["--from", "2", "--yes"]));
    assert!(
        err.contains("other session") && err.contains("nothing was changed"),
        "{err}"
    );
    running.next(1).await.unwrap();
    running.close().await;
    dbs.until_idle().await;
    let mut after = dbs.states().await;
    // The running server took 1 ticket: its value moved by one step of its class.
    assert_eq!(after[0].1, before[0].1 + 2);
    after[0].1 = before[0].1;
    assert_eq!(after, before, "nothing else changed");
    dbs.drop_all().await;
}
