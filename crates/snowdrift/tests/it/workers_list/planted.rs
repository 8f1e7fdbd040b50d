//! `snowdrift workers list` on entries planted by hand on every registry (file, SQLite,
//! PostgreSQL, MariaDB, etcd, ZooKeeper, Redis), beside a good one:
//!
//! - a holder with escape sequences, a newline and bidi overrides is printed escaped in
//!   the text (no raw control or format character, no forged line) and as it is in JSON;
//! - a malformed mark, lease or row does not fail the listing: the good entry is listed,
//!   the bad one flagged with its `problem`, an entry whose worker ID cannot be read
//!   listed under `unreadable`; the server's own read of that mark still refuses it;
//! - a lease no server can use (an etcd key without a lease, a Redis key without a TTL, a
//!   persistent znode, a planted lock file) is listed `stuck`, `never expires`, and not
//!   free; a SQL lease set by hand to run for ages says how long it really has left; a
//!   server's claim of each is refused as the listing says.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use snowdrift_store::Error;
use snowdrift_store::worker::WorkerRegistry;
use snowdrift_testkit::{unique_name, urls};

/// A holder that would clear the screen, turn the text red, forge a second line and
/// reverse the rest of it (right-to-left override, left-to-right isolate) if printed raw.
const EVIL: &str = "evil\u{1b}[2J\u{1b}[31mred\nworker 9 free\u{202e}gnp.exe\u{2066}x";

/// How it must read in the text output.
const EVIL_ESCAPED: &str = r"evil\e[2J\e[31mred\nworker 9 free\u{202e}gnp.exe\u{2066}x";

/// A lease long enough to outlast a check.
const TTL: Duration = Duration::from_secs(60);

/// `--layout twitter`: 10 node bits.
const SPACE: u64 = 1024;

