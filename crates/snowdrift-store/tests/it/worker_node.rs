//! WorkerNode against real coordinators (lock files, PostgreSQL, Redis): distinct IDs for
//! nodes starting together, refusal of a taken static ID, exhaustion, waiting out or
//! refusing a high-water mark ahead of the clock (in `start`, or after `claim` returned), a clock behind its peers, and a lease
//! lost to a black-holed coordinator: no ID after the deadline, another node takes the ID,
//! and the two nodes' IDs never meet.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use snowdrift_core::clock::{Clock, ManualClock, MonotonicClock, OffsetClock};
use snowdrift_core::generator::{Builder, SnowflakeGenerator};
use snowdrift_core::layout::Layout;
use snowdrift_store::Error;
use snowdrift_store::worker::{LeaseConfig, WorkerNode, WorkerSource, WorkerState};
use snowdrift_testkit::{FaultProxy, IdChecker, unique_name, urls};

/// How long a test waits for something that must happen before it fails. Generous: a
/// loaded CI machine is slow, and waiting longer never hides a bug.
const PATIENCE: Duration = Duration::from_secs(60);

fn twitter() -> Builder {
    SnowflakeGenerator::builder(Layout::preset("twitter").unwrap())
}

/// 1 node bit: two worker IDs.
fn two_workers() -> Builder {
    SnowflakeGenerator::builder(
        Layout::from_spec("time:41,worker:1,seq:12", 1, 1_288_834_974_657).unwrap(),
    )
}

fn file_url() -> String {
    let dir = std::env::temp_dir().join(unique_name("snowdrift_workers"));
    format!("file://{}", dir.display())
}

/// Short leases and intervals so the tests run in seconds.
fn quick(url: &str, ns: &str, source: WorkerSource) -> LeaseConfig {
    let mut c = LeaseConfig::new(url, source);
    c.namespace = ns.to_string();
    c.ttl = Duration::from_millis(1500);
    c.window = Duration::from_millis(400);
    c.publish_every = Duration::from_millis(200);
    c
}

async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_get_distinct_ids_on_every_registry() {
    let ns = unique_name("wn");
    for url in [
        file_url(),
        urls::postgres(),
        urls::redis(),
        urls::etcd(),
        urls::zookeeper(),
        urls::mysql(),
    ] {
        // The table exists before the race: the race is for IDs, not for creating it.
        snowdrift_store::worker::WorkerRegistry::connect(&url, &ns)
            .await
            .unwrap();
        let starts = (0..6).map(|_| {
            let mut config = quick(&url, &ns, WorkerSource::Lowest);
            // Six claims racing on one coordinator: a call may wait behind the others'
            // transactions, and a third of the quick 1.5 s lease (500 ms) was too short for
            // that on a loaded 2-core machine. The race, not the lease, is under test.
            config.ttl = Duration::from_secs(6);
            WorkerNode::start(config, twitter(), MonotonicClock::new())
        });
        let nodes: Vec<_> = futures_join_all(starts).await;
        let ids: BTreeSet<u64> = nodes.iter().map(|n| n.epoch().worker_id()).collect();
        assert_eq!(ids, (0..6).collect(), "{url}");
        for n in nodes {
            n.shutdown().await.unwrap();
        }
    }
}

/// A restart after a kill: the ID the killed node left has its mark ahead. With another
/// free ID whose mark passed, the new node takes that one and issues at once; with only
/// the ID whose mark is ahead free, it takes it and issues only past the mark. On every
/// registry, at the same time (each waits out one mark of 800 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_takes_a_free_id_whose_mark_passed_on_every_registry() {
    let checks: Vec<_> = [
        file_url(),
        urls::postgres(),
        urls::redis(),
        urls::etcd(),
        urls::zookeeper(),
        urls::mysql(),
    ]
    .into_iter()
    .map(|url| tokio::spawn(restart_takes_a_passed_mark(url)))
    .collect();
    for check in checks {
        check.await.unwrap();
    }
}

