//! `snowdrift sql install` end to end, on PostgreSQL and on MariaDB: 32 sessions insert
//! rows whose `id` the database fills with `snowdrift_id('orders')` (PostgreSQL: the
//! column default; MariaDB: a `BEFORE INSERT` trigger) while two `snowdrift serve`
//! processes issue the same generator over HTTP, leasing their worker IDs in the same
//! table; at least two million IDs in all, none twice, the database's under the worker IDs
//! it reserved and the servers' under others. Then `status`, `decode` and `uninstall`,
//! which gives the worker IDs back with marks above the database's IDs.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use snowdrift_testkit::unique_name;
use sqlx::{AnyConnection, AssertSqlSafe, Connection};

use crate::common::{Served, serve_command};
use crate::import::{Db, exec};

/// Database sessions, inserting at once.
const SESSIONS: usize = 32;
/// Worker IDs the database reserves: one per session, the top of the space.
const RESERVED: std::ops::Range<u64> = 992..1024;
/// IDs in all, at least.
const TOTAL: usize = 2_000_000;

/// How one database makes IDs for a column, and how much of the load it takes.
struct Flavour {
    mysql: bool,
    /// Statements each session runs: one in eight a single row, the others `rows` rows.
    inserts: usize,
    rows: usize,
    /// The table, and what fills its `id` column.
    create: &'static [&'static str],
    /// A multi-row insert of `{n}` (the session) `{rows}` times.
    insert_many: &'static str,
    /// What uninstall says while the function is still called, and what stops the calls.
    still_called: &'static str,
    stop_calls: &'static str,
}

const POSTGRES: Flavour = Flavour {
    mysql: false,
    // 896,128 rows.
    inserts: 32,
    rows: 1000,
    create: &[
        "CREATE UNLOGGED TABLE items (id bigint NOT NULL DEFAULT snowdrift_id('orders'), \
               session integer NOT NULL)",
    ],
    insert_many: "INSERT INTO items (session) SELECT {n} FROM generate_series(1, {rows})",
    still_called: "column defaults still call",
    stop_calls: "ALTER TABLE items ALTER COLUMN id DROP DEFAULT",
};

/// MariaDB makes IDs one at a time with the generator's lease table locked for the whole
/// statement (a MEMORY table), so the sessions take turns: small statements, and a smaller
/// share of the load, about 30 µs an ID.
const MARIADB: Flavour = Flavour {
    mysql: true,
    // 172,224 rows.
    inserts: 48,
    rows: 128,
    create: &[
        "CREATE TABLE items (id BIGINT NOT NULL DEFAULT 0, session INT NOT NULL) ENGINE=InnoDB",
        "CREATE TRIGGER items_id BEFORE INSERT ON items FOR EACH ROW \
         SET NEW.id = IF(NEW.id = 0, snowdrift_id('orders'), NEW.id)",
    ],
    insert_many: "INSERT INTO items (session) SELECT {n} FROM seq_1_to_{rows}",
    still_called: "triggers still call",
    stop_calls: "DROP TRIGGER items_id",
};

impl Flavour {
    fn rows_per_session(&self) -> usize {
        self.inserts / 8 * (7 * self.rows + 1) + self.inserts % 8 * self.rows
    }

    fn insert(&self, n: usize, k: usize) -> String {
        if k % 8 == 7 {
            format!("INSERT INTO items (session) VALUES ({n})")
        } else {
            self.insert_many
                .replace("{n}", &n.to_string())
                .replace("{rows}", &self.rows.to_string())
        }
    }
}

