//! `zk-version` against a real ZooKeeper: two clients (two sessions) writing one znode at
//! once get every version exactly once, each call's IDs increasing; a bad znode path is
//! refused before anything is written.

use std::collections::BTreeSet;

use snowdrift_store::zk_version::ZkVersion;
use snowdrift_testkit::{unique_name, urls};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_get_every_version_once() {
    let path = format!("/snowdrift_test/{}", unique_name("zkv"));
    let a = ZkVersion::connect(&urls::zookeeper(), &path).await.unwrap();
    let b = ZkVersion::connect(&urls::zookeeper(), &path).await.unwrap();
    let take = |z: ZkVersion| async move {
        let mut all = Vec::new();
        for _ in 0..10 {
            let ids = z.next(100).await.unwrap();
            assert_eq!(ids.len(), 100);
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
            all.extend(ids);
        }
        all
    };
    let (x, y) = tokio::join!(take(a.clone()), take(b));
    let seen: BTreeSet<u64> = x.iter().chain(&y).copied().collect();
    assert_eq!(seen.len(), 2_000, "no version twice");
    // Only these writes touched the znode: its versions 1 to 2000, each once.
    assert_eq!(seen, (1..=2_000).collect());
    assert_eq!(a.next(1).await.unwrap(), [2_001]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_paths_are_refused() {
    for bad in ["relative", "/", "/a//b", "/a/", "/a b"] {
        let e = ZkVersion::connect(&urls::zookeeper(), bad)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not valid"), "{bad}: {e}");
    }
}
