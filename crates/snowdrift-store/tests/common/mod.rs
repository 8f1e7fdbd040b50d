//! Helpers shared by the store's integration tests: database URLs, unique table names, raw
//! SQL for states the API refuses to create.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::AssertSqlSafe;

/// The URL of a backend: `sqlite` (a file in a per-process temp dir), `postgres` or `mysql`
/// (`SNOWDRIFT_TEST_POSTGRES_URL` / `SNOWDRIFT_TEST_MYSQL_URL` override the local defaults).
pub fn url(backend: &str) -> String {
    match backend {
        "sqlite" => {
            let dir =
                std::env::temp_dir().join(format!("snowdrift-store-test-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            format!("sqlite://{}/segments.db", dir.display())
        }
        "postgres" => std::env::var("SNOWDRIFT_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://root:root@127.0.0.1:5432/test".into()),
        "mysql" => std::env::var("SNOWDRIFT_TEST_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into()),
        _ => unreachable!(),
    }
}

/// A table name no other test (or earlier run) uses.
pub fn table(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "t_{name}_{}_{}_{}",
        std::process::id(),
        nanos,
        N.fetch_add(1, Ordering::SeqCst)
    )
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
