//! Helpers shared by the store's integration tests: service URLs, unique table names, and
//! raw access to a backend for states the API refuses to create.
#![allow(dead_code)] // each test binary uses a different subset

use snowdrift_testkit::urls;
use sqlx::AssertSqlSafe;

/// The URL of a backend: `sqlite` (a file in a per-process temp dir), or `postgres`,
/// `mysql`, `redis`, `zookeeper` from `snowdrift_testkit::urls` (`SNOWDRIFT_TEST_<BACKEND>`
/// overrides the local default).
pub fn url(backend: &str) -> String {
    match backend {
        "sqlite" => format!("sqlite://{}/segments.db", scratch().display()),
        "postgres" => urls::postgres(),
        "mysql" => urls::mysql(),
        "redis" => urls::redis(),
        "zookeeper" => urls::zookeeper(),
        _ => unreachable!("no test backend {backend}"),
    }
}

/// This test process's scratch directory, for SQLite files: under the target directory
/// (cargo's scratch space for integration tests), one per process, removed when the process
/// exits (an `atexit` hook: the test harness exits normally whether the test passed or not).
pub fn scratch() -> std::path::PathBuf {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        // SAFETY: registers a plain `extern "C" fn` without arguments, as atexit expects.
        unsafe {
            libc::atexit(remove_scratch);
        }
    });
    let dir = scratch_path();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn scratch_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("snowdrift-store-test-{}", std::process::id()))
}

extern "C" fn remove_scratch() {
    let _ = std::fs::remove_dir_all(scratch_path());
}

/// A table name no other test (or earlier run) uses.
pub fn table(name: &str) -> String {
    snowdrift_testkit::unique_name(&format!("t_{name}"))
}

/// Runs raw SQL next to the store, for setting up states the API refuses to create.
pub async fn raw(backend: &str, sql: String) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url(backend)).await.unwrap();
    sqlx::query(AssertSqlSafe(sql))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// Sets a tag's `max_id` behind the store's back (the API only moves it forward by steps).
pub async fn set_max_id(backend: &str, table: &str, tag: &str, max_id: i64) {
    match backend {
        "redis" => {
            let mut conn = redis_conn().await;
            let _: () = redis::cmd("HSET")
                .arg(format!("{table}:tag:{tag}"))
                .arg("max_id")
                .arg(max_id)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        "zookeeper" => {
            let zk = zk().await;
            let path = format!("/{table}/{tag}");
            let (data, stat) = zk.get_data(&path).await.unwrap();
            let mut json: serde_json::Value = serde_json::from_slice(&data).unwrap();
            json["max_id"] = max_id.into();
            zk.set_data(
                &path,
                &serde_json::to_vec(&json).unwrap(),
                Some(stat.version),
            )
            .await
            .unwrap();
        }
        sql => {
            raw(
                sql,
                format!("UPDATE {table} SET max_id = {max_id} WHERE biz_tag = '{tag}'"),
            )
            .await
        }
    }
}

/// Removes what a passing test left in a backend: its table, keys or znodes.
pub async fn drop_table(backend: &str, table: &str) {
    match backend {
        "redis" => {
            let mut conn = redis_conn().await;
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{table}:*"))
                .query_async(&mut conn)
                .await
                .unwrap();
            if !keys.is_empty() {
                let _: () = redis::cmd("DEL")
                    .arg(keys)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
            }
        }
        "zookeeper" => {
            let zk = zk().await;
            let root = format!("/{table}");
            for child in zk.list_children(&root).await.unwrap() {
                zk.delete(&format!("{root}/{child}"), None).await.unwrap();
            }
            zk.delete(&root, None).await.unwrap();
        }
        sql => raw(sql, format!("DROP TABLE {table}")).await,
    }
}

async fn redis_conn() -> redis::aio::MultiplexedConnection {
    redis::Client::open(url("redis"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn zk() -> zookeeper_client::Client {
    let cluster = url("zookeeper");
    let cluster = cluster.trim_start_matches("zookeeper://");
    zookeeper_client::Client::connect(cluster).await.unwrap()
}
