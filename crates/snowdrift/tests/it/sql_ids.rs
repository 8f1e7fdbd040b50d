//! `snowdrift sql install` end to end on PostgreSQL: 32 sessions insert rows whose `id`
//! column defaults to `snowdrift_id('orders')` while two `snowdrift serve` processes issue
//! the same generator over HTTP, leasing their worker IDs in the same table; over two
//! million IDs in all, none twice, the database's under the worker IDs it reserved and
//! the servers' under others. Then `status`, `decode` and `uninstall`, which gives the
//! worker IDs back with marks above the database's IDs.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use snowdrift_testkit::{unique_name, urls};
use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection};

use crate::common::{Served, serve_command};

/// Database sessions, inserts each (one in eight a single row, the others 1000 rows): 896,128
/// rows.
const SESSIONS: usize = 32;
const INSERTS: usize = 32;
const ROWS: usize = 1000;
/// IDs the servers issue meanwhile, at least.
const SERVER_IDS: usize = 1_200_000;

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

async fn exec(url: &str, sql: &str) {
    let mut c = PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
}

/// The worker ID of a Twitter-layout ID.
fn worker(id: u64) -> u64 {
    (id >> 12) & 1023
}

/// One server of generator `orders` leasing in namespace `ns` of the database.
fn server(dir: &std::path::Path, n: usize, pg: &str, ns: &str) -> Served {
    let config = dir.join(format!("server{n}.toml"));
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"sqlite://{}/s{n}.db\"\n\
             [worker]\nregistry = \"sql\"\nurl = \"{pg}\"\nnamespace = \"{ns}\"\n\
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
fn database_sessions_and_servers_never_share_an_id() {
    let pg = urls::postgres();
    let ns = unique_name("sqlids");
    let schema = unique_name("sqlids_fn");
    let dir = std::env::temp_dir().join(unique_name("snowdrift_sql_ids"));
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t0 = Instant::now();
    rt.block_on(exec(&pg, &format!("CREATE SCHEMA {schema}")));

    // A server first: the database reserves around the worker ID it holds.
    let first = server(&dir, 1, &pg, &ns);
    let (ok, out, err) = snowdrift(&[
        "sql",
        "install",
        "--store",
        &pg,
        "--generator",
        "orders",
        "--namespace",
        &ns,
        "--schema",
        &schema,
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
    let second = server(&dir, 2, &pg, &ns);
    for s in [&first, &second] {
        let w = s.worker_of("orders")["worker_id"].as_u64().unwrap();
        assert!(w < 992, "a server holds reserved worker ID {w}");
    }

    eprintln!("servers and install: {:?}", t0.elapsed());
    let table = format!("{schema}.items");
    rt.block_on(exec(
        &pg,
        &format!(
            "CREATE UNLOGGED TABLE {table} (id bigint NOT NULL DEFAULT {schema}.snowdrift_id('orders'), \
             session integer NOT NULL)"
        ),
    ));

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
                    while !done.load(Ordering::Relaxed) || ids.len() < SERVER_IDS / 2 {
                        fetch(s, &mut ids);
                        if ids.len() >= SERVER_IDS / 2 {
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                    ids
                })
            })
            .collect();
        rt.block_on(async {
            let mut tasks = Vec::new();
            for n in 0..SESSIONS {
                let (pg, table) = (pg.clone(), table.clone());
                tasks.push(tokio::spawn(async move {
                    let mut c = PgConnection::connect(&pg).await.unwrap();
                    for k in 0..INSERTS {
                        // Multi-row inserts, and now and then a row at a time.
                        let sql = if k % 8 == 7 {
                            format!("INSERT INTO {table} (session) VALUES ({n})")
                        } else {
                            format!(
                                "INSERT INTO {table} (session) SELECT {n} FROM generate_series(1, {ROWS})"
                            )
                        };
                        sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut c).await.unwrap();
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
        let mut c = PgConnection::connect(&pg).await.unwrap();
        let ids = sqlx::query_scalar(AssertSqlSafe(format!("SELECT id FROM {table}")))
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
    let expected_rows = SESSIONS * (INSERTS / 8 * (7 * ROWS + 1));
    assert_eq!(in_database.len(), expected_rows);
    assert!(from_servers.len() >= SERVER_IDS);
    for id in &in_database {
        let w = worker(*id as u64);
        assert!(
            (992..1024).contains(&w),
            "database ID {id} under worker ID {w}"
        );
    }
    for id in &from_servers {
        assert!(
            worker(*id) < 992,
            "server ID {id} under a reserved worker ID"
        );
    }
    let mut all: Vec<u64> = in_database.iter().map(|i| *i as u64).collect();
    all.extend(&from_servers);
    let total = all.len();
    assert!(total >= 2_000_000, "only {total} IDs");
    all.sort_unstable();
    let dups: Vec<&[u64]> = all.windows(2).filter(|p| p[0] == p[1]).take(5).collect();
    assert!(
        dups.is_empty(),
        "{} IDs, duplicates such as {dups:?}",
        total
    );

    eprintln!("checked: {:?}", t0.elapsed());
    // What an operator sees.
    let (ok, out, err) = snowdrift(&["sql", "status", "--store", &pg, "--schema", &schema]);
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

    // Uninstall refuses while a column still calls the function, then gives the worker
    // IDs back with their last marks.
    let (ok, _, err) = snowdrift(&[
        "sql",
        "uninstall",
        "--store",
        &pg,
        "--generator",
        "orders",
        "--schema",
        &schema,
    ]);
    assert!(!ok && err.contains("column defaults still call"), "{err}");
    rt.block_on(exec(
        &pg,
        &format!("ALTER TABLE {table} ALTER COLUMN id DROP DEFAULT"),
    ));
    let (ok, out, err) = snowdrift(&[
        "sql",
        "uninstall",
        "--store",
        &pg,
        "--generator",
        "orders",
        "--schema",
        &schema,
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.matches("given back").count(), 32, "{out}");
    let registry = rt
        .block_on(snowdrift_store::worker::WorkerRegistry::connect(
            &pg,
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
    drop(servers);
    rt.block_on(exec(
        &pg,
        &format!("DROP SCHEMA {schema} CASCADE; DROP TABLE IF EXISTS {ns}_orders"),
    ));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(started.elapsed() < Duration::from_secs(120));
}
