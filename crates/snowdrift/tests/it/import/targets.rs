//! Imports into each kind of target snowdrift's store and registry can be: a plan-only run
//! leaves a target that holds nothing yet exactly as it was (no SQL table, no ZooKeeper
//! znode, no Redis key), and Tinyid's tags into Redis and ZooKeeper stores and
//! UidGenerator's worker IDs into Redis and ZooKeeper registries go end to end: `--apply`,
//! `--apply` again changing nothing, then a server issuing only above what the peer issued.

use std::path::Path;

use snowdrift_store::segment::inspect;
use snowdrift_store::worker::{Mark, WorkerRegistry};
use snowdrift_testkit::{unique_name, urls};
use zookeeper_client as zk;

use super::uidgenerator::{FLAGS, WORKER_NODE, now_ms, uid};
use super::{Db, args, ids_of, ok};
use crate::common::{Served, serve_command};

/// Which kind of target a URL is, and what "holds nothing" means there.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Redis,
    ZooKeeper,
    Sql,
}

async fn zk_client() -> zk::Client {
    zk::Client::connect(urls::zookeeper().trim_start_matches("zookeeper://"))
        .await
        .unwrap()
}

async fn redis_keys(prefix: &str) -> Vec<String> {
    let client = redis::Client::open(urls::redis().as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Whether the target `url` holds anything under `name` (the table, key prefix or root
/// znode), read without creating anything.
async fn anything_under(kind: Kind, url: &str, name: &str) -> bool {
    match kind {
        Kind::Redis => !redis_keys(name).await.is_empty(),
        Kind::ZooKeeper => zk_client()
            .await
            .check_stat(&format!("/{name}"))
            .await
            .unwrap()
            .is_some(),
        Kind::Sql => inspect::inspect(url, name).await.unwrap().exists,
    }
}

async fn clean(kind: Kind, name: &str) {
    match kind {
        Kind::Redis => {
            let keys = redis_keys(name).await;
            if keys.is_empty() {
                return;
            }
            let client = redis::Client::open(urls::redis().as_str()).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let _: () = redis::cmd("DEL")
                .arg(keys)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        Kind::ZooKeeper => {
            let client = zk_client().await;
            let mut all = vec![format!("/{name}")];
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
        Kind::Sql => {}
    }
}

fn registry_kind(kind: Kind) -> &'static str {
    match kind {
        Kind::Redis => "redis",
        Kind::ZooKeeper => "zookeeper",
        Kind::Sql => "sql",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tinyid_tags_into_redis_and_zookeeper_stores_and_a_plan_writes_nothing() {
    let source = Db::new(true, "tinyid_tg").await;
    source.exec(super::tinyid::SCHEMA).await;
    super::tinyid::biz(&source, "order", 100, 1, 0).await;
    let issued = super::tinyid::claim(&source, "order", 3).await;
    let top = *issued.iter().max().unwrap();
    assert_eq!(top, 301);
    let fresh = Db::new(false, "tinyid_tg_fresh").await;
    let dir = std::env::temp_dir().join(unique_name("tinyid-targets"));
    std::fs::create_dir_all(&dir).unwrap();
    for (kind, url) in [
        (Kind::Sql, fresh.url.clone()),
        (Kind::Redis, urls::redis()),
        (Kind::ZooKeeper, urls::zookeeper()),
    ] {
        let table = unique_name("tinyid_tg");
        let import = |extra: &[&str]| {
            let mut a = args(&[
                "import",
                "tinyid",
                "--source",
                &source.url,
                "--store",
                &url,
                "--table",
                &table,
            ]);
            a.extend(args(extra));
            a
        };
        let plan = ok(&import(&[]));
        assert!(
            plan.contains("create") && plan.contains("next 302") && plan.contains("Plan only"),
            "{kind:?}: {plan}"
        );
        assert!(
            !anything_under(kind, &url, &table).await,
            "{kind:?}: a plan-only run leaves a store that holds nothing as it was"
        );
        if kind == Kind::Sql {
            // The PostgreSQL store's --apply and serving are tinyid.rs's test.
            continue;
        }
        let applied = ok(&import(&["--apply"]));
        assert!(applied.contains("Applied"), "{kind:?}: {applied}");
        let tags = inspect::read_tags(&url, &table, &["order".to_string()])
            .await
            .unwrap();
        assert_eq!(
            (tags.len(), tags[0].max_id, tags[0].step),
            (1, 302, 100),
            "{kind:?}"
        );
        let again = ok(&import(&["--apply"]));
        assert!(again.contains("Nothing to change"), "{kind:?}: {again}");
        let after = inspect::read_tags(&url, &table, &["order".to_string()])
            .await
            .unwrap();
        assert_eq!(after, tags, "{kind:?}: a second --apply changes nothing");

        let config = dir.join(format!("{table}.toml"));
        std::fs::write(
            &config,
            format!(
                "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"{url}\"\ntable = \"{table}\"\n\n[worker]\npath = \"{}\"\n",
                dir.join(format!("{table}-workers")).display()
            ),
        )
        .unwrap();
        let mut cmd = serve_command();
        cmd.arg("--config").arg(&config);
        let served = Served::start(cmd);
        let mut ours = Vec::new();
        for _ in 0..3 {
            let (status, body) = served.get("/v1/ids/order?count=150", None);
            assert_eq!(status, 200, "{kind:?}: {body}");
            ours.extend(ids_of(&body));
        }
        assert_eq!(ours.len(), 450);
        for id in &ours {
            assert!(
                *id as i64 > top,
                "{kind:?}: {id} is not above Tinyid's {top}"
            );
        }
        drop(served);
        clean(kind, &table).await;
    }
    std::fs::remove_dir_all(&dir).ok();
    source.drop_it().await;
    fresh.drop_it().await;
}

fn uid_config(dir: &Path, kind: Kind, url: &str, ns: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{ns}.toml"));
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/{ns}.db\"\n\n\
             [worker]\nregistry = \"{}\"\nurl = \"{url}\"\nid = 3\nnamespace = \"{ns}\"\n\n\
             [[generator]]\nname = \"uid\"\nkind = \"snowflake\"\n\
             bits = \"time:30,worker:20,seq:13\"\nunit = \"1s\"\nepoch = \"2019-12-31T16:00:00Z\"\n",
            dir.display(),
            registry_kind(kind)
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uidgenerator_marks_into_redis_and_zookeeper_registries_and_a_plan_writes_nothing() {
    let source = Db::new(true, "uid_tg").await;
    source.exec(WORKER_NODE).await;
    for i in 0..3 {
        source
            .exec(&format!(
                "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) \
                 VALUES ('10.2.0.{i}', '{}-{i}', 2, CURDATE(), NOW(), NOW())",
                now_ms()
            ))
            .await;
    }
    // What UidGenerator issued, up to this second, under each of its worker IDs.
    let second = now_ms() / 1000;
    let top = (1..=3).map(|w| uid(second, w, 8191)).max().unwrap();
    let fresh = Db::new(false, "uid_tg_fresh").await;
    let dir = std::env::temp_dir().join(unique_name("uid-targets"));
    std::fs::create_dir_all(&dir).unwrap();
    for (kind, url) in [
        (Kind::Sql, fresh.url.clone()),
        (Kind::Redis, urls::redis()),
        (Kind::ZooKeeper, urls::zookeeper()),
    ] {
        let ns = unique_name("uid_tg");
        // The generator "uid" leases under {namespace}_uid.
        let leased = format!("{ns}_uid");
        let config = uid_config(&dir, kind, &url, &ns);
        let import = |extra: &[&str]| {
            let mut a = args(&["import", "uidgenerator", "--source", &source.url]);
            a.extend(args(&FLAGS));
            a.extend(args(&["--config", config.to_str().unwrap()]));
            a.extend(args(extra));
            a
        };
        let plan = ok(&import(&[]));
        assert!(
            plan.contains("3 WORKER_NODE row(s)") && plan.contains("Plan only"),
            "{kind:?}: {plan}"
        );
        assert!(
            !anything_under(kind, &url, &leased).await,
            "{kind:?}: a plan-only run leaves a registry that holds nothing as it was"
        );
        if kind == Kind::Sql {
            // The PostgreSQL registry's --apply and serving are uidgenerator.rs's test.
            continue;
        }
        let applied = ok(&import(&["--apply"]));
        assert!(applied.contains("Applied"), "{kind:?}: {applied}");
        let registry = WorkerRegistry::connect(&url, &leased).await.unwrap();
        let mut marks = Vec::new();
        for w in 1..=3 {
            let mark = Mark::from_stored(registry.read_mark(w).await.unwrap().unwrap());
            assert!(
                mark.ms > second * 1000 + 999,
                "{kind:?}: worker {w}'s mark {} is not past UidGenerator's second",
                mark.ms
            );
            marks.push(mark);
        }
        let again = ok(&import(&["--apply"]));
        assert!(again.contains("Nothing to change"), "{kind:?}: {again}");
        for (w, mark) in (1..=3).zip(&marks) {
            assert_eq!(
                Mark::from_stored(registry.read_mark(w).await.unwrap().unwrap()),
                *mark,
                "{kind:?}: a second --apply changes nothing"
            );
        }
        drop(registry);

        let mut cmd = serve_command();
        cmd.arg("--config").arg(&config);
        let served = Served::start(cmd);
        served.wait_ready();
        let (status, body) = served.get("/v1/ids/uid?count=500", None);
        assert_eq!(status, 200, "{kind:?}: {body}");
        let ours = ids_of(&body);
        assert_eq!(ours.len(), 500);
        for id in &ours {
            assert_eq!((id >> 13) & ((1 << 20) - 1), 3, "{kind:?}: worker 3");
            assert!(
                *id > top,
                "{kind:?}: {id} is not above UidGenerator's {top}"
            );
        }
        drop(served);
        clean(kind, &leased).await;
    }
    std::fs::remove_dir_all(&dir).ok();
    source.drop_it().await;
    fresh.drop_it().await;
}
