//! Compatibility fixtures (issue 39): the durable state a released version wrote, loaded
//! into real backends and read by today's code.
//!
//! `tests/fixtures/<VERSION>/` at the top of the workspace holds what `<VERSION>` wrote
//! (see its README). Every reading test here runs over every version directory that has
//! its file, so a fixture written by 0.1.0 is read by every later version. Each loads the
//! old state under a namespace of its own (`snowdrift_fixture_ns` in the files is replaced
//! by a unique name), checks that (a) today's code reads it, and (b) a node started on it
//! serves IDs above every ID the old state records, then removes what it created.
//!
//! `write_fixtures` (ignored; `scripts/write-fixtures VERSION`) wrote them, once per
//! version: it refuses a directory that exists, as old fixtures are never edited.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use snowdrift_core::clock::{Clock, MonotonicClock, OffsetClock};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_core::generator::{Builder, SnowflakeGenerator};
use snowdrift_core::layout::Layout;
use snowdrift_store::segment::{NewTag, SegmentStore};
use snowdrift_store::tso::{Campaign, EtcdTso};
use snowdrift_store::worker::{LeaseConfig, Mark, WorkerNode, WorkerRegistry, WorkerSource};
use snowdrift_testkit::{unique_name, urls};
use sqlx::AssertSqlSafe;

mod sql_functions;

/// The name written in place of the namespace, table or key prefix in every fixture.
const PLACEHOLDER: &str = "snowdrift_fixture_ns";
/// The worker ID the fixtures' nodes held.
const WORKER_ID: u64 = 5;
/// The period the fixtures' tag with a template counted in.
const PERIOD: i64 = 20261128;
/// The backends a worker registry fixture exists for.
const WORKER_BACKENDS: [&str; 7] = [
    "file",
    "sqlite",
    "postgres",
    "mysql",
    "redis",
    "etcd",
    "zookeeper",
];
/// The backends a segment store fixture exists for.
const SEGMENT_BACKENDS: [&str; 5] = ["sqlite", "postgres", "mysql", "redis", "zookeeper"];

/// `tests/fixtures` at the top of the workspace.
fn fixtures_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every version directory holding `file`, oldest first; none for a part no release has
/// written yet.
fn released_with(file: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_root())
        .expect("tests/fixtures exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(file).exists())
        .collect();
    dirs.sort();
    dirs
}

/// Every version directory holding `file`, oldest first. Fails when none does: a fixture
/// that went missing must not pass as "nothing to read".
fn versions_with(file: &str) -> Vec<PathBuf> {
    let dirs = released_with(file);
    assert!(!dirs.is_empty(), "no fixture {file} under tests/fixtures");
    dirs
}

fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&read_text(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn twitter() -> Builder {
    SnowflakeGenerator::builder(Layout::preset("twitter").unwrap())
}

/// The URL of a backend; SQLite in a fresh file under `dir`.
fn backend_url(backend: &str, dir: &Path) -> String {
    match backend {
        "file" => format!("file://{}", dir.join("workers").display()),
        "sqlite" => format!("sqlite://{}", dir.join("fixture.db").display()),
        "postgres" => urls::postgres(),
        "mysql" => urls::mysql(),
        "redis" => urls::redis(),
        "etcd" => urls::etcd(),
        "zookeeper" => urls::zookeeper(),
        other => unreachable!("no backend {other}"),
    }
}

fn scratch_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(unique_name("compat"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- raw access to the backends: dumping and loading ----------------------------------

async fn sql_pool(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    let url = if url.starts_with("sqlite://") {
        format!("{url}?mode=rwc")
    } else {
        url.to_string()
    };
    sqlx::AnyPool::connect(&url).await.unwrap()
}

/// Runs the statements of a SQL fixture (each ends with `;` at the end of a line).
async fn load_sql(url: &str, text: &str) {
    let pool = sql_pool(url).await;
    for statement in statements(text) {
        sqlx::query(AssertSqlSafe(statement.clone()))
            .execute(&pool)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    pool.close().await;
}

fn statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if current.is_empty() && (line.trim().is_empty() || line.starts_with("--")) {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if line.trim_end().ends_with(';') {
            let s = current.trim().trim_end_matches(';').to_string();
            out.push(s);
            current.clear();
        }
    }
    out
}

async fn drop_sql_table(url: &str, table: &str) {
    let pool = sql_pool(url).await;
    sqlx::query(AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// The `CREATE TABLE` and `INSERT` statements of `table`, as the dialect's own dump tool
/// writes them, with the table's name replaced by [`PLACEHOLDER`].
fn dump_sql(backend: &str, url: &str, table: &str) -> String {
    let output = match backend {
        "sqlite" => std::process::Command::new("sqlite3")
            .arg(url.trim_start_matches("sqlite://"))
            .arg(format!(".dump {table}"))
            .output(),
        "postgres" => std::process::Command::new("pg_dump")
            .args([
                "--no-owner",
                "--no-privileges",
                "--inserts",
                "--column-inserts",
                "-t",
                table,
                "-d",
                url,
            ])
            .output(),
        "mysql" => {
            let rest = url.split("://").nth(1).unwrap();
            let (auth, rest) = rest.split_once('@').unwrap();
            let (host, db) = rest.split_once('/').unwrap();
            let (host, port) = host.split_once(':').unwrap_or((host, "3306"));
            let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
            let mut cmd = std::process::Command::new("mysqldump");
            cmd.args([
                "--compact",
                "--skip-comments",
                "--complete-insert",
                "--skip-extended-insert",
                "-h",
                host,
                "-P",
                port,
                "-u",
                user,
            ]);
            if !password.is_empty() {
                cmd.arg(format!("-p{password}"));
            }
            cmd.args([db.split('?').next().unwrap(), table]).output()
        }
        other => unreachable!("no SQL backend {other}"),
    }
    .unwrap_or_else(|e| panic!("the {backend} dump tool: {e}"));
    assert!(
        output.status.success(),
        "{backend} dump: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let kept: Vec<String> = statements(&text)
        .into_iter()
        .filter(|s| {
            s.starts_with("CREATE TABLE")
                || s.starts_with("CREATE SEQUENCE")
                || s.starts_with("SELECT pg_catalog.setval")
                || s.starts_with("INSERT INTO")
                || (s.starts_with("ALTER TABLE") && s.contains("PRIMARY KEY"))
        })
        .map(|s| format!("{};\n", s.replace("public.", "")))
        .collect();
    kept.join("\n").replace(table, PLACEHOLDER)
}

async fn redis_conn() -> redis::aio::MultiplexedConnection {
    redis::Client::open(urls::redis())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every Redis key under `prefix:` with its type, value and whether it has a TTL.
async fn dump_redis(prefix: &str) -> Value {
    let mut conn = redis_conn().await;
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let value = match kind.as_str() {
            "string" => {
                let v: String = redis::cmd("GET")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                json!(v)
            }
            "hash" => {
                let v: BTreeMap<String, String> = redis::cmd("HGETALL")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                json!(v)
            }
            "set" => {
                let mut v: Vec<String> = redis::cmd("SMEMBERS")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                v.sort();
                json!(v)
            }
            other => panic!("{key}: a {other} key has no fixture form yet"),
        };
        let pttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push(json!({
            "key": key.replace(prefix, PLACEHOLDER),
            "type": kind,
            "value": value,
            "expires": pttl >= 0,
        }));
    }
    Value::Array(out)
}

/// Loads a Redis fixture under `prefix`; keys that had a TTL get `ttl`. Returns the keys.
async fn load_redis(entries: &Value, prefix: &str, ttl: Duration) -> Vec<String> {
    let mut conn = redis_conn().await;
    let mut keys = Vec::new();
    for e in entries.as_array().unwrap() {
        let key = e["key"].as_str().unwrap().replace(PLACEHOLDER, prefix);
        match e["type"].as_str().unwrap() {
            "string" => {
                let _: () = redis::cmd("SET")
                    .arg(&key)
                    .arg(e["value"].as_str().unwrap())
                    .query_async(&mut conn)
                    .await
                    .unwrap();
            }
            "hash" => {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(&key);
                for (f, v) in e["value"].as_object().unwrap() {
                    cmd.arg(f).arg(v.as_str().unwrap());
                }
                let _: () = cmd.query_async(&mut conn).await.unwrap();
            }
            "set" => {
                let mut cmd = redis::cmd("SADD");
                cmd.arg(&key);
                for m in e["value"].as_array().unwrap() {
                    cmd.arg(m.as_str().unwrap().replace(PLACEHOLDER, prefix));
                }
                let _: () = cmd.query_async(&mut conn).await.unwrap();
            }
            other => panic!("no Redis type {other}"),
        }
        if e["expires"].as_bool().unwrap() {
            let _: () = redis::cmd("PEXPIRE")
                .arg(&key)
                .arg(ttl.as_millis() as u64)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        keys.push(key);
    }
    keys
}

async fn delete_redis(prefix: &str, only_expiring: bool) {
    let mut conn = redis_conn().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    for key in keys {
        let pttl: i64 = redis::cmd("PTTL")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        if !only_expiring || pttl >= 0 {
            let _: () = redis::cmd("DEL")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }
}

async fn etcd() -> etcd_client::Client {
    etcd_client::Client::connect([urls::etcd().replace("etcd://", "http://")], None)
        .await
        .unwrap()
}

/// Every etcd key under `/{namespace}/`, its value and whether it was bound to a lease.
async fn dump_etcd(namespace: &str) -> Value {
    let mut client = etcd().await;
    let got = client
        .get(
            format!("/{namespace}/"),
            Some(etcd_client::GetOptions::new().with_prefix()),
        )
        .await
        .unwrap();
    let out: Vec<Value> = got
        .kvs()
        .iter()
        .map(|kv| {
            json!({
                "key": kv.key_str().unwrap().replace(namespace, PLACEHOLDER),
                "value": kv.value_str().unwrap().replace(namespace, PLACEHOLDER),
                "leased": kv.lease() != 0,
            })
        })
        .collect();
    Value::Array(out)
}

/// Loads an etcd fixture under `namespace`; leased keys are bound to a new lease of
/// `ttl`, returned.
async fn load_etcd(entries: &Value, namespace: &str, ttl: Duration) -> i64 {
    let mut client = etcd().await;
    let lease = client
        .lease_grant(ttl.as_secs() as i64, None)
        .await
        .unwrap()
        .id();
    for e in entries.as_array().unwrap() {
        let key = e["key"].as_str().unwrap().replace(PLACEHOLDER, namespace);
        let value = e["value"].as_str().unwrap().replace(PLACEHOLDER, namespace);
        let options = e["leased"]
            .as_bool()
            .unwrap()
            .then(|| etcd_client::PutOptions::new().with_lease(lease));
        client.put(key, value, options).await.unwrap();
    }
    lease
}

async fn delete_etcd(namespace: &str) {
    etcd()
        .await
        .delete(
            format!("/{namespace}/"),
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        )
        .await
        .unwrap();
}

async fn zk() -> zookeeper_client::Client {
    let cluster = urls::zookeeper();
    let cluster = cluster.trim_start_matches("zookeeper://");
    zookeeper_client::Client::connect(cluster).await.unwrap()
}

/// Every znode under `/{root}` (itself included), parents first, with its data and
/// whether it was ephemeral.
async fn dump_zk(root: &str) -> Value {
    let client = zk().await;
    let mut out = Vec::new();
    let mut todo = vec![format!("/{root}")];
    while let Some(path) = todo.pop() {
        let (data, stat) = client.get_data(&path).await.unwrap();
        out.push(json!({
            "path": path.replace(root, PLACEHOLDER),
            "data": String::from_utf8(data).unwrap().replace(root, PLACEHOLDER),
            "ephemeral": stat.ephemeral_owner != 0,
        }));
        let mut children = client.list_children(&path).await.unwrap();
        children.sort();
        for child in children.into_iter().rev() {
            todo.push(format!("{path}/{child}"));
        }
    }
    out.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Value::Array(out)
}

/// Loads a ZooKeeper fixture under `/{root}`; ephemeral znodes are made ephemeral in the
/// session returned (the old node's), which the test ends when it wants them gone.
async fn load_zk(entries: &Value, root: &str) -> zookeeper_client::Client {
    let session = zk().await;
    for e in entries.as_array().unwrap() {
        let path = e["path"].as_str().unwrap().replace(PLACEHOLDER, root);
        let data = e["data"].as_str().unwrap().replace(PLACEHOLDER, root);
        let mode = if e["ephemeral"].as_bool().unwrap() {
            zookeeper_client::CreateMode::Ephemeral
        } else {
            zookeeper_client::CreateMode::Persistent
        };
        session
            .create(
                &path,
                data.as_bytes(),
                &mode.with_acls(zookeeper_client::Acls::anyone_all()),
            )
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    session
}

async fn delete_zk(root: &str) {
    let client = zk().await;
    let mut all = Vec::new();
    let mut todo = vec![format!("/{root}")];
    while let Some(path) = todo.pop() {
        for child in client.list_children(&path).await.unwrap_or_default() {
            todo.push(format!("{path}/{child}"));
        }
        all.push(path);
    }
    for path in all.into_iter().rev() {
        let _ = client.delete(&path, None).await;
    }
}

/// Deletes the ephemeral znodes under `/{root}`: the old node's session ended.
async fn end_zk_session(session: &zookeeper_client::Client, entries: &Value, root: &str) {
    for e in entries.as_array().unwrap() {
        if e["ephemeral"].as_bool().unwrap() {
            let path = e["path"].as_str().unwrap().replace(PLACEHOLDER, root);
            session.delete(&path, None).await.unwrap();
        }
    }
}

// ---- the file registry ----------------------------------------------------------------

fn dump_dir(dir: &Path, namespace: &str, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if name.starts_with('.') {
            continue;
        }
        let text = read_text(&entry.path());
        std::fs::write(
            into.join(name.replace(namespace, PLACEHOLDER)),
            text.replace(namespace, PLACEHOLDER),
        )
        .unwrap();
    }
}

fn load_dir(from: &Path, namespace: &str, dir: &Path) {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let text = read_text(&entry.path());
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(name.replace(PLACEHOLDER, namespace)))
            .unwrap();
        std::io::Write::write_all(&mut file, text.replace(PLACEHOLDER, namespace).as_bytes())
            .unwrap();
    }
}

// ---- worker registries --------------------------------------------------------------

/// The worker parts: `worker` under the twitter layout (marks of extension 0, the plain
/// time), `worker-ext` under a layout with extension bits after a restart far behind the
/// mark (marks that carry extension 1 above the time).
const WORKER_PARTS: [&str; 2] = ["worker", "worker-ext"];
/// The layout of `worker-ext`, as `Layout::from_spec` takes it.
const EXT_LAYOUT: (&str, u64, u64) = ("ext:2,time:39,worker:10,seq:12", 1, 1_700_000_000_000);

fn worker_fixture(part: &str, backend: &str) -> String {
    match backend {
        "file" => format!("{part}/file"),
        "sqlite" | "postgres" | "mysql" => format!("{part}/{backend}.sql"),
        _ => format!("{part}/{backend}.json"),
    }
}

/// The generator builder of a worker fixture's `layout` (`twitter`, or a spec with `unit_ms`
/// and `epoch_ms`).
fn builder_of(expect: &Value) -> Builder {
    match expect["layout"].as_str().unwrap() {
        "twitter" => twitter(),
        spec => SnowflakeGenerator::builder(
            Layout::from_spec(
                spec,
                expect["unit_ms"].as_u64().unwrap(),
                expect["epoch_ms"].as_u64().unwrap(),
            )
            .unwrap(),
        ),
    }
}

/// Writes `backend`'s worker registry as a node of this version leaves it while holding
/// worker ID 5, and what the fixture must guarantee.
async fn write_worker(part: &str, backend: &str, out: &Path) -> Value {
    let dir = scratch_dir();
    let url = backend_url(backend, &dir);
    let ns = unique_name("fx");
    let mut config = LeaseConfig::new(&url, WorkerSource::Static(WORKER_ID));
    config.namespace = ns.clone();
    config.ttl = Duration::from_secs(10);
    let layout_fields = if part == "worker" {
        json!({"layout": "twitter"})
    } else {
        json!({"layout": EXT_LAYOUT.0, "unit_ms": EXT_LAYOUT.1, "epoch_ms": EXT_LAYOUT.2})
    };
    let node = if part == "worker" {
        let clock = OffsetClock::new(MonotonicClock::new(), 0);
        WorkerNode::start(config, twitter(), clock).await.unwrap()
    } else {
        // A first run, then a restart a minute behind its mark: the restart takes
        // extension value 1 at once, and its marks carry it.
        let first = WorkerNode::start(
            config.clone(),
            builder_of(&layout_fields),
            MonotonicClock::new(),
        )
        .await
        .unwrap();
        first.next_block(100).unwrap();
        first.shutdown().await.unwrap();
        config.max_mark_wait = Duration::from_secs(1);
        let behind = OffsetClock::new(MonotonicClock::new(), -60_000);
        let node = WorkerNode::start(config, builder_of(&layout_fields), behind)
            .await
            .unwrap();
        assert_eq!(node.epoch().extension(), 1);
        node
    };
    let highest = node.next_block(1000).unwrap().iter().last().unwrap();
    // Let the keeper write a mark and a clock report or two.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let highest = highest.max(node.next_block(10).unwrap().iter().last().unwrap());
    let registry = WorkerRegistry::connect(&url, &ns).await.unwrap();
    let mark = registry.read_mark(WORKER_ID).await.unwrap().unwrap();
    let layout = registry.read_layout(WORKER_ID).await.unwrap();
    let holder = node.holder().to_string();
    let target = out.join(worker_fixture(part, backend));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    match backend {
        "file" => dump_dir(&dir.join("workers"), &ns, &target),
        "sqlite" | "postgres" | "mysql" => {
            std::fs::write(&target, dump_sql(backend, &url, &ns)).unwrap()
        }
        "redis" => write_json(&target, &dump_redis(&ns).await),
        "etcd" => write_json(&target, &dump_etcd(&ns).await),
        "zookeeper" => write_json(&target, &dump_zk(&ns).await),
        _ => unreachable!(),
    }
    node.shutdown().await.unwrap();
    drop(registry);
    match backend {
        "postgres" | "mysql" => drop_sql_table(&url, &ns).await,
        "redis" => delete_redis(&ns, false).await,
        "etcd" => delete_etcd(&ns).await,
        "zookeeper" => delete_zk(&ns).await,
        _ => {}
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut expect = json!({
        "worker_id": WORKER_ID,
        "holder": holder.replace(&ns, PLACEHOLDER),
        "mark": mark,
        "layout_record": layout,
        "highest_id": highest,
    });
    for (k, v) in layout_fields.as_object().unwrap() {
        expect[k] = v.clone();
    }
    expect
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap() + "\n").unwrap();
}

/// Loads `backend`'s worker fixture from `version`, reads it with today's registry, and
/// starts a node on it whose clock stands just before the old mark: the node waits the
/// mark out and its IDs come after every one the old node issued.
async fn read_worker(part: &str, backend: &str, version: &Path) {
    let expect = read_json(&version.join(format!("{part}/expect.json")))[backend].clone();
    let what = format!("{} {part} {backend}", version.display());
    let dir = scratch_dir();
    let url = backend_url(backend, &dir);
    let ns = unique_name("fx");
    let fixture = version.join(worker_fixture(part, backend));
    let leased = Duration::from_secs(5);
    let mut zk_session = None;
    let mut etcd_lease = None;
    match backend {
        "file" => load_dir(&fixture, &ns, &dir.join("workers")),
        "sqlite" | "postgres" | "mysql" => {
            load_sql(&url, &read_text(&fixture).replace(PLACEHOLDER, &ns)).await
        }
        "redis" => {
            load_redis(&read_json(&fixture), &ns, leased).await;
        }
        "etcd" => etcd_lease = Some(load_etcd(&read_json(&fixture), &ns, leased).await),
        "zookeeper" => zk_session = Some(load_zk(&read_json(&fixture), &ns).await),
        _ => unreachable!(),
    }

    // (a) today's registry reads the old state.
    let registry = WorkerRegistry::connect(&url, &ns)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mark = registry
        .read_mark(WORKER_ID)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .unwrap_or_else(|| panic!("{what}: no mark read"));
    assert_eq!(mark, expect["mark"].as_u64().unwrap(), "{what}: the mark");
    let layout = registry
        .read_layout(WORKER_ID)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        layout.as_deref(),
        expect["layout_record"].as_str(),
        "{what}: the layout record"
    );
    let list = registry
        .list()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(list.unreadable.is_empty(), "{what}: {:?}", list.unreadable);
    for entry in &list.entries {
        assert_eq!(entry.problem, None, "{what}: {entry:?}");
    }
    if matches!(backend, "redis" | "etcd" | "zookeeper") {
        let holder = expect["holder"].as_str().unwrap().replace(PLACEHOLDER, &ns);
        let entry = list
            .entries
            .iter()
            .find(|e| e.worker_id == WORKER_ID)
            .unwrap_or_else(|| panic!("{what}: the old lease is not listed: {list:?}"));
        assert_eq!(entry.holder, holder, "{what}: the lease's holder");
        assert!(
            entry.since_ms.is_some(),
            "{what}: the claim time is not read"
        );
    }
    drop(registry);

    // The old node is gone: its lease ends.
    match backend {
        "redis" => delete_redis(&ns, true).await,
        "etcd" => {
            etcd()
                .await
                .lease_revoke(etcd_lease.unwrap())
                .await
                .unwrap();
        }
        "zookeeper" => {
            let session = zk_session.take().unwrap();
            end_zk_session(&session, &read_json(&fixture), &ns).await;
        }
        _ => {}
    }

    // (b) a node on the old state issues after the mark, and after every old ID.
    let stored = Mark::from_stored(mark);
    if part == "worker-ext" {
        assert_eq!(stored.extension, 1, "{what}: the mark's extension value");
    }
    let now = MonotonicClock::new().now_ms();
    let offset = stored.ms as i64 - now as i64 - 1_500;
    let clock = OffsetClock::new(MonotonicClock::new(), offset);
    let mut config = LeaseConfig::new(&url, WorkerSource::Static(WORKER_ID));
    config.namespace = ns.clone();
    config.ttl = Duration::from_secs(3);
    let started = Instant::now();
    let builder = builder_of(&expect);
    let layout = builder.layout().clone();
    let node = WorkerNode::start(config, builder, clock)
        .await
        .unwrap_or_else(|e| panic!("{what}: a node on the old state: {e}"));
    let first = node.next_block(1).unwrap().iter().next().unwrap();
    if part == "worker" {
        assert!(
            started.elapsed() >= Duration::from_millis(1_000),
            "{what}: the node did not wait out the old mark"
        );
        let first_ms = (first >> 22) + layout.epoch_ms();
        assert!(
            first_ms > stored.ms,
            "{what}: {first} is not after the mark"
        );
    } else {
        // Under the mark's extension value or a later one, never an earlier.
        let extension = layout.decode(first).unwrap().values[0];
        assert!(
            extension >= stored.extension,
            "{what}: {first} is under extension {extension}, the mark under {}",
            stored.extension
        );
    }
    let highest = expect["highest_id"].as_u64().unwrap();
    assert!(first > highest, "{what}: {first} is not above {highest}");
    node.shutdown().await.unwrap();

    match backend {
        "postgres" | "mysql" => drop_sql_table(&url, &ns).await,
        "redis" => delete_redis(&ns, false).await,
        "etcd" => delete_etcd(&ns).await,
        "zookeeper" => delete_zk(&ns).await,
        _ => {}
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_file_registries_are_read_and_their_marks_kept() {
    for part in WORKER_PARTS {
        for version in versions_with(&format!("{part}/expect.json")) {
            read_worker(part, "file", &version).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_sql_registries_are_read_and_their_marks_kept() {
    for part in WORKER_PARTS {
        for version in versions_with(&format!("{part}/expect.json")) {
            for backend in ["sqlite", "postgres", "mysql"] {
                read_worker(part, backend, &version).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_coordinator_registries_are_read_and_their_marks_kept() {
    for part in WORKER_PARTS {
        for version in versions_with(&format!("{part}/expect.json")) {
            for backend in ["redis", "etcd", "zookeeper"] {
                read_worker(part, backend, &version).await;
            }
        }
    }
}

// ---- reservations of `snowdrift sql install --registry` ------------------------------

/// The worker ID the `reserved` part's database holds: one a server had held before.
const RESERVED_ID: u64 = 7;
/// Its holder, as `snowdrift sql install` names a database.
const RESERVED_HOLDER: &str = "snowdrift-sql:postgres:fixture/public";

/// Dumps `backend`'s registry in namespace `ns` to `target` (a worker part's fixture).
async fn dump_registry(backend: &str, url: &str, dir: &Path, ns: &str, target: &Path) {
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    match backend {
        "file" => dump_dir(&dir.join("workers"), ns, target),
        "sqlite" | "postgres" | "mysql" => {
            std::fs::write(target, dump_sql(backend, url, ns)).unwrap()
        }
        "redis" => write_json(target, &dump_redis(ns).await),
        "etcd" => write_json(target, &dump_etcd(ns).await),
        "zookeeper" => write_json(target, &dump_zk(ns).await),
        _ => unreachable!(),
    }
}

/// Removes what a worker part's writer or reader left in `backend`.
async fn clear_registry(backend: &str, url: &str, dir: &Path, ns: &str) {
    match backend {
        "postgres" | "mysql" => drop_sql_table(url, ns).await,
        "redis" => delete_redis(ns, false).await,
        "etcd" => delete_etcd(ns).await,
        "zookeeper" => delete_zk(ns).await,
        _ => {}
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Writes `backend`'s registry as this version leaves it once a server held worker ID 7
/// and stopped, and a database reserved it (`WorkerRegistry::reserve`, as `snowdrift sql
/// install --registry` does), and what the fixture must guarantee.
async fn write_reserved(backend: &str, out: &Path) -> Value {
    let dir = scratch_dir();
    let url = backend_url(backend, &dir);
    let ns = unique_name("fx");
    let mut config = LeaseConfig::new(&url, WorkerSource::Static(RESERVED_ID));
    config.namespace = ns.clone();
    config.ttl = Duration::from_secs(3);
    let node = WorkerNode::start(config, twitter(), MonotonicClock::new())
        .await
        .unwrap();
    let highest = node.next_block(1000).unwrap().iter().last().unwrap();
    node.shutdown().await.unwrap();
    let registry = WorkerRegistry::connect(&url, &ns).await.unwrap();
    let layout = registry.read_layout(RESERVED_ID).await.unwrap().unwrap();
    registry
        .reserve(RESERVED_ID, RESERVED_HOLDER, &layout)
        .await
        .unwrap();
    let mark = registry.read_mark(RESERVED_ID).await.unwrap().unwrap();
    drop(registry);
    let target = out.join(worker_fixture("reserved", backend));
    dump_registry(backend, &url, &dir, &ns, &target).await;
    clear_registry(backend, &url, &dir, &ns).await;
    json!({
        "worker_id": RESERVED_ID,
        "holder": RESERVED_HOLDER,
        "mark": mark,
        "layout_record": layout,
        "highest_id": highest,
    })
}

/// Loads `backend`'s `reserved` fixture from `version`: (a) today's registry lists the
/// database's reservation, never expiring, and no server's claim takes it; (b) uninstall's
/// step, `unreserve` with a mark above the database's IDs, frees it, and a node on it
/// issues above that mark and above every ID the server issued before the reservation.
async fn read_reserved(backend: &str, version: &Path) {
    let expect = read_json(&version.join("reserved/expect.json"))[backend].clone();
    let what = format!("{} reserved {backend}", version.display());
    let dir = scratch_dir();
    let url = backend_url(backend, &dir);
    let ns = unique_name("fx");
    let fixture = version.join(worker_fixture("reserved", backend));
    // Nothing of a reservation is bound to a lease: a lease here would be a stale one.
    let leased = Duration::from_secs(5);
    let mut zk_session = None;
    match backend {
        "file" => load_dir(&fixture, &ns, &dir.join("workers")),
        "sqlite" | "postgres" | "mysql" => {
            load_sql(&url, &read_text(&fixture).replace(PLACEHOLDER, &ns)).await
        }
        "redis" => {
            load_redis(&read_json(&fixture), &ns, leased).await;
        }
        "etcd" => {
            load_etcd(&read_json(&fixture), &ns, leased).await;
        }
        "zookeeper" => zk_session = Some(load_zk(&read_json(&fixture), &ns).await),
        _ => unreachable!(),
    }
    let worker = expect["worker_id"].as_u64().unwrap();
    let holder = expect["holder"].as_str().unwrap();

    // (a) the reservation is read as the database's, and holds.
    let registry = WorkerRegistry::connect(&url, &ns)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let list = registry
        .list()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let entry = list
        .entries
        .iter()
        .find(|e| e.worker_id == worker)
        .unwrap_or_else(|| panic!("{what}: the reservation is not listed: {list:?}"));
    assert_eq!(entry.holder, holder, "{what}: the reservation's holder");
    assert!(entry.never_expires, "{what}: {entry:?}");
    assert_eq!(
        registry.read_mark(worker).await.unwrap(),
        expect["mark"].as_u64(),
        "{what}: the mark"
    );
    assert!(
        registry
            .claim(worker, "a-server", Duration::from_secs(3))
            .await
            .is_err(),
        "{what}: a server's claim took the database's worker ID"
    );
    // An old session, had there been one, is gone now.
    if let Some(session) = zk_session.take() {
        end_zk_session(&session, &read_json(&fixture), &ns).await;
    }

    // (b) uninstall's write-back: the database's IDs ran 1.5 s ahead of the clock.
    let db_ms = MonotonicClock::new().now_ms() + 1_500;
    let freed = registry
        .unreserve(
            worker,
            holder,
            Mark {
                extension: 0,
                ms: db_ms,
            }
            .stored(),
        )
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(freed, "{what}: the reservation was not found to end");
    drop(registry);
    let mut config = LeaseConfig::new(&url, WorkerSource::Static(worker));
    config.namespace = ns.clone();
    config.ttl = Duration::from_secs(3);
    let node = WorkerNode::start(config, twitter(), MonotonicClock::new())
        .await
        .unwrap_or_else(|e| panic!("{what}: a node on the freed worker ID: {e}"));
    let first = node.next_block(1).unwrap().iter().next().unwrap();
    let first_ms = (first >> 22) + twitter().layout().epoch_ms();
    assert!(
        first_ms > db_ms,
        "{what}: {first} is not after the database's mark"
    );
    let highest = expect["highest_id"].as_u64().unwrap();
    assert!(first > highest, "{what}: {first} is not above {highest}");
    node.shutdown().await.unwrap();
    clear_registry(backend, &url, &dir, &ns).await;
}

/// Writes the `reserved` part (every registry backend and its `expect.json`) under `out`.
async fn write_reserved_part(out: &Path) {
    let mut expect = serde_json::Map::new();
    for backend in WORKER_BACKENDS {
        expect.insert(backend.into(), write_reserved(backend, out).await);
    }
    write_json(&out.join("reserved/expect.json"), &Value::Object(expect));
}

/// No release has written `reserved/` yet (0.1.0 had no reservations). Until one does, this
/// build writes the part into a scratch directory, through the dialects' own dump tools, and
/// reads that: the reader is held to a real dump from the start rather than passing on
/// nothing, and once a release directory holds the part, it is read as every other part is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_reservations_of_a_database_are_read_and_hold() {
    let mut versions = released_with("reserved/expect.json");
    if versions.is_empty() {
        let unreleased = scratch_dir().join("unreleased");
        write_reserved_part(&unreleased).await;
        versions.push(unreleased);
    }
    for version in versions {
        for backend in WORKER_BACKENDS {
            read_reserved(backend, &version).await;
        }
    }
}

// ---- segment stores -------------------------------------------------------------------

fn segment_fixture(backend: &str) -> String {
    match backend {
        "sqlite" | "postgres" | "mysql" => format!("segment/{backend}.sql"),
        _ => format!("segment/{backend}.json"),
    }
}

/// Writes a segment store as this version leaves it: a tag `order` (step 100) after three
/// claims and, on SQL, a tag `invoice` with a template after two claims in [`PERIOD`].
async fn write_segment(backend: &str, out: &Path) -> Value {
    let dir = scratch_dir();
    let url = backend_url(backend, &dir);
    let table = unique_name("fx");
    let store = SegmentStore::connect(&url, &table).await.unwrap();
    store
        .create_tag(&NewTag {
            tag: "order".into(),
            step: 100,
            description: Some("orders".into()),
            template: None,
        })
        .await
        .unwrap();
    let mut highest = 0;
    for _ in 0..3 {
        highest = store.claim("order", None).await.unwrap().ids.end - 1;
    }
    let mut expect =
        json!({"order": {"highest_id": highest, "step": 100, "description": "orders"}});
    let sql = matches!(backend, "sqlite" | "postgres" | "mysql");
    if sql {
        store
            .create_tag(&NewTag {
                tag: "invoice".into(),
                step: 10,
                description: None,
                template: Some(CounterTemplate::parse("INV{date:%Y%m%d}{seq:06}").unwrap()),
            })
            .await
            .unwrap();
        let mut highest = 0;
        for _ in 0..2 {
            highest = store
                .claim_dated("invoice", None, PERIOD)
                .await
                .unwrap()
                .claim
                .ids
                .end
                - 1;
        }
        expect["invoice"] = json!({
            "highest_id": highest,
            "step": 10,
            "template": "INV{date:%Y%m%d}{seq:06}",
            "period": PERIOD,
        });
    }
    let target = out.join(segment_fixture(backend));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    match backend {
        "sqlite" | "postgres" | "mysql" => {
            std::fs::write(&target, dump_sql(backend, &url, &table)).unwrap()
        }
        "redis" => write_json(&target, &dump_redis(&table).await),
        "zookeeper" => write_json(&target, &dump_zk(&table).await),
        _ => unreachable!(),
    }
    if let SegmentStore::Sql(s) = store {
        s.close().await;
    }
    match backend {
        "postgres" | "mysql" => drop_sql_table(&url, &table).await,
        "redis" => delete_redis(&table, false).await,
        "zookeeper" => delete_zk(&table).await,
        _ => {}
    }
    let _ = std::fs::remove_dir_all(&dir);
    expect
}

async fn read_segment(backend: &str, version: &Path) {
    let expect = read_json(&version.join("segment/expect.json"))[backend].clone();
    let what = format!("{} {backend}", version.display());
    let dir = scratch_dir();
    let url = backend_url(backend, &dir);
    let table = unique_name("fx");
    let fixture = version.join(segment_fixture(backend));
    match backend {
        "sqlite" | "postgres" | "mysql" => {
            load_sql(&url, &read_text(&fixture).replace(PLACEHOLDER, &table)).await
        }
        "redis" => {
            load_redis(&read_json(&fixture), &table, Duration::from_secs(60)).await;
        }
        "zookeeper" => drop(load_zk(&read_json(&fixture), &table).await),
        _ => unreachable!(),
    }
    let store = SegmentStore::connect(&url, &table)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));

    // (a) the tag reads as it was written.
    let order = &expect["order"];
    let tag = store
        .get_tag("order")
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let highest = order["highest_id"].as_i64().unwrap();
    assert_eq!(tag.max_id, highest + 1, "{what}: max_id");
    assert_eq!(tag.step, order["step"].as_i64().unwrap(), "{what}: step");
    assert_eq!(
        tag.description.as_deref(),
        order["description"].as_str(),
        "{what}: description"
    );
    let listed = store
        .list_tags()
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        listed.iter().any(|t| t.tag == "order"),
        "{what}: {listed:?}"
    );
    // (b) the next segment starts above every ID the old state handed out.
    let claim = store
        .claim("order", None)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        claim.ids.start > highest as u64,
        "{what}: {} is not above {highest}",
        claim.ids.start
    );

    if let Some(invoice) = expect.get("invoice") {
        let tag = store
            .get_tag("invoice")
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let highest = invoice["highest_id"].as_i64().unwrap();
        assert_eq!(tag.max_id, highest + 1, "{what}: invoice max_id");
        assert_eq!(tag.period, invoice["period"].as_i64().unwrap(), "{what}");
        let template = tag
            .template
            .unwrap_or_else(|| panic!("{what}: the template is not read"));
        assert_eq!(
            template,
            CounterTemplate::parse(invoice["template"].as_str().unwrap()).unwrap(),
            "{what}"
        );
        let period = invoice["period"].as_i64().unwrap();
        let claim = store
            .claim_dated("invoice", None, period)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(claim.period, period, "{what}");
        assert!(
            claim.claim.ids.start > highest as u64,
            "{what}: {} is not above {highest} in period {period}",
            claim.claim.ids.start
        );
    }

    if let SegmentStore::Sql(s) = store {
        s.close().await;
    }
    match backend {
        "postgres" | "mysql" => drop_sql_table(&url, &table).await,
        "redis" => delete_redis(&table, false).await,
        "zookeeper" => delete_zk(&table).await,
        _ => {}
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_sql_segment_tags_and_dated_periods_are_read_and_go_on_above_max_id() {
    for version in versions_with("segment/expect.json") {
        for backend in ["sqlite", "postgres", "mysql"] {
            read_segment(backend, &version).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_redis_and_zookeeper_segment_tags_are_read_and_go_on_above_max_id() {
    for version in versions_with("segment/expect.json") {
        for backend in ["redis", "zookeeper"] {
            read_segment(backend, &version).await;
        }
    }
}

// ---- ticket servers -----------------------------------------------------------------

/// The ticket class the fixtures' servers held: offset 2 of 3.
const TICKET_CLASS: (u32, u32) = (3, 2);

async fn ticket_server(url: &str, name: &str) -> snowdrift_store::ticket::TicketServer {
    let mut config = snowdrift_store::ticket::TicketConfig::new(TICKET_CLASS.0, TICKET_CLASS.1);
    config.name = name.to_string();
    snowdrift_store::ticket::TicketServer::connect(url, config)
        .await
        .unwrap_or_else(|e| panic!("{url}: {e}"))
}

async fn drop_ticket_object(backend: &str, url: &str, name: &str) {
    let kind = if backend == "postgres" {
        "SEQUENCE"
    } else {
        "TABLE"
    };
    let pool = sql_pool(url).await;
    sqlx::query(AssertSqlSafe(format!("DROP {kind} IF EXISTS {name}")))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// Writes a MySQL ticket table and a PostgreSQL ticket sequence of class 2 of 3 after 250
/// tickets each.
async fn write_ticket(backend: &str, out: &Path) -> Value {
    let url = backend_url(backend, Path::new("/"));
    let name = unique_name("fx");
    let server = ticket_server(&url, &name).await;
    let mut highest = 0;
    for count in [1, 5, 244] {
        highest = highest.max(server.next(count).await.unwrap().into_iter().max().unwrap());
    }
    server.close().await;
    let target = out.join(format!("ticket/{backend}.sql"));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, dump_sql(backend, &url, &name)).unwrap();
    drop_ticket_object(backend, &url, &name).await;
    json!({"increment": TICKET_CLASS.0, "offset": TICKET_CLASS.1, "highest_id": highest})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_ticket_tables_and_sequences_are_read_and_go_on_above_them() {
    for version in versions_with("ticket/expect.json") {
        for backend in ["mysql", "postgres"] {
            let what = format!("{} {backend}", version.display());
            let expect = read_json(&version.join("ticket/expect.json"))[backend].clone();
            let url = backend_url(backend, Path::new("/"));
            let name = unique_name("fx");
            let fixture = read_text(&version.join(format!("ticket/{backend}.sql")));
            load_sql(&url, &fixture.replace(PLACEHOLDER, &name)).await;
            // (a) today's server takes the old table or sequence as its class's.
            let server = ticket_server(&url, &name).await;
            server
                .check()
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            // (b) its tickets are in the class and above every old one.
            let ids = server
                .next(10)
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let highest = expect["highest_id"].as_u64().unwrap();
            let increment = u64::from(TICKET_CLASS.0);
            for id in ids {
                assert!(id > highest, "{what}: {id} is not above {highest}");
                assert_eq!(id % increment, u64::from(TICKET_CLASS.1), "{what}: {id}");
            }
            server.close().await;
            drop_ticket_object(backend, &url, &name).await;
        }
    }
}

// ---- Redis counters -----------------------------------------------------------------

/// A time in the fixtures' [`PERIOD`]: 2026-11-28T12:00:00Z.
const IN_PERIOD_MS: u64 = 1_795_867_200_000;
const COUNTER_TEMPLATE: &str = "ORD{date:%Y%m%d}{seq:08}";

async fn counters(
    prefix: &str,
) -> (
    snowdrift_store::counter::RedisCounter,
    snowdrift_store::counter::RedisCounter,
) {
    let clock = snowdrift_core::clock::ManualClock::new(IN_PERIOD_MS);
    let plain = snowdrift_store::counter::RedisCounter::builder("ticket")
        .prefix(prefix)
        .batch(100)
        .connect(&urls::redis())
        .await
        .unwrap();
    let dated = snowdrift_store::counter::RedisCounter::builder("order")
        .prefix(prefix)
        .template(CounterTemplate::parse(COUNTER_TEMPLATE).unwrap())
        .batch(10)
        .clock(clock)
        .connect(&urls::redis())
        .await
        .unwrap();
    (plain, dated)
}

/// Writes a plain counter after 250 values (three batches of 100 fetched) and a daily
/// counter after 25 values in [`PERIOD`].
async fn write_counter(out: &Path) -> Value {
    let ns = unique_name("fx");
    let (plain, dated) = counters(&format!("{ns}:")).await;
    let plain_highest = *plain.next(250).await.unwrap().last().unwrap();
    let rendered = dated.next_rendered(25).await.unwrap();
    let dated_highest: i64 = rendered.last().unwrap()[format!("ORD{PERIOD}").len()..]
        .parse()
        .unwrap();
    let target = out.join("counter/redis.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    write_json(&target, &dump_redis(&ns).await);
    delete_redis(&ns, false).await;
    json!({
        "ticket": {"highest": plain_highest},
        "order": {"highest": dated_highest, "template": COUNTER_TEMPLATE, "at_ms": IN_PERIOD_MS},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_redis_counters_are_read_and_go_on_above_them() {
    for version in versions_with("counter/expect.json") {
        let what = version.display().to_string();
        let expect = read_json(&version.join("counter/expect.json"));
        let ns = unique_name("fx");
        // A key of a period had an expiry: it lives a minute here.
        load_redis(
            &read_json(&version.join("counter/redis.json")),
            &ns,
            Duration::from_secs(60),
        )
        .await;
        let (plain, dated) = counters(&format!("{ns}:")).await;
        let highest = expect["ticket"]["highest"].as_i64().unwrap();
        let values = plain
            .next(5)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(values[0] > highest, "{what}: {values:?} after {highest}");
        let highest = expect["order"]["highest"].as_i64().unwrap();
        let rendered = dated
            .next_rendered(1)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let seq: i64 = rendered[0]
            .strip_prefix(&format!("ORD{PERIOD}"))
            .unwrap_or_else(|| panic!("{what}: {rendered:?} is not of period {PERIOD}"))
            .parse()
            .unwrap();
        assert!(seq > highest, "{what}: {rendered:?} after {highest}");
        delete_redis(&ns, false).await;
    }
}

// ---- the tso window -------------------------------------------------------------------

const TSO_TTL: Duration = Duration::from_secs(3);
const TSO_MARGIN: Duration = Duration::from_millis(600);

async fn write_tso(out: &Path) -> Value {
    use snowdrift_core::clock::ManualClock;
    use snowdrift_core::tso::{Allocation, TimestampOracle, TsoConfig};
    let ns = unique_name("fx");
    let tso = EtcdTso::connect(&urls::etcd(), &ns, "ts").await.unwrap();
    let Campaign::Won(lead) = tso.campaign("node-a", TSO_TTL, TSO_MARGIN).await.unwrap() else {
        panic!("no leadership");
    };
    let config = TsoConfig::default();
    let clock = ManualClock::new(MonotonicClock::new().now_ms());
    let mut oracle = TimestampOracle::new(config, clock.clone()).unwrap();
    oracle.start_term(lead.previous_window_ms());
    let mut highest = 0;
    for _ in 0..100 {
        loop {
            match oracle.allocate(10).unwrap() {
                Allocation::Issued(ids) => {
                    highest = ids.end - 1;
                    break;
                }
                Allocation::SaveWindow(save) => {
                    lead.save_window(save.up_to_ms).await.unwrap();
                    oracle.window_saved(save).unwrap();
                }
                Allocation::Wait { until_ms } => clock.set(until_ms),
            }
        }
        clock.advance(5);
    }
    let window = tso.window().await.unwrap().unwrap();
    oracle.end_term();
    lead.resign().await.unwrap();
    let target = out.join("tso/etcd.json");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    write_json(&target, &dump_etcd(&ns).await);
    delete_etcd(&ns).await;
    json!({"name": "ts", "window_ms": window, "highest_id": highest})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_tso_window_is_read_and_a_new_leader_issues_above_it() {
    use snowdrift_core::clock::ManualClock;
    use snowdrift_core::tso::{Allocation, TimestampOracle, TsoConfig};
    for version in versions_with("tso/expect.json") {
        let what = version.display().to_string();
        let expect = read_json(&version.join("tso/expect.json"));
        let ns = unique_name("fx");
        let lease = load_etcd(
            &read_json(&version.join("tso/etcd.json")),
            &ns,
            Duration::from_secs(5),
        )
        .await;
        etcd().await.lease_revoke(lease).await.unwrap();
        let name = expect["name"].as_str().unwrap();
        let tso = EtcdTso::connect(&urls::etcd(), &ns, name).await.unwrap();
        let window = expect["window_ms"].as_u64().unwrap();
        // (a) the window reads as written.
        assert_eq!(
            tso.window().await.unwrap_or_else(|e| panic!("{what}: {e}")),
            Some(window),
            "{what}"
        );
        // (b) a new leader, its clock a minute behind the window, issues above it.
        let Campaign::Won(lead) = tso.campaign("node-b", TSO_TTL, TSO_MARGIN).await.unwrap() else {
            panic!("{what}: no leadership");
        };
        assert_eq!(lead.previous_window_ms(), Some(window), "{what}");
        let config = TsoConfig::default();
        let clock = ManualClock::new(window - 60_000);
        let mut oracle = TimestampOracle::new(config, clock.clone()).unwrap();
        oracle.start_term(lead.previous_window_ms());
        let first = loop {
            match oracle.allocate(1).unwrap() {
                Allocation::Issued(ids) => break ids.start,
                Allocation::SaveWindow(save) => {
                    lead.save_window(save.up_to_ms).await.unwrap();
                    oracle.window_saved(save).unwrap();
                }
                Allocation::Wait { until_ms } => clock.set(until_ms),
            }
        };
        assert!(
            config.decode(first).unwrap().physical_ms > window,
            "{what}: {first} is not above the window"
        );
        let highest = expect["highest_id"].as_u64().unwrap();
        assert!(first > highest, "{what}: {first} is not above {highest}");
        oracle.end_term();
        lead.resign().await.unwrap();
        delete_etcd(&ns).await;
    }
}

// ---- the generator --------------------------------------------------------------------

/// Writes this version's fixtures into `tests/fixtures/<version>/`, which must not exist:
/// run it once per release (`scripts/write-fixtures VERSION`), with every service up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes the fixtures of a release, once: scripts/write-fixtures"]
async fn write_fixtures() {
    let version = std::env::var("SNOWDRIFT_FIXTURE_VERSION")
        .unwrap_or_else(|_| env!("CARGO_PKG_VERSION").to_string());
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "fixtures are written by the version they are named after"
    );
    let out = fixtures_root().join(&version);
    let only = std::env::var("SNOWDRIFT_FIXTURE_ONLY").unwrap_or_default();
    let wanted = |part: &str| only.is_empty() || only.split(',').any(|p| p == part);
    for part in WORKER_PARTS.into_iter().filter(|p| wanted(p)) {
        assert!(
            !out.join(part).exists(),
            "{}/{part} exists: old fixtures are never edited",
            out.display()
        );
        let mut expect = serde_json::Map::new();
        for backend in WORKER_BACKENDS {
            expect.insert(backend.into(), write_worker(part, backend, &out).await);
        }
        write_json(
            &out.join(format!("{part}/expect.json")),
            &Value::Object(expect),
        );
    }
    if wanted("reserved") {
        assert!(
            !out.join("reserved").exists(),
            "old fixtures are never edited"
        );
        write_reserved_part(&out).await;
    }
    if wanted("sql-functions") {
        assert!(
            !out.join("sql-functions").exists(),
            "old fixtures are never edited"
        );
        sql_functions::write_part(&out).await;
    }
    if wanted("segment") {
        assert!(
            !out.join("segment").exists(),
            "old fixtures are never edited"
        );
        let mut expect = serde_json::Map::new();
        for backend in SEGMENT_BACKENDS {
            expect.insert(backend.into(), write_segment(backend, &out).await);
        }
        write_json(&out.join("segment/expect.json"), &Value::Object(expect));
    }
    if wanted("ticket") {
        assert!(
            !out.join("ticket").exists(),
            "old fixtures are never edited"
        );
        let mut expect = serde_json::Map::new();
        for backend in ["mysql", "postgres"] {
            expect.insert(backend.into(), write_ticket(backend, &out).await);
        }
        write_json(&out.join("ticket/expect.json"), &Value::Object(expect));
    }
    if wanted("counter") {
        assert!(
            !out.join("counter").exists(),
            "old fixtures are never edited"
        );
        let expect = write_counter(&out).await;
        write_json(&out.join("counter/expect.json"), &expect);
    }
    if wanted("tso") {
        assert!(!out.join("tso").exists(), "old fixtures are never edited");
        let expect = write_tso(&out).await;
        write_json(&out.join("tso/expect.json"), &expect);
    }
}