fn snowdrift(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The worker ID of a Twitter-layout ID.
fn worker(id: u64) -> u64 {
    (id >> 12) & 1023
}

/// One server of generator `orders` leasing in namespace `ns` of database `url`.
fn server(dir: &std::path::Path, n: usize, url: &str, ns: &str) -> Served {
    let config = dir.join(format!("server{n}.toml"));
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"sqlite://{}/s{n}.db\"\n\
             [worker]\nregistry = \"sql\"\nurl = \"{url}\"\nnamespace = \"{ns}\"\n\
             [[generator]]\nname = \"orders\"\nkind = \"snowflake\"\nlayout = \"twitter\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let mut cmd = serve_command();
    cmd.arg("--config").arg(&config);
    let served = Served::start(cmd);
    served.wait_ready();
    served
}

/// IDs from `GET /v1/ids/orders?count=10000&form=runs`, expanded.
fn fetch(server: &Served, out: &mut Vec<u64>) {
    let (status, body) = server.get("/v1/ids/orders?count=10000&form=runs", None);
    assert_eq!(status, 200, "{body}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    for run in json["runs"].as_array().unwrap() {
        let first: u64 = run["first"].as_str().unwrap().parse().unwrap();
        let count = run["count"].as_u64().unwrap();
        let stride = run["stride"].as_u64().unwrap();
        out.extend((0..count).map(|k| first + k * stride));
    }
}

#[test]
fn postgres_sessions_and_servers_never_share_an_id() {
    sessions_and_servers_never_share_an_id(&POSTGRES);
}

#[test]
fn mariadb_sessions_and_servers_never_share_an_id() {
    sessions_and_servers_never_share_an_id(&MARIADB);
}

fn sessions_and_servers_never_share_an_id(flavour: &Flavour) {
    let ns = unique_name("sqlids");
    let dir = std::env::temp_dir().join(unique_name("snowdrift_sql_ids"));
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t0 = Instant::now();
    let db = rt.block_on(Db::new(flavour.mysql, "sqlids_db"));
    let url = db.url.clone();

    // A server first: the database reserves around the worker ID it holds.
    let first = server(&dir, 1, &url, &ns);
    let (ok, out, err) = snowdrift(&[
        "sql",
        "install",
        "--store",
        &url,
        "--generator",
        "orders",
        "--namespace",
        &ns,
        "--workers",
        "32",
        "--layout",
        "twitter",
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("worker IDs 992,993,") && out.contains(",1023 reserved"),
        "{out}"
    );
    let second = server(&dir, 2, &url, &ns);
    for s in [&first, &second] {
        let w = s.worker_of("orders")["worker_id"].as_u64().unwrap();
        assert!(
            !RESERVED.contains(&w),
            "a server holds reserved worker ID {w}"
        );
    }
    for sql in flavour.create {
        rt.block_on(exec(&url, sql));
    }
    eprintln!("servers and install: {:?}", t0.elapsed());

    let in_database_expected = SESSIONS * flavour.rows_per_session();
    // The servers issue the rest, and a margin.
    let server_ids = (TOTAL - in_database_expected) * 21 / 20;
    let started = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let servers = [first, second];
    let from_servers = std::thread::scope(|scope| {
        let fetchers: Vec<_> = servers
            .iter()
            .map(|s| {
                let done = Arc::clone(&done);
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    // Issue all along the database's inserts, but no more than needed:
                    // past its share a fetcher slows down, leaving the cores to the inserts.
                    while !done.load(Ordering::Relaxed) || ids.len() < server_ids / 2 {
                        fetch(s, &mut ids);
                        if ids.len() >= server_ids / 2 {
                            std::thread::sleep(Duration::from_millis(500));
                        }
                    }
                    ids
                })
            })
            .collect();
        rt.block_on(async {
            sqlx::any::install_default_drivers();
            let mut tasks = Vec::new();
            for n in 0..SESSIONS {
                let statements: Vec<String> =
                    (0..flavour.inserts).map(|k| flavour.insert(n, k)).collect();
                let url = url.clone();
                tasks.push(tokio::spawn(async move {
                    let mut c = AnyConnection::connect(&url).await.unwrap();
                    for sql in statements {
                        sqlx::raw_sql(AssertSqlSafe(sql))
                            .execute(&mut c)
                            .await
                            .unwrap();
                    }
                    c.close().await.unwrap();
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        done.store(true, Ordering::Relaxed);
        fetchers
            .into_iter()
            .flat_map(|f| f.join().unwrap())
            .collect::<Vec<u64>>()
    });
    let in_database: Vec<i64> = rt.block_on(async {
        let mut c = AnyConnection::connect(&url).await.unwrap();
        let ids = sqlx::query_scalar("SELECT id FROM items")
            .fetch_all(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
        ids
    });
    eprintln!(
        "{} IDs in the database, {} from the servers, in {:?}",
        in_database.len(),
        from_servers.len(),
        started.elapsed()
    );
    assert_eq!(in_database.len(), in_database_expected);
    assert!(from_servers.len() >= server_ids);
    for id in &in_database {
        let w = worker(*id as u64);
        assert!(
            RESERVED.contains(&w),
            "database ID {id} under worker ID {w}"
        );
    }
    for id in &from_servers {
        assert!(
            !RESERVED.contains(&worker(*id)),
            "server ID {id} under a reserved worker ID"
        );
    }
    let mut all: Vec<u64> = in_database.iter().map(|i| *i as u64).collect();
    all.extend(&from_servers);
    let total = all.len();
    assert!(total >= TOTAL, "only {total} IDs");
    all.sort_unstable();
    let dups: Vec<&[u64]> = all.windows(2).filter(|p| p[0] == p[1]).take(5).collect();
    assert!(dups.is_empty(), "{total} IDs, duplicates such as {dups:?}");
    eprintln!("checked: {:?}", t0.elapsed());

    // What an operator sees.
    let (ok, out, err) = snowdrift(&["sql", "status", "--store", &url]);
    assert!(ok, "{err}");
    assert!(
        out.contains("orders (schema") && out.contains("992 "),
        "{out}"
    );
    let last = *in_database.iter().max().unwrap() as u64;
    let (ok, out, _) = snowdrift(&["decode", &last.to_string(), "--layout", "twitter"]);
    assert!(ok);
    let decoded: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        decoded["fields"]["datacenter"].as_u64().unwrap() * 32
            + decoded["fields"]["worker"].as_u64().unwrap(),
        worker(last)
    );

    // Uninstall refuses while the database still calls the function, then gives the
    // worker IDs back with their last marks.
    let uninstall = ["sql", "uninstall", "--store", &url, "--generator", "orders"];
    let (ok, _, err) = snowdrift(&uninstall);
    assert!(!ok && err.contains(flavour.still_called), "{err}");
    rt.block_on(exec(&url, flavour.stop_calls));
    let (ok, out, err) = snowdrift(&uninstall);
    assert!(ok, "{err}");
    assert_eq!(out.matches("given back").count(), 32, "{out}");
    let registry = rt
        .block_on(snowdrift_store::worker::WorkerRegistry::connect(
            &url,
            &format!("{ns}_orders"),
        ))
        .unwrap();
    let last_w = worker(last);
    let mark = rt.block_on(registry.read_mark(last_w)).unwrap().unwrap();
    let last_ms = (last >> 22) + 1_288_834_974_657;
    assert!(
        mark >= last_ms,
        "mark {mark} below the database's last ID at {last_ms}"
    );
    eprintln!("uninstalled: {:?}", t0.elapsed());

    drop(registry);
    drop(servers);
    rt.block_on(db.drop_it());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(started.elapsed() < Duration::from_secs(120));
}
