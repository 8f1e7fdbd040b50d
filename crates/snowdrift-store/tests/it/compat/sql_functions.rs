//! The `sql-functions` part: the state `snowdrift sql install` leaves in PostgreSQL and
//! MariaDB once the database has issued IDs, which a later version's `sql status`,
//! `sql install` (an upgrade: the functions written again) and `sql uninstall` must read.
//!
//! The whole schema (PostgreSQL) or database (MariaDB) is dumped with the dialect's own
//! tool and loaded with its own client, functions included: an upgrade replaces the old
//! functions where they stand, as it does in a user's database.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use snowdrift_core::layout::Layout;
use snowdrift_store::sql_functions::{self, GeneratorStatus, InstallOptions};
use snowdrift_store::worker::{Mark, WorkerRegistry};
use snowdrift_testkit::{unique_name, urls};
use sqlx::{AnyConnection, AssertSqlSafe, Connection};

use super::{PLACEHOLDER, read_json, read_text, released_with, scratch_dir, write_json};
use crate::sql_functions_db::{with_database, worker_of};

/// The generator the fixture's functions make IDs of.
const GENERATOR: &str = "orders";
/// The worker IDs the install reserves: two issue IDs, the third only has its install's
/// state.
const WORKERS: u64 = 3;
/// The databases that hold the functions (the backends' names elsewhere in the fixtures).
const DATABASES: [&str; 2] = ["postgres", "mysql"];
/// How far behind the fixture's last ticks the reader puts the functions' clock: past
/// PostgreSQL's wait for a clock step (5 ms, which then refuses), within MariaDB's wait
/// for a worker ID's counter (which then issues above it).
const STEP_BACK_MS: u64 = 100;

fn layout() -> Layout {
    Layout::preset("twitter").unwrap()
}

fn fixture_file(backend: &str) -> String {
    format!("sql-functions/{backend}.sql")
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The URL the functions in `ns` are reached through: MariaDB's go into the URL's
/// database, PostgreSQL's into schema `ns` of the test database.
fn url_of(backend: &str, ns: &str) -> String {
    match backend {
        "postgres" => urls::postgres(),
        _ => with_database(&urls::mysql(), ns),
    }
}

/// The servers' worker table is named as the schema or database (`ns`): in PostgreSQL's
/// current schema, in MariaDB's database `ns`.
fn options(backend: &str, ns: &str, test_clock: bool) -> InstallOptions {
    let mut options = InstallOptions::new(GENERATOR, layout(), ns);
    if backend == "postgres" {
        options.schema = Some(ns.to_string());
    }
    options.workers = WORKERS;
    options.test_clock = test_clock;
    options
}

async fn raw(url: &str, sql: String) {
    sqlx::any::install_default_drivers();
    let mut c = AnyConnection::connect(url).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(sql.clone()))
        .execute(&mut c)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    c.close().await.unwrap();
}

/// Removes the schema and the servers' table (PostgreSQL) or the database (MariaDB).
async fn drop_place(backend: &str, ns: &str) {
    match backend {
        "postgres" => {
            raw(
                &urls::postgres(),
                format!("DROP SCHEMA IF EXISTS {ns} CASCADE; DROP TABLE IF EXISTS {ns}"),
            )
            .await
        }
        _ => raw(&urls::mysql(), format!("DROP DATABASE IF EXISTS {ns}")).await,
    }
}

async fn session(backend: &str, ns: &str) -> AnyConnection {
    AnyConnection::connect(&url_of(backend, ns)).await.unwrap()
}

/// One ID from `snowdrift_id`.
async fn one(conn: &mut AnyConnection, backend: &str, ns: &str) -> Result<i64, sqlx::Error> {
    let sql = match backend {
        "postgres" => format!("SELECT {ns}.snowdrift_id('{GENERATOR}')"),
        _ => format!("SELECT snowdrift_id('{GENERATOR}')"),
    };
    sqlx::query_scalar(AssertSqlSafe(sql)).fetch_one(conn).await
}

