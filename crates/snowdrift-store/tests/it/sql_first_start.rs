//! Nodes starting at the same instant against a fresh database: every one of them creates
//! the store's table "if not exists" at once, and none may fail for it.

use snowdrift_store::segment::SqlSegmentStore;
use snowdrift_store::worker::sql::SqlRegistry;

/// Starts 8 connections at once on a table nobody made yet.
async fn race(backend: &str) {
    let url = crate::common::url(backend);
    let table = crate::common::table("first_start");
    let segments: Vec<_> = (0..8)
        .map(|_| {
            let (url, table) = (url.clone(), table.clone());
            tokio::spawn(async move { SqlSegmentStore::connect(&url, &table).await.map(|_| ()) })
        })
        .collect();
    let namespace = crate::common::table("first_start_workers");
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let (url, ns) = (url.clone(), namespace.clone());
            tokio::spawn(async move { SqlRegistry::connect(&url, &ns).await.map(|_| ()) })
        })
        .collect();
    for (i, task) in segments.into_iter().chain(workers).enumerate() {
        if let Err(e) = task.await.unwrap() {
            panic!("{backend}: connection {i} failed on first start: {e}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_nodes_starting_at_once_all_connect() {
    race("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mariadb_nodes_starting_at_once_all_connect() {
    race("mysql").await;
}
