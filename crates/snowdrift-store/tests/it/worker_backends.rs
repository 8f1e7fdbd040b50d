//! The same checks on every worker-lease backend (etcd, ZooKeeper, PostgreSQL, MariaDB,
//! SQLite, Redis), against the real services: distinct IDs under concurrent claims,
//! exhaustion, expiry and takeover (a lease never ends before `ttl` after the renew that
//! was sent last), release, fenced high-water marks that never go down, clock reports, and
//! clear errors for bad input.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use snowdrift_store::Error;
use snowdrift_store::worker::etcd::EtcdRegistry;
use snowdrift_store::worker::redis::RedisRegistry;
use snowdrift_store::worker::sql::SqlRegistry;
use snowdrift_store::worker::zookeeper::ZkRegistry;
use snowdrift_store::worker::{PeerClocks, PeerTime, WorkerRegistry};
use snowdrift_testkit::{FaultProxy, unique_name, urls};

/// A lease long enough never to expire during a check.
const LONG: Duration = Duration::from_secs(30);

/// How long a check waits for something that must happen (an expiry, a reconnect) before
/// it fails. Generous: a loaded CI machine is slow, and waiting longer never hides a bug.
const PATIENCE: Duration = Duration::from_secs(90);

/// One registry of any backend, through the dispatch the server uses, so every check runs
/// unchanged on all of them.
type Reg = WorkerRegistry;

/// A registry of `backend` at `url`, by the backend's own constructor (so its own checks of
/// the URL and namespace are what a bad one meets).
async fn connect_url(backend: &str, url: &str, ns: &str) -> Result<Reg, Error> {
    Ok(match backend {
        "sqlite" | "postgres" | "mysql" => Reg::Sql(SqlRegistry::connect(url, ns).await?),
        "redis" => Reg::Redis(RedisRegistry::connect(url, ns).await?),
        "etcd" => Reg::Etcd(EtcdRegistry::connect(url, ns).await?),
        "zookeeper" => Reg::Zk(ZkRegistry::connect(url, ns).await?),
        _ => unreachable!("no backend {backend}"),
    })
}

async fn connect(backend: &str, ns: &str) -> Reg {
    connect_url(backend, &url(backend), ns)
        .await
        .unwrap_or_else(|e| panic!("connect to {backend}: {e}"))
}

fn url(backend: &str) -> String {
    match backend {
        // The process's scratch directory, removed when it exits.
        "sqlite" => format!("sqlite://{}/workers.db", crate::common::scratch().display()),
        "postgres" => urls::postgres(),
        "mysql" => urls::mysql(),
        "redis" => urls::redis(),
        "zookeeper" => urls::zookeeper(),
        "etcd" => urls::etcd(),
        _ => unreachable!("no backend {backend}"),
    }
}

/// A short lease, above the backend's minimum (etcd grants at least about 2 s, 1.5
/// election timeouts rounded up; ZooKeeper at least 2 ticks, 4 s by default) and long
/// enough that a stalled CI machine does not lose it between a claim and the next renew.
fn short_ttl(backend: &str) -> Duration {
    match backend {
        "zookeeper" => Duration::from_secs(6),
        _ => Duration::from_secs(3),
    }
}

fn namespace(check: &str) -> String {
    unique_name(&format!("w_{check}"))
}

