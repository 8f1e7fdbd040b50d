//! snowdrift-client through server faults, end to end: 3 `snowdrift serve` processes share
//! a PostgreSQL segment store and an etcd worker registry; 4 application processes (this
//! test binary re-run as [`application`]) each take IDs of a segment tag and of the
//! snowflake generator on two threads, through one client with all 3 endpoints. Meanwhile
//! each server in turn is killed with -9 and restarted, one is cut off (from etcd and from
//! the clients) by the fault proxy for longer than its lease, and all three are stopped
//! for a few seconds. Checked: at least 10 million IDs and not one twice; no `next()` error
//! while a server was up; no batch refused by the client's check; during the total outage
//! IDs still came from the caches, then the clear error; IDs again once the servers were
//! back.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowdrift_testkit::{FaultProxy, unique_name, urls};

use crate::common::{Served, free_port, serve_command};

const TOTAL: u64 = 10_000_000;
const APPS: usize = 4;
/// IDs per second each application thread takes: enough for 10 million over the run,
/// few enough that the checker's sets stay small.
const RATE_PER_THREAD: u64 = 60_000;
const SEGMENT: &str = "chaos_order";
/// The variable that makes this binary the application process.
const APP_ENV: &str = "SNOWDRIFT_CHAOS_APP";

/// Record tags on an application's stdout: `(tag, value)` as two little-endian u64s.
const SEGMENT_ID: u64 = 0;
const SNOWFLAKE_ID: u64 = 1;
/// A `next()` error at the value's Unix time in ms (the message goes to stderr).
const ERROR_AT: u64 = 2;
/// The time, in Unix ms, every 50 ms: the IDs after it were taken after it.
const TIME: u64 = 3;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The application process: the 4 of them are this binary, started by the test below with
/// [`APP_ENV`] set to `ENDPOINTS;RECORD_FILE`. Ignored in a normal run, where it has
/// nothing to do.
#[test]
#[ignore = "the application process of client_chaos::three_servers_four_applications_through_kills_a_cut_and_an_outage, which starts it"]
fn application() {
    let spec = std::env::var(APP_ENV).expect("run by the chaos test");
    let (endpoints, file) = spec.split_once(';').unwrap();
    let client = snowdrift_client::blocking::Client::builder()
        .endpoints(endpoints.split(','))
        .with(|b| {
            // About half a second of IDs cached, so a few seconds without any server
            // empties the cache and the error shows.
            b.hold(Duration::from_millis(400))
                .batch(100, 100_000)
                .deadline(Duration::from_millis(800))
                .backoff(Duration::from_millis(20), Duration::from_millis(200))
        })
        .build()
        .unwrap();
    let out = Arc::new(Mutex::new(std::io::BufWriter::with_capacity(
        1 << 16,
        std::fs::File::create(file).unwrap(),
    )));
    let stop = Arc::new(AtomicBool::new(false));
    let write = |out: &Mutex<std::io::BufWriter<std::fs::File>>, records: &[(u64, u64)]| {
        let mut out = out.lock().unwrap();
        for &(tag, value) in records {
            out.write_all(&tag.to_le_bytes()).unwrap();
            out.write_all(&value.to_le_bytes()).unwrap();
        }
    };
    let mut threads = Vec::new();
    for (name, tag) in [(SEGMENT, SEGMENT_ID), ("snowflake", SNOWFLAKE_ID)] {
        let (client, out, stop) = (client.clone(), out.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            let start = Instant::now();
            let mut taken = 0u64;
            let mut records = Vec::with_capacity(1024);
            while !stop.load(Ordering::Relaxed) {
                // Hold the rate: catch up to where the schedule says, then sleep.
                let due = start.elapsed().as_micros() as u64 * RATE_PER_THREAD / 1_000_000;
                if taken >= due {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                for _ in 0..(due - taken).min(1000) {
                    match client.next(name) {
                        Ok(id) => records.push((tag, id)),
                        Err(e) => {
                            records.push((ERROR_AT, now_ms()));
                            eprintln!("{} {name}: {:?}: {e}", now_ms(), e.kind());
                            // The schedule does not make up for the outage.
                            taken = due;
                            std::thread::sleep(Duration::from_millis(20));
                            break;
                        }
                    }
                    taken += 1;
                }
                write(&out, &records);
                records.clear();
            }
        }));
    }
    // Time marks, until the test closes stdin.
    let closed = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            stop.store(true, Ordering::Relaxed);
        })
    };
    while !stop.load(Ordering::Relaxed) {
        write(&out, &[(TIME, now_ms())]);
        std::thread::sleep(Duration::from_millis(50));
    }
    for t in threads {
        t.join().unwrap();
    }
    closed.join().unwrap();
    out.lock().unwrap().flush().unwrap();
    // Honest servers through kills, a cut and an outage: the client's check on every batch
    // (no ID received before, no run that wraps) never refused one of theirs.
    for name in [SEGMENT, "snowflake"] {
        let refused = client.stats(name).map_or(0, |s| s.refused);
        assert_eq!(
            refused, 0,
            "{name}: {refused} batches of honest servers refused"
        );
    }
}

