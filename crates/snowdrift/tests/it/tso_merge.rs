//! The Rust client's merging of concurrent `tso` calls (snowdrift-client's `merge`), end to
//! end through a leader kill: 3 `snowdrift serve` with one `kind = "tso"` generator on etcd;
//! one client with 64 concurrent callers of single IDs (merged into shared fetches) and a
//! second client with 8 callers beside it (its answers are what would show a merged call
//! served from a fetch sent before the call began: such an ID can be below one the other
//! client had already received). The leader is killed with -9 mid-run. The history of every
//! call must be linearizable (no duplicate, no real-time order violation), and calls must
//! have been merged (fewer fetches than calls).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowdrift_testkit::history::History;
use snowdrift_testkit::{unique_name, urls};

use crate::common::{Served, free_port};
use crate::tso_chaos::{config, leader, serve};

/// Callers on the merging client, and on the one beside it.
const CALLERS: [usize; 2] = [64, 8];
/// IDs to see before the kill, and after the new leader answered.
const BEFORE: u64 = 60_000;
const AFTER: u64 = 60_000;

/// One recorded call: caller, sent and answered (ns since the run's start), its IDs.
type Op = (String, u64, u64, Vec<u64>);

#[test]
fn sixty_four_merged_callers_on_one_client_stay_linearizable_through_a_leader_kill() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(unique_name("tso_merge"));
    std::fs::create_dir_all(&dir).unwrap();
    let name = unique_name("tm");
    let configs: Vec<_> = (0..3)
        .map(|i| config(&dir, i, free_port(), &urls::etcd(), &name))
        .collect();
    let mut nodes: Vec<Option<Served>> = vec![Some(serve(&configs[0], 0)), None, None];
    assert_eq!(leader(&nodes, &name), 0);
    nodes[1] = Some(serve(&configs[1], 0));
    nodes[2] = Some(serve(&configs[2], 0));
    let endpoints: Vec<String> = nodes.iter().map(|n| n.as_ref().unwrap().url()).collect();

    let start = Instant::now();
    let ns = move || start.elapsed().as_nanos() as u64;
    let ops: Arc<Mutex<Vec<Op>>> = Arc::default();
    let ids = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    let mut tasks = Vec::new();
    for (c, &callers) in CALLERS.iter().enumerate() {
        let client = {
            let _entered = rt.enter();
            snowdrift_client::Client::builder()
                .endpoints(endpoints.clone())
                .deadline(Duration::from_secs(5))
                .backoff(Duration::from_millis(20), Duration::from_millis(200))
                .build()
                .unwrap()
        };
        for k in 0..callers {
            let (client, ops, ids, stop, name) = (
                client.clone(),
                ops.clone(),
                ids.clone(),
                stop.clone(),
                name.clone(),
            );
            tasks.push(rt.spawn(async move {
                let who = format!("c{c}-{k}");
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let invoke = ns();
                    let got = client.next(&name).await;
                    let complete = ns();
                    let got = match got {
                        Ok(id) => vec![id],
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            Vec::new()
                        }
                    };
                    ids.fetch_add(got.len() as u64, Ordering::Relaxed);
                    mine.push((who.clone(), invoke, complete, got));
                }
                ops.lock().unwrap().extend(mine);
            }));
        }
        clients.push(client);
    }
    let wait_ids = |what: &str, more: u64| {
        let target = ids.load(Ordering::Relaxed) + more;
        let deadline = Instant::now() + Duration::from_secs(120);
        while ids.load(Ordering::Relaxed) < target {
            assert!(Instant::now() < deadline, "no {more} more IDs {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_ids("at the start", BEFORE);
    let killed_at = ns();
    let first = leader(&nodes, &name);
    drop(nodes[first].take());
    let second = leader(&nodes, &name);
    assert_ne!(first, second);
    wait_ids("after the leader was killed", AFTER);
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        rt.block_on(t).unwrap();
    }
    let ops = std::mem::take(&mut *ops.lock().unwrap());

    let mut history = History::new();
    for (who, invoke, complete, got) in &ops {
        history
            .push(who, *invoke, *complete, got.iter().copied())
            .unwrap();
    }
    let report = history.check();
    let calls = ops.iter().filter(|o| !o.3.is_empty()).count() as u64;
    let merged = clients[0].stats(&name).unwrap();
    let after_kill = ops
        .iter()
        .filter(|o| o.1 >= killed_at && !o.3.is_empty())
        .count();
    eprintln!(
        "tso merge: {} calls ({} failed), {} IDs, {after_kill} answered after the kill; the \
         merging client made {} fetches for {} IDs; leaders {first} then {second}; {} \
         violations",
        report.operations,
        ops.len() as u64 - calls,
        report.ids,
        merged.fetches,
        merged.served,
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
    assert!(report.ids as u64 >= BEFORE + AFTER);
    assert!(after_kill > 0, "no call was answered after the kill");
    assert!(
        merged.fetches * 2 < merged.served,
        "{} fetches for {} IDs: the calls were not merged",
        merged.fetches,
        merged.served
    );
    drop(nodes);
    let _ = std::fs::remove_dir_all(&dir);
}