/// Removes what a passing check left behind: its table, keys or znodes.
async fn cleanup(backend: &str, ns: &str) {
    match backend {
        "sqlite" | "postgres" | "mysql" => {
            sqlx::any::install_default_drivers();
            let pool = sqlx::AnyPool::connect(&url(backend)).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {ns}")))
                .execute(&pool)
                .await
                .unwrap();
            pool.close().await;
        }
        "redis" => {
            let client = ::redis::Client::open(url(backend)).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let keys: Vec<String> = ::redis::cmd("KEYS")
                .arg(format!("{ns}:*"))
                .query_async(&mut conn)
                .await
                .unwrap();
            if !keys.is_empty() {
                let _: () = ::redis::cmd("DEL")
                    .arg(keys)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
            }
        }
        "etcd" => {
            let mut client =
                etcd_client::Client::connect([url(backend).replace("etcd://", "http://")], None)
                    .await
                    .unwrap();
            client
                .delete(
                    format!("/{ns}/"),
                    Some(etcd_client::DeleteOptions::new().with_prefix()),
                )
                .await
                .unwrap();
        }
        "zookeeper" => {
            let cluster = url(backend).replace("zookeeper://", "");
            let zk = zookeeper_client::Client::connect(&cluster).await.unwrap();
            for dir in ["lease", "mark", "layout"] {
                let dir = format!("/{ns}/{dir}");
                for child in zk.list_children(&dir).await.unwrap() {
                    // A lease znode may vanish by itself (its session ended).
                    match zk.delete(&format!("{dir}/{child}"), None).await {
                        Ok(()) | Err(zookeeper_client::Error::NoNode) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                zk.delete(&dir, None).await.unwrap();
            }
            zk.delete(&format!("/{ns}"), None).await.unwrap();
        }
        _ => unreachable!("no backend {backend}"),
    }
}

fn lease_lost(result: Result<(), Error>, what: &str) {
    match result {
        Err(Error::LeaseLost { .. }) => {}
        other => panic!("{what}: expected LeaseLost, got {other:?}"),
    }
}

/// Many nodes starting at the same instant all get distinct IDs, the lowest ones, and
/// `holders` lists exactly them.
async fn concurrent_claims_are_distinct(backend: &str) {
    const NODES: usize = 4;
    const TASKS_PER_NODE: usize = 6;
    let ns = namespace("concurrent");
    let mut regs = Vec::new();
    for _ in 0..NODES {
        regs.push(Arc::new(connect(backend, &ns).await));
    }
    let start = Arc::new(tokio::sync::Barrier::new(NODES * TASKS_PER_NODE));
    let mut tasks = Vec::new();
    for (n, reg) in regs.iter().enumerate() {
        for t in 0..TASKS_PER_NODE {
            let (reg, start) = (reg.clone(), start.clone());
            let holder = format!("node-{n}-task-{t}");
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                let id = reg.claim_lowest(64, &holder, LONG).await;
                (id, holder)
            }));
        }
    }
    let mut claimed = Vec::new();
    for task in tasks {
        let (id, holder) = task.await.unwrap();
        claimed.push((id.unwrap_or_else(|e| panic!("{holder}: {e}")), holder));
    }
    claimed.sort();
    let ids: BTreeSet<u64> = claimed.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        ids.len(),
        claimed.len(),
        "two tasks got one ID: {claimed:?}"
    );
    assert_eq!(
        ids,
        (0..(NODES * TASKS_PER_NODE) as u64).collect::<BTreeSet<_>>(),
        "not the lowest IDs"
    );
    assert_eq!(regs[0].holders().await.unwrap(), claimed);
    for (id, holder) in &claimed {
        regs[1].release(*id, holder).await.unwrap();
    }
    assert_eq!(regs[2].holders().await.unwrap(), vec![]);
    drop(regs);
    cleanup(backend, &ns).await;
}