/// What the test saw of one application: IDs with the time mark before them, and the times
/// of its errors.
#[derive(Default)]
struct Seen {
    segment: Vec<(u64, u64)>,
    snowflake: Vec<(u64, u64)>,
    errors: Vec<u64>,
}

struct App {
    child: Child,
    file: std::path::PathBuf,
    errors: Option<JoinHandle<String>>,
}

impl App {
    fn start(endpoints: &str, file: std::path::PathBuf) -> App {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "client_chaos::application",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env(APP_ENV, format!("{endpoints};{}", file.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let errors = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        App {
            child,
            file,
            errors: Some(errors),
        }
    }

    /// About how many records it has written so far.
    fn written(&self) -> u64 {
        std::fs::metadata(&self.file).map_or(0, |m| m.len() / 16)
    }

    /// Closes stdin, so the application stops, and returns what it wrote and its stderr.
    fn finish(&mut self) -> (Seen, String) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "an application did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
        let errors = self.errors.take().unwrap().join().unwrap();
        assert!(
            self.child.wait().unwrap().success(),
            "an application failed:\n{errors}"
        );
        let bytes = std::fs::read(&self.file).unwrap();
        let mut seen = Seen::default();
        let mut at = 0u64;
        for record in bytes.chunks_exact(16) {
            let tag = u64::from_le_bytes(record[..8].try_into().unwrap());
            let value = u64::from_le_bytes(record[8..].try_into().unwrap());
            match tag {
                SEGMENT_ID => seen.segment.push((value, at)),
                SNOWFLAKE_ID => seen.snowflake.push((value, at)),
                ERROR_AT => seen.errors.push(value),
                TIME => at = value,
                other => panic!("a record tagged {other}"),
            }
        }
        (seen, errors)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// One server's config: its port, the shared store and registry.
fn server_config(
    dir: &std::path::Path,
    name: &str,
    port: u16,
    table: &str,
    etcd: &str,
    ns: &str,
) -> std::path::PathBuf {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\n[store]\nurl = \"{}\"\ntable = \"{table}\"\n\n\
             [worker]\nregistry = \"etcd\"\nurl = \"{etcd}\"\nnamespace = \"{ns}\"\nttl = \"2s\"\n",
            urls::postgres()
        ),
    )
    .unwrap();
    file
}

fn serve(config: &std::path::Path) -> Served {
    let mut cmd = serve_command();
    cmd.arg("--config").arg(config);
    Served::start(cmd)
}

#[test]
fn three_servers_four_applications_through_kills_a_cut_and_an_outage() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = std::env::temp_dir().join(unique_name("client_chaos"));
    std::fs::create_dir_all(&dir).unwrap();
    let (table, ns) = (unique_name("chaos_segments"), unique_name("chaos_workers"));
    // Server c reaches etcd through one proxy and is reached by the clients through another.
    let (etcd_proxy, etcd_via_proxy) = rt
        .block_on(FaultProxy::start_for_url(&urls::etcd()))
        .unwrap();
    let ports = [free_port(), free_port(), free_port()];
    let client_proxy = rt
        .block_on(FaultProxy::start(("127.0.0.1", ports[2])))
        .unwrap();
    let configs = [
        server_config(&dir, "a", ports[0], &table, &urls::etcd(), &ns),
        server_config(&dir, "b", ports[1], &table, &urls::etcd(), &ns),
        server_config(&dir, "c", ports[2], &table, &etcd_via_proxy, &ns),
    ];
    let mut servers: Vec<Option<Served>> = configs.iter().map(|c| Some(serve(c))).collect();
    let created = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["tags", "create", SEGMENT, "--step", "20000", "--server"])
        .arg(format!("http://127.0.0.1:{}", ports[0]))
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let endpoints = format!(
        "http://127.0.0.1:{},http://127.0.0.1:{},http://{}",
        ports[0],
        ports[1],
        client_proxy.addr()
    );
    let mut apps: Vec<App> = (0..APPS)
        .map(|i| App::start(&endpoints, dir.join(format!("app{i}.ids"))))
        .collect();
    let written = |apps: &[App]| apps.iter().map(App::written).sum::<u64>();
    let wait_ids = |apps: &[App], what: &str, more: u64| {
        let target = written(apps) + more;
        let deadline = Instant::now() + Duration::from_secs(120);
        while written(apps) < target {
            assert!(Instant::now() < deadline, "no {more} more IDs {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_ids(&apps, "at the start", 300_000);

    // Each server in turn: kill -9, a moment down, restarted on its address.
    for (i, config) in configs.iter().enumerate() {
        drop(servers[i].take());
        std::thread::sleep(Duration::from_millis(1_500));
        servers[i] = Some(serve(config));
        wait_ids(&apps, &format!("after server {i} was restarted"), 300_000);
    }

    // Server c cut off from etcd and from the clients for longer than its 2 s lease.
    let c_log = servers[2].as_ref().unwrap().log_len();
    etcd_proxy.black_hole();
    client_proxy.black_hole();
    wait_ids(&apps, "with server c cut off", 300_000);
    std::thread::sleep(Duration::from_millis(3_000));
    etcd_proxy.heal();
    client_proxy.heal();
    // The cut was long enough: c lost its lease, and takes a worker ID again.
    let c = servers[2].as_ref().unwrap();
    c.wait_for_log(c_log, "lost the worker ID's lease");
    c.wait_for_log(c_log, "regained a worker ID");
    wait_ids(&apps, "after server c came back", 300_000);

    // All three stopped for a few seconds.
    let outage_from = now_ms();
    for s in &mut servers {
        drop(s.take());
    }
    std::thread::sleep(Duration::from_millis(4_000));
    let restarted_at = now_ms();
    for (i, config) in configs.iter().enumerate() {
        servers[i] = Some(serve(config));
    }
    // Served::start returns once the server listens (after its lease); allow the clients'
    // backoff (200 ms at most) and a fetch.
    let back_by = now_ms() + 1_500;
    wait_ids(&apps, "after the outage", 300_000);
    let more = TOTAL.saturating_sub(written(&apps));
    wait_ids(&apps, "up to the total", more);

    let mut segment = HashSet::new();
    let mut snowflake = HashSet::new();
    let (mut in_outage, mut after_outage, mut error_count) = (0u64, 0u64, 0usize);
    let mut stray_errors = Vec::new();
    let mut stderr_all = String::new();
    for app in &mut apps {
        let (seen, stderr) = app.finish();
        for (set, list, name) in [
            (&mut segment, &seen.segment, SEGMENT),
            (&mut snowflake, &seen.snowflake, "snowflake"),
        ] {
            for &(id, at) in list {
                assert!(set.insert(id), "{name}: {id} handed out twice");
                if at >= outage_from + 200 && at < restarted_at {
                    in_outage += 1;
                }
                if at >= back_by {
                    after_outage += 1;
                }
            }
        }
        error_count += seen.errors.len();
        stray_errors.extend(
            seen.errors
                .iter()
                .filter(|&&t| t < outage_from || t > back_by)
                .copied(),
        );
        stderr_all.push_str(&stderr);
    }
    let total = (segment.len() + snowflake.len()) as u64;
    eprintln!(
        "client chaos: {total} IDs ({} segment, {} snowflake), none twice; {in_outage} served \
         from caches during the outage, {error_count} errors (all in the outage), {after_outage} \
         after it",
        segment.len(),
        snowflake.len()
    );
    assert!(total >= TOTAL, "only {total} IDs");
    assert!(
        stray_errors.is_empty(),
        "next() failed while a server was up, at {stray_errors:?} (outage {outage_from}..{back_by}):\n{stderr_all}"
    );
    assert!(
        in_outage > 0,
        "no ID came from the caches during the outage"
    );
    assert!(
        error_count > 0,
        "the caches never ran dry in a 4 s outage: {stderr_all}"
    );
    assert!(
        stderr_all.contains("Unavailable") && stderr_all.contains(&ports[0].to_string()),
        "the outage's error does not name the endpoints:\n{stderr_all}"
    );
    assert!(after_outage > 0, "no ID after the servers came back");
    drop(servers);
    let _ = std::fs::remove_dir_all(&dir);
}
