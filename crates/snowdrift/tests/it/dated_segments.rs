//! Dated business numbers on segment tags, end to end: a tag with a template
//! (`ORD{date:%Y%m%d}{seq:06}`) served by two `snowdrift serve` processes on one PostgreSQL,
//! one MariaDB and one SQLite file, issuing through the day's end (their clocks shifted by
//! `SNOWDRIFT_TEST_CLOCK_OFFSET_MS` so midnight comes a few seconds into the test), with one
//! of them killed and restarted in the middle. Nothing repeats, the new day's numbers start
//! at 1, and every number of the new day was issued after every number of the old one.

use std::collections::{BTreeMap, HashSet};
use std::io::{Read, Write};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::{Served, serve_command};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_testkit::urls;

const DAY_MS: u64 = 86_400_000;
/// How long after the servers' clocks are set their midnight comes: time to start both and
/// issue a while in the old day.
const LEAD: Duration = Duration::from_secs(7);
/// How long the clients go on after midnight.
const AFTER: Duration = Duration::from_secs(3);
const TEMPLATE: &str = "ORD{date:%Y%m%d}{seq:06}";

/// One answered request: who answered, when it was sent and answered, what it got.
struct Answer {
    server: usize,
    sent: Instant,
    received: Instant,
    numbers: Vec<String>,
}

/// `GET path` on `addr`: the status and body, or `None` when the server is not there (a
/// restart).
fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

fn serve(store: &str, table: &str, workers: &std::path::Path, offset_ms: i64) -> Served {
    let mut cmd = serve_command();
    cmd.args(["--listen", "127.0.0.1:0", "--store", store])
        .env("SNOWDRIFT_STORE__TABLE", table)
        .env("SNOWDRIFT_WORKER__PATH", workers)
        .env("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", offset_ms.to_string());
    Served::start(cmd)
}

/// The date part (`20261122`) and sequence number of `ORD20261122000042`.
fn parts(number: &str) -> (u64, u64) {
    let digits = number
        .strip_prefix("ORD")
        .unwrap_or_else(|| panic!("{number:?} does not start with ORD"));
    assert_eq!(
        digits.len(),
        14,
        "{number:?}: 8 digits of date, 6 of sequence"
    );
    (digits[..8].parse().unwrap(), digits[8..].parse().unwrap())
}

/// The UTC day of `ms` as `20261122`.
fn day_of(ms: u64) -> u64 {
    let day: CounterTemplate = "{date:%Y%m%d}{seq}".parse().unwrap();
    day.period_span(ms).unwrap().key as u64
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn two_servers_issue_across_midnight(store: &str) {
    let table = snowdrift_testkit::unique_name("dated_serve");
    let workers = std::env::temp_dir().join(snowdrift_testkit::unique_name("dated-workers"));
    let created = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "tags", "--store", store, "--table", &table, "create", "order",
        ])
        .args(["--step", "20", "--template", TEMPLATE])
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    // Both servers read the same wall clock shifted by the same offset, so midnight comes
    // LEAD from now on both.
    let now_ms = now_ms();
    let midnight_real = Instant::now() + LEAD;
    let server_now = (now_ms / DAY_MS + 1) * DAY_MS - LEAD.as_millis() as u64;
    let offset = server_now as i64 - now_ms as i64;
    let (old_day, new_day) = (
        day_of(server_now),
        day_of(server_now + LEAD.as_millis() as u64),
    );
    let servers: Vec<Arc<Mutex<Served>>> = (0..2)
        .map(|_| Arc::new(Mutex::new(serve(store, &table, &workers, offset))))
        .collect();
    let addrs: Vec<Arc<Mutex<String>>> = servers
        .iter()
        .map(|s| Arc::new(Mutex::new(s.lock().unwrap().addr.clone())))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(Vec::<Answer>::new()));
    let refused = Arc::new(Mutex::new(Vec::<String>::new()));
    let clients: Vec<_> = (0..4)
        .map(|k| {
            let (addr, stop) = (addrs[k % 2].clone(), stop.clone());
            let (answers, refused) = (answers.clone(), refused.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    // Every other request on Leaf's route, which answers one number as text.
                    let leaf = k % 2 == 1 && n.is_multiple_of(2);
                    let path = if leaf {
                        "/api/segment/get/order".to_string()
                    } else {
                        format!("/v1/ids/order?count={}", 1 + n % 4)
                    };
                    let at = addr.lock().unwrap().clone();
                    let sent = Instant::now();
                    let Some((status, body)) = get(&at, &path) else {
                        // Killed for the restart: try the new address.
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    };
                    let received = Instant::now();
                    if status != 200 {
                        refused.lock().unwrap().push(format!("{status} {body}"));
                        continue;
                    }
                    let numbers = if leaf {
                        vec![body]
                    } else {
                        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                        v["ids"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|id| id.as_str().unwrap().to_string())
                            .collect()
                    };
                    answers.lock().unwrap().push(Answer {
                        server: k % 2,
                        sent,
                        received,
                        numbers,
                    });
                }
            })
        })
        .collect();
    // The restart in the middle: server 0 killed (SIGKILL: whatever it buffered is lost)
    // a little before midnight, and started again on the same store.
    std::thread::sleep(LEAD.saturating_sub(Duration::from_millis(2_500)));
    {
        let mut s0 = servers[0].lock().unwrap();
        s0.signal("KILL");
        let again = serve(store, &table, &workers, offset);
        *addrs[0].lock().unwrap() = again.addr.clone();
        *s0 = again;
    }
    while Instant::now() < midnight_real + AFTER {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().unwrap();
    }
    let answers = std::mem::take(&mut *answers.lock().unwrap());
    let refused = refused.lock().unwrap().clone();
    // No refusals: both clocks agree, so no node ever asks for a period the store has left.
    assert!(refused.is_empty(), "refused: {refused:?}");

    let mut seen = HashSet::new();
    let mut seqs: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut per_server: BTreeMap<(usize, u64), usize> = BTreeMap::new();
    let mut last_old_sent = None::<Instant>;
    let mut first_new_received = None::<Instant>;
    for a in &answers {
        for number in &a.numbers {
            assert!(seen.insert(number.clone()), "{number} issued twice");
            let (day, seq) = parts(number);
            assert!(
                day == old_day || day == new_day,
                "{number}: a day other than {old_day} and {new_day}"
            );
            seqs.entry(day).or_default().push(seq);
            *per_server.entry((a.server, day)).or_default() += 1;
            if day == old_day {
                last_old_sent = last_old_sent.max(Some(a.sent));
            } else {
                first_new_received =
                    Some(first_new_received.map_or(a.received, |f: Instant| f.min(a.received)));
            }
        }
    }
    let (Some(last_old_sent), Some(first_new_received)) = (last_old_sent, first_new_received)
    else {
        panic!("numbers of both days are needed: {seqs:?}");
    };
    assert!(
        last_old_sent <= first_new_received,
        "a number of {old_day} was asked for {:?} after a number of {new_day} was answered",
        last_old_sent - first_new_received
    );
    for ((server, day), n) in &per_server {
        assert!(*n > 0, "server {server} issued nothing on {day}");
    }
    assert_eq!(
        per_server.len(),
        4,
        "each server issued on both days: {per_server:?}"
    );
    assert_eq!(
        seqs[&new_day].iter().min(),
        Some(&1),
        "the new day starts at 1"
    );
    assert_eq!(seqs[&old_day].iter().min(), Some(&1));
    let listed = Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args([
            "tags", "--store", store, "--table", &table, "list", "--json",
        ])
        .output()
        .unwrap();
    let tags: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(tags[0]["template"], TEMPLATE);
    assert_eq!(tags[0]["period"], new_day.to_string());
    eprintln!(
        "{store}: {} numbers on {old_day}, {} on {new_day}, by server and day {per_server:?}",
        seqs[&old_day].len(),
        seqs[&new_day].len()
    );
    drop(servers);
    let _ = std::fs::remove_dir_all(&workers);
}