async fn restart_takes_a_passed_mark(url: String) {
    let now = || MonotonicClock::new().now_ms();
    let ns = unique_name("wr");
    let registry = snowdrift_store::worker::WorkerRegistry::connect(&url, &ns)
        .await
        .unwrap();
    // What earlier nodes left: `id`'s mark at `mark`, the ID free.
    let leave = |id: u64, mark: u64| {
        let registry = &registry;
        async move {
            let ttl = Duration::from_secs(5);
            registry.claim(id, "earlier", ttl).await.unwrap();
            registry.write_mark(id, "earlier", mark).await.unwrap();
            registry.release(id, "earlier").await.unwrap();
        }
    };
    let config = || {
        let mut c = quick(&url, &ns, WorkerSource::Lowest);
        // A whole default window: a mark ahead by less is waited out, not refused.
        c.window = Duration::from_secs(3);
        c
    };
    leave(1, now() - 1_000).await;
    let mark = now() + 800;
    leave(0, mark).await;
    let c = WorkerNode::claim(config(), two_workers(), MonotonicClock::new())
        .await
        .unwrap();
    let status = c.status();
    assert_eq!(status.worker_id, Some(1), "{url}: the passed mark");
    assert_eq!(status.state, WorkerState::Issuing, "{url}");

    // Only the ID whose mark is ahead is free: taken, and issued under past the mark.
    let d = WorkerNode::claim(config(), two_workers(), MonotonicClock::new())
        .await
        .unwrap();
    assert_eq!(d.status().worker_id, Some(0), "{url}");
    eventually("issuing after the mark", || {
        d.status().state == WorkerState::Issuing
    })
    .await;
    let first = d.next_block(1).unwrap().iter().next().unwrap();
    // time:41 above 13 bits, from the layout's epoch.
    let first_ms = (first >> 13) + 1_288_834_974_657;
    assert!(first_ms > mark, "{url}: issued at {first_ms}, mark {mark}");
    c.shutdown().await.unwrap();
    d.shutdown().await.unwrap();
}

