//! Tinyid's client protocol against two real `snowdrift serve` processes on one PostgreSQL
//! store: a client of our own that does what `tinyid-client`'s `TinyId.nextId` does (POST
//! an empty form to `nextSegmentIdSimple` on a server picked at random, read the five
//! fields, issue `currentId + delta, ...` up to `maxId` keeping `id % delta == remainder`,
//! fetch the next segment in the background once an ID reaches `loadingId`), on four
//! threads, beside callers of `nextIdSimple` that take IDs from the servers' own buffers:
//! no ID twice across all of them, and none outside what the store handed out. The token
//! is a Tinyid-style one (its hash in `[[auth.token]]`), and the servers' logs, at every
//! level, never show it.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use snowdrift_proto::tinyid::Segment;
use snowdrift_testkit::{unique_name, urls};

use crate::common::{Served, serve_command};

/// A token as Tinyid's `tiny_id_token` rows hold them: the servers keep only its hash.
const TOKEN: &str = "6c1e5e0ad3a54f6a8d7f3e2b9c0a41d7";
const THREADS: usize = 4;
const IDS_PER_THREAD: usize = 10_000;
const STEP: u32 = 500;

/// `POST path` with an empty form body, as `TinyIdHttpUtils.post` sends it (through Java's
/// `HttpURLConnection`): the status and the body, its lines joined as the client joins them.
fn post(addr: &str, path: &str, form: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nUser-Agent: Java/17\r\nHost: {addr}\r\nAccept: text/html, \
         image/gif, image/jpeg, *; q=.2, */*; q=.2\r\nConnection: close\r\nContent-type: \
         application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.lines().collect())
}

/// One segment being issued: Tinyid's `SegmentId`.
struct Held {
    segment: Segment,
    /// `currentId`, moved by `init()` to just below the first ID of the residue.
    current: AtomicI64,
}

/// What `SegmentId.nextId()` says.
enum Next {
    Normal(i64),
    /// At or past `loadingId`: issue it, and fetch the next segment.
    Loading(i64),
    /// Past `maxId`: the segment is used up.
    Over,
}

impl Held {
    /// `new SegmentId(...)` then its `init()`: `currentId` moves up one at a time (at most
    /// `delta + 1` times) to the first number with the remainder, then one `delta` back.
    fn new(segment: Segment) -> Held {
        let (delta, remainder) = (i64::from(segment.delta), i64::from(segment.remainder));
        let mut current = segment.current_id;
        if current % delta != remainder {
            let found = (0..=delta).any(|_| {
                current += 1;
                current % delta == remainder
            });
            assert!(
                found,
                "{segment:?}: a remainder Tinyid's client never finds"
            );
            current -= delta;
        }
        Held {
            segment,
            current: AtomicI64::new(current),
        }
    }

    fn next_id(&self) -> Next {
        let delta = i64::from(self.segment.delta);
        let id = self.current.fetch_add(delta, Ordering::SeqCst) + delta;
        if id > self.segment.max_id {
            Next::Over
        } else if id >= self.segment.loading_id {
            Next::Loading(id)
        } else {
            Next::Normal(id)
        }
    }

    fn useful(&self) -> bool {
        self.current.load(Ordering::SeqCst) <= self.segment.max_id
    }
}

/// Tinyid's `CachedIdGenerator` over `HttpSegmentIdServiceImpl`, for one `bizType`.
struct TinyidClient {
    /// `host:port` of each server (`tinyid.server`).
    servers: Vec<String>,
    biz_type: String,
    current: Mutex<Option<Arc<Held>>>,
    next: Mutex<Option<Arc<Held>>>,
    loading_next: AtomicBool,
    /// `loadCurrent` is `synchronized`.
    load_current: Mutex<()>,
    random: AtomicU64,
    fetches: AtomicU64,
    background_fetches: AtomicU64,
}

impl TinyidClient {
    fn new(servers: Vec<String>, biz_type: &str) -> Arc<Self> {
        let client = Arc::new(TinyidClient {
            servers,
            biz_type: biz_type.to_string(),
            current: Mutex::new(None),
            next: Mutex::new(None),
            loading_next: AtomicBool::new(false),
            load_current: Mutex::new(()),
            random: AtomicU64::new(0x9E37_79B9_7F4A_7C15),
            fetches: AtomicU64::new(0),
            background_fetches: AtomicU64::new(0),
        });
        // The generator's constructor loads its first segment.
        client.load_current();
        client
    }

    /// `getNextSegmentId`: a server at random (`new Random().nextInt(size)`), the URL
    /// `http://{server}/tinyid/id/nextSegmentIdSimple?token={token}&bizType=` plus the
    /// bizType, an empty POST; an empty answer is a failed fetch.
    fn query_segment(&self) -> Segment {
        let r = self
            .random
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let server = &self.servers[(r >> 33) as usize % self.servers.len()];
        let path = format!(
            "/tinyid/id/nextSegmentIdSimple?token={TOKEN}&bizType={}",
            self.biz_type
        );
        let (status, body) = post(server, &path, "");
        assert_eq!(status, 200, "{server}: {body}");
        self.fetches.fetch_add(1, Ordering::Relaxed);
        Segment::parse_simple(&body).unwrap_or_else(|e| panic!("{server}: {e}"))
    }

    /// `loadCurrent()`: the prefetched segment if there is one, else a fetch now.
    fn load_current(&self) {
        let _synchronized = self.load_current.lock().unwrap();
        let used_up = self
            .current
            .lock()
            .unwrap()
            .as_ref()
            .is_none_or(|c| !c.useful());
        if used_up {
            let next = self.next.lock().unwrap().take();
            let held = next.unwrap_or_else(|| Arc::new(Held::new(self.query_segment())));
            *self.current.lock().unwrap() = Some(held);
        }
    }

    fn load_next(self: &Arc<Self>) {
        if self.next.lock().unwrap().is_some() || self.loading_next.load(Ordering::SeqCst) {
            return;
        }
        if self.loading_next.swap(true, Ordering::SeqCst) {
            return;
        }
        // Tinyid's single-thread executor.
        let client = Arc::clone(self);
        std::thread::spawn(move || {
            let segment = Arc::new(Held::new(client.query_segment()));
            client.background_fetches.fetch_add(1, Ordering::Relaxed);
            *client.next.lock().unwrap() = Some(segment);
            client.loading_next.store(false, Ordering::SeqCst);
        });
    }

    /// `TinyId.nextId(bizType)`.
    fn next_id(self: &Arc<Self>) -> i64 {
        loop {
            let current = self.current.lock().unwrap().clone();
            let Some(current) = current else {
                self.load_current();
                continue;
            };
            match current.next_id() {
                Next::Over => self.load_current(),
                Next::Loading(id) => {
                    self.load_next();
                    return id;
                }
                Next::Normal(id) => return id,
            }
        }
    }
}

/// `snowdrift serve` on the shared store and table, with the Tinyid token, logging at
/// `log` level.
fn serve(dir: &std::path::Path, name: &str, table: &str, biz_type: &str, log: &str) -> Served {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[store]\nurl = \"{}\"\ntable = \"{table}\"\n\
             [worker]\npath = \"{}\"\n[[auth.token]]\nname = \"tinyid\"\nhash = \"sha256:{}\"\n\
             generators = [\"{biz_type}\"]\nrole = \"read\"\n",
            urls::postgres(),
            dir.join(format!("{name}-workers")).display(),
            sha256_hex(TOKEN),
        ),
    )
    .unwrap();
    let mut cmd = serve_command();
    cmd.arg("--config").arg(&config).env("SNOWDRIFT_LOG", log);
    Served::start(cmd)
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn tinyid_s_client_on_four_threads_against_two_servers_on_postgres_never_repeats() {
    let dir = std::env::temp_dir().join(unique_name("tinyid_client"));
    std::fs::create_dir_all(&dir).unwrap();
    let table = unique_name("tinyid_alloc");
    let biz_type = "tinyid_test";
    // Server a logs everything, so its log shows whether the token ever appears.
    let a = serve(&dir, "a", &table, biz_type, "trace");
    let b = serve(&dir, "b", &table, biz_type, "info");
    let created = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["tags", "--store", &urls::postgres(), "--table", &table])
        .args(["create", biz_type, "--step", &STEP.to_string()])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");

    let client = TinyidClient::new(vec![a.addr.clone(), b.addr.clone()], biz_type);
    let issuers: Vec<_> = (0..THREADS)
        .map(|_| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || {
                (0..IDS_PER_THREAD)
                    .map(|_| client.next_id())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    // Meanwhile the servers serve the same tag from their own buffers.
    let served: Vec<_> = [a.addr.clone(), b.addr.clone()]
        .into_iter()
        .map(|addr| {
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..40 {
                    let path = format!(
                        "/tinyid/id/nextIdSimple?bizType=tinyid_test&batchSize=100&token={TOKEN}"
                    );
                    let (status, body) = post(&addr, &path, "");
                    assert_eq!(status, 200);
                    ids.extend(body.split(',').map(|id| id.parse::<i64>().unwrap()));
                }
                ids
            })
        })
        .collect();

    let mut seen = HashSet::new();
    let mut duplicates = 0;
    let mut total = 0;
    for handle in issuers.into_iter().chain(served) {
        for id in handle.join().unwrap() {
            total += 1;
            if !seen.insert(id) {
                duplicates += 1;
            }
        }
    }
    assert_eq!(total, THREADS * IDS_PER_THREAD + 2 * 40 * 100);
    assert_eq!(duplicates, 0, "IDs issued twice");
    // Every ID is one the store handed out: below the tag's next free number.
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .args(["tags", "--store", &urls::postgres(), "--table", &table])
        .args(["list", "--json"])
        .output()
        .unwrap();
    let tags: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let max_id: i64 = tags[0]["max_id"].as_str().unwrap().parse().unwrap();
    assert!(seen.iter().all(|&id| (1..max_id).contains(&id)));
    let fetches = client.fetches.load(Ordering::Relaxed);
    let background = client.background_fetches.load(Ordering::Relaxed);
    assert!(
        background > 0
            && fetches >= u64::try_from(THREADS * IDS_PER_THREAD).unwrap() / u64::from(STEP),
        "{fetches} fetches, {background} in the background at loadingId"
    );
    // Both servers handed the client segments.
    for s in [&a, &b] {
        let (status, metrics) = s.get("/metrics", None);
        assert_eq!(status, 200);
        assert!(
            metrics.contains(
                r#"snowdrift_tinyid_answers_total{route="/tinyid/id/nextSegmentIdSimple",code="200"}"#
            ),
            "{} handed out no segment",
            s.addr
        );
    }

    // The token in a form body, and in the query: masked in the request's log line, and
    // nowhere else in anything the server wrote.
    let (status, body) = post(
        &a.addr,
        "/tinyid/id/nextSegmentIdSimple",
        &format!("bizType={biz_type}&token={TOKEN}"),
    );
    assert_eq!((status, body.split(',').count()), (200, 5), "{body}");
    let (status, body) = post(
        &a.addr,
        "/tinyid/id/nextIdSimple?token=not-the-token&bizType=tinyid_test",
        "",
    );
    assert_eq!((status, body.as_str()), (200, ""));
    // The wrong token's request is the last one, and the only code 5.
    let line = a.wait_for_log(0, "code=5");
    assert!(line.contains("Tinyid request"), "{line}");
    let log = a.log_lines();
    for secret in [TOKEN, "not-the-token"] {
        let shown: Vec<&String> = log.iter().filter(|l| l.contains(secret)).collect();
        assert!(shown.is_empty(), "the token is in the log: {shown:?}");
    }
    for masked in [
        "form=bizType=tinyid_test&token=***",
        "query=token=***&bizType=tinyid_test",
    ] {
        assert!(
            log.iter().any(|l| l.contains(masked)),
            "no log line shows {masked}"
        );
    }
    assert!(a.stop().success());
    assert!(b.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}