/// Leaves `marks` (worker ID, mark in ms) behind, as nodes that held those IDs and
/// stopped would.
async fn leave_marks(reg: &Reg, marks: &[(u64, u64)]) {
    for (id, mark) in marks {
        reg.claim(*id, "earlier", LONG).await.unwrap();
        reg.write_mark(*id, "earlier", *mark).await.unwrap();
        reg.release(*id, "earlier").await.unwrap();
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A claim with a time takes a free ID whose mark passed before a lower one whose mark
/// is ahead (the ID a killed node just left), else the one whose mark passes soonest,
/// else the only one free; nodes racing with the same preference still get distinct IDs.
async fn claims_prefer_passed_marks(backend: &str) {
    let ns = namespace("ready");
    let reg = connect(backend, &ns).await;
    let now = now_ms();
    // 0: just left by a killed node (a window ahead); 1: passed, under extension 1 (its
    // stored number is far above any time: the time decides); 2: passes in 20 s; 3: passed.
    leave_marks(
        &reg,
        &[
            (0, now + 60_000),
            (1, (1 << 47) | (now - 5_000)),
            (2, now + 20_000),
            (3, now - 1_000),
        ],
    )
    .await;
    assert_eq!(
        reg.claim_ready(3, "b", LONG, now).await.unwrap(),
        1,
        "the passed mark first"
    );
    assert_eq!(
        reg.claim_ready(3, "c", LONG, now).await.unwrap(),
        2,
        "then the soonest to pass, not the lowest"
    );
    assert_eq!(
        reg.claim_ready(3, "d", LONG, now).await.unwrap(),
        0,
        "the only one free, mark ahead or not"
    );
    assert!(matches!(
        reg.claim_ready(3, "e", LONG, now).await,
        Err(Error::WorkersExhausted { space: 3, .. })
    ));
    assert_eq!(reg.claim_ready(5, "e", LONG, now).await.unwrap(), 3);
    // The plain claim keeps taking the lowest.
    reg.release(1, "b").await.unwrap();
    reg.release(0, "d").await.unwrap();
    assert_eq!(reg.claim_lowest(4, "f", LONG).await.unwrap(), 0);
    for (id, holder) in reg.holders().await.unwrap() {
        reg.release(id, &holder).await.unwrap();
    }

    drop(reg);
    cleanup(backend, &ns).await;

    // Racing claims: IDs 0..4 ahead, 4..10 without marks; six nodes take 4..10 once each.
    let ns = namespace("ready_race");
    let reg = connect(backend, &ns).await;
    leave_marks(
        &reg,
        &(0..4).map(|id| (id, now + 60_000)).collect::<Vec<_>>(),
    )
    .await;
    let reg = Arc::new(reg);
    let start = Arc::new(tokio::sync::Barrier::new(6));
    let tasks: Vec<_> = (0..6)
        .map(|n| {
            let (reg, start) = (reg.clone(), start.clone());
            tokio::spawn(async move {
                start.wait().await;
                reg.claim_ready(10, &format!("racer-{n}"), LONG, now).await
            })
        })
        .collect();
    let mut ids = BTreeSet::new();
    for task in tasks {
        let id = task.await.unwrap().unwrap();
        assert!(ids.insert(id), "two racers got worker ID {id}");
    }
    assert_eq!(ids, (4..10).collect::<BTreeSet<u64>>());
    for (id, holder) in reg.holders().await.unwrap() {
        reg.release(id, &holder).await.unwrap();
    }
    drop(reg);
    cleanup(backend, &ns).await;
}

/// A full node space is a clear error naming the holders; a claimed ID is refused to
/// others; a released ID is the next one handed out.
async fn exhaustion_names_the_holders(backend: &str) {
    let ns = namespace("exhaust");
    let reg = connect(backend, &ns).await;
    for n in 0..3 {
        let id = reg
            .claim_lowest(3, &format!("holder-{n}"), LONG)
            .await
            .unwrap();
        assert_eq!(id, n);
    }
    match reg.claim_lowest(3, "holder-3", LONG).await {
        Err(e @ Error::WorkersExhausted { .. }) => {
            let text = e.to_string();
            let Error::WorkersExhausted { space, holders } = e else {
                unreachable!()
            };
            assert_eq!(space, 3);
            assert_eq!(
                holders,
                (0..3)
                    .map(|n| (n, format!("holder-{n}")))
                    .collect::<Vec<_>>()
            );
            assert!(text.contains("all 3 worker IDs are held"), "{text}");
            assert!(text.contains("1 by holder-1"), "{text}");
        }
        other => panic!("expected WorkersExhausted, got {other:?}"),
    }
    match reg.claim(1, "holder-3", LONG).await {
        Err(Error::WorkerTaken { worker_id, holder }) => {
            assert_eq!((worker_id, holder.as_str()), (1, "holder-1"));
        }
        other => panic!("expected WorkerTaken, got {other:?}"),
    }
    // Claiming again what one holds is fine (a retry after a lost answer).
    reg.claim(2, "holder-2", LONG).await.unwrap();
    reg.release(1, "holder-1").await.unwrap();
    assert_eq!(reg.claim_lowest(3, "holder-3", LONG).await.unwrap(), 1);
    // A larger space has room above.
    assert_eq!(reg.claim_lowest(5, "holder-4", LONG).await.unwrap(), 3);
    for (id, holder) in reg.holders().await.unwrap() {
        reg.release(id, &holder).await.unwrap();
    }
    drop(reg);
    cleanup(backend, &ns).await;
}

/// A lease ends no earlier than `ttl` after the last renew was sent, and then: the old
/// holder's renew, mark and clock writes are refused with LeaseLost, another holder claims
/// the ID, and the old holder's release does not touch the new lease.
///
/// ZooKeeper keeps a session alive by itself while the client can reach the server, so
/// there the old holder is cut off (a black-holed proxy) to let its session expire.
async fn expired_lease_is_lost_and_taken_over(backend: &str) {
    let ns = namespace("expiry");
    let ttl = short_ttl(backend);
    let (proxy, url_a) = if backend == "zookeeper" {
        let (proxy, url) = FaultProxy::start_for_url(&url(backend)).await.unwrap();
        (Some(proxy), url)
    } else {
        (None, url(backend))
    };
    let a = connect_url(backend, &url_a, &ns).await.unwrap();
    let b = connect(backend, &ns).await;
    let id = a.claim_lowest(8, "old", ttl).await.unwrap();
    a.write_mark(id, "old", 1_000).await.unwrap();
    // Renew well inside the lease; a renew that did not extend it would let it end a
    // quarter ttl before the bound checked below.
    tokio::time::sleep(ttl / 4).await;
    let renewed_at = Instant::now();
    a.renew(id, "old", ttl).await.unwrap();
    if let Some(proxy) = &proxy {
        proxy.black_hole();
    }
    // Watch the lease from the other registry until it is gone.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let holders = b.holders().await.unwrap();
        if holders.is_empty() {
            break;
        }
        assert_eq!(holders, vec![(id, "old".to_string())]);
        assert!(Instant::now() < deadline, "the lease never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let gone_at = Instant::now();
    assert!(
        gone_at >= renewed_at + ttl,
        "the lease ended {:?} after the renew was sent, before its ttl {ttl:?}",
        gone_at - renewed_at
    );
    if let Some(proxy) = &proxy {
        proxy.heal();
        // The client learns that its session expired once it reaches the server again;
        // until then a renew fails as unavailable, and it must never succeed.
        let deadline = Instant::now() + PATIENCE;
        loop {
            match a.renew(id, "old", ttl).await {
                Err(Error::LeaseLost { .. }) => break,
                Err(Error::Unavailable(_)) => {}
                other => panic!("renew after the session expired: {other:?}"),
            }
            assert!(Instant::now() < deadline, "the client never saw the expiry");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    } else {
        lease_lost(a.renew(id, "old", ttl).await, "renew after expiry");
    }
    b.claim(id, "new", LONG).await.unwrap();
    lease_lost(a.renew(id, "old", ttl).await, "renew after takeover");
    lease_lost(a.write_mark(id, "old", 5_000).await, "mark after takeover");
    lease_lost(
        a.publish_time(id, "old", 5_000).await,
        "clock after takeover",
    );
    a.release(id, "old").await.unwrap();
    assert_eq!(b.holders().await.unwrap(), vec![(id, "new".to_string())]);
    b.renew(id, "new", LONG).await.unwrap();
    // The mark outlived the lease and the refused write did not land.
    assert_eq!(b.read_mark(id).await.unwrap(), Some(1_000));
    b.release(id, "new").await.unwrap();
    // The old registry can claim again (on ZooKeeper, with a new session).
    a.claim(id, "old-again", ttl).await.unwrap();
    a.renew(id, "old-again", ttl).await.unwrap();
    a.release(id, "old-again").await.unwrap();
    drop((a, b, proxy));
    cleanup(backend, &ns).await;
}

/// Release frees an ID at once; a release by a non-holder changes nothing.
async fn release_frees_at_once(backend: &str) {
    let ns = namespace("release");
    let a = connect(backend, &ns).await;
    let b = connect(backend, &ns).await;
    a.claim(5, "a", LONG).await.unwrap();
    assert!(matches!(
        b.claim(5, "b", LONG).await,
        Err(Error::WorkerTaken { .. })
    ));
    b.release(5, "b").await.unwrap();
    assert_eq!(b.holders().await.unwrap(), vec![(5, "a".to_string())]);
    a.renew(5, "a", LONG).await.unwrap();
    a.release(5, "a").await.unwrap();
    assert_eq!(a.holders().await.unwrap(), vec![]);
    lease_lost(a.renew(5, "a", LONG).await, "renew after release");
    b.claim(5, "b", LONG).await.unwrap();
    assert_eq!(a.holders().await.unwrap(), vec![(5, "b".to_string())]);
    // Releasing twice, or what was never held, is a no-op.
    a.release(5, "a").await.unwrap();
    a.release(6, "a").await.unwrap();
    assert_eq!(a.holders().await.unwrap(), vec![(5, "b".to_string())]);
    b.release(5, "b").await.unwrap();
    drop((a, b));
    cleanup(backend, &ns).await;
}

/// Marks outlive release, are written only by the holder, and never go down, even under
/// concurrent writes.
async fn marks_are_fenced_and_never_go_down(backend: &str) {
    let ns = namespace("marks");
    let a = Arc::new(connect(backend, &ns).await);
    let b = connect(backend, &ns).await;
    assert_eq!(a.read_mark(2).await.unwrap(), None);
    lease_lost(a.write_mark(2, "a", 100).await, "mark without a lease");
    assert_eq!(a.read_mark(2).await.unwrap(), None);
    a.claim(2, "a", LONG).await.unwrap();
    a.write_mark(2, "a", 100).await.unwrap();
    assert_eq!(b.read_mark(2).await.unwrap(), Some(100));
    a.write_mark(2, "a", 50).await.unwrap();
    assert_eq!(
        b.read_mark(2).await.unwrap(),
        Some(100),
        "the mark went down"
    );
    a.write_mark(2, "a", 100).await.unwrap();
    a.write_mark(2, "a", 1_700_000_000_123).await.unwrap();
    assert_eq!(b.read_mark(2).await.unwrap(), Some(1_700_000_000_123));
    // Another holder in the same registry (on ZooKeeper, the same session) is refused.
    a.claim(4, "a-other", LONG).await.unwrap();
    lease_lost(
        a.write_mark(2, "a-other", 1_800_000_000_000).await,
        "mark by a holder of another ID",
    );
    lease_lost(
        a.renew(2, "a-other", LONG).await,
        "renew by a holder of another ID",
    );
    a.release(4, "a-other").await.unwrap();
    // b holds a lease of its own (so on ZooKeeper it has a live session), just not ID 2.
    b.claim(3, "b", LONG).await.unwrap();
    lease_lost(
        b.write_mark(2, "b", 1_800_000_000_000).await,
        "mark by a non-holder",
    );
    assert_eq!(b.read_mark(2).await.unwrap(), Some(1_700_000_000_123));
    // Marks are per worker ID.
    assert_eq!(b.read_mark(3).await.unwrap(), None);
    // Concurrent raises by the holder: the highest wins, whatever the order.
    let mut writes = Vec::new();
    for n in 0..16u64 {
        let a = a.clone();
        let mark = 1_700_000_001_000 + (n * 7919) % 16 * 1_000;
        writes.push(tokio::spawn(
            async move { a.write_mark(2, "a", mark).await },
        ));
    }
    for w in writes {
        w.await.unwrap().unwrap();
    }
    assert_eq!(b.read_mark(2).await.unwrap(), Some(1_700_000_016_000));
    a.release(2, "a").await.unwrap();
    assert_eq!(
        b.read_mark(2).await.unwrap(),
        Some(1_700_000_016_000),
        "lost on release"
    );
    b.release(3, "b").await.unwrap();
    b.claim(2, "b", LONG).await.unwrap();
    assert_eq!(
        b.read_mark(2).await.unwrap(),
        Some(1_700_000_016_000),
        "lost on claim"
    );
    b.write_mark(2, "b", 1_700_000_002_000).await.unwrap();
    assert_eq!(b.read_mark(2).await.unwrap(), Some(1_700_000_016_000));
    b.write_mark(2, "b", 1_700_000_017_000).await.unwrap();
    assert_eq!(a.read_mark(2).await.unwrap(), Some(1_700_000_017_000));
    b.release(2, "b").await.unwrap();
    drop((a, b));
    cleanup(backend, &ns).await;
}

/// Clock reports round-trip for live holders only, and only the holder writes them.
async fn clock_reports_round_trip(backend: &str) {
    let ns = namespace("clock");
    let a = connect(backend, &ns).await;
    let b = connect(backend, &ns).await;
    assert_eq!(a.peer_times().await.unwrap(), vec![]);
    let ia = a.claim_lowest(4, "a", LONG).await.unwrap();
    let ib = b.claim_lowest(4, "b", LONG).await.unwrap();
    // Nothing published yet.
    assert_eq!(a.peer_times().await.unwrap(), vec![]);
    a.publish_time(ia, "a", 1_700_000_000_000).await.unwrap();
    b.publish_time(ib, "b", 1_700_000_000_500).await.unwrap();
    a.publish_time(ia, "a", 1_700_000_001_000).await.unwrap();
    let peer = |worker_id, holder: &str, time_ms| PeerTime {
        worker_id,
        holder: holder.to_string(),
        time_ms,
    };
    assert_eq!(
        b.peer_times().await.unwrap(),
        vec![
            peer(ia, "a", 1_700_000_001_000),
            peer(ib, "b", 1_700_000_000_500)
        ]
    );
    lease_lost(a.publish_time(ib, "a", 1).await, "clock on another's ID");
    a.release(ia, "a").await.unwrap();
    assert_eq!(
        b.peer_times().await.unwrap(),
        vec![peer(ib, "b", 1_700_000_000_500)]
    );
    lease_lost(a.publish_time(ia, "a", 1).await, "clock after release");
    // A new holder of the ID starts without a report.
    b.claim(ia, "c", LONG).await.unwrap();
    assert_eq!(
        b.peer_times().await.unwrap(),
        vec![peer(ib, "b", 1_700_000_000_500)]
    );
    b.release(ia, "c").await.unwrap();
    b.release(ib, "b").await.unwrap();
    drop((a, b));
    cleanup(backend, &ns).await;
}

/// The clock check reads only the highest and lowest reports of the others (etcd and SQL
/// ask the coordinator for just those): they must be the extremes of every live report
/// but the node's own, in number order even where the text is shorter (a 12-digit time).
async fn peer_clocks_are_the_extremes_of_the_others(backend: &str) {
    let ns = namespace("extremes");
    let reg = connect(backend, &ns).await;
    let times = [
        ("a", 1_700_000_009_000),
        ("b", 1_700_000_005_000),
        ("c", 1_700_000_003_000),
        ("d", 1_700_000_001_000),
        ("e", 999_999_999_999),
    ];
    let mut ids = Vec::new();
    for (holder, time) in times {
        let id = reg.claim_lowest(8, holder, LONG).await.unwrap();
        reg.publish_time(id, holder, time).await.unwrap();
        ids.push(id);
    }
    // A holder without a report is no peer clock.
    let quiet = reg.claim_lowest(8, "f", LONG).await.unwrap();
    let peer = |i: usize| {
        Some(PeerTime {
            worker_id: ids[i],
            holder: times[i].0.to_string(),
            time_ms: times[i].1,
        })
    };
    let check = async |holder: &str, ahead, behind| {
        let clocks = reg.peer_clocks(holder).await.unwrap();
        assert_eq!(
            (clocks.ahead.clone(), clocks.behind.clone()),
            (ahead, behind),
            "the extremes {holder} sees"
        );
        let all = PeerClocks::among(reg.peer_times().await.unwrap(), holder);
        assert_eq!(
            clocks, all,
            "{holder}: the extremes differ from those of every report"
        );
    };
    check("a", peer(1), peer(4)).await;
    check("e", peer(0), peer(3)).await;
    check("c", peer(0), peer(4)).await;
    check("nobody", peer(0), peer(4)).await;
    reg.release(ids[4], "e").await.unwrap();
    check("a", peer(1), peer(3)).await;
    for i in [1, 2, 3] {
        reg.release(ids[i], times[i].0).await.unwrap();
    }
    // One peer is both.
    check("f", peer(0), peer(0)).await;
    assert_eq!(reg.peer_clocks("f").await.unwrap().into_vec().len(), 1);
    check("a", None, None).await;
    reg.release(ids[0], "a").await.unwrap();
    reg.release(quiet, "f").await.unwrap();
    drop(reg);
    cleanup(backend, &ns).await;
}

/// A renew never reports a lease longer than the coordinator gives: etcd's lease TTL and
/// ZooKeeper's session timeout are fixed when granted, so a renew asking for more is
/// refused (and the lease stays as it was); SQL and Redis extend to the new ttl. A ttl past
/// ZooKeeper's maxSessionTimeout is refused at the claim.
async fn renew_never_outgrows_the_lease(backend: &str) {
    let ns = namespace("outgrow");
    let ttl = short_ttl(backend);
    let reg = connect(backend, &ns).await;
    reg.claim(1, "a", ttl).await.unwrap();
    match (backend, reg.renew(1, "a", LONG).await) {
        ("etcd" | "zookeeper", Err(Error::InvalidInput(m))) => {
            assert!(m.contains("renew") || m.contains("session timeout"), "{m}")
        }
        ("etcd" | "zookeeper", other) => panic!("renew past the granted ttl: {other:?}"),
        (_, Ok(())) => {
            // The lease now runs for LONG: past the old ttl it is still held.
            tokio::time::sleep(ttl + Duration::from_millis(500)).await;
            assert_eq!(reg.holders().await.unwrap(), vec![(1, "a".to_string())]);
        }
        (_, other) => panic!("renew with a longer ttl: {other:?}"),
    }
    reg.renew(1, "a", ttl).await.unwrap();
    reg.release(1, "a").await.unwrap();
    if backend == "zookeeper" {
        let fresh = connect(backend, &ns).await;
        match fresh.claim(2, "b", Duration::from_secs(3600)).await {
            Err(Error::InvalidInput(m)) => assert!(m.contains("maxSessionTimeout"), "{m}"),
            other => panic!("a ttl past maxSessionTimeout: {other:?}"),
        }
        assert_eq!(fresh.holders().await.unwrap(), vec![]);
    }
    drop(reg);
    cleanup(backend, &ns).await;
}

/// Bad namespaces, URLs, holders, ttls and spaces are refused with messages that say what
/// is allowed.
async fn bad_input_is_refused_clearly(backend: &str) {
    for bad in ["", "has-dash", "1starts_with_digit", "a/b", &"x".repeat(65)] {
        match connect_url(backend, &url(backend), bad).await {
            Err(Error::InvalidInput(m)) => assert!(m.contains("1 to 64 letters"), "{m}"),
            Err(e) => panic!("namespace {bad:?}: {e}"),
            Ok(_) => panic!("namespace {bad:?} was accepted"),
        }
    }
    let bad_url = match backend {
        "sqlite" | "postgres" | "mysql" => "oracle://scott@db/orcl",
        "redis" => "redis://",
        "zookeeper" => "zookeeper://",
        "etcd" => "etcd://",
        _ => unreachable!(),
    };
    match connect_url(backend, bad_url, "fine").await {
        Err(Error::InvalidUrl { reason, .. }) => assert!(!reason.is_empty()),
        Err(e) => panic!("url {bad_url:?}: {e}"),
        Ok(_) => panic!("url {bad_url:?} was accepted"),
    }
    let ns = namespace("bad");
    let reg = connect(backend, &ns).await;
    let invalid = |r: Result<(), Error>, what: &str| match r {
        Err(Error::InvalidInput(m)) => assert!(!m.is_empty()),
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    };
    invalid(reg.claim(0, "", LONG).await, "empty holder");
    invalid(reg.claim(0, "a\nb", LONG).await, "holder with a newline");
    invalid(reg.claim(0, &"h".repeat(256), LONG).await, "long holder");
    invalid(reg.claim(0, "a", Duration::ZERO).await, "zero ttl");
    invalid(
        reg.claim_lowest(0, "a", LONG).await.map(|_| ()),
        "empty space",
    );
    assert_eq!(reg.holders().await.unwrap(), vec![]);
    drop(reg);
    cleanup(backend, &ns).await;
}

macro_rules! on_every_backend {
    ($($check:ident),* $(,)?) => {
        mod sqlite { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $check() { super::$check("sqlite").await } )* }
        mod postgres { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $check() { super::$check("postgres").await } )* }
        mod mysql { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $check() { super::$check("mysql").await } )* }
        mod etcd { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $check() { super::$check("etcd").await } )* }
        mod zookeeper { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $check() { super::$check("zookeeper").await } )* }
        mod redis { $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $check() { super::$check("redis").await } )* }
    };
}