/// Runs the starts at the same instant, each on its own task.
async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<WorkerNode<MonotonicClock>>
where
    F: std::future::Future<Output = Result<WorkerNode<MonotonicClock>, Error>> + Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap().unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_id_held_by_a_live_node_is_refused() {
    let ns = unique_name("wn");
    for url in [file_url(), urls::postgres()] {
        let a = WorkerNode::start(
            quick(&url, &ns, WorkerSource::Static(7)),
            twitter(),
            MonotonicClock::new(),
        )
        .await
        .unwrap();
        let err = WorkerNode::start(
            quick(&url, &ns, WorkerSource::Static(7)),
            twitter(),
            MonotonicClock::new(),
        )
        .await
        .unwrap_err();
        match &err {
            Error::WorkerCollision {
                worker_id: 7,
                holder,
                this,
                source_desc,
            } => {
                assert_eq!(holder, a.holder());
                assert_ne!(this, a.holder());
                assert_eq!(source_desc, "static ID 7");
            }
            other => panic!("{url}: expected WorkerCollision, got {other}"),
        }
        // A derived ID that collides names both nodes and its source.
        let mut derived = quick(&url, &ns, WorkerSource::StatefulSetOrdinal);
        derived.hostname = Some("snowdrift-7".into());
        derived.holder = Some("snowdrift-7/second".into());
        let err = WorkerNode::start(derived, twitter(), MonotonicClock::new())
            .await
            .unwrap_err()
            .to_string();
        for part in ["StatefulSet ordinal", a.holder(), "snowdrift-7/second"] {
            assert!(err.contains(part), "{part:?} not in {err}");
        }
        a.shutdown().await.unwrap();
        // Released: the next node gets it.
        let b = WorkerNode::start(
            quick(&url, &ns, WorkerSource::Static(7)),
            twitter(),
            MonotonicClock::new(),
        )
        .await
        .unwrap();
        b.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_node_space_is_a_clear_error() {
    let ns = unique_name("wn");
    for url in [file_url(), urls::postgres()] {
        let a = WorkerNode::start(
            quick(&url, &ns, WorkerSource::Lowest),
            two_workers(),
            MonotonicClock::new(),
        )
        .await
        .unwrap();
        let b = WorkerNode::start(
            quick(&url, &ns, WorkerSource::Lowest),
            two_workers(),
            MonotonicClock::new(),
        )
        .await
        .unwrap();
        let err = WorkerNode::start(
            quick(&url, &ns, WorkerSource::Lowest),
            two_workers(),
            MonotonicClock::new(),
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, Error::WorkersExhausted { space: 2, .. }),
            "{text}"
        );
        assert!(
            text.contains(a.holder()) && text.contains(b.holder()),
            "{text}"
        );
        a.shutdown().await.unwrap();
        b.shutdown().await.unwrap();
    }
}

/// A restart with its clock set back waits until the clock passes the mark, and its IDs
/// come after the earlier run's; set back further than the bound, it refuses and names
/// the gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_the_clock_set_back_waits_or_refuses() {
    let url = file_url();
    let ns = unique_name("wn");
    let config = || quick(&url, &ns, WorkerSource::Static(3));
    let a = WorkerNode::start(config(), twitter(), MonotonicClock::new())
        .await
        .unwrap();
    let a_ids: Vec<u64> = a.next_block(1000).unwrap().iter().collect();
    let a_last = *a_ids.last().unwrap();
    let mark = a.status().mark_ms;
    // No shutdown: the node "dies"; its lock goes once the aborted keeper task is gone.
    drop(a);
    let registry = snowdrift_store::worker::WorkerRegistry::connect(&url, &ns)
        .await
        .unwrap();
    let start = Instant::now();
    while !registry.holders().await.unwrap().is_empty() {
        assert!(start.elapsed() < PATIENCE, "the dropped node's lock stayed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let behind = OffsetClock::new(MonotonicClock::new(), -1_500);
    let started = Instant::now();
    let b = WorkerNode::start(config(), twitter(), behind)
        .await
        .unwrap();
    assert!(
        behind.now_ms() >= mark,
        "started before its clock passed the mark"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1_000),
        "did not wait"
    );
    let b_first = b.next_block(1).unwrap().iter().next().unwrap();
    assert!(b_first > a_last, "{b_first} after {a_last}");
    b.shutdown().await.unwrap();

    let mut strict = config();
    strict.max_mark_wait = Duration::from_secs(2);
    let far = OffsetClock::new(MonotonicClock::new(), -60_000);
    let err = WorkerNode::start(strict, twitter(), far).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, Error::MarkAhead { worker_id: 3, .. }),
        "{text}"
    );
    assert!(text.contains("ahead of this node's clock"), "{text}");
    // Refused and released: a node with a good clock starts at once.
    let c = WorkerNode::start(config(), twitter(), MonotonicClock::new())
        .await
        .unwrap();
    c.shutdown().await.unwrap();
}