/// `n` IDs from one call of `snowdrift_ids` (MariaDB's answers a JSON array).
async fn many(conn: &mut AnyConnection, backend: &str, ns: &str, n: u32) -> Vec<i64> {
    match backend {
        "postgres" => sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT * FROM {ns}.snowdrift_ids('{GENERATOR}', {n})"
        )))
        .fetch_all(conn)
        .await
        .unwrap(),
        _ => {
            let json: String = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT snowdrift_ids('{GENERATOR}', {n})"
            )))
            .fetch_one(conn)
            .await
            .unwrap();
            serde_json::from_str(&json).unwrap()
        }
    }
}

/// Puts the session's clock (`InstallOptions::test_clock`) `ms` off the real one.
async fn set_offset(conn: &mut AnyConnection, backend: &str, ms: i64) {
    let sql = match backend {
        "postgres" => format!("SET snowdrift.test_clock_offset_ms = '{ms}'"),
        _ => format!("SET @snowdrift_test_clock_offset_ms = {ms}"),
    };
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(conn)
        .await
        .unwrap();
}

/// The client arguments of a MariaDB URL (host, port, user, password) and its database.
fn mysql_args(url: &str) -> (Vec<String>, String) {
    let rest = url.split("://").nth(1).unwrap();
    let (auth, rest) = rest.split_once('@').unwrap();
    let (host, db) = rest.split_once('/').unwrap();
    let (host, port) = host.split_once(':').unwrap_or((host, "3306"));
    let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
    let mut args: Vec<String> = ["-h", host, "-P", port, "-u", user]
        .map(String::from)
        .into();
    if !password.is_empty() {
        args.push(format!("-p{password}"));
    }
    (args, db.split('?').next().unwrap().to_string())
}

