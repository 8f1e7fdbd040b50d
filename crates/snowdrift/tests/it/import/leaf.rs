//! `snowdrift import leaf`: Leaf's leaf_alloc on MariaDB, adopted as snowdrift's store, and
//! Leaf's snowflake workers in ZooKeeper (persistent sequential znodes with their last
//! report, one of them from a host whose clock ran ahead) carried to marks on snowdrift's
//! ZooKeeper registry.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use snowdrift_store::worker::{Mark, WorkerRegistry};
use snowdrift_testkit::{unique_name, urls};
use zookeeper_client as zk;

use super::{Db, args, fails, ids_of, ok, scalar};
use crate::common::{Served, serve_command};

/// Leaf's scripts/leaf_alloc.sql.
const LEAF_ALLOC: &str = "CREATE TABLE leaf_alloc (
  biz_tag VARCHAR(128) NOT NULL DEFAULT '',
  max_id BIGINT(20) NOT NULL DEFAULT '1',
  step INT(11) NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
) ENGINE=InnoDB";

const TWEPOCH: u64 = 1_288_834_974_657;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A Leaf snowflake ID (`SnowflakeIDGenImpl`).
fn leaf_id(t: u64, worker: u64, seq: u64) -> u64 {
    ((t - TWEPOCH) << 22) | (worker << 12) | seq
}

async fn zk_client() -> zk::Client {
    let url = urls::zookeeper();
    zk::Client::connect(url.trim_start_matches("zookeeper://"))
        .await
        .unwrap()
}

async fn create(client: &zk::Client, path: &str, data: &[u8], mode: zk::CreateMode) -> String {
    match client
        .create(path, data, &mode.with_acls(zk::Acls::anyone_all()))
        .await
    {
        Ok((_, seq)) if mode == zk::CreateMode::PersistentSequential => format!("{path}{seq}"),
        Ok(_) | Err(zk::Error::NodeExists) => path.to_string(),
        Err(e) => panic!("{path}: {e}"),
    }
}

async fn delete_tree(client: &zk::Client, root: &str) {
    let mut all = vec![root.to_string()];
    let mut i = 0;
    while i < all.len() {
        if let Ok(children) = client.list_children(&all[i]).await {
            let parent = all[i].clone();
            all.extend(children.into_iter().map(|c| format!("{parent}/{c}")));
        }
        i += 1;
    }
    for path in all.iter().rev() {
        client.delete(path, None).await.ok();
    }
}

/// Leaf's servers as their znodes leave them: `(address, last report)` for worker IDs 0,
/// 1, 2 in order of start.
async fn leaf_workers(client: &zk::Client, name: &str, reports: &[(&str, u64)]) {
    create(client, "/snowflake", b"", zk::CreateMode::Persistent).await;
    create(
        client,
        &format!("/snowflake/{name}"),
        b"",
        zk::CreateMode::Persistent,
    )
    .await;
    let forever = format!("/snowflake/{name}/forever");
    create(client, &forever, b"", zk::CreateMode::Persistent).await;
    for (address, ts) in reports {
        let (ip, port) = address.split_once(':').unwrap();
        let data = format!("{{\"ip\":\"{ip}\",\"port\":\"{port}\",\"timestamp\":{ts}}}");
        create(
            client,
            &format!("{forever}/{address}-"),
            data.as_bytes(),
            zk::CreateMode::PersistentSequential,
        )
        .await;
    }
}