/// `claim` returns before the wait for the mark: the node says it waits, refuses to issue,
/// and issues past the mark once its clock gets there; a mark too far ahead is refused at
/// once as by `start`; a shutdown during the wait releases the ID without writing a mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_returns_at_once_and_issues_after_the_mark() {
    let url = file_url();
    let ns = unique_name("wn");
    let config = || quick(&url, &ns, WorkerSource::Static(5));
    let a = WorkerNode::start(config(), twitter(), MonotonicClock::new())
        .await
        .unwrap();
    let a_last = a.next_block(1000).unwrap().iter().last().unwrap();
    a.shutdown().await.unwrap();

    // 1.5 s behind: the mark is ahead of this clock by more than a second.
    let behind = OffsetClock::new(MonotonicClock::new(), -1_500);
    let started = Instant::now();
    let b = WorkerNode::claim(config(), twitter(), behind)
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(1_000),
        "claim waited for the mark: {:?}",
        started.elapsed()
    );
    assert_eq!(b.status().state, WorkerState::WaitingForMark);
    assert_eq!(b.status().worker_id, Some(5));
    let refused = b.next_block(1).unwrap_err();
    assert!(refused.to_string().contains("high-water mark"), "{refused}");
    eventually("issuing after the mark", || {
        b.status().state == WorkerState::Issuing
    })
    .await;
    let b_first = b.next_block(1).unwrap().iter().next().unwrap();
    assert!(b_first > a_last, "{b_first} after {a_last}");
    b.shutdown().await.unwrap();

    // Too far ahead: refused by claim itself, and the ID released.
    let mut strict = config();
    strict.max_mark_wait = Duration::from_secs(2);
    let far = OffsetClock::new(MonotonicClock::new(), -60_000);
    let err = WorkerNode::claim(strict, twitter(), far).await.unwrap_err();
    assert!(
        matches!(err, Error::MarkAhead { worker_id: 5, .. }),
        "{err}"
    );

    // Shut down while waiting: the ID is free again at once, and its mark is untouched.
    let registry = snowdrift_store::worker::WorkerRegistry::connect(&url, &ns)
        .await
        .unwrap();
    let mark = registry.read_mark(5).await.unwrap().unwrap();
    let waiting = WorkerNode::claim(
        config(),
        twitter(),
        OffsetClock::new(MonotonicClock::new(), -8_000),
    )
    .await
    .unwrap();
    assert_eq!(waiting.status().state, WorkerState::WaitingForMark);
    waiting.shutdown().await.unwrap();
    assert_eq!(registry.read_mark(5).await.unwrap(), Some(mark));
    let c = WorkerNode::start(config(), twitter(), MonotonicClock::new())
        .await
        .unwrap();
    assert_eq!(c.epoch().worker_id(), 5);
    c.shutdown().await.unwrap();
}

/// A node whose clock is behind its peers' refuses to start; one that falls behind while
/// running stops issuing, says why, and resumes when its clock catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_behind_the_peers_is_refused_and_stops_issuing() {
    let url = urls::postgres();
    let ns = unique_name("wn");
    let a = WorkerNode::start(
        quick(&url, &ns, WorkerSource::Lowest),
        twitter(),
        MonotonicClock::new(),
    )
    .await
    .unwrap();
    let late = OffsetClock::new(MonotonicClock::new(), -5_000);
    let err = WorkerNode::start(quick(&url, &ns, WorkerSource::Lowest), twitter(), late)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ClockBehindPeers { .. }), "{err}");

    // A clock that stands still falls behind the peers as real time passes.
    let stuck = ManualClock::new(MonotonicClock::new().now_ms());
    let mut config = quick(&url, &ns, WorkerSource::Lowest);
    config.window = Duration::from_secs(60);
    let b = WorkerNode::start(config, twitter(), stuck.clone())
        .await
        .unwrap();
    // Current when it first issues, however long the start took on a loaded machine.
    stuck.set(MonotonicClock::new().now_ms());
    assert!(b.next_block(1).is_ok());
    eventually("the stuck node to notice its clock is behind", || {
        b.status().state == WorkerState::ClockBehind
    })
    .await;
    let err = b.next_block(1).unwrap_err();
    assert!(err.to_string().contains("behind its peers"), "{err}");
    assert!(!b.status().is_ready());
    // Kept current from here on: set once, it fell behind again while a loaded machine
    // took its time to notice, and the node rightly refused the next block.
    eventually("the node to issue again", || {
        stuck.set(MonotonicClock::new().now_ms());
        b.status().state == WorkerState::Issuing && b.next_block(1).is_ok()
    })
    .await;
    b.shutdown().await.unwrap();
    a.shutdown().await.unwrap();
}