fn run(mut cmd: std::process::Command, input: Option<&str>) -> String {
    use std::process::Stdio;
    let name = format!("{:?}", cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = input {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The functions' schema and the servers' table (`pg_dump`), or the database with its
/// stored functions (`mysqldump --routines`), with `ns` replaced by [`PLACEHOLDER`].
fn dump(backend: &str, ns: &str) -> String {
    let text: String = match backend {
        "postgres" => {
            let pg_dump = |what: &[&str]| {
                let mut cmd = std::process::Command::new("pg_dump");
                cmd.args([
                    "--no-owner",
                    "--no-privileges",
                    "--inserts",
                    "--column-inserts",
                ])
                .args(what)
                .args(["-d", &urls::postgres()]);
                run(cmd, None)
            };
            let schema = pg_dump(&["-n", ns]);
            let table = pg_dump(&["-t", &format!("public.{ns}")]);
            // `\restrict` carries a random key of the dump's own; the fixture is read by
            // clients that may predate the command.
            format!("{schema}\n{table}")
                .lines()
                .filter(|l| !l.starts_with("\\restrict") && !l.starts_with("\\unrestrict"))
                .map(|l| format!("{l}\n"))
                .collect()
        }
        _ => {
            let (args, _) = mysql_args(&urls::mysql());
            let mut cmd = std::process::Command::new("mysqldump");
            cmd.args(&args).args([
                "--routines",
                "--skip-comments",
                "--skip-dump-date",
                "--complete-insert",
                "--skip-extended-insert",
                ns,
            ]);
            // The sandbox line is a command older clients refuse, as `\restrict` above.
            run(cmd, None)
                .lines()
                .filter(|l| !l.starts_with("/*M!999999\\- enable the sandbox mode"))
                .map(|l| format!("{l}\n"))
                .collect()
        }
    };
    text.replace(ns, PLACEHOLDER)
}

/// Loads a fixture with the dialect's own client into a new schema or database `ns`.
async fn load(backend: &str, text: &str, ns: &str) {
    let text = text.replace(PLACEHOLDER, ns);
    match backend {
        "postgres" => {
            let mut cmd = std::process::Command::new("psql");
            cmd.args(["-q", "-X", "-v", "ON_ERROR_STOP=1", "-d", &urls::postgres()]);
            run(cmd, Some(&text));
        }
        _ => {
            raw(&urls::mysql(), format!("CREATE DATABASE {ns}")).await;
            let (args, _) = mysql_args(&urls::mysql());
            let mut cmd = std::process::Command::new("mysql");
            cmd.args(&args).arg(ns);
            run(cmd, Some(&text));
        }
    }
}

/// The status of the one generator installed in `ns`.
async fn status_of(backend: &str, ns: &str, what: &str) -> GeneratorStatus {
    let schema = (backend == "postgres").then_some(ns);
    let all = sql_functions::status(&url_of(backend, ns), schema, None)
        .await
        .unwrap_or_else(|e| panic!("{what}: sql status: {e}"));
    assert_eq!(all.len(), 1, "{what}: {all:?}");
    all.into_iter().next().unwrap()
}

/// The time (ms since 1970) of `id`'s tick.
fn ms_of(id: u64) -> u64 {
    layout().decode(id).unwrap().time_ms
}

/// Installs the functions into a new schema or database, issues IDs from two sessions
/// (one at a time and in runs), and dumps the state `backend` then holds; returns what
/// the fixture must guarantee.
async fn write_one(backend: &str, out: &Path) -> Value {
    let ns = unique_name("fx");
    match backend {
        "postgres" => raw(&urls::postgres(), format!("CREATE SCHEMA {ns}")).await,
        _ => raw(&urls::mysql(), format!("CREATE DATABASE {ns}")).await,
    }
    let url = url_of(backend, &ns);
    let installed = sql_functions::install(&url, &options(backend, &ns, false))
        .await
        .unwrap();
    // Both sessions live at once, so each keeps a worker ID of its own.
    let mut sessions = vec![session(backend, &ns).await, session(backend, &ns).await];
    let mut issued = Vec::new();
    for round in 0..3 {
        for conn in &mut sessions {
            issued.push(one(conn, backend, &ns).await.unwrap());
            issued.extend(many(conn, backend, &ns, 100 + round).await);
        }
    }
    for conn in sessions {
        conn.close().await.unwrap();
    }
    let unique: BTreeSet<i64> = issued.iter().copied().collect();
    assert_eq!(unique.len(), issued.len(), "an ID was issued twice");
    let status = status_of(backend, &ns, "writing").await;
    let workers: Vec<Value> = status
        .workers
        .iter()
        .map(|w| {
            let highest = issued
                .iter()
                .filter(|id| worker_of(&layout(), **id as u64) == w.worker_id)
                .max();
            json!({
                "worker_id": w.worker_id,
                "last_ms": w.last_ms,
                "mark_ms": w.mark_ms,
                "highest_id": highest,
            })
        })
        .collect();
    let target = out.join(fixture_file(backend));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, dump(backend, &ns)).unwrap();
    drop_place(backend, &ns).await;
    let ph = |s: &str| s.replace(&ns, PLACEHOLDER);
    let mut reserved = installed.workers.clone();
    reserved.sort_unstable();
    json!({
        "generator": GENERATOR,
        "layout": status.layout,
        "schema": ph(&status.schema),
        "registry_table": ph(&status.registry_table),
        "holder": ph(&status.holder),
        "fenced": status.fenced,
        "workers": reserved,
        "worker_state": workers,
        "ids_issued": issued.len(),
        "highest_id": unique.last(),
    })
}

/// Writes the `sql-functions` part (both databases and its `expect.json`) under `out`.
pub(super) async fn write_part(out: &Path) {
    let mut expect = serde_json::Map::new();
    for backend in DATABASES {
        expect.insert(backend.into(), write_one(backend, out).await);
    }
    write_json(
        &out.join("sql-functions/expect.json"),
        &Value::Object(expect),
    );
}

/// Loads `backend`'s fixture from `version` into a new schema or database and checks,
/// with today's code: (a) `sql status` reads the install's record, its reservation and
/// every worker ID's counter and mark as written; (b) today's install over it is an
/// upgrade that keeps them, and the functions it writes, with their clock put behind the
/// old IDs, refuse or issue above every old ID, and issue above them with the clock
/// right, under every reserved worker ID; (c) `sql uninstall` writes marks covering the
/// old IDs into the servers' table and frees the worker IDs for a server's claim.
async fn read_one(backend: &str, version: &Path) {
    let what = format!("{} sql-functions {backend}", version.display());
    let expect = read_json(&version.join("sql-functions/expect.json"))[backend].clone();
    let ns = unique_name("fx");
    load(
        backend,
        &read_text(&version.join(fixture_file(backend))),
        &ns,
    )
    .await;
    let url = url_of(backend, &ns);
    let text = |key: &str| expect[key].as_str().unwrap().replace(PLACEHOLDER, &ns);
    let workers: Vec<u64> = expect["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_u64().unwrap())
        .collect();
    let highest = expect["highest_id"].as_u64().unwrap();

    // (a) sql status reads the old state as it was written.
    let check_status = |status: GeneratorStatus, when: &str| {
        let what = format!("{what} ({when})");
        assert_eq!(status.name, GENERATOR, "{what}");
        assert_eq!(status.layout, expect["layout"].as_str().unwrap(), "{what}");
        assert_eq!(status.schema, text("schema"), "{what}");
        assert_eq!(status.registry_table, text("registry_table"), "{what}");
        assert_eq!(status.holder, text("holder"), "{what}");
        assert!(status.reservation_checked, "{what}");
        // PostgreSQL's life sequence and MariaDB's lease rows are in the dump as written.
        assert_eq!(status.fenced, expect["fenced"].as_bool().unwrap(), "{what}");
        let listed: Vec<u64> = status.workers.iter().map(|w| w.worker_id).collect();
        assert_eq!(
            listed.iter().copied().collect::<BTreeSet<_>>(),
            workers.iter().copied().collect(),
            "{what}: the worker IDs"
        );
        for state in expect["worker_state"].as_array().unwrap() {
            let id = state["worker_id"].as_u64().unwrap();
            let w = status.workers.iter().find(|w| w.worker_id == id).unwrap();
            assert!(w.reserved, "{what}: worker ID {id} is not reserved: {w:?}");
            assert_eq!(w.last_ms, state["last_ms"].as_u64(), "{what}: worker {id}");
            assert_eq!(w.mark_ms, state["mark_ms"].as_u64(), "{what}: worker {id}");
        }
    };
    check_status(status_of(backend, &ns, &what).await, "read");

    // (b) today's install over it writes the functions again and keeps the state.
    let installed = sql_functions::install(&url, &options(backend, &ns, true))
        .await
        .unwrap_or_else(|e| panic!("{what}: the upgrade: {e}"));
    assert!(installed.replaced, "{what}: {installed:?}");
    let mut again = installed.workers.clone();
    again.sort_unstable();
    assert_eq!(again, workers, "{what}: the upgrade's worker IDs");
    assert_eq!(installed.holder, text("holder"), "{what}");
    check_status(status_of(backend, &ns, &what).await, "after the upgrade");

    // One session per worker ID, all alive, so each issues under a worker ID of its own;
    // first with the clock behind the last tick of every worker ID that issued (a step
    // back, or the old state restored on a machine whose clock is behind it): each call
    // refuses, or waits and issues above every ID its worker ID issued before. (Across worker IDs a stepped-back clock keeps
    // no order: the untouched worker ID may issue below another's old IDs.)
    let states = expect["worker_state"].as_array().unwrap();
    let above_its_own = |id: i64| {
        let w = worker_of(&layout(), id as u64);
        let state = states
            .iter()
            .find(|s| s["worker_id"].as_u64() == Some(w))
            .unwrap_or_else(|| panic!("{what}: {id} is of worker {w}, not one reserved"));
        match state["highest_id"].as_u64() {
            Some(old) => id as u64 > old,
            None => ms_of(id as u64) >= state["last_ms"].as_u64().unwrap(),
        }
    };
    let oldest_tick = states
        .iter()
        .filter(|w| !w["highest_id"].is_null())
        .map(|w| w["last_ms"].as_u64().unwrap())
        .min()
        .unwrap();
    let mut sessions = Vec::new();
    for _ in &workers {
        let mut conn = session(backend, &ns).await;
        let behind = (oldest_tick - STEP_BACK_MS) as i64 - now_ms() as i64;
        set_offset(&mut conn, backend, behind).await;
        match one(&mut conn, backend, &ns).await {
            Ok(id) => assert!(above_its_own(id), "{what}: {id} with the clock behind"),
            Err(e) => assert!(
                e.to_string().contains("clock"),
                "{what}: with the clock behind: {e}"
            ),
        }
        sessions.push(conn);
    }
    let mut used = BTreeSet::new();
    for conn in &mut sessions {
        set_offset(conn, backend, 0).await;
        let id = one(conn, backend, &ns)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            id as u64 > highest && above_its_own(id),
            "{what}: {id} after {highest}"
        );
        used.insert(worker_of(&layout(), id as u64));
        for id in many(conn, backend, &ns, 50).await {
            assert!(id as u64 > highest, "{what}: {id} after {highest}");
        }
    }
    assert_eq!(
        used,
        workers.iter().copied().collect(),
        "{what}: the sessions' worker IDs"
    );
    for conn in sessions {
        conn.close().await.unwrap();
    }

    // (c) uninstall writes marks above the old IDs and frees the worker IDs.
    let schema = (backend == "postgres").then_some(ns.as_str());
    let gone = sql_functions::uninstall(&url, GENERATOR, schema, Duration::from_secs(5), None)
        .await
        .unwrap_or_else(|e| panic!("{what}: sql uninstall: {e}"));
    assert!(gone.not_reserved.is_empty(), "{what}: {gone:?}");
    let released: BTreeSet<u64> = gone.released.iter().map(|(w, _)| *w).collect();
    assert_eq!(released, workers.iter().copied().collect(), "{what}");
    let registry = WorkerRegistry::connect(&url, &ns)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (w, mark_ms) in &gone.released {
        let state = expect["worker_state"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["worker_id"].as_u64() == Some(*w))
            .unwrap();
        assert!(
            Some(*mark_ms) >= state["mark_ms"].as_u64() && *mark_ms > ms_of(highest),
            "{what}: worker {w}'s mark {mark_ms} does not cover the old IDs: {state}"
        );
        let stored = registry.read_mark(*w).await.unwrap().map(Mark::from_stored);
        assert_eq!(stored.map(|m| m.ms), Some(*mark_ms), "{what}: worker {w}");
        registry
            .claim(*w, "a-server", Duration::from_secs(3))
            .await
            .unwrap_or_else(|e| panic!("{what}: a server's claim of freed worker {w}: {e}"));
    }
    drop(registry);
    let left = sql_functions::status(&url, schema, None).await.unwrap();
    assert!(left.is_empty(), "{what}: {left:?}");
    drop_place(backend, &ns).await;
}

/// No release has written `sql-functions/` yet. Until one does, this build writes the
/// part into a scratch directory, through the dialects' own dump tools, and reads that,
/// as `reserved/` is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_database_id_functions_are_read_upgraded_and_uninstalled() {
    let mut versions = released_with("sql-functions/expect.json");
    if versions.is_empty() {
        let unreleased = scratch_dir().join("unreleased");
        write_part(&unreleased).await;
        versions.push(unreleased);
    }
    for version in versions {
        for backend in DATABASES {
            read_one(backend, &version).await;
        }
    }
}
