//! `snowdrift import uidgenerator`: Baidu UidGenerator's WORKER_NODE rows on MariaDB, as its
//! DisposableWorkerIdAssigner leaves them (a row per start), carried to marks on snowdrift's
//! SQL registry on PostgreSQL, under UidGenerator's custom layout.

use std::time::{SystemTime, UNIX_EPOCH};

use snowdrift_store::worker::{Mark, WorkerRegistry};
use snowdrift_testkit::unique_name;

use super::{Db, args, fails, ids_of, ok};
use crate::common::{Served, serve_command};

/// UidGenerator's WORKER_NODE.sql.
pub(super) const WORKER_NODE: &str = "CREATE TABLE WORKER_NODE (
  ID BIGINT NOT NULL AUTO_INCREMENT COMMENT 'auto increment id',
  HOST_NAME VARCHAR(64) NOT NULL COMMENT 'host name',
  PORT VARCHAR(64) NOT NULL COMMENT 'port',
  TYPE INT NOT NULL COMMENT 'node type: ACTUAL or CONTAINER',
  LAUNCH_DATE DATE NOT NULL COMMENT 'launch date',
  MODIFIED TIMESTAMP NOT NULL COMMENT 'modified time',
  CREATED TIMESTAMP NOT NULL COMMENT 'created time',
  PRIMARY KEY(ID)
) COMMENT='DB WorkerID Assigner for UID Generator', ENGINE = INNODB";

/// The layout the test's UidGenerator runs (its Spring properties), and its epoch:
/// 2020-01-01 at midnight in +08:00.
pub(super) const FLAGS: [&str; 8] = [
    "--time-bits",
    "30",
    "--worker-bits",
    "20",
    "--seq-bits",
    "13",
    "--epoch-str",
    "2020-01-01",
];
const EPOCH_S: u64 = 1_577_808_000;

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A UidGenerator ID (`BitsAllocator.allocate`).
pub(super) fn uid(second: u64, worker: u64, seq: u64) -> u64 {
    ((second - EPOCH_S) << 33) | (worker << 13) | seq
}