/// Node A reaches the coordinator through a proxy that then black-holes: A stops issuing
/// at its deadline (before its lease can expire), B takes A's worker ID, and after the
/// heal A regains an ID and issues again. No ID is issued twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_stops_issuing_before_another_node_takes_the_id() {
    for url in [
        urls::postgres(),
        urls::redis(),
        urls::etcd(),
        urls::zookeeper(),
    ] {
        lease_loss(&url).await;
    }
}

async fn lease_loss(url: &str) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let ns = unique_name("wn");
    let (proxy, proxied) = FaultProxy::start_for_url(url).await.unwrap();
    let config = quick(&proxied, &ns, WorkerSource::Lowest);
    let (ttl, margin) = (config.ttl, config.margin());
    let a = Arc::new(
        WorkerNode::start(config, twitter(), MonotonicClock::new())
            .await
            .unwrap(),
    );
    let a_worker = a.epoch().worker_id();
    let checker = Arc::new(IdChecker::new());
    let stop = Arc::new(AtomicBool::new(false));
    // The latest time of any ID A issued in its first epoch.
    let first_epoch_max = Arc::new(AtomicU64::new(0));
    // A issues continuously on a thread, as a server would.
    let issuer = {
        let (a, checker, stop, max) = (
            a.clone(),
            checker.clone(),
            stop.clone(),
            first_epoch_max.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let epoch = a.epoch();
                match epoch.generator().next_block(64) {
                    Ok(block) => {
                        let last = block.iter().last().unwrap();
                        checker.record(&format!("a/{}", epoch.number()), block.iter());
                        if epoch.number() == 1 {
                            let layout = epoch.generator().layout();
                            max.fetch_max(layout.decode(last).unwrap().time_ms, Ordering::Relaxed);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Renewals are counted (for /metrics) as the coordinator accepts them.
    eventually("A to renew its lease", || a.status().renewals >= 1).await;
    let frozen_at = MonotonicClock::new().now_ms();
    proxy.black_hole();
    // A's last renewal was sent before the freeze, so its deadline is at most this.
    let latest_deadline = frozen_at + (ttl - margin).as_millis() as u64;
    eventually("A to stop issuing", || {
        a.status().state == WorkerState::LeaseLost
    })
    .await;
    let renewed_before_loss = a.status().renewals;

    // B, straight to the coordinator, gets A's worker ID once A's lease expires there.
    let b = loop {
        let config = quick(url, &ns, WorkerSource::Static(a_worker));
        match WorkerNode::start(config, twitter(), MonotonicClock::new()).await {
            Ok(b) => break b,
            Err(Error::WorkerTaken { .. } | Error::WorkerCollision { .. }) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("B could not start: {e}"),
        }
    };
    let b_block = b.next_block(5000).unwrap();
    let b_first_time = b
        .epoch()
        .generator()
        .layout()
        .decode(b_block.iter().next().unwrap())
        .unwrap()
        .time_ms;
    checker.record("b", b_block.iter());
    assert_eq!(
        a.status().renewals,
        renewed_before_loss,
        "no renewal can succeed through a black hole"
    );
    let a_max = first_epoch_max.load(Ordering::Relaxed);
    assert!(a_max > 0, "A issued nothing before the freeze");
    // A's deadline was its last renewal (sent before the freeze) + ttl - margin.
    assert!(
        a_max < latest_deadline,
        "A issued an ID at {a_max}, after its deadline {latest_deadline}"
    );

    // Heal: A learns the lease is gone, claims another ID and issues again.
    proxy.heal();
    eventually("A to issue again", || {
        let s = a.status();
        s.state == WorkerState::Issuing && s.epoch >= 2
    })
    .await;
    assert_ne!(a.epoch().worker_id(), a_worker, "B holds A's old ID");
    // Said in the status (for /metrics' snowdrift_worker_id_changes_total), not only in
    // the worker ID it reports.
    assert_eq!(a.status().worker_id_changes, 1, "{:?}", a.status());
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    issuer.join().unwrap();
    // Nothing from A's first epoch after B took the ID, over the whole run.
    let a_max = first_epoch_max.load(Ordering::Relaxed);
    assert!(
        a_max < b_first_time,
        "A's lost epoch issued at {a_max}, after B's first ID at {b_first_time}"
    );
    assert!(
        checker.report().sources >= 3,
        "A issued nothing in its second epoch"
    );
    checker.record("b", b.next_block(5000).unwrap().iter());
    checker.assert_clean();
    b.shutdown().await.unwrap();
    let a = Arc::into_inner(a).unwrap();
    a.shutdown().await.unwrap();
}

/// An extension field absorbs a restart far behind the mark: the node starts at once under
/// the next extension value, its IDs above every earlier one, and the mark carries the
/// value so the next restart goes on above it; with every value used it refuses, naming
/// why. On every registry, since each stores the extension inside its mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_far_behind_the_mark_takes_the_next_extension_value_on_every_registry() {
    let ext = || {
        SnowflakeGenerator::builder(
            Layout::from_spec("ext:2,time:39,worker:10,seq:12", 1, 1_700_000_000_000).unwrap(),
        )
    };
    let ns = unique_name("wx");
    for url in [
        file_url(),
        urls::postgres(),
        urls::mysql(),
        urls::redis(),
        urls::etcd(),
        urls::zookeeper(),
    ] {
        let config = || {
            let mut c = quick(&url, &ns, WorkerSource::Static(7));
            c.max_mark_wait = Duration::from_secs(1);
            c
        };
        let a = WorkerNode::start(config(), ext(), MonotonicClock::new())
            .await
            .unwrap();
        let mut last = a.next_block(1000).unwrap().iter().last().unwrap();
        a.shutdown().await.unwrap();
        let layout = ext().layout().clone();
        for (step, offset) in [(1, -60_000), (2, -120_000), (3, -180_000)] {
            let behind = OffsetClock::new(MonotonicClock::new(), offset);
            let started = Instant::now();
            let node = WorkerNode::start(config(), ext(), behind).await.unwrap();
            assert!(started.elapsed() < Duration::from_secs(1), "{url}: waited");
            assert_eq!(node.epoch().extension(), step, "{url}");
            let ids: Vec<u64> = node.next_block(1000).unwrap().iter().collect();
            assert!(ids[0] > last, "{url}: {} after {last}", ids[0]);
            assert_eq!(layout.decode(ids[0]).unwrap().values[0], step, "{url}");
            last = *ids.last().unwrap();
            node.shutdown().await.unwrap();
        }
        // A clock that caught up stays on the last value: lower ones could repeat IDs.
        let node = WorkerNode::start(config(), ext(), MonotonicClock::new())
            .await
            .unwrap();
        assert_eq!(node.epoch().extension(), 3, "{url}");
        let id = node.next_block(1).unwrap().iter().next().unwrap();
        assert!(id > last, "{url}");
        node.shutdown().await.unwrap();

        let far = OffsetClock::new(MonotonicClock::new(), -240_000);
        let err = WorkerNode::start(config(), ext(), far).await.unwrap_err();
        assert!(
            matches!(err, Error::MarkAhead { worker_id: 7, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("every extension value (0..=3) is used"),
            "{err}"
        );

        // The wait policy refuses though values would be left (here none are, so use a
        // fresh namespace's worker ID 8 under the same layout).
        let mut wait = quick(&url, &ns, WorkerSource::Static(8));
        wait.max_mark_wait = Duration::from_secs(1);
        let w = WorkerNode::start(wait.clone(), ext(), MonotonicClock::new())
            .await
            .unwrap();
        w.shutdown().await.unwrap();
        let err = WorkerNode::start(
            wait,
            ext().on_backward(snowdrift_core::generator::OnBackward::Wait),
            OffsetClock::new(MonotonicClock::new(), -60_000),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("on_backward = \"wait\""), "{err}");
    }
}
