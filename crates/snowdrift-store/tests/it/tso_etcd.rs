//! A timestamp oracle's leadership and saved window on a real etcd (scripts/services
//! starts it), and the pure oracle driven over it through a failover.

use std::time::Duration;

use tokio::time::Instant;

use snowdrift_core::clock::ManualClock;
use snowdrift_core::segment::IdRange;
use snowdrift_core::tso::{Allocation, TimestampOracle, TsoConfig};
use snowdrift_store::Error;
use snowdrift_store::tso::{Campaign, EtcdTso, Leadership};
use snowdrift_testkit::history::History;
use snowdrift_testkit::{unique_name, urls};

/// Above etcd's minimum lease (about 2 s), short enough to wait out in a test.
const TTL: Duration = Duration::from_secs(3);
const MARGIN: Duration = Duration::from_millis(600);

async fn oracle_store(ns: &str) -> EtcdTso {
    EtcdTso::connect(&urls::etcd(), ns, "ts").await.unwrap()
}

async fn win(tso: &EtcdTso, holder: &str) -> Leadership {
    match tso.campaign(holder, TTL, MARGIN).await.unwrap() {
        Campaign::Won(l) => l,
        other => panic!("{holder} did not win: {other:?}"),
    }
}

/// Removes the keys a passing test left.
async fn cleanup(ns: &str) {
    let mut client =
        etcd_client::Client::connect([urls::etcd().replace("etcd://", "http://")], None)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_the_next_sees_the_saved_window() {
    let ns = unique_name("tso_one");
    let tso = oracle_store(&ns).await;
    assert_eq!(tso.leader().await.unwrap(), None);
    let a = win(&tso, "node-a").await;
    assert_eq!(a.previous_window_ms(), None, "a new cluster");
    match tso.campaign("node-b", TTL, MARGIN).await.unwrap() {
        Campaign::Lost { leader } => {
            assert_eq!(leader.holder, "node-a");
            assert_eq!(leader.term, a.term(), "{leader:?}");
        }
        other => panic!("two leaders, or a or a's key refused: {other:?}"),
    }
    assert_eq!(tso.leader().await.unwrap().as_deref(), Some("node-a"));

    a.save_window(1_700_000_003_000).await.unwrap();
    assert_eq!(tso.window().await.unwrap(), Some(1_700_000_003_000));
    // A save that arrives late with a lower end never lowers the window.
    a.save_window(1_700_000_001_000).await.unwrap();
    assert_eq!(tso.window().await.unwrap(), Some(1_700_000_003_000));

    a.resign().await.unwrap();
    assert_eq!(tso.leader().await.unwrap(), None);
    let b = win(&tso, "node-b").await;
    assert_eq!(b.previous_window_ms(), Some(1_700_000_003_000));
    b.resign().await.unwrap();
    cleanup(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stops_before_its_lease_expires_and_cannot_save_after() {
    let ns = unique_name("tso_fence");
    let tso = oracle_store(&ns).await;
    let before = Instant::now();
    let a = win(&tso, "node-a").await;
    assert!(a.is_valid());
    assert!(a.valid_until() <= Instant::now() + (TTL - MARGIN));
    assert!(a.valid_until() >= before + (TTL - MARGIN));
    a.save_window(1_000).await.unwrap();

    // No renewal: wait until etcd expires the lease and deletes the key.
    let deadline = Instant::now() + Duration::from_secs(30);
    while tso.leader().await.unwrap().is_some() {
        assert!(Instant::now() < deadline, "the lease never expired");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !a.is_valid(),
        "the leader must have stopped before another could lead"
    );
    let b = win(&tso, "node-b").await;
    assert_eq!(b.previous_window_ms(), Some(1_000));

    let err = a.save_window(5_000).await.unwrap_err();
    assert!(
        matches!(&err, Error::LeadershipLost { reason, .. } if reason.contains("\"node-b\" leads now")),
        "{err}"
    );
    assert_eq!(tso.window().await.unwrap(), Some(1_000), "nothing written");
    let err = a.renew().await.unwrap_err();
    assert!(matches!(err, Error::LeadershipLost { .. }), "{err}");
    b.resign().await.unwrap();
    // The same holder name leading again is a new term: the old handle stays deposed.
    let a_again = win(&tso, "node-a").await;
    let err = a.save_window(5_000).await.unwrap_err();
    assert!(
        matches!(&err, Error::LeadershipLost { reason, .. } if reason.contains("\"node-a\" leads now")),
        "{err}"
    );
    // Resigning a lost leadership is not an error, and leaves the new leader alone.
    a.resign().await.unwrap();
    assert_eq!(tso.leader().await.unwrap().as_deref(), Some("node-a"));
    assert!(
        a_again.renew().await.is_ok(),
        "the new term's lease survived"
    );
    a_again.save_window(5_000).await.unwrap();
    a_again.resign().await.unwrap();
    cleanup(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_learns_at_once_that_nobody_leads() {
    let ns = unique_name("tso_vacancy");
    let tso = oracle_store(&ns).await;
    tokio::time::timeout(Duration::from_secs(5), tso.wait_for_vacancy())
        .await
        .expect("nobody leads: at once")
        .unwrap();

    // The leader resigns.
    let a = win(&tso, "node-a").await;
    let waiter = tokio::spawn({
        let tso = tso.clone();
        async move { tso.wait_for_vacancy().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "node-a still leads");
    a.resign().await.unwrap();
    let resigned = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter wakes when the key is deleted")
        .unwrap()
        .unwrap();
    assert!(resigned.elapsed() < Duration::from_secs(1));

    // The leader's lease expires.
    // etcd counts the lease from when it handled the grant, after this instant.
    let asked = Instant::now();
    let b = win(&tso, "node-b").await;
    tokio::time::timeout(Duration::from_secs(30), tso.wait_for_vacancy())
        .await
        .expect("the lease expires")
        .unwrap();
    assert!(asked.elapsed() >= TTL, "not before the lease could expire");
    assert!(!b.is_valid());
    assert!(matches!(
        tso.campaign("node-c", TTL, MARGIN).await.unwrap(),
        Campaign::Won(_)
    ));
    cleanup(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewing_extends_the_leadership() {
    let ns = unique_name("tso_renew");
    let tso = oracle_store(&ns).await;
    let a = win(&tso, "node-a").await;
    let first = a.valid_until();
    // Past the first deadline, kept alive every second.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let until = a.renew().await.unwrap();
        assert!(until > Instant::now());
    }
    assert!(Instant::now() > first);
    assert!(a.is_valid());
    assert_eq!(tso.leader().await.unwrap().as_deref(), Some("node-a"));
    a.save_window(42).await.unwrap();
    a.resign().await.unwrap();
    cleanup(&ns).await;
}

/// What the leader task (`tso/leader.rs`) does, reduced to one request at a time: allocate,
/// saving the window and waiting on the clock whenever the oracle asks.
async fn issue(
    oracle: &mut TimestampOracle<ManualClock>,
    leadership: &Leadership,
    count: u64,
) -> IdRange {
    loop {
        assert!(leadership.is_valid());
        match oracle.allocate(count).unwrap() {
            Allocation::Issued(ids) => return ids,
            Allocation::SaveWindow(save) => {
                leadership.save_window(save.up_to_ms).await.unwrap();
                oracle.window_saved(save).unwrap();
            }
            Allocation::Wait { until_ms } => oracle.clock().set(until_ms),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_keep_increasing_across_a_failover_to_a_node_whose_clock_is_behind() {
    let ns = unique_name("tso_failover");
    let tso = oracle_store(&ns).await;
    let t0 = 1_700_000_000_000;
    // 16 IDs per millisecond, so that node b, whose clock is behind, uses up milliseconds
    // and runs ahead of its clock (saving the window on the way).
    let config = TsoConfig {
        logical_bits: 4,
        ..TsoConfig::default()
    };
    // Node a's clock is a minute ahead of node b's.
    let clock_a = ManualClock::new(t0 + 60_000);
    let clock_b = ManualClock::new(t0);
    let mut a = TimestampOracle::new(config, clock_a.clone()).unwrap();
    let mut b = TimestampOracle::new(config, clock_b.clone()).unwrap();

    let start = Instant::now();
    let ns_now = || u64::try_from(start.elapsed().as_nanos()).unwrap();
    let mut history = History::new();

    let lead_a = win(&tso, "node-a").await;
    a.start_term(lead_a.previous_window_ms());
    let mut last_a = 0;
    for i in 0..200u64 {
        let invoke = ns_now();
        let ids = issue(&mut a, &lead_a, i % 7 + 1).await;
        history
            .push("client-1", invoke, ns_now(), ids.iter())
            .unwrap();
        last_a = ids.end - 1;
        clock_a.advance(40); // 8 s in all: the window is saved again on the way
    }
    let saved = tso.window().await.unwrap().unwrap();
    let last_physical = config.decode(last_a).unwrap().physical_ms;
    assert_eq!(last_physical, t0 + 60_000 + 199 * 40);
    assert!(saved >= last_physical, "saved {saved}");
    a.end_term();
    lead_a.resign().await.unwrap();

    let lead_b = win(&tso, "node-b").await;
    assert_eq!(lead_b.previous_window_ms(), Some(saved));
    b.start_term(lead_b.previous_window_ms());
    for i in 0..200u64 {
        let invoke = ns_now();
        let ids = issue(&mut b, &lead_b, i % 5 + 1).await;
        if i == 0 {
            let first = config.decode(ids.start).unwrap();
            assert_eq!(
                first.physical_ms,
                saved + 1,
                "b starts just above a's window"
            );
        }
        history
            .push("client-2", invoke, ns_now(), ids.iter())
            .unwrap();
        clock_b.advance(1);
    }
    assert!(
        b.status().physical_ms > saved + 20,
        "b moved on past used-up milliseconds without waiting for its clock"
    );
    assert!(tso.window().await.unwrap().unwrap() >= b.status().physical_ms);
    b.end_term();
    lead_b.resign().await.unwrap();

    let report = history.check();
    assert_eq!(report.operations, 400);
    assert!(report.is_clean(), "{report}");
    cleanup(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_key_no_campaign_wrote_is_not_a_leader() {
    use snowdrift_store::tso::KeyFault;
    let ns = unique_name("tso_forged");
    let tso = oracle_store(&ns).await;
    let mut etcd = etcd_client::Client::connect([urls::etcd().replace("etcd://", "http://")], None)
        .await
        .unwrap();
    let key = format!("/{ns}/tso/ts/leader");
    let a = win(&tso, "node-a").await;
    a.save_window(1_700_000_003_000).await.unwrap();

    // The attack: one put of the leader key, no lease, naming a fake.
    etcd.put(key.clone(), "http://127.0.0.1:1 x term=1", None)
        .await
        .unwrap();
    // The leader it replaced learns at its next renewal.
    let e = a.renew().await.unwrap_err();
    assert!(e.to_string().contains("without a lease"), "{e}");
    let seen = match tso.campaign("node-b", TTL, MARGIN).await.unwrap() {
        Campaign::NotALeader(f) => {
            assert_eq!(f.fault, KeyFault::NoLease, "{f:?}");
            let text = f.to_string();
            assert!(text.contains(&key) && text.contains("no lease"), "{text}");
            f.mod_revision
        }
        other => panic!("a leaseless key taken for a leader: {other:?}"),
    };
    // Taken over only while it is the key that was seen.
    etcd.put(key.clone(), "http://127.0.0.1:2 y", None)
        .await
        .unwrap();
    assert!(matches!(
        tso.campaign_replacing("node-b", TTL, MARGIN, seen)
            .await
            .unwrap(),
        Campaign::NotALeader(_)
    ));
    let seen = match tso.campaign("node-b", TTL, MARGIN).await.unwrap() {
        Campaign::NotALeader(f) => f.mod_revision,
        other => panic!("{other:?}"),
    };
    let b = match tso
        .campaign_replacing("node-b", TTL, MARGIN, seen)
        .await
        .unwrap()
    {
        Campaign::Won(l) => l,
        other => panic!("the leaseless key was not taken over: {other:?}"),
    };
    // The window the last real leader saved carries over.
    assert_eq!(b.previous_window_ms(), Some(1_700_000_003_000));
    b.renew().await.unwrap();
    assert_eq!(tso.leader().await.unwrap().as_deref(), Some("node-b"));
    b.resign().await.unwrap();

    // A key under a lease the writer granted itself, its value not naming it.
    let lease = etcd.lease_grant(30, None).await.unwrap().id();
    let with_lease = Some(etcd_client::PutOptions::new().with_lease(lease));
    etcd.put(key.clone(), "http://127.0.0.1:1 x", with_lease.clone())
        .await
        .unwrap();
    match tso.campaign("node-c", TTL, MARGIN).await.unwrap() {
        Campaign::NotALeader(f) => {
            assert_eq!(
                (f.fault, f.lease),
                (KeyFault::LeaseNotNamed, lease),
                "{f:?}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Never taken over: whoever granted the lease may be renewing it.
    assert!(matches!(
        tso.campaign_replacing("node-c", TTL, MARGIN, seen)
            .await
            .unwrap(),
        Campaign::NotALeader(_)
    ));
    // Written in a campaign's form, it passes etcd's checks: only what the leader answers
    // (its term, its certificate) tells it from a real one.
    etcd.put(
        key.clone(),
        format!("http://127.0.0.1:1 x term={lease}"),
        with_lease,
    )
    .await
    .unwrap();
    match tso.campaign("node-c", TTL, MARGIN).await.unwrap() {
        Campaign::Lost { leader } => assert_eq!(leader.term, lease),
        other => panic!("{other:?}"),
    }
    etcd.lease_revoke(lease).await.unwrap();
    cleanup(&ns).await;
}
