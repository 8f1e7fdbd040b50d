//! `snowdrift import` through the binary, one module per peer: the peer's state made with
//! its own schema and filled as it would have left it, the plan, `--apply`, `--apply` again
//! (nothing changes), a server on the result issuing nothing the peer issued, and each
//! refusal writing nothing.

mod leaf;
mod sonyflake;
mod targets;
mod tinyid;
mod uidgenerator;

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

use snowdrift_testkit::urls;
use sqlx::{AssertSqlSafe, Row};

pub fn snowdrift(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .stdin(Stdio::null())
        .env_remove("SNOWDRIFT_STORE__URL")
        .output()
        .unwrap()
}

/// Succeeds; its standard output.
pub fn ok(args: &[String]) -> String {
    let out = snowdrift(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Fails with one line on standard error, which is returned.
pub fn fails(args: &[String]) -> String {
    let out = snowdrift(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success(),
        "{args:?} should fail; it printed:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A database of the test's own on MariaDB or PostgreSQL, dropped with [`Db::drop_it`].
pub struct Db {
    admin: String,
    pub name: String,
    pub url: String,
    mysql: bool,
}

impl Db {
    pub async fn new(mysql: bool, prefix: &str) -> Self {
        let admin = if mysql {
            urls::mysql()
        } else {
            urls::postgres()
        };
        let name = snowdrift_testkit::unique_name(prefix);
        let (server, _) = admin.rsplit_once('/').unwrap();
        let url = format!("{server}/{name}");
        exec(&admin, &format!("CREATE DATABASE {name}")).await;
        Self {
            admin,
            name,
            url,
            mysql,
        }
    }

    pub async fn exec(&self, sql: &str) {
        exec(&self.url, sql).await;
    }

    pub async fn drop_it(self) {
        let sql = if self.mysql {
            format!("DROP DATABASE IF EXISTS {}", self.name)
        } else {
            format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)
        };
        exec(&self.admin, &sql).await;
    }
}

pub async fn exec(url: &str, sql: &str) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    for statement in sql.split(';').filter(|s| !s.trim().is_empty()) {
        sqlx::query(AssertSqlSafe(statement.to_string()))
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    pool.close().await;
}

pub async fn scalar(url: &str, sql: &str) -> i64 {
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

/// Every tag of a store's table, `(max_id, step)` by name, read without changing anything
/// (empty when there is no table).
pub async fn tags_of(url: &str, table: &str) -> BTreeMap<String, (i64, i64)> {
    let found = snowdrift_store::segment::inspect::inspect(url, table)
        .await
        .unwrap();
    found
        .tags
        .into_iter()
        .map(|t| (t.tag, (t.max_id, t.step)))
        .collect()
}

/// The IDs in a `{"ids": [...]}` answer.
pub fn ids_of(body: &str) -> Vec<u64> {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("no ids: {body}"))
        .iter()
        .map(|i| i.as_str().unwrap().parse().unwrap())
        .collect()
}