fn config(dir: &std::path::Path, registry: &str, ns: &str, layout: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{}.toml", unique_name("uid")));
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
             [worker]\nregistry = \"sql\"\nurl = \"{registry}\"\nid = 3\nnamespace = \"{ns}\"\n\n\
             [[generator]]\nname = \"uid\"\nkind = \"snowflake\"\n{layout}\n",
            dir.display()
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uidgenerator_worker_ids_get_marks_above_every_id_it_issued() {
    let db = Db::new(true, "uid_imp").await;
    db.exec(WORKER_NODE).await;
    // Five starts, as DisposableWorkerIdAssigner inserts them; then a row whose ID is above
    // the 20 worker bits (UidGenerator refused to start with it).
    for i in 0..5 {
        db.exec(&format!(
            "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) \
             VALUES ('10.1.0.{i}', '{}-{}', 2, CURDATE(), NOW(), NOW())",
            now_ms(),
            i * 7919
        ))
        .await;
    }
    db.exec("INSERT INTO WORKER_NODE (ID, HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES (1048576, '10.1.0.9', '1-1', 2, CURDATE(), NOW(), NOW())").await;
    let registry_db = Db::new(false, "uid_reg").await;
    let ns = unique_name("uid_ns");
    let dir = std::env::temp_dir().join(unique_name("uid-import"));
    std::fs::create_dir_all(&dir).unwrap();
    let same = config(
        &dir,
        &registry_db.url,
        &ns,
        "bits = \"time:30,worker:20,seq:13\"\nunit = \"1s\"\nepoch = \"2019-12-31T16:00:00Z\"",
    );
    let import = |config: &std::path::Path, extra: &[&str]| {
        let mut a = args(&["import", "uidgenerator", "--source", &db.url]);
        a.extend(args(&FLAGS));
        a.extend(args(&["--config", config.to_str().unwrap()]));
        a.extend(args(extra));
        a
    };
    let registry = WorkerRegistry::connect(&registry_db.url, &format!("{ns}_uid"))
        .await
        .unwrap();

    // What UidGenerator issued, up to this second, under each of its worker IDs.
    let second = now_ms() / 1000;
    let old: Vec<u64> = (1..=5).map(|w| uid(second, w, 8191)).collect();

    let plan = ok(&import(&same, &[]));
    for needle in [
        "6 WORKER_NODE row(s)",
        "keeps UidGenerator's layout",
        "10.1.0.2",
        "row ID 1048576",
        "Plan only",
    ] {
        assert!(plan.contains(needle), "{needle:?} in:\n{plan}");
    }
    for w in 1..=5 {
        assert_eq!(
            registry.read_mark(w).await.unwrap(),
            None,
            "a plan writes nothing"
        );
    }
    let applied = ok(&import(&same, &["--apply"]));
    assert!(applied.contains("Applied"), "{applied}");
    for w in 1..=5 {
        let mark = Mark::from_stored(registry.read_mark(w).await.unwrap().unwrap());
        assert!(
            mark.ms > second * 1000 + 999,
            "worker {w}: mark {} is past the second",
            mark.ms
        );
        assert_eq!(mark.ms % 1000, 0, "at a second");
    }
    assert_eq!(
        registry.read_mark(0).await.unwrap(),
        None,
        "row IDs start at 1"
    );
    let again = ok(&import(&same, &["--apply"]));
    assert!(again.contains("Nothing to change"), "{again}");

    // A generator of another layout: the migrate check is printed, and an unsafe one refused.
    let wider = config(
        &dir,
        &registry_db.url,
        &unique_name("uid_ns2"),
        "bits = \"time:39,worker:12,seq:12\"\nunit = \"1ms\"\nepoch = \"2019-12-31T16:00:00Z\"",
    );
    let plan = ok(&import(&wider, &[]));
    assert!(
        plan.contains("snowdrift layout migrate says") && plan.contains("verdict   SAFE"),
        "{plan}"
    );
    let below = config(
        &dir,
        &registry_db.url,
        &unique_name("uid_ns3"),
        "bits = \"time:41,worker:10,seq:12\"\nunit = \"1ms\"\nepoch = \"2026-01-01\"",
    );
    let e = fails(&import(&below, &["--apply"]));
    assert!(e.contains("unsafe") && e.contains("layout migrate"), "{e}");

    let mut cmd = serve_command();
    cmd.arg("--config").arg(&same);
    let served = Served::start(cmd);
    served.wait_ready();
    let (status, body) = served.get("/v1/ids/uid?count=500", None);
    assert_eq!(status, 200, "{body}");
    let ours = ids_of(&body);
    let top = old.iter().max().unwrap();
    for id in &ours {
        assert_eq!((id >> 13) & ((1 << 20) - 1), 3, "worker 3");
        assert!(id > top, "{id} is not above UidGenerator's {top}");
    }
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
    db.drop_it().await;
    registry_db.drop_it().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_uidgenerator_source_is_refused_and_nothing_is_written() {
    let registry_db = Db::new(false, "uid_bad_reg").await;
    let ns = unique_name("uid_bad");
    let import = |source: &str, extra: &[&str]| {
        let mut a = args(&["import", "uidgenerator", "--source", source]);
        a.extend(args(&FLAGS));
        a.extend(args(&[
            "--registry",
            &registry_db.url,
            "--generator",
            "uid",
            "--namespace",
            &ns,
            "--apply",
        ]));
        a.extend(args(extra));
        a
    };
    let db = Db::new(true, "uid_bad").await;
    // Not UidGenerator's table.
    db.exec("CREATE TABLE WORKER_NODE (ID BIGINT PRIMARY KEY, HOST VARCHAR(64))")
        .await;
    let e = fails(&import(&db.url, &[]));
    assert!(e.contains("WORKER_NODE") && e.contains("HOST_NAME"), "{e}");
    db.exec("DROP TABLE WORKER_NODE").await;
    db.exec(WORKER_NODE).await;
    db.exec("INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) VALUES ('10.1.0.1', '1-1', 2, CURDATE(), NOW(), NOW()), ('10.1.0.2', '1-2', 2, CURDATE(), NOW(), NOW())").await;
    // Bits UidGenerator itself refuses.
    let mut bad_bits = args(&[
        "import",
        "uidgenerator",
        "--source",
        &db.url,
        "--time-bits",
        "30",
        "--worker-bits",
        "20",
        "--seq-bits",
        "12",
    ]);
    bad_bits.extend(args(&[
        "--registry",
        &registry_db.url,
        "--generator",
        "uid",
    ]));
    assert!(fails(&bad_bits).contains("not 64"));
    // Worker ID 2 carries a mark a snowdrift node wrote under another layout: its record
    // cannot hold both, so the whole import is refused.
    let registry = WorkerRegistry::connect(&registry_db.url, &format!("{ns}_uid"))
        .await
        .unwrap();
    registry
        .claim(2, "other-node", std::time::Duration::from_secs(5))
        .await
        .unwrap();
    registry
        .write_layout(2, "other-node", "time:41,worker:10,seq:12/1/1288834974657")
        .await
        .unwrap();
    registry
        .write_mark(2, "other-node", now_ms())
        .await
        .unwrap();
    registry.release(2, "other-node").await.unwrap();
    let e = fails(&import(&db.url, &[]));
    assert!(e.contains("worker ID 2") && e.contains("another"), "{e}");
    assert_eq!(
        registry.read_mark(1).await.unwrap(),
        None,
        "nothing written, worker 1 either"
    );
    // No database there.
    fails(&import("mysql://root@127.0.0.1:1/uid", &[]));
    assert_eq!(registry.read_mark(1).await.unwrap(), None);
    db.drop_it().await;
    registry_db.drop_it().await;
}