/// What the listing must show of the planted entries.
struct Expect {
    /// Every worker ID held (good, evil, bad and stuck ones).
    held: Vec<u64>,
    /// The worker ID whose mark (or row) is malformed, and what its problem names.
    bad: (u64, &'static str),
    /// More flagged entries: worker ID and what the problem names.
    flagged: Vec<(u64, &'static str)>,
    /// What the unreadable entry's key contains.
    unreadable: &'static str,
    /// The stuck worker ID and what its problem names; `None` on SQL (nothing is stuck
    /// there: a lease set far ahead still ends).
    stuck: Option<(u64, &'static str)>,
}

fn run(registry: &str, ns: &str, json: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_snowdrift"));
    cmd.args(["workers", "list", "--registry", registry]).args([
        "--namespace",
        ns,
        "--layout",
        "twitter",
    ]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{registry}: workers list failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A character a terminal acts on (or that reorders the line), other than the newlines
/// that end the output's own lines.
fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Lists `ns` on `registry` as text and JSON, and checks both against `expect`.
fn check(name: &str, registry: &str, ns: &str, expect: &Expect) {
    let text = run(registry, ns, false);
    let v: serde_json::Value = serde_json::from_str(&run(registry, ns, true)).unwrap();

    // Text: nothing raw that a terminal acts on, the evil holder escaped on its own row.
    if let Some(c) = text.chars().find(|c| acts_on_terminal(*c)) {
        panic!("{name}: {c:?} printed raw:\n{text}");
    }
    assert!(
        text.lines().all(|l| !l.starts_with("worker 9")),
        "{name}: a forged line:\n{text}"
    );
    let row = |id: u64| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{name}: no row for worker {id}:\n{text}"))
    };
    assert!(row(2).ends_with(EVIL_ESCAPED), "{name}:\n{text}");
    assert!(
        row(1).ends_with("good/1") && row(1).contains("live"),
        "{name}:\n{text}"
    );
    // JSON as it is: serde escapes it.
    let held = v["held"].as_array().unwrap();
    let entry = |id: u64| {
        held.iter()
            .find(|e| e["worker_id"] == id)
            .unwrap_or_else(|| panic!("{name}: worker {id} not listed: {v:#}"))
    };
    assert_eq!(entry(2)["holder"], EVIL, "{name}: {v:#}");
    let ids: Vec<u64> = held
        .iter()
        .map(|e| e["worker_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, expect.held, "{name}: {v:#}");

    // The good entry is whole, the bad one flagged.
    let good = entry(1);
    assert!(good["problem"].is_null(), "{name}: {v:#}");
    assert!(
        good["mark_ms"].as_u64().unwrap() > 1_700_000_000_000,
        "{name}: {v:#}"
    );
    let (bad, says) = expect.bad;
    let problem = entry(bad)["problem"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(problem.contains(says), "{name}: {says:?} not in {v:#}");
    assert!(entry(bad)["mark_ms"].is_null(), "{name}: {v:#}");
    assert_eq!(entry(bad)["holder"], format!("bad/{bad}"), "{name}: {v:#}");
    assert!(text.contains("problem: "), "{name}:\n{text}");
    for (id, says) in &expect.flagged {
        let problem = entry(*id)["problem"].as_str().unwrap_or_default();
        assert!(problem.contains(says), "{name}: {says:?} not in {v:#}");
    }
    let unreadable = v["unreadable"].as_array().unwrap();
    assert!(
        unreadable.len() == 1
            && unreadable[0]["key"]
                .as_str()
                .unwrap()
                .contains(expect.unreadable),
        "{name}: {v:#}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("unreadable  ") && l.contains(expect.unreadable)),
        "{name}:\n{text}"
    );

    // A stuck lease: held, never expiring, not free.
    match expect.stuck {
        Some((id, says)) => {
            let e = entry(id);
            assert_eq!(e["state"], "stuck", "{name}: {v:#}");
            assert_eq!(e["never_expires"], true, "{name}: {v:#}");
            assert!(e["lease_left_ms"].is_null(), "{name}: {v:#}");
            assert!(
                e["problem"].as_str().unwrap_or_default().contains(says),
                "{name}: {says:?} not in {v:#}"
            );
            assert!(
                row(id).contains("stuck") && row(id).contains("never expires"),
                "{name}:\n{text}"
            );
        }
        None => assert!(
            held.iter().all(|e| e["never_expires"] == false),
            "{name}: {v:#}"
        ),
    }
    let free_count = SPACE - expect.held.len() as u64;
    assert_eq!(v["free_count"], free_count, "{name}: {v:#}");
    let free = v["free"].as_array().unwrap();
    for id in &expect.held {
        assert!(
            free.iter()
                .all(|r| !(r[0].as_u64().unwrap() <= *id && *id <= r[1].as_u64().unwrap())),
            "{name}: {id} listed free: {v:#}"
        );
    }
    assert!(
        text.contains(&format!("free      {free_count} of {SPACE}: ")),
        "{name}:\n{text}"
    );
}

/// The registry's claims and reads, as a server runs them, against what the listing says:
/// the bad mark is refused, the stuck ID is taken.
async fn server_agrees(name: &str, reg: &WorkerRegistry, expect: &Expect) {
    let (bad, _) = expect.bad;
    match reg.read_mark(bad).await {
        Err(Error::InvalidInput(m)) => assert!(m.contains("edited by hand"), "{name}: {m}"),
        other => panic!("{name}: a server read the malformed mark of {bad} as {other:?}"),
    }
    if let Some((id, _)) = expect.stuck {
        match reg.claim(id, "probe/1", TTL).await {
            Err(Error::WorkerTaken { worker_id, .. }) => assert_eq!(worker_id, id),
            other => panic!("{name}: a claim of stuck worker ID {id} answered {other:?}"),
        }
    }
}

/// A good lease on worker ID 1 (holder `good/1`, a mark) and one on `bad` (holder
/// `bad/{bad}`), claimed as a server claims them.
async fn good_and_bad(reg: &WorkerRegistry, bad: u64) {
    reg.claim(1, "good/1", TTL).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    reg.write_mark(1, "good/1", now).await.unwrap();
    reg.claim(bad, &format!("bad/{bad}"), TTL).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_file() {
    let dir = std::env::temp_dir().join(unique_name("opc-wlp"));
    let registry = format!("file://{}", dir.display());
    let ns = "wlp";
    let reg = WorkerRegistry::connect(&registry, ns).await.unwrap();
    good_and_bad(&reg, 3).await;
    std::fs::write(dir.join("wlp-3.mark"), "notanumber").unwrap();
    // Worker 2: a lock file naming the evil holder, locked by this process.
    let lock = dir.join("wlp-2.lock");
    std::fs::write(&lock, EVIL).unwrap();
    set_private(&lock);
    let held = std::fs::File::open(&lock).unwrap();
    held.try_lock().unwrap();
    // Worker 5: a link where its lock file goes; a name without a worker ID.
    std::os::unix::fs::symlink("/etc/hostname", dir.join("wlp-5.lock")).unwrap();
    std::fs::write(dir.join("wlp-abc.lock"), "x").unwrap();
    let expect = Expect {
        held: vec![1, 2, 3, 5],
        bad: (3, "\"notanumber\""),
        flagged: vec![],
        unreadable: "wlp-abc.lock",
        stuck: Some((5, "is a symbolic link")),
    };
    check("file", &registry, ns, &expect);
    // A claim stops at the link with the same error (the listing's "stuck").
    match reg.read_mark(3).await {
        Err(Error::InvalidInput(m)) => assert!(m.contains("edited by hand"), "{m}"),
        other => panic!("a server read the malformed mark as {other:?}"),
    }
    match reg.claim(5, "probe/1", TTL).await {
        Err(Error::InvalidInput(m)) => assert!(m.contains("symbolic link"), "{m}"),
        other => panic!("a claim of the planted link answered {other:?}"),
    }
    drop((held, reg));
    std::fs::remove_dir_all(&dir).ok();
}

fn set_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

async fn sql(name: &str, url: &str) {
    let ns = unique_name("wlp");
    let reg = WorkerRegistry::connect(url, &ns).await.unwrap();
    good_and_bad(&reg, 3).await;
    reg.claim(2, "tmp/2", TTL).await.unwrap();
    reg.claim(5, "ages/5", TTL).await.unwrap();
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    let exec = |sql: String| {
        let pool = pool.clone();
        async move {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&pool)
                .await
                .unwrap();
        }
    };
    // The evil holder is bound, not spliced into the statement.
    let evil = if url.starts_with("postgres") {
        format!("UPDATE {ns} SET holder = $1 WHERE worker_id = 2")
    } else {
        format!("UPDATE {ns} SET holder = ? WHERE worker_id = 2")
    };
    sqlx::query(sqlx::AssertSqlSafe(evil))
        .bind(EVIL)
        .execute(&pool)
        .await
        .unwrap();
    exec(format!(
        "UPDATE {ns} SET high_water_ms = -5 WHERE worker_id = 3"
    ))
    .await;
    // A row below 0 under a live lease (an earlier listing failed on it).
    exec(format!(
        "INSERT INTO {ns} (worker_id, holder, lease_expires_ms) VALUES (-1, 'x', 9000000000000000)"
    ))
    .await;
    // A lease set by hand to end near the end of BIGINT.
    exec(format!(
        "UPDATE {ns} SET lease_expires_ms = 9223372036854775000 WHERE worker_id = 5"
    ))
    .await;
    let expect = Expect {
        held: vec![1, 2, 3, 5],
        bad: (3, "high-water mark -5"),
        flagged: vec![(5, "set by hand")],
        unreadable: "worker_id = -1",
        stuck: None,
    };
    check(name, url, &ns, &expect);
    server_agrees(name, &reg, &expect).await;
    // The lease set far ahead: its real time left, in years, and the claim refused.
    let v: serde_json::Value = serde_json::from_str(&run(url, &ns, true)).unwrap();
    let ages = v["held"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["worker_id"] == 5)
        .unwrap()
        .clone();
    assert!(
        ages["lease_left_ms"].as_u64().unwrap() > 9_000_000_000_000_000,
        "{name}: {v:#}"
    );
    let text = run(url, &ns, false);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("5 "))
        .unwrap();
    assert!(row.contains("years of 1 min"), "{name}:\n{text}");
    match reg.claim(5, "probe/1", TTL).await {
        Err(Error::WorkerTaken { .. }) => {}
        other => panic!("{name}: a claim of the lease set far ahead answered {other:?}"),
    }
    // As the listing says of the row below 0, a claim of a free ID fails while it is there.
    let now = ages["since_ms"].as_u64().unwrap();
    match reg.claim_ready(SPACE, "probe/2", TTL, now).await {
        Err(Error::InvalidInput(m)) => assert!(m.contains("below 0"), "{name}: {m}"),
        other => panic!("{name}: a claim beside the row with worker_id -1 answered {other:?}"),
    }
    exec(format!("DROP TABLE {ns}")).await;
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_sqlite() {
    let dir = std::env::temp_dir().join(unique_name("opc-wlp-sqlite"));
    std::fs::create_dir_all(&dir).unwrap();
    sql("sqlite", &format!("sqlite://{}/workers.db", dir.display())).await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_postgres() {
    sql("postgres", &urls::postgres()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_mariadb() {
    sql("mariadb", &urls::mysql()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_etcd() {
    let url = urls::etcd();
    let ns = unique_name("wlp");
    let reg = WorkerRegistry::connect(&url, &ns).await.unwrap();
    good_and_bad(&reg, 3).await;
    let mut etcd = etcd_client::Client::connect([url.replace("etcd://", "http://")], None)
        .await
        .unwrap();
    let lease = etcd.lease_grant(60, None).await.unwrap().id();
    let under_lease = Some(etcd_client::PutOptions::new().with_lease(lease));
    etcd.put(format!("/{ns}/worker/2"), EVIL, under_lease.clone())
        .await
        .unwrap();
    etcd.put(format!("/{ns}/mark/3"), "notanumber", None)
        .await
        .unwrap();
    etcd.put(format!("/{ns}/worker/abc"), "x", under_lease)
        .await
        .unwrap();
    // A worker key without a lease: etcd never deletes it.
    etcd.put(format!("/{ns}/worker/5"), "squatter/5", None)
        .await
        .unwrap();
    let expect = Expect {
        held: vec![1, 2, 3, 5],
        bad: (3, "\"notanumber\""),
        flagged: vec![],
        unreadable: "/worker/abc",
        stuck: Some((5, "no lease")),
    };
    check("etcd", &url, &ns, &expect);
    server_agrees("etcd", &reg, &expect).await;
    etcd.delete(
        format!("/{ns}/"),
        Some(etcd_client::DeleteOptions::new().with_prefix()),
    )
    .await
    .unwrap();
    etcd.lease_revoke(lease).await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_zookeeper() {
    use zookeeper_client as zk;
    let url = urls::zookeeper();
    let ns = unique_name("wlp");
    let reg = WorkerRegistry::connect(&url, &ns).await.unwrap();
    good_and_bad(&reg, 3).await;
    let client = zk::Client::connect(&url.replace("zookeeper://", ""))
        .await
        .unwrap();
    let open = zk::Acls::anyone_all();
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(open);
    let persistent = zk::CreateMode::Persistent.with_acls(open);
    let lease = |holder: &str| serde_json::json!({"holder": holder, "ttl_ms": 60000}).to_string();
    client
        .create(
            &format!("/{ns}/lease/2"),
            lease(EVIL).as_bytes(),
            &ephemeral,
        )
        .await
        .unwrap();
    client
        .create(&format!("/{ns}/mark/3"), b"notanumber", &persistent)
        .await
        .unwrap();
    // A lease znode that is no lease; one without a worker ID; a persistent one.
    client
        .create(&format!("/{ns}/lease/4"), b"garbage", &ephemeral)
        .await
        .unwrap();
    client
        .create(&format!("/{ns}/lease/abc"), b"x", &ephemeral)
        .await
        .unwrap();
    client
        .create(
            &format!("/{ns}/lease/5"),
            lease("forever/5").as_bytes(),
            &persistent,
        )
        .await
        .unwrap();
    let expect = Expect {
        held: vec![1, 2, 3, 4, 5],
        bad: (3, "\"notanumber\""),
        flagged: vec![(4, "does not hold a lease")],
        unreadable: "/lease/abc",
        stuck: Some((5, "persistent znode")),
    };
    check("zookeeper", &url, &ns, &expect);
    server_agrees("zookeeper", &reg, &expect).await;
    reg.release(1, "good/1").await.unwrap();
    reg.release(3, "bad/3").await.unwrap();
    for dir in ["lease", "mark", "layout"] {
        let dir = format!("/{ns}/{dir}");
        for child in client.list_children(&dir).await.unwrap() {
            client.delete(&format!("{dir}/{child}"), None).await.ok();
        }
        client.delete(&dir, None).await.unwrap();
    }
    client.delete(&format!("/{ns}"), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_list_planted_redis() {
    let url = urls::redis();
    let ns = unique_name("wlp");
    let reg = WorkerRegistry::connect(&url, &ns).await.unwrap();
    good_and_bad(&reg, 3).await;
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let set = |key: String, value: &str, px: Option<u64>| {
        let mut cmd = redis::cmd("SET");
        cmd.arg(key).arg(value);
        if let Some(px) = px {
            cmd.arg("PX").arg(px);
        }
        cmd
    };
    let commands = [
        set(format!("{ns}:worker:2"), EVIL, Some(60_000)),
        set(format!("{ns}:mark:3"), "notanumber", None),
        set(format!("{ns}:worker:abc"), "x", Some(60_000)),
        // A lease key without a TTL: Redis never drops it.
        set(format!("{ns}:worker:5"), "forever/5", None),
    ];
    for cmd in commands {
        let _: () = cmd.query_async(&mut conn).await.unwrap();
    }
    // A lease key of another type.
    let _: () = redis::cmd("HSET")
        .arg(format!("{ns}:worker:4"))
        .arg("holder")
        .arg("h")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("PEXPIRE")
        .arg(format!("{ns}:worker:4"))
        .arg(60_000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let expect = Expect {
        held: vec![1, 2, 3, 4, 5],
        bad: (3, "\"notanumber\""),
        flagged: vec![(4, "WRONGTYPE")],
        unreadable: ":worker:abc",
        stuck: Some((5, "no TTL")),
    };
    check("redis", &url, &ns, &expect);
    server_agrees("redis", &reg, &expect).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{ns}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("DEL")
        .arg(keys)
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// The listing tolerates a peer's malformed mark; a starting server does not: it reads a
/// flagged peer's layout and mark again as it reads its own, and refuses a mark that is not
/// a number when the peer runs another layout (it needs the peer's extension value to
/// compare). Under the peer's own layout the mark does not matter, and the server starts.
#[test]
fn workers_list_planted_peer_is_read_strictly_by_a_starting_server() {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(unique_name("opc-wlp-peer"));
    let workers = dir.join("workers");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&workers)
        .unwrap();
    let ns = unique_name("wlp");
    // The peer holds worker ID 0 of generator sf under Sonyflake's layout.
    let file = |ext: &str, content: &str| {
        let path = workers.join(format!("{ns}_sf-0.{ext}"));
        std::fs::write(&path, content).unwrap();
        set_private(&path);
        path
    };
    let lock = file("lock", "peer/0");
    file("layout", "time:39,seq:8,machine:16/10/1409529600000");
    file("mark", "notanumber");
    let held = std::fs::File::open(&lock).unwrap();
    held.try_lock().unwrap();
    let config = |layout: &str| {
        let path = dir.join(format!("{layout}.toml"));
        std::fs::write(
            &path,
            format!(
                "[server]\nlisten = \"127.0.0.1:0\"\n\n[store]\nurl = \"sqlite://{}/ids.db\"\n\n\
                 [worker]\nregistry = \"file\"\npath = \"{}\"\nnamespace = \"{ns}\"\n\n\
                 [[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nlayout = \"{layout}\"\n",
                dir.display(),
                workers.display()
            ),
        )
        .unwrap();
        let mut cmd = crate::common::serve_command();
        cmd.args(["--config", path.to_str().unwrap()]);
        cmd
    };
    let mut refused = config("twitter")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = refused.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            refused.kill().ok();
            refused.wait().ok();
            panic!("a server started beside a peer whose mark it cannot read");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut refused.stderr.take().unwrap(), &mut err).unwrap();
    assert!(
        !status.success() && err.contains("\"notanumber\""),
        "{status}: {err}"
    );
    let same = crate::common::Served::start(config("sonyflake"));
    same.wait_ready();
    assert!(same.stop().success());
    drop(held);
    std::fs::remove_dir_all(&dir).ok();
}
