//! `snowdrift sql install --registry` through the binary, as an operator runs it, on
//! PostgreSQL and MariaDB with a file registry and with etcd: the block is reserved in
//! the servers' registry, a server asking for a reserved worker ID is refused while one
//! asking for any gets another, `sql status` shows the block, `sql uninstall` refuses
//! without the registry, then frees the block with marks above the database's IDs, and a
//! server on a freed worker ID starts above them.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use snowdrift_store::worker::{Mark, WorkerRegistry};
use snowdrift_testkit::{unique_name, urls};
use sqlx::{AnyConnection, AssertSqlSafe, Connection};

use crate::common::{Served, serve_command};
use crate::import::{Db, args, fails, ok};

/// The worker IDs the install reserves: the top of Twitter's space.
const BLOCK: [u64; 2] = [1022, 1023];

/// The `[worker]` section of a server on `registry` (a file registry's `file://DIR`, or a
/// coordinator's URL) in namespace `ns`, asking for worker ID `id` if given.
fn worker_section(registry: &str, ns: &str, id: Option<u64>) -> String {
    let place = match registry.strip_prefix("file://") {
        Some(dir) => format!("registry = \"file\"\npath = \"{dir}\""),
        None => format!("registry = \"etcd\"\nurl = \"{registry}\""),
    };
    let id = id.map_or(String::new(), |w| format!("id = {w}\n"));
    format!("[worker]\n{place}\nnamespace = \"{ns}\"\nttl = \"3s\"\nwindow = \"500ms\"\n{id}")
}

/// `snowdrift serve` of generator `orders` on `registry`, as a command to start.
fn server(dir: &std::path::Path, n: usize, registry: &str, ns: &str, id: Option<u64>) -> Command {
    let config = dir.join(format!("server{n}.toml"));
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"sqlite://{}/s{n}.db\"\n{}\
             [[generator]]\nname = \"orders\"\nkind = \"snowflake\"\nlayout = \"twitter\"\n",
            dir.display(),
            worker_section(registry, ns, id)
        ),
    )
    .unwrap();
    let mut cmd = serve_command();
    cmd.arg("--config").arg(&config);
    cmd
}

/// Runs a server that must not start: its exit within 30 s, and what it wrote.
fn refused(mut cmd: Command) -> String {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(!status.success(), "the server exited 0: {err}");
            return err;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("a server asking for a reserved worker ID was still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The worker ID of a Twitter-layout ID.
fn worker(id: u64) -> u64 {
    (id >> 12) & 1023
}

#[test]
fn sql_install_with_a_file_registry_or_etcd_reserves_and_gives_back() {
    for mysql in [false, true] {
        let dir = std::env::temp_dir().join(unique_name("snowdrift_sql_registry"));
        std::fs::create_dir_all(dir.join("workers")).unwrap();
        for registry in [
            format!("file://{}", dir.join("workers").display()),
            urls::etcd(),
        ] {
            one(mysql, &dir, &registry);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn one(mysql: bool, dir: &std::path::Path, registry: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let db = rt.block_on(Db::new(mysql, "sqlreg_db"));
    let url = db.url.clone();
    let ns = unique_name("sqlreg");
    let at = format!(
        "{} with {registry}",
        if mysql { "MariaDB" } else { "PostgreSQL" }
    );
    let store = ["--store", url.as_str(), "--registry", registry];

    let mut install = args(&[
        "sql",
        "install",
        "--generator",
        "orders",
        "--namespace",
        &ns,
    ]);
    install.extend(args(&store));
    install.extend(args(&[
        "--workers",
        "2",
        "--layout",
        "twitter",
        "--window",
        "500ms",
    ]));
    let out = ok(&install);
    assert!(
        out.contains("worker IDs 1022,1023 reserved in the servers' registry")
            && out.contains("the database cannot reach that registry"),
        "{at}: {out}"
    );

    // A server asking for a reserved worker ID is refused; one asking for any gets
    // another.
    let err = refused(server(dir, 1, registry, &ns, Some(1023)));
    assert!(err.contains("1023"), "{at}: {err}");
    let first = Served::start(server(dir, 2, registry, &ns, None));
    first.wait_ready();
    let w = first.worker_of("orders")["worker_id"].as_u64().unwrap();
    assert!(
        !BLOCK.contains(&w),
        "{at}: a server holds reserved worker ID {w}"
    );

    // The database issues under its block.
    let mut last = 0u64;
    rt.block_on(async {
        sqlx::any::install_default_drivers();
        let mut c = AnyConnection::connect(&url).await.unwrap();
        for _ in 0..500 {
            let id: i64 = sqlx::query_scalar(AssertSqlSafe("SELECT snowdrift_id('orders')"))
                .fetch_one(&mut c)
                .await
                .unwrap();
            assert!(BLOCK.contains(&worker(id as u64)), "{at}: {id}");
            last = last.max(id as u64);
        }
        c.close().await.unwrap();
    });

    // What an operator sees: where the reservation lives, and each worker ID in it.
    let mut status = args(&["sql", "status"]);
    status.extend(args(&store));
    let out = ok(&status);
    assert!(
        out.contains(&format!("namespace {ns}_orders")) && !out.contains("not checked"),
        "{at}: {out}"
    );
    for w in BLOCK {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{w} ")) && l.contains(" yes ")),
            "{at}: worker {w} not shown as reserved: {out}"
        );
    }
    let out = ok(&args(&["sql", "status", "--store", &url]));
    assert!(
        out.contains("not checked: pass --registry URL"),
        "{at}: {out}"
    );

    // Uninstall needs the registry, where the marks go; with it, it frees the block.
    let uninstall = args(&["sql", "uninstall", "--store", &url, "--generator", "orders"]);
    let err = fails(&uninstall);
    assert!(
        err.contains("pass its URL with --registry") && err.contains("Nothing was removed"),
        "{at}: {err}"
    );
    let mut uninstall = uninstall;
    uninstall.extend(args(&["--registry", registry]));
    let out = ok(&uninstall);
    assert_eq!(out.matches("given back").count(), 2, "{at}: {out}");
    let last_w = worker(last);
    let reg = rt
        .block_on(WorkerRegistry::connect(registry, &format!("{ns}_orders")))
        .unwrap();
    let mark = Mark::from_stored(rt.block_on(reg.read_mark(last_w)).unwrap().unwrap()).ms;
    let last_ms = (last >> 22) + 1_288_834_974_657;
    assert!(
        mark >= last_ms,
        "{at}: mark {mark} below the database's last ID at {last_ms}"
    );
    let listed = rt.block_on(reg.list()).unwrap();
    assert!(
        listed.entries.iter().all(|e| !BLOCK.contains(&e.worker_id)),
        "{at}: {:?}",
        listed.entries
    );

    // A server may take a freed worker ID now, and starts above the database's IDs.
    let second = Served::start(server(dir, 3, registry, &ns, Some(last_w)));
    second.wait_ready();
    let (code, body) = second.get("/v1/ids/orders?count=1", None);
    assert_eq!(code, 200, "{at}: {body}");
    let id = crate::import::ids_of(&body)[0];
    assert_eq!(worker(id), last_w, "{at}");
    assert!(
        id > last,
        "{at}: the server's first ID {id} is not above the database's {last}"
    );
    drop((first, second, reg));
    rt.block_on(db.drop_it());
}
