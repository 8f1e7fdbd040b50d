//! `snowdrift_id` inside PostgreSQL and MariaDB with the servers' worker registry elsewhere
//! (etcd, ZooKeeper, Redis, a file registry): the block is reserved there, no server
//! claims it, and uninstall hands it back with marks above the database's IDs.

use std::collections::HashMap;
use std::time::Duration;

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::SnowflakeGenerator;
use snowdrift_core::layout::Layout;
use snowdrift_store::Error;
use snowdrift_store::sql_functions;
use snowdrift_store::worker::{LeaseConfig, Mark, WorkerNode, WorkerRegistry, WorkerSource};
use snowdrift_testkit::{unique_name, urls};
use sqlx::Connection;

use crate::sql_functions_db::{BOTH, Db, Kind};

/// Three worker bits: a space of 8, so the servers fill it quickly.
fn layout() -> Layout {
    Layout::from_spec("time:41,worker:3,seq:12", 1, 1_288_834_974_657).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_and_mariadb_reserve_their_block_in_etcd_zookeeper_redis_and_files() {
    let dir = std::env::temp_dir().join(unique_name("sdx_files"));
    for kind in BOTH {
        for registry_url in [
            urls::etcd(),
            urls::zookeeper(),
            urls::redis(),
            format!("file://{}", dir.display()),
        ] {
            one_registry(kind, &registry_url).await;
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

async fn one_registry(kind: Kind, registry_url: &str) {
    let db = Db::empty_with(kind, layout()).await;
    let at = format!("{kind:?} with {registry_url}");
    let (url, ns, layout) = (db.url.clone(), db.table.clone(), db.layout.clone());
    let schema = (kind == Kind::Postgres).then_some(db.schema.as_str());
    let mut options = db.options(3);
    options.registry_url = Some(registry_url.to_string());
    options.window = Duration::from_millis(100);
    let installed = sql_functions::install(&url, &options).await.unwrap();
    let mut block = installed.workers.clone();
    block.sort_unstable();
    assert_eq!(block, vec![5, 6, 7], "{at}: the highest free IDs");
    // No table of the servers' was made in the database: the reservation is elsewhere.
    assert!(!db.has_table().await, "{at}");

    // The database issues under its whole block: three sessions, each in a transaction
    // left open, hold three worker IDs.
    let mut sessions = Vec::new();
    let mut last: HashMap<u64, u64> = HashMap::new();
    for _ in 0..3 {
        let mut s = db.session().await;
        sqlx::raw_sql("BEGIN").execute(&mut s).await.unwrap();
        for id in db.many(&mut s, 1000).await.unwrap() {
            let w = db.worker_of(id);
            assert!(block.contains(&w), "{at}: ID under worker {w}");
            let e = last.entry(w).or_default();
            *e = (*e).max(id as u64);
        }
        sessions.push(s);
    }
    assert_eq!(last.len(), 3, "{at}: {last:?}");
    for mut s in sessions {
        sqlx::raw_sql("COMMIT").execute(&mut s).await.unwrap();
        s.close().await.unwrap();
    }

    // The registry lists them as the database's, never expiring.
    let registry = WorkerRegistry::connect(registry_url, &ns).await.unwrap();
    let listed = registry.list().await.unwrap();
    for w in &block {
        let e = listed
            .entries
            .iter()
            .find(|e| e.worker_id == *w)
            .unwrap_or_else(|| panic!("{at}: worker {w} not listed"));
        assert_eq!(e.holder, installed.holder, "{at}");
        assert!(e.never_expires, "{at}: {e:?}");
        assert!(
            e.problem.as_deref().unwrap_or("").contains("sql uninstall"),
            "{at}: {e:?}"
        );
    }
    let status = sql_functions::status(&url, schema, Some(registry_url))
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
        assert!(w < 5, "{at}: a server got worker ID {w}, reserved");
        servers.push((w, holder));
    }
    match registry.claim_ready(8, "srv-x", ttl, 0).await {
        Err(Error::WorkersExhausted { space: 8, holders }) => {
            assert!(holders.iter().any(|(_, h)| *h == installed.holder));
        }
        other => panic!("{at}: {other:?}"),
    }

    // Uninstall writes marks at or above the database's last IDs and frees the block.
    let gone = sql_functions::uninstall(
        &url,
        "g",
        schema,
        Duration::from_secs(5),
        Some(registry_url),
    )
    .await
    .unwrap();
    assert_eq!(gone.released.len(), 3, "{at}: {gone:?}");
    for (w, id) in &last {
        let stored = registry.read_mark(*w).await.unwrap().expect("a mark");
        let id_ms = layout.decode(*id).unwrap().time_ms;
        assert!(
            Mark::from_stored(stored).ms >= id_ms,
            "{at}: worker {w}'s mark below the database's last ID"
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
    assert!(block.contains(&w), "{at}: node got {w}");
    let first = node.next_block(1).unwrap().first();
    assert!(
        first > last[&w],
        "{at}: the server's first ID under worker {w} is not above the database's"
    );
    node.shutdown().await.unwrap();
    for (w, holder) in servers {
        registry.release(w, &holder).await.unwrap();
    }
    db.drop().await;
}
