//! `snowdrift import tinyid`: two Tinyid databases striped delta 2 (remainders 0 and 1),
//! claimed from as Tinyid's server claims, into a PostgreSQL store and a config file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use snowdrift_store::segment::{NewTag, SegmentStore};

use super::{Db, args, exec, fails, ids_of, ok, tags_of};
use crate::common::{Served, serve_command};

/// tinyid-server's db.sql, its two tables (MySQL/MariaDB).
pub(super) const SCHEMA: &str = "
CREATE TABLE tiny_id_info (
  id BIGINT NOT NULL AUTO_INCREMENT,
  biz_type VARCHAR(63) NOT NULL DEFAULT '',
  begin_id BIGINT NOT NULL DEFAULT 0,
  max_id BIGINT NOT NULL DEFAULT 0,
  step INT DEFAULT 0,
  delta INT NOT NULL DEFAULT 1,
  remainder INT NOT NULL DEFAULT 0,
  create_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  update_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  version BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (id),
  UNIQUE KEY uniq_biz_type (biz_type)
) ENGINE=InnoDB DEFAULT CHARSET=utf8;
CREATE TABLE tiny_id_token (
  id INT UNSIGNED NOT NULL AUTO_INCREMENT,
  token VARCHAR(255) NOT NULL DEFAULT '',
  biz_type VARCHAR(63) NOT NULL DEFAULT '',
  remark VARCHAR(255) NOT NULL DEFAULT '',
  create_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  update_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8";

/// The same tables on PostgreSQL, as Tinyid users port db.sql.
const PG_SCHEMA: &str = "
CREATE TABLE tiny_id_info (
  id BIGSERIAL PRIMARY KEY,
  biz_type VARCHAR(63) NOT NULL DEFAULT '' UNIQUE,
  begin_id BIGINT NOT NULL DEFAULT 0,
  max_id BIGINT NOT NULL DEFAULT 0,
  step INT DEFAULT 0,
  delta INT NOT NULL DEFAULT 1,
  remainder INT NOT NULL DEFAULT 0,
  create_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  update_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  version BIGINT NOT NULL DEFAULT 0);
CREATE TABLE tiny_id_token (
  id SERIAL PRIMARY KEY,
  token VARCHAR(255) NOT NULL DEFAULT '',
  biz_type VARCHAR(63) NOT NULL DEFAULT '',
  remark VARCHAR(255) NOT NULL DEFAULT '',
  create_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00',
  update_time TIMESTAMP NOT NULL DEFAULT '2010-01-01 00:00:00')";

const TOKEN: &str = "0f673adf80504e2eaa552f5d791b644c";
const LEGACY_TOKEN: &str = "legacy-only-7c1e";

/// A biz type's row as Tinyid's db.sql seeds one: begin_id = max_id.
pub(super) async fn biz(db: &Db, name: &str, step: i64, delta: i64, remainder: i64) {
    db.exec(&format!(
        "INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) \
         VALUES ('{name}', 1, 1, {step}, {delta}, {remainder}, 0)"
    ))
    .await;
}

/// `n` segments claimed as Tinyid's server claims them (`DbSegmentIdServiceImpl`: read the
/// row, move max_id by step where max_id and version are as read), and the IDs its client
/// hands out from each: `(max_id - step, max_id]`, those `≡ remainder (mod delta)`.
pub(super) async fn claim(db: &Db, name: &str, n: usize) -> Vec<i64> {
    let mut issued = Vec::new();
    for _ in 0..n {
        let row = |col: &str| {
            format!("SELECT CAST({col} AS SIGNED) FROM tiny_id_info WHERE biz_type = '{name}'")
        };
        let (max_id, step) = (
            super::scalar(&db.url, &row("max_id")).await,
            super::scalar(&db.url, &row("step")).await,
        );
        let (delta, remainder, version) = (
            super::scalar(&db.url, &row("delta")).await,
            super::scalar(&db.url, &row("remainder")).await,
            super::scalar(&db.url, &row("version")).await,
        );
        db.exec(&format!(
            "UPDATE tiny_id_info SET max_id = {}, update_time = NOW(), version = version + 1 \
             WHERE biz_type = '{name}' AND max_id = {max_id} AND version = {version}",
            max_id + step
        ))
        .await;
        issued.extend((max_id + 1..=max_id + step).filter(|id| id % delta == remainder));
    }
    issued
}

async fn token(db: &Db, token: &str, biz: &str) {
    db.exec(&format!(
        "INSERT INTO tiny_id_token (token, biz_type, remark) VALUES ('{token}', '{biz}', '1')"
    ))
    .await;
}

fn write_config(dir: &Path, store: &str) -> PathBuf {
    let path = dir.join("snowdrift.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"{store}\"\n\n[worker]\npath = \"{}\"\n",
            dir.join("workers").display()
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tinyid_biz_types_and_tokens_move_over_striped_databases() {
    let (db1, db2) = (
        Db::new(true, "tinyid_a").await,
        Db::new(true, "tinyid_b").await,
    );
    let target = Db::new(false, "tinyid_to").await;
    let mut issued: Vec<(&str, i64)> = Vec::new();
    for (db, remainder, claims) in [(&db1, 0, [3, 2, 1]), (&db2, 1, [5, 1, 2])] {
        db.exec(SCHEMA).await;
        for (name, n) in ["order", "user", "legacy"].into_iter().zip(claims) {
            biz(db, name, 100, 2, remainder).await;
            issued.extend(claim(db, name, n).await.into_iter().map(|id| (name, id)));
        }
        token(db, TOKEN, "order").await;
        token(db, TOKEN, "user").await;
    }
    token(&db2, LEGACY_TOKEN, "legacy").await;
    let distinct: BTreeSet<(&str, i64)> = issued.iter().copied().collect();
    assert_eq!(distinct.len(), issued.len(), "Tinyid's stripes issue apart");
    // snowdrift's store already has two of the tags: one below Tinyid (raised), one far
    // above it (kept: never lowered).
    let store = SegmentStore::connect(&target.url, "leaf_alloc")
        .await
        .unwrap();
    for (tag, claims) in [("user", 2), ("legacy", 60)] {
        store
            .create_tag(&NewTag {
                tag: tag.into(),
                step: 100,
                description: None,
                template: None,
            })
            .await
            .unwrap();
        for _ in 0..claims {
            store.claim(tag, None).await.unwrap();
        }
    }
    let before = tags_of(&target.url, "leaf_alloc").await;
    assert_eq!(before["legacy"].0, 6001);

    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("tinyid-import"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = write_config(&dir, &target.url);
    let config_text = std::fs::read_to_string(&config).unwrap();
    let import = |extra: &[&str]| {
        let mut a = args(&[
            "import", "tinyid", "--source", &db1.url, "--source", &db2.url,
        ]);
        a.extend(args(&["--config", config.to_str().unwrap()]));
        a.extend(args(extra));
        a
    };

    let plan = ok(&import(&[]));
    for needle in [
        "order",
        "create",
        "next 502",
        "user",
        "raise",
        "legacy",
        "keep",
        "tinyid-",
        "Plan only, nothing written",
    ] {
        assert!(plan.contains(needle), "{needle:?} in:\n{plan}");
    }
    assert_eq!(
        tags_of(&target.url, "leaf_alloc").await,
        before,
        "a plan writes nothing"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), config_text);

    let applied = ok(&import(&["--apply"]));
    assert!(applied.contains("Applied"), "{applied}");
    let after = tags_of(&target.url, "leaf_alloc").await;
    assert_eq!(
        after["order"],
        (502, 100),
        "above db2's max_id 501: {after:?}"
    );
    assert_eq!(after["user"].0, 202, "raised above db1's 201");
    assert_eq!(after["legacy"], (6001, 100), "kept, never lowered");
    let written = std::fs::read_to_string(&config).unwrap();
    let hash = snowdrift_server::auth::TokenHash::of(TOKEN).to_string();
    assert!(
        written.starts_with(&config_text) && written.contains(&hash),
        "{written}"
    );

    let again = ok(&import(&["--apply"]));
    assert!(again.contains("Nothing to change"), "{again}");
    assert_eq!(tags_of(&target.url, "leaf_alloc").await, after);
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        written,
        "no token twice"
    );

    // A database left out of a striped biz type is refused before anything is written.
    let e = fails(&args(&[
        "import",
        "tinyid",
        "--source",
        &db1.url,
        "--store",
        &target.url,
        "--apply",
    ]));
    assert!(
        e.contains("remainder(s) 1") && e.contains("--source"),
        "{e}"
    );

    let mut cmd = serve_command();
    cmd.arg("--config").arg(&config);
    let served = Served::start(cmd);
    let mut new_ids = Vec::new();
    for tag in ["order", "user", "legacy"] {
        for _ in 0..3 {
            let (status, body) = served.get(&format!("/v1/ids/{tag}?count=150"), Some(TOKEN));
            if tag == "legacy" {
                assert_eq!(status, 403, "TOKEN is not scoped to legacy: {body}");
                let (status, body) =
                    served.get(&format!("/v1/ids/{tag}?count=150"), Some(LEGACY_TOKEN));
                assert_eq!(status, 200, "{body}");
                new_ids.extend(ids_of(&body).into_iter().map(|i| (tag, i)));
            } else {
                assert_eq!(status, 200, "{body}");
                new_ids.extend(ids_of(&body).into_iter().map(|i| (tag, i)));
            }
        }
    }
    let (status, _) = served.get("/v1/ids/order?count=1", None);
    assert_eq!(status, 401, "the imported tokens turned auth on");
    for tag in ["order", "user", "legacy"] {
        let count = new_ids.iter().filter(|(t, _)| *t == tag).count();
        assert_eq!(count, 450, "{tag}");
    }
    // Per tag: every ID after the switch is above every ID Tinyid issued for it.
    for (tag, id) in &new_ids {
        let top = issued
            .iter()
            .filter(|(t, _)| t == tag)
            .map(|(_, i)| *i)
            .max()
            .unwrap();
        assert!(*id as i64 > top, "{tag}: {id} is not above Tinyid's {top}");
    }
    drop(served);
    std::fs::remove_dir_all(&dir).ok();
    for db in [db1, db2, target] {
        db.drop_it().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_tinyid_source_is_refused_and_nothing_is_written() {
    let target = Db::new(false, "tinyid_bad_to").await;
    let store = SegmentStore::connect(&target.url, "leaf_alloc")
        .await
        .unwrap();
    store
        .create_tag(&NewTag {
            tag: "order".into(),
            step: 10,
            description: None,
            template: None,
        })
        .await
        .unwrap();
    let before = tags_of(&target.url, "leaf_alloc").await;
    let import = |source: &str| {
        args(&[
            "import",
            "tinyid",
            "--source",
            source,
            "--store",
            &target.url,
            "--apply",
        ])
    };

    // Not Tinyid's schema: tiny_id_info without delta and remainder.
    let wrong = Db::new(true, "tinyid_wrong").await;
    wrong
        .exec("CREATE TABLE tiny_id_info (id BIGINT PRIMARY KEY, biz_type VARCHAR(63), max_id BIGINT, step INT)")
        .await;
    let e = fails(&import(&wrong.url));
    assert!(e.contains("tiny_id_info") && e.contains("db.sql"), "{e}");

    // A PostgreSQL Tinyid database: one row striped delta 2 with its other database left
    // out, and a row with no segment left below i64::MAX.
    let pg = Db::new(false, "tinyid_pg").await;
    exec(&pg.url, PG_SCHEMA).await;
    pg.exec("INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES ('order', 1, 5001, 100, 2, 1)").await;
    let e = fails(&import(&pg.url));
    assert!(
        e.contains("\"order\"") && e.contains("remainder(s) 0"),
        "{e}"
    );
    pg.exec("UPDATE tiny_id_info SET delta = 1, remainder = 0")
        .await;
    pg.exec("INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES ('full', 1, 9223372036854775800, 100, 1, 0)").await;
    let e = fails(&import(&pg.url));
    assert!(
        e.contains("row id 2") && e.contains("\"full\"") && e.contains("i64::MAX"),
        "{e}"
    );

    // Nothing listens on port 1.
    let e = fails(&import("mysql://root@127.0.0.1:1/tinyid"));
    assert!(e.contains("127.0.0.1:1"), "{e}");

    assert_eq!(
        tags_of(&target.url, "leaf_alloc").await,
        before,
        "nothing written"
    );
    // With the bad row gone the PostgreSQL database imports.
    pg.exec("DELETE FROM tiny_id_info WHERE biz_type = 'full'")
        .await;
    ok(&import(&pg.url));
    assert_eq!(tags_of(&target.url, "leaf_alloc").await["order"].0, 5002);
    for db in [wrong, pg, target] {
        db.drop_it().await;
    }
}
