//! `kind = "tso"` through real faults, end to end: 3 `snowdrift serve` processes elect a
//! leader on etcd (each reaching etcd through its own fault proxy; the first with its clock
//! 1.5 s ahead); 6 clients (snowdrift-client, all three endpoints each) take batches of 1
//! to 1,000 IDs and record when each request was sent and answered. Meanwhile the leader
//! is killed with -9 and restarted with its clock 1.5 s behind, the next leader is cut off
//! from etcd for longer than its lease, the two others are killed so that the node whose
//! clock went back leads, and etcd is frozen for all three. The recorded
//! history of at least a million IDs must have no duplicate, no gap within an answer and no
//! real-time order violation, checked in process and by `snowdrift verify --history`; the
//! same history with one answer's IDs moved back must fail it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowdrift_testkit::history::History;
use snowdrift_testkit::{FaultProxy, unique_name, urls};

use crate::common::{Served, free_port, serve_command};

const TOTAL: u64 = 1_000_000;
const CLIENTS: usize = 6;

/// One recorded request: client, sent and answered (ns since the run's start), its IDs.
type Op = (usize, u64, u64, Vec<u64>);

/// A node's config: its port (advertised to the others), the oracle on `etcd`.
pub(crate) fn config(
    dir: &std::path::Path,
    i: usize,
    port: u16,
    etcd: &str,
    name: &str,
) -> std::path::PathBuf {
    let file = dir.join(format!("node{i}.toml"));
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\nadvertise = \"http://127.0.0.1:{port}\"\n\n\
             [store]\nurl = \"sqlite://{}\"\n\n\
             [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{etcd}\"\nttl = \"2s\"\n",
            dir.join(format!("node{i}.db")).display()
        ),
    )
    .unwrap();
    file
}

pub(crate) fn serve(config: &std::path::Path, clock_offset_ms: i64) -> Served {
    let mut cmd = serve_command();
    cmd.arg("--config").arg(config).env(
        "SNOWDRIFT_TEST_CLOCK_OFFSET_MS",
        clock_offset_ms.to_string(),
    );
    Served::start(cmd)
}