/// Whether Leaf's table has snowdrift's template columns.
async fn template_columns(db: &Db) -> i64 {
    let sql = format!(
        "SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{}' AND TABLE_NAME = 'leaf_alloc' AND COLUMN_NAME = 'id_template'",
        db.name
    );
    scalar(&db.url, &sql).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_segments_are_adopted_and_its_workers_marked_above_every_leaf_id() {
    let db = Db::new(true, "leaf_imp").await;
    db.exec(LEAF_ALLOC).await;
    db.exec("INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')").await;
    // Leaf's claims (updateMaxIdAndGetLeafAlloc): its IDs are [max_id - step, max_id).
    for _ in 0..3 {
        db.exec("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = 'leaf-segment-test'")
            .await;
    }
    let leaf_max = scalar(
        &db.url,
        "SELECT CAST(max_id AS SIGNED) FROM leaf_alloc WHERE biz_tag = 'leaf-segment-test'",
    )
    .await;
    assert_eq!(leaf_max, 6001);

    let client = zk_client().await;
    let name = unique_name("leafimp");
    let now = now_ms();
    // Worker 1's host ran 2 s ahead of this one's clock.
    let reports = [
        ("10.0.0.1:8080", now - 60_000),
        ("10.0.0.2:8080", now + 2_000),
        ("10.0.0.3:8080", now - 30_000),
    ];
    leaf_workers(&client, &name, &reports).await;
    // What each Leaf server may have issued: up to 3 s past its last report.
    let leaf_ids: Vec<(u64, u64)> = reports
        .iter()
        .enumerate()
        .flat_map(|(w, (_, ts))| {
            let w = w as u64;
            [(w, leaf_id(ts + 3_000, w, 4095)), (w, leaf_id(*ts, w, 0))]
        })
        .collect();

    let ns = unique_name("leafimp_ns");
    let dir = std::env::temp_dir().join(unique_name("leaf-import"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("snowdrift.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"{}\"\n\n[worker]\nregistry = \"zookeeper\"\nurl = \"{}\"\nid = 1\nnamespace = \"{ns}\"\n\n\
             [[generator]]\nname = \"leafsf\"\nkind = \"snowflake\"\nlayout = \"twitter\"\nrandom_sequence_start = 100\n",
            db.url,
            urls::zookeeper()
        ),
    )
    .unwrap();
    let import = |extra: &[&str]| {
        let mut a = args(&[
            "import",
            "leaf",
            "--source",
            &db.url,
            "--zookeeper",
            &urls::zookeeper(),
            "--leaf-name",
            &name,
            "--config",
            config.to_str().unwrap(),
        ]);
        a.extend(args(extra));
        a
    };
    let registry = WorkerRegistry::connect(&urls::zookeeper(), &format!("{ns}_leafsf"))
        .await
        .unwrap();
    let plan = ok(&import(&[]));
    for needle in [
        "leaf-segment-test",
        "Adopted",
        "keep",
        "10.0.0.2:8080",
        "set",
        "Plan only",
    ] {
        assert!(plan.contains(needle), "{needle:?} in:\n{plan}");
    }
    for w in 0..3 {
        assert_eq!(
            registry.read_mark(w).await.unwrap(),
            None,
            "a plan writes no mark"
        );
    }
    assert_eq!(
        template_columns(&db).await,
        0,
        "a plan leaves Leaf's table as it is"
    );

    let applied = ok(&import(&["--apply"]));
    assert!(applied.contains("Applied"), "{applied}");
    for (w, (_, ts)) in reports.iter().enumerate() {
        let mark = Mark::from_stored(registry.read_mark(w as u64).await.unwrap().unwrap());
        assert_eq!(
            mark.ms,
            ts + 3_001,
            "worker {w}: the ms after its last report + 3 s"
        );
        assert_eq!(
            registry.read_layout(w as u64).await.unwrap().as_deref(),
            Some("time:41,datacenter:5,worker:5,seq:12/1/1288834974657"),
            "the generator's own layout: Leaf's IDs are twitter's"
        );
    }
    assert!(
        registry.holders().await.unwrap().is_empty(),
        "every lease given back"
    );
    assert_eq!(template_columns(&db).await, 1);
    let again = ok(&import(&["--apply"]));
    assert!(again.contains("Nothing to change"), "{again}");

    let mut cmd = serve_command();
    cmd.arg("--config").arg(&config);
    let served = Served::start(cmd);
    served.wait_ready();
    let started = now_ms();
    assert!(
        started >= reports[1].1 + 3_001,
        "worker 1 waited for its mark: ready at {started}, mark {}",
        reports[1].1 + 3_001
    );
    let mut ours = Vec::new();
    for _ in 0..5 {
        let (status, body) = served.get("/v1/ids/leafsf?count=200", None);
        assert_eq!(status, 200, "{body}");
        ours.extend(ids_of(&body));
    }
    let leaf_top = leaf_ids.iter().map(|(_, id)| *id).max().unwrap();
    for id in &ours {
        assert!(
            *id > leaf_top,
            "{id} is not above every Leaf ID ({leaf_top})"
        );
        assert_eq!((id >> 12) & 1023, 1, "worker 1");
    }
    let (status, body) = served.get("/v1/ids/leaf-segment-test?count=100", None);
    assert_eq!(status, 200, "{body}");
    assert!(
        ids_of(&body).iter().all(|id| *id >= leaf_max as u64),
        "{body}"
    );

    // While the server holds worker 1, a run again changes nothing and passes; but a Leaf
    // server still reporting under worker 1 (a later timestamp) needs its mark raised under
    // a live holder: refused, and nothing is written.
    assert!(ok(&import(&["--apply"])).contains("Nothing to change"));
    let forever = format!("/snowflake/{name}/forever");
    let mut children = client.list_children(&forever).await.unwrap();
    children.sort();
    let later = now_ms() + 60_000;
    client
        .set_data(
            &format!("{forever}/{}", children[1]),
            format!("{{\"ip\":\"10.0.0.2\",\"port\":\"8080\",\"timestamp\":{later}}}").as_bytes(),
            None,
        )
        .await
        .unwrap();
    let before: Vec<Option<u64>> = vec![
        registry.read_mark(0).await.unwrap(),
        registry.read_mark(1).await.unwrap(),
        registry.read_mark(2).await.unwrap(),
    ];
    let e = fails(&import(&["--apply"]));
    assert!(e.contains("worker ID 1") && e.contains("held"), "{e}");
    let after: Vec<Option<u64>> = vec![
        registry.read_mark(0).await.unwrap(),
        registry.read_mark(1).await.unwrap(),
        registry.read_mark(2).await.unwrap(),
    ];
    assert_eq!(before, after, "nothing written");
    drop(served);
    tokio::time::sleep(Duration::from_millis(10)).await;

    delete_tree(&client, &format!("/snowflake/{name}")).await;
    delete_tree(&client, &format!("/{ns}_leafsf")).await;
    std::fs::remove_dir_all(&dir).ok();
    db.drop_it().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_leaf_source_is_refused_and_nothing_is_written() {
    let ns = unique_name("leafbad_ns");
    let registry_args = |extra: &[&str]| {
        let mut a = args(&[
            "--registry",
            &urls::zookeeper(),
            "--generator",
            "sf",
            "--namespace",
            &ns,
            "--apply",
        ]);
        a.extend(args(extra));
        a
    };
    // leaf_alloc with a 32-bit max_id: not the table snowdrift serves.
    let db = Db::new(true, "leaf_bad").await;
    db.exec("CREATE TABLE leaf_alloc (biz_tag VARCHAR(128) PRIMARY KEY, max_id INT NOT NULL, step INT NOT NULL, description VARCHAR(256), update_time TIMESTAMP)").await;
    let mut a = args(&["import", "leaf", "--source", &db.url]);
    a.push("--apply".into());
    let e = fails(&a);
    assert!(e.contains("max_id") && e.contains("BIGINT"), "{e}");

    // A znode whose data is not Leaf's report.
    let client = zk_client().await;
    let name = unique_name("leafbad");
    leaf_workers(&client, &name, &[("10.0.0.9:8080", now_ms())]).await;
    create(
        &client,
        &format!("/snowflake/{name}/forever/10.0.0.8:8080-"),
        b"not json",
        zk::CreateMode::PersistentSequential,
    )
    .await;
    let mut a = args(&[
        "import",
        "leaf",
        "--zookeeper",
        &urls::zookeeper(),
        "--leaf-name",
        &name,
    ]);
    a.extend(registry_args(&[]));
    let e = fails(&a);
    assert!(
        e.contains(&format!("/snowflake/{name}/forever/10.0.0.8:8080-")) && e.contains("timestamp"),
        "{e}"
    );

    // No ZooKeeper there.
    let mut a = args(&[
        "import",
        "leaf",
        "--zookeeper",
        "zookeeper://127.0.0.1:1",
        "--leaf-name",
        &name,
    ]);
    a.extend(registry_args(&[]));
    fails(&a);

    let registry = WorkerRegistry::connect(&urls::zookeeper(), &format!("{ns}_sf"))
        .await
        .unwrap();
    for w in 0..2 {
        assert_eq!(
            registry.read_mark(w).await.unwrap(),
            None,
            "nothing written"
        );
    }
    let columns = scalar(
        &db.url,
        &format!("SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{}' AND TABLE_NAME = 'leaf_alloc'", db.name),
    )
    .await;
    assert_eq!(columns, 5, "Leaf's table left as it was");
    delete_tree(&client, &format!("/snowflake/{name}")).await;
    delete_tree(&client, &format!("/{ns}_sf")).await;
    db.drop_it().await;
}