on_every_backend!(
    concurrent_claims_are_distinct,
    exhaustion_names_the_holders,
    expired_lease_is_lost_and_taken_over,
    release_frees_at_once,
    marks_are_fenced_and_never_go_down,
    clock_reports_round_trip,
    peer_clocks_are_the_extremes_of_the_others,
    renew_never_outgrows_the_lease,
    bad_input_is_refused_clearly,
    claims_prefer_passed_marks,
);

/// etcd's sorted read of the highest reports can return only reports that do not count: the
/// node's own and ones whose worker key was deleted by hand while their lease lives on. The
/// check then reads every report rather than see no peer ahead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_peer_clocks_look_past_their_own_and_stale_reports() {
    let ns = namespace("stale_reports");
    let registry = EtcdRegistry::connect(&url("etcd"), &ns).await.unwrap();
    let reports = [
        ("self", 1_700_000_009_000),
        ("gone-1", 1_700_000_008_000),
        ("gone-2", 1_700_000_007_000),
        ("p1", 1_700_000_005_000),
        ("p2", 1_700_000_001_000),
    ];
    let mut ids = Vec::new();
    for (holder, time) in reports {
        let id = registry.claim_free(8, holder, LONG, None).await.unwrap();
        registry.publish_time(id, holder, time).await.unwrap();
        ids.push(id);
    }
    let mut client =
        etcd_client::Client::connect([url("etcd").replace("etcd://", "http://")], None)
            .await
            .unwrap();
    for id in &ids[1..3] {
        client
            .delete(format!("/{ns}/worker/{id}"), None)
            .await
            .unwrap();
    }
    let clocks = registry.peer_clocks("self").await.unwrap();
    let peer = |i: usize| PeerTime {
        worker_id: ids[i],
        holder: reports[i].0.to_string(),
        time_ms: reports[i].1,
    };
    assert_eq!(
        clocks.ahead,
        Some(peer(3)),
        "the highest report that counts"
    );
    assert_eq!(clocks.behind, Some(peer(4)));
    for i in [0, 3, 4] {
        registry.release(ids[i], reports[i].0).await.unwrap();
    }
    cleanup("etcd", &ns).await;
}