/// The node's role for the oracle (`leader`, `follower`, `electing`), or `down`.
pub(crate) fn role(node: &Served, name: &str) -> String {
    let (status, body) = node.get("/v1/generators", None);
    if status != 200 {
        return "down".into();
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    v["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .and_then(|g| g["tso"]["role"].as_str())
        .unwrap_or("none")
        .to_string()
}

/// The index of the one node of `nodes` (a `None` is down) that leads, waiting up to 30 s.
pub(crate) fn leader(nodes: &[Option<Served>], name: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leading: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].as_ref().is_some_and(|n| role(n, name) == "leader"))
            .collect();
        if let [one] = leading.as_slice() {
            return *one;
        }
        assert!(Instant::now() < deadline, "leaders after 30 s: {leading:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_nodes_a_million_ids_linearizable_through_a_kill_a_cut_and_an_etcd_freeze() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = std::env::temp_dir().join(unique_name("tso_chaos"));
    std::fs::create_dir_all(&dir).unwrap();
    let name = unique_name("ts");
    let mut proxies = Vec::new();
    let mut configs = Vec::new();
    for i in 0..3 {
        let (proxy, etcd) = rt
            .block_on(FaultProxy::start_for_url(&urls::etcd()))
            .unwrap();
        configs.push(config(&dir, i, free_port(), &etcd, &name));
        proxies.push(proxy);
    }
    // Node 0 starts first, with its clock ahead, so it leads first.
    let mut nodes: Vec<Option<Served>> = vec![Some(serve(&configs[0], 1_500)), None, None];
    assert_eq!(leader(&nodes, &name), 0);
    nodes[1] = Some(serve(&configs[1], 0));
    nodes[2] = Some(serve(&configs[2], 0));
    let endpoints: Vec<String> = nodes.iter().map(|n| n.as_ref().unwrap().url()).collect();

    let start = Instant::now();
    let ns = move || start.elapsed().as_nanos() as u64;
    let ops: Arc<Mutex<Vec<Op>>> = Arc::default();
    let ids = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let _entered = rt.enter();
            let client = snowdrift_client::Client::builder()
                .endpoints(endpoints.clone())
                .deadline(Duration::from_secs(5))
                .backoff(Duration::from_millis(20), Duration::from_millis(200))
                .build()
                .unwrap();
            let (ops, ids, stop, name) = (ops.clone(), ids.clone(), stop.clone(), name.clone());
            rt.spawn(async move {
                let mut k = c as u64;
                while !stop.load(Ordering::Relaxed) {
                    k = k
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let count = 1 + (k >> 33) % 1_000;
                    let invoke = ns();
                    let got = client
                        .next_n(&name, count as usize)
                        .await
                        .unwrap_or_default();
                    let complete = ns();
                    if got.is_empty() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    ids.fetch_add(got.len() as u64, Ordering::Relaxed);
                    ops.lock().unwrap().push((c, invoke, complete, got));
                }
            })
        })
        .collect();
    let wait_ids = |what: &str, more: u64| {
        let target = ids.load(Ordering::Relaxed) + more;
        let deadline = Instant::now() + Duration::from_secs(120);
        while ids.load(Ordering::Relaxed) < target {
            assert!(Instant::now() < deadline, "no {more} more IDs {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_ids("at the start", 150_000);

    // kill -9 the leader (clock ahead); restart it with its clock 1.5 s behind.
    let killed_at = ns();
    drop(nodes[0].take());
    let second = leader(&nodes, &name);
    let elected_after = Duration::from_nanos(ns() - killed_at);
    nodes[0] = Some(serve(&configs[0], -1_500));
    wait_ids("after the leader was killed", 150_000);

    // The leader cut off from etcd for longer than its lease: another must lead, the cut
    // one must have stopped first (the history shows it).
    proxies[second].black_hole();
    let cut_at = ns();
    let third = loop {
        let l = leader(&nodes, &name);
        if l != second {
            break l;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let replaced_after = Duration::from_nanos(ns() - cut_at);
    wait_ids("with the leader cut off", 150_000);
    proxies[second].heal();

    // The other two killed: node 0, whose clock is now 3 s behind the one it led with (and
    // behind the window saved under it), must lead and still go on above every ID.
    for i in [1, 2] {
        drop(nodes[i].take());
    }
    assert_eq!(leader(&nodes, &name), 0);
    wait_ids("with node 0 leading, its clock behind", 150_000);
    nodes[1] = Some(serve(&configs[1], 0));
    nodes[2] = Some(serve(&configs[2], 0));

    // etcd frozen for every node, longer than the lease: nobody may issue meanwhile.
    for p in &proxies {
        p.black_hole();
    }
    std::thread::sleep(Duration::from_secs(3));
    for p in &proxies {
        p.heal();
    }
    leader(&nodes, &name);
    wait_ids("after etcd came back", 150_000);
    let more = TOTAL.saturating_sub(ids.load(Ordering::Relaxed));
    wait_ids("up to the total", more);
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        rt.block_on(c).unwrap();
    }
    let ops = std::mem::take(&mut *ops.lock().unwrap());

    let mut history = History::new();
    for (c, invoke, complete, got) in &ops {
        history
            .push(&format!("c{c}"), *invoke, *complete, got.iter().copied())
            .unwrap();
    }
    let report = history.check();
    let failed = ops.iter().filter(|o| o.3.is_empty()).count();
    // The first answer of a request sent after the kill: when clients had IDs again.
    let back_after = ops
        .iter()
        .filter(|o| o.1 >= killed_at && !o.3.is_empty())
        .map(|o| o.2)
        .min()
        .map(|t| Duration::from_nanos(t - killed_at));
    eprintln!(
        "tso chaos: {} requests, {} IDs, {failed} failed; kill -9: a new leader after \
         {elected_after:?}, clients had IDs again after {back_after:?}; cut: replaced after \
         {replaced_after:?} (leaders {second} then {third}); {} violations",
        report.operations,
        report.ids,
        report.violation_count()
    );
    assert!(
        report.is_clean(),
        "{} duplicates, {} gaps, {} real-time violations, first: {:#?}",
        report.duplicate_count,
        report.gap_count,
        report.real_time_count,
        &report.violations[..report.violations.len().min(3)]
    );
    assert!(report.ids as u64 >= TOTAL, "only {} IDs", report.ids);

    // The same history through the CLI, and with one answer moved below an earlier one.
    let file = dir.join("history.jsonl");
    write_history(&file, &ops, None);
    let verify = |file: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_snowdrift"))
            .args(["verify", "--history"])
            .arg(file)
            .output()
            .unwrap()
    };
    let clean = verify(&file);
    assert!(clean.status.success(), "{clean:?}");
    let planted = dir.join("planted.jsonl");
    write_history(&planted, &ops, Some(ops.len() - 1));
    let caught = verify(&planted);
    let out = String::from_utf8_lossy(&caught.stdout).to_string()
        + &String::from_utf8_lossy(&caught.stderr);
    assert!(
        !caught.status.success(),
        "a planted violation passed: {out}"
    );
    assert!(out.contains("real-time"), "{out}");
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes `ops` as JSON lines; with `plant`, that operation's IDs are replaced by the first
/// operation's first IDs minus their count (below every ID before it).
fn write_history(file: &std::path::Path, ops: &[Op], plant: Option<usize>) {
    let first = ops.iter().find(|o| !o.3.is_empty()).unwrap().3[0];
    let mut out = std::io::BufWriter::new(std::fs::File::create(file).unwrap());
    for (i, (c, invoke, complete, got)) in ops.iter().enumerate() {
        let ids: Vec<String> = if plant == Some(i) {
            (0..got.len().max(1) as u64)
                .map(|k| (first - 1_000_000 + k).to_string())
                .collect()
        } else {
            got.iter().map(u64::to_string).collect()
        };
        let line = serde_json::json!({"client": format!("c{c}"), "invoke": invoke, "complete": complete, "ids": ids});
        writeln!(out, "{line}").unwrap();
    }
    out.flush().unwrap();
}
