//! The store's timestamp oracle node (`OracleNode`: the leader task) on a real etcd: one
//! leader, a follower told who leads and in which term, a handover above everything the
//! first leader could have issued even on a clock far behind, and PD's batching.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use snowdrift_core::clock::{MonotonicClock, OffsetClock};
use snowdrift_store::tso::{EtcdTso, OracleConfig, OracleError, OracleNode, Role};
use snowdrift_testkit::{unique_name, urls};

/// A liveness bound, not a timing assertion: elections here take well under a second.
const PATIENCE: Duration = Duration::from_secs(30);

fn config(ns: &str, advertise: &str) -> OracleConfig {
    OracleConfig::new(urls::etcd(), ns, "ts", advertise)
}

async fn start(config: OracleConfig, offset_ms: i64) -> OracleNode {
    let clock = OffsetClock::new(MonotonicClock::new(), offset_ms);
    OracleNode::start(config, clock, &tokio::runtime::Handle::current())
        .await
        .unwrap()
}

/// Waits until `node`'s role satisfies `want`, and returns it.
async fn role_until(node: &OracleNode, want: impl Fn(&Role) -> bool) -> Role {
    let mut role = node.watch_role();
    tokio::time::timeout(PATIENCE, role.wait_for(|r| want(r)))
        .await
        .unwrap_or_else(|_| panic!("role stayed {:?}", node.role()))
        .unwrap()
        .clone()
}

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
async fn a_follower_learns_the_leader_and_takes_over_above_its_window_on_a_clock_behind() {
    let ns = unique_name("tso_node");
    let a = start(config(&ns, "http://a.test:1"), 0).await;
    role_until(&a, |r| matches!(r, Role::Leader { .. })).await;
    let (first, term_a) = a.next(10).await.unwrap();
    assert_eq!(first.len(), 10);
    let (second, term) = a.next(10).await.unwrap();
    assert_eq!(term, term_a, "one term");
    assert!(second.start >= first.end, "{first:?} then {second:?}");

    // B's clock is 10 s behind A's, far more than A's 3 s window: only the window A saved
    // keeps B's IDs above A's.
    let b = start(config(&ns, "http://b.test:2"), -10_000).await;
    let role = role_until(&b, |r| matches!(r, Role::Follower { .. })).await;
    assert_eq!(
        role,
        Role::Follower {
            leader: "http://a.test:1".into(),
            term: term_a
        },
        "the follower names the leader's URL and the term its answers must carry"
    );
    assert!(
        matches!(b.next(1).await, Err(OracleError::NotLeading)),
        "a follower's own oracle issues nothing"
    );

    let report = a.report();
    assert_eq!(report.terms, 1);
    assert!(report.window_saves >= 1, "{report:?}");
    assert_eq!(report.batched_requests, 2, "{report:?}");
    assert!(report.lease_left.is_some_and(|l| l > Duration::ZERO));

    // Read while A still leads: once A resigns, B may win and save its own window before
    // this reads the key (CI saw exactly that). A only ever raises its window, so what A
    // finally saved is at or above this, and B must start above that.
    let saved = EtcdTso::connect(&urls::etcd(), &ns, "ts")
        .await
        .unwrap()
        .window()
        .await
        .unwrap()
        .expect("a saved window");
    a.shutdown().await;
    assert_eq!(a.role(), Role::Stopped);
    assert!(matches!(a.next(1).await, Err(OracleError::Stopped { .. })));

    // A resigned: B campaigns as soon as the key goes, without waiting out the lease.
    role_until(&b, |r| matches!(r, Role::Leader { .. })).await;
    let (third, term_b) = b.next(10).await.unwrap();
    assert_ne!(term_b, term_a, "a new term");
    assert!(
        third.start >= second.end,
        "B issued {third:?}, not above A's {second:?}"
    );
    let physical = b.tso_config().decode(third.start).unwrap().physical_ms;
    assert!(
        physical > saved,
        "B's first ID is from {physical}, not above the window A saved ({saved})"
    );
    b.shutdown().await;
    cleanup(&ns).await;
}

// One thread: the 200 requests are all queued before the leader's task runs again (the
// first one's wake puts the task behind the other 199), so merging them is not left to
// chance.
#[tokio::test]
async fn requests_waiting_together_share_one_allocation() {
    let ns = unique_name("tso_batch");
    let observed = Arc::new(AtomicUsize::new(0));
    let mut c = config(&ns, "http://a.test:1");
    let seen = observed.clone();
    c.on_group = Some(Arc::new(move |n| {
        seen.fetch_add(n, Ordering::Relaxed);
    }));
    let node = Arc::new(start(c, 0).await);
    role_until(&node, |r| matches!(r, Role::Leader { .. })).await;

    const REQUESTS: usize = 200;
    let tasks: Vec<_> = (0..REQUESTS)
        .map(|_| {
            let node = node.clone();
            tokio::spawn(async move { node.next(3).await.unwrap().0 })
        })
        .collect();
    let mut ranges = Vec::new();
    for t in tasks {
        ranges.push(t.await.unwrap());
    }
    ranges.sort_by_key(|r| r.start);
    for pair in ranges.windows(2) {
        assert!(pair[0].end <= pair[1].start, "overlap: {pair:?}");
    }
    assert!(ranges.iter().all(|r| r.len() == 3));

    let report = node.report();
    assert_eq!(report.batched_requests, REQUESTS as u64);
    assert_eq!(
        observed.load(Ordering::Relaxed),
        REQUESTS,
        "the observer is told every group's size"
    );
    assert!(
        report.batches < REQUESTS as u64,
        "{} allocations for {REQUESTS} requests sent together: none merged",
        report.batches
    );
    node.shutdown().await;
    cleanup(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_that_break_fencing_are_refused_before_connecting() {
    let mut c = config("tso_bad", "http://a.test:1");
    c.margin_override = Some(c.ttl);
    // No etcd behind this URL: the settings are refused first.
    c.url = "etcd://127.0.0.1:1".into();
    let clock = OffsetClock::new(MonotonicClock::new(), 0);
    let e = OracleNode::start(c, clock, &tokio::runtime::Handle::current())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, snowdrift_store::Error::InvalidInput(m) if m.contains("below the lease ttl")),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_dropped_without_shutdown_stops_campaigning() {
    let ns = unique_name("tso_drop");
    let a = start(config(&ns, "http://a.test:1"), 0).await;
    role_until(&a, |r| matches!(r, Role::Leader { .. })).await;
    let b = start(config(&ns, "http://b.test:2"), 0).await;
    role_until(&b, |r| matches!(r, Role::Follower { .. })).await;
    let mut role = b.watch_role();
    drop(b);
    // While A still leads: a task whose handle is gone and that went on campaigning would
    // stop only once it had won.
    tokio::time::timeout(PATIENCE, role.wait_for(|r| *r == Role::Stopped))
        .await
        .expect("the dropped node's task went on")
        .unwrap();
    assert!(matches!(a.role(), Role::Leader { .. }));
    a.shutdown().await;
    cleanup(&ns).await;
}