/// The brief listing a starting node's layout check reads is the full listing without the
/// leases' times left (which cost etcd a request per lease): the same holders, claim
/// times, marks and layouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_the_brief_listing_is_the_listing_without_times_left() {
    let ns = namespace("brief");
    let registry = EtcdRegistry::connect(&url("etcd"), &ns).await.unwrap();
    for holder in ["a", "b", "c"] {
        let id = registry.claim_free(8, holder, LONG, None).await.unwrap();
        registry
            .write_mark(id, holder, 1_700_000_000_000 + id)
            .await
            .unwrap();
    }
    registry.write_layout(1, "b", "41,10,12/1/0").await.unwrap();
    let full = registry.list().await.unwrap();
    let brief = registry.list_brief().await.unwrap();
    assert_eq!(full.entries.len(), 3);
    assert!(full.entries.iter().all(|e| e.lease_left_ms.is_some()));
    let mut expected = full.entries.clone();
    for e in &mut expected {
        e.lease_left_ms = None;
        e.lease_ttl_ms = None;
        e.expiring = false;
    }
    let mut got = brief.entries.clone();
    got.sort_by_key(|e| e.worker_id);
    expected.sort_by_key(|e| e.worker_id);
    assert_eq!(got, expected);
    assert!(got.iter().all(|e| e.since_ms.is_some() && e.mark.is_some()));
    for (id, holder) in [(0, "a"), (1, "b"), (2, "c")] {
        registry.release(id, holder).await.unwrap();
    }
    cleanup("etcd", &ns).await;
}