#[test]
fn two_servers_on_postgres_move_to_the_new_day_together() {
    two_servers_issue_across_midnight(&urls::postgres());
}

#[test]
fn two_servers_on_mariadb_move_to_the_new_day_together() {
    two_servers_issue_across_midnight(&urls::mysql());
}

#[test]
fn two_servers_on_sqlite_move_to_the_new_day_together() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("dated-sqlite"));
    std::fs::create_dir_all(&dir).unwrap();
    two_servers_issue_across_midnight(&format!("sqlite://{}/ids.db", dir.display()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `snowdrift next --kind segment` prints a tag's rendered numbers; `--format` is refused.
#[test]
fn the_command_line_prints_rendered_numbers() {
    let dir = std::env::temp_dir().join(snowdrift_testkit::unique_name("dated-cli"));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("sqlite://{}/ids.db", dir.display());
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_snowdrift"))
            .args(args)
            .env_remove("SNOWDRIFT_STORE__URL")
            .env("SNOWDRIFT_TEST_CLOCK_OFFSET_MS", "0")
            .output()
            .unwrap()
    };
    let out = run(&[
        "tags",
        "--store",
        &store,
        "create",
        "inv",
        "--step",
        "3",
        "--template",
        "INV-{date:%Y}-{seq:04}",
        "--utc-offset",
        "-05:30",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(
        shown.contains("[template INV-{date:%Y}-{seq:04}, UTC-05:30]"),
        "{shown}"
    );
    let out = run(&[
        "next", "--kind", "segment", "--tag", "inv", "--store", &store, "-n", "4",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let year = CounterTemplate::parse("{date:%Y}{seq}")
        .unwrap()
        .with_utc_offset(-(5 * 3600 + 1800))
        .unwrap()
        .period_key(now_ms())
        .unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    let want: Vec<String> = (1..=4).map(|n| format!("INV-{year}-{n:04}")).collect();
    assert_eq!(printed.lines().collect::<Vec<_>>(), want);
    let out = run(&[
        "next", "--kind", "segment", "--tag", "inv", "--store", &store, "--format", "base62",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("drop --format"), "{err}");
    let out = run(&[
        "tags",
        "--store",
        &store,
        "create",
        "x",
        "--utc-offset",
        "+01:00",
    ]);
    assert!(!out.status.success(), "--utc-offset needs --template");
    let _ = std::fs::remove_dir_all(&dir);
}
