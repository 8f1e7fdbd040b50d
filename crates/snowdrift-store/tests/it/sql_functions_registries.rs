//! `snowdrift_id` inside PostgreSQL with the servers' worker registry elsewhere (etcd,
//! ZooKeeper, Redis, a file registry): the block is reserved there, no server claims it,
//! and uninstall hands it back with marks above the database's IDs.

use std::collections::HashMap;
use std::time::Duration;

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::{Layout, Role};
use snowdrift_store::Error;
use snowdrift_store::sql_functions::{self, InstallOptions};
use snowdrift_store::worker::{LeaseConfig, Mark, WorkerNode, WorkerRegistry, WorkerSource};
use snowdrift_testkit::{unique_name, urls};
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection, Row};

use crate::common;

/// Three worker bits: a space of 8, so the servers fill it quickly.
fn layout() -> Layout {
    Layout::from_spec("time:41,worker:3,seq:12", 1, 1_288_834_974_657).unwrap()
}

fn worker_of(layout: &Layout, id: u64) -> u64 {
    let d = layout.decode(id).unwrap();
    layout
        .fields()
        .iter()
        .zip(&d.values)
        .filter(|(f, _)| f.role() == Role::Node)
        .fold(0, |w, (f, v)| (w << f.bits()) | v)
}

async fn raw(url: &str, sql: String) {
    let mut c = PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reserves_its_block_in_etcd_zookeeper_redis_and_files() {
    let dir = std::env::temp_dir().join(unique_name("sdx_files"));
    for registry_url in [
        urls::etcd(),
        urls::zookeeper(),
        urls::redis(),
        format!("file://{}", dir.display()),
    ] {
        one_registry(&registry_url).await;
    }
    let _ = std::fs::remove_dir_all(dir);
}

async fn one_registry(registry_url: &str) {
    let url = common::url("postgres");
    let schema = common::table("sdx");
    let ns = common::table("sdxns");
    let layout = layout();
    raw(&url, format!("CREATE SCHEMA {schema}")).await;
    let mut options = InstallOptions::new("g", layout.clone(), ns.clone());
    options.schema = Some(schema.clone());
    options.registry_url = Some(registry_url.to_string());
    options.workers = 3;
    options.window = Duration::from_millis(100);
    let installed = sql_functions::install(&url, &options).await.unwrap();
    let mut block = installed.workers.clone();
    block.sort_unstable();
    assert_eq!(block, vec![5, 6, 7], "{registry_url}: the highest free IDs");
    // No table of the servers' was made in the database: the reservation is elsewhere.
    let mut c = PgConnection::connect(&url).await.unwrap();
    let table: Option<String> = sqlx::query_scalar("SELECT to_regclass($1)::text")
        .bind(&ns)
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(table, None, "{registry_url}");

    // The database issues under its whole block: three transactions open at once hold
    // three worker IDs.
    let mut sessions = Vec::new();
    let mut last: HashMap<u64, u64> = HashMap::new();
    for _ in 0..3 {
        let mut s = PgConnection::connect(&url).await.unwrap();
        sqlx::raw_sql("BEGIN").execute(&mut s).await.unwrap();
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT * FROM {schema}.snowdrift_ids('g', 1000)"
        )))
        .fetch_all(&mut s)
        .await
        .unwrap();
        for r in &rows {
            let id = r.try_get::<i64, _>(0).unwrap() as u64;
            let w = worker_of(&layout, id);
            assert!(block.contains(&w), "{registry_url}: ID under worker {w}");
            let e = last.entry(w).or_default();
            *e = (*e).max(id);
        }
        sessions.push(s);
    }
    assert_eq!(last.len(), 3, "{registry_url}: {last:?}");
    for mut s in sessions {
        sqlx::raw_sql("COMMIT").execute(&mut s).await.unwrap();
        s.close().await.unwrap();
    }
    c.close().await.unwrap();

    // The registry lists them as the database's, never expiring.
    let registry = WorkerRegistry::connect(registry_url, &ns).await.unwrap();
    let listed = registry.list().await.unwrap();
    for w in &block {
        let e = listed
            .entries
            .iter()
            .find(|e| e.worker_id == *w)
            .unwrap_or_else(|| panic!("{registry_url}: worker {w} not listed"));
        assert_eq!(e.holder, installed.holder, "{registry_url}");
        assert!(e.never_expires, "{registry_url}: {e:?}");
        assert!(
            e.problem.as_deref().unwrap_or("").contains("sql uninstall"),
            "{registry_url}: {e:?}"
        );
    }
    let status = sql_functions::status(&url, Some(&schema), Some(registry_url))
        .await
        .unwrap();
    assert!(status[0].reservation_checked && status[0].workers.iter().all(|w| w.reserved));

    // Servers fill the rest of the space and then find it full, never a reserved ID.
    let ttl = Duration::from_secs(5);
    let mut servers = Vec::new();
    for i in 0..5 {
        let holder = format!("srv-{i}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let w = registry.claim_ready(8, &holder, ttl, now).await.unwrap();
        assert!(
            w < 5,
            "{registry_url}: a server got worker ID {w}, reserved"
        );
        servers.push((w, holder));
    }
    match registry.claim_ready(8, "srv-x", ttl, 0).await {
        Err(Error::WorkersExhausted { space: 8, holders }) => {
            assert!(holders.iter().any(|(_, h)| *h == installed.holder));
        }
        other => panic!("{registry_url}: {other:?}"),
    }

    // Uninstall writes marks at or above the database's last IDs and frees the block.
    let gone = sql_functions::uninstall(
        &url,
        "g",
        Some(&schema),
        Duration::from_secs(5),
        Some(registry_url),
    )
    .await
    .unwrap();
    assert_eq!(gone.released.len(), 3, "{registry_url}: {gone:?}");
    for (w, id) in &last {
        let stored = registry.read_mark(*w).await.unwrap().expect("a mark");
        let id_ms = layout.decode(*id).unwrap().time_ms;
        assert!(
            Mark::from_stored(stored).ms >= id_ms,
            "{registry_url}: worker {w}'s mark below the database's last ID"
        );
    }
    let listed = registry.list().await.unwrap();
    assert!(listed.entries.iter().all(|e| !block.contains(&e.worker_id)));

    // A server that takes a freed ID starts above the database's IDs under it.
    let mut config = LeaseConfig::new(registry_url, WorkerSource::Lowest);
    config.namespace = ns.clone();
    config.ttl = Duration::from_secs(3);
    config.window = Duration::from_millis(200);
    let node = WorkerNode::start(
        config,
        SnowflakeGenerator::builder(layout.clone()),
        MonotonicClock::new(),
    )
    .await
    .unwrap();
    let w = node.epoch().worker_id();
    assert!(block.contains(&w), "{registry_url}: node got {w}");
    let first = node.next_block(1).unwrap().first();
    assert!(
        first > last[&w],
        "{registry_url}: the server's first ID under worker {w} is not above the database's"
    );
    node.shutdown().await.unwrap();
    for (w, holder) in servers {
        registry.release(w, &holder).await.unwrap();
    }
    raw(&url, format!("DROP SCHEMA {schema} CASCADE")).await;
}