/// A claim that finds its own key (an earlier attempt's, whose answer was lost) moves it onto
/// the lease it granted: the earlier attempt's revoke, arriving late, then takes nothing.
/// With the key kept on the old lease, etcd deleted it while the node issued under it
/// (the simulator's seed 4 on 10 nodes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_a_late_revoke_of_an_earlier_claim_leaves_the_key_held() {
    let ns = namespace("late_revoke");
    let registry = EtcdRegistry::connect(&url("etcd"), &ns).await.unwrap();
    let ttl = short_ttl("etcd");
    registry.claim(3, "node-a/1", ttl).await.unwrap();
    let mut client =
        etcd_client::Client::connect([url("etcd").replace("etcd://", "http://")], None)
            .await
            .unwrap();
    let key = format!("/{ns}/worker/3");
    let first = client.get(key.as_str(), None).await.unwrap().kvs()[0].lease();
    // The same holder claims again, as a retry after a lost answer does.
    registry.claim(3, "node-a/1", ttl).await.unwrap();
    let second = client.get(key.as_str(), None).await.unwrap().kvs()[0].lease();
    assert_ne!(
        first, second,
        "the key stayed on the earlier attempt's lease"
    );
    client.lease_revoke(first).await.unwrap();
    let kvs = client.get(key.as_str(), None).await.unwrap();
    assert_eq!(kvs.kvs().len(), 1, "the late revoke deleted the held key");
    registry.renew(3, "node-a/1", ttl).await.unwrap();
    registry.release(3, "node-a/1").await.unwrap();
    cleanup("etcd", &ns).await;
}
