//! Segment mode when the database fails, through a fault-injecting proxy in front of real
//! PostgreSQL and MariaDB: cut, black-holed and slow. Every ID served in a test goes
//! through one `IdChecker`, so a duplicate anywhere in the run fails it.
//!
//! Time bounds here only stop a broken buffer from hanging the suite (`HUNG`); the tests
//! assert what the buffer did, never how fast.

use std::future::Future;
use std::time::Duration;

use snowdrift_store::Error;
use snowdrift_store::segment::{BufferConfig, NewTag, SegmentBuffer, SqlSegmentStore};
use snowdrift_testkit::{FaultProxy, IdChecker};
use tokio::time::{MissedTickBehavior, timeout};

use crate::common::{drop_table, table, url};

/// Longest any single step may take before the test calls the buffer hung.
const HUNG: Duration = Duration::from_secs(30);
/// The buffer's wait bound for a refill, short so the outage tests are quick.
const WAIT: Duration = Duration::from_millis(300);
/// The bound on one claim, so a black-holed connection cannot stall the refill.
const CLAIM_TIMEOUT: Duration = Duration::from_millis(500);

/// Fails the test instead of hanging it.
async fn bounded<T>(what: &str, f: impl Future<Output = T>) -> T {
    timeout(HUNG, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: still waiting after {HUNG:?}"))
}

struct Setup {
    proxy: FaultProxy,
    store: SqlSegmentStore,
    buffer: SegmentBuffer,
    table: String,
}

/// A tag in a fresh table of a store that reaches the database through a proxy.
struct Proxied {
    proxy: FaultProxy,
    store: SqlSegmentStore,
    table: String,
}

async fn proxied_tag(backend: &str, name: &str, step: i64) -> Proxied {
    let (proxy, proxied) = FaultProxy::start_for_url(&url(backend)).await.unwrap();
    let table = table(name);
    let store = bounded("connecting", SqlSegmentStore::connect(&proxied, &table))
        .await
        .unwrap();
    bounded(
        "creating the tag",
        store.create_tag(&NewTag {
            tag: name.into(),
            step,
            description: None,
            template: None,
        }),
    )
    .await
    .unwrap();
    Proxied {
        proxy,
        store,
        table,
    }
}

impl Proxied {
    /// Heals the link, closes the store's connections and drops the table.
    async fn teardown(self, backend: &str) {
        self.proxy.heal();
        bounded("closing the store's connections", self.store.close()).await;
        drop(self.proxy);
        bounded("dropping the table", drop_table(backend, &self.table)).await;
    }
}

/// A tag in a fresh table, served by a buffer that reaches the database through a proxy.
async fn setup(backend: &str, name: &str, step: i64) -> Setup {
    let Proxied {
        proxy,
        store,
        table,
    } = proxied_tag(backend, name, step).await;
    let config = BufferConfig {
        wait: WAIT,
        claim_timeout: CLAIM_TIMEOUT,
        ..BufferConfig::default()
    };
    let buffer = bounded(
        "starting the buffer",
        SegmentBuffer::start(store.clone(), name, config),
    )
    .await
    .unwrap();
    Setup {
        proxy,
        store,
        buffer,
        table,
    }
}

impl Setup {
    /// Serves the first 500 IDs, which crosses the prefetch point, and waits for the
    /// prefetched segment to land: the outage then starts with a segment ahead.
    async fn warm_up(&self, checker: &IdChecker) {
        serve(&self.buffer, checker, 500).await;
        bounded("the prefetch", async {
            while self.buffer.status().segments_ahead == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
    }

    async fn teardown(self, backend: &str) {
        drop(self.buffer);
        let db = Proxied {
            proxy: self.proxy,
            store: self.store,
            table: self.table,
        };
        db.teardown(backend).await;
    }
}

/// Takes `n` IDs at a time until the buffer refuses, recording every ID; returns the error.
async fn drain(buffer: &SegmentBuffer, checker: &IdChecker, n: u64) -> Error {
    bounded("draining the buffer", async {
        loop {
            match buffer.next(n).await {
                Ok(ids) => checker.record("consumer", ids.iter()),
                Err(e) => break e,
            }
        }
    })
    .await
}

/// Calls `next` until it serves again, recording what it serves.
async fn recover(buffer: &SegmentBuffer, checker: &IdChecker) {
    bounded("recovery after the heal", async {
        loop {
            if let Ok(ids) = buffer.next(10).await {
                checker.record("consumer", ids.iter());
                return;
            }
        }
    })
    .await;
}

/// Serves `count` more IDs; every call must succeed, or refuse only because a claim that
/// is under way (the store answering, no error) took longer than the wait bound.
///
/// The loop asks as fast as it can, so each call waits on a claim: with a 300 ms bound
/// (kept short for the outage tests) a claim slowed by a loaded machine, not by the
/// database, made an honest "slower than the demand" refusal, and the test failed under
/// load. What this checks is that the store serves again: any refusal naming a store
/// failure still fails it, and so does not serving `count` within [`HUNG`].
async fn serve(buffer: &SegmentBuffer, checker: &IdChecker, count: u64) {
    bounded("serving", async {
        let mut served = 0;
        while served < count {
            match buffer.next(97).await {
                Ok(ids) => {
                    served += ids.len();
                    checker.record("consumer", ids.iter());
                }
                Err(Error::Exhausted { cause, .. })
                    if cause == "the refill is slower than the demand" => {}
                Err(e) => panic!("serving: {e}"),
            }
        }
    })
    .await;
}

fn assert_store_named(err: &Error, expect: &str) {
    let Error::Exhausted { cause, .. } = err else {
        panic!("expected Exhausted, got {err}");
    };
    assert!(
        cause.contains("store unavailable") && cause.contains(expect),
        "the cause names the store's failure ({expect:?}): {err}"
    );
}

/// (a) The database connection is cut: buffered IDs keep coming, then a clear refusal
/// after the wait bound, then the buffer recovers by itself once the network heals.
async fn database_cut(backend: &str) {
    let s = setup(backend, "cut", 1000).await;
    let checker = IdChecker::new();
    s.warm_up(&checker).await;

    s.proxy.cut();
    // A claim already answered before the cut may still land, so this is a floor.
    let held = s.buffer.status();
    let before = checker.distinct() as u64;
    let err = drain(&s.buffer, &checker, 100).await;
    let during = checker.distinct() as u64 - before;
    assert!(
        during >= held.current_left + held.ids_ahead,
        "every buffered ID is served during the outage: {during} < {held:?}"
    );
    assert_store_named(&err, "");
    // Still refusing, not hanging, while the cut lasts.
    for _ in 0..3 {
        let again = bounded("next during the cut", s.buffer.next(1)).await;
        assert!(matches!(again, Err(Error::Exhausted { .. })), "{again:?}");
    }

    s.proxy.heal();
    recover(&s.buffer, &checker).await;
    serve(&s.buffer, &checker, 5000).await;
    let report = checker.assert_clean();
    assert!(report.ids > 5500);
    assert!(s.proxy.connections() > 1, "the pool reconnected");
    s.teardown(backend).await;
}

/// (b) The database stops answering (black hole): the same, and nothing hangs: the claim
/// timeout turns the silence into an error the callers see.
async fn database_black_hole(backend: &str) {
    let s = setup(backend, "hole", 1000).await;
    let checker = IdChecker::new();
    s.warm_up(&checker).await;

    s.proxy.black_hole();
    let held = s.buffer.status();
    let before = checker.distinct() as u64;
    let first = drain(&s.buffer, &checker, 100).await;
    assert!(matches!(first, Error::Exhausted { .. }), "{first}");
    assert!(
        checker.distinct() as u64 - before >= held.current_left + held.ids_ahead,
        "every buffered ID is served during the outage"
    );
    // The first refusals may come before a claim has timed out; within a few wait bounds
    // the cause must say the store did not answer. Nothing can be served meanwhile.
    let mut named = false;
    for _ in 0..20 {
        let err = bounded("next in the black hole", s.buffer.next(1))
            .await
            .expect_err("nothing passes a black hole");
        if err.to_string().contains("did not answer") {
            assert_store_named(&err, "did not answer");
            named = true;
            break;
        }
    }
    assert!(named, "the claim timeout never named the silent store");

    s.proxy.heal();
    recover(&s.buffer, &checker).await;
    serve(&s.buffer, &checker, 5000).await;
    checker.assert_clean();
    s.teardown(backend).await;
}

/// (c) Every statement takes 50 ms longer; consumption is steady and below what the
/// refill can claim, so no caller ever finds the chain empty (the chain's own starvation
/// counter says so) and every call is served.
async fn slow_database(backend: &str) {
    let s = setup(backend, "slow", 2000).await;
    let checker = IdChecker::new();
    let latency = Duration::from_millis(50);
    s.proxy.delay(latency);
    // The delay is in force: a statement cannot come back sooner (a lower bound).
    let t = tokio::time::Instant::now();
    bounded("reading the tag", s.store.get_tag("slow"))
        .await
        .unwrap();
    assert!(t.elapsed() >= latency);

    let pushed_before = s.buffer.status().pushed;
    // 10 IDs every 5 ms, 2,000 IDs/s. A claim is about five round trips (~250-370 ms
    // with the delay) and starts while 90% of a segment of at least 2,000 IDs is left
    // (900 ms of IDs), so the refill keeps up with room to spare on a loaded machine.
    // Delay, not burst, after a late tick.
    let mut tick = tokio::time::interval(Duration::from_millis(5));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    for _ in 0..600 {
        tick.tick().await;
        let ids = bounded("next on a slow database", s.buffer.next(10))
            .await
            .unwrap();
        checker.record("consumer", ids.iter());
    }
    let status = s.buffer.status();
    assert_eq!(
        status.starved, 0,
        "a caller found the chain empty: {status:?}"
    );
    assert!(
        status.pushed >= pushed_before + 2,
        "the run refilled through the slow link: {status:?}"
    );
    let report = checker.assert_clean();
    assert!(report.ids >= 6000);
    s.teardown(backend).await;
}

/// (d) Answers that arrive a byte at a time: callers give up on claims in the middle of an
/// answer (as the buffer's claim timeout does), leaving each connection in a state only the
/// driver knows. Such a connection must not hold its place in the pool for ever: after more
/// abandoned claims than the pool has connections, and a heal, claims work again and the
/// pool closes.
async fn abandoned_claims(backend: &str) {
    let db = proxied_tag(backend, "abandoned", 1000).await;
    let (proxy, store) = (&db.proxy, &db.store);
    let checker = IdChecker::new();
    proxy.trickle(Duration::from_millis(1));
    let mut abandoned = 0;
    for i in 0..24 {
        // A different point of the answer each time.
        let patience = Duration::from_millis(20 + 23 * i);
        match timeout(patience, store.claim("abandoned", None)).await {
            Ok(claim) => checker.record("claims", claim.unwrap().ids.iter()),
            Err(_) => abandoned += 1,
        }
    }
    assert!(abandoned > 8, "only {abandoned} claims were abandoned");
    proxy.heal();
    for _ in 0..20 {
        let claim = bounded("a claim after the heal", store.claim("abandoned", None))
            .await
            .unwrap();
        checker.record("claims", claim.ids.iter());
    }
    checker.assert_clean();
    db.teardown(backend).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_abandoned_claims_do_not_keep_their_connections() {
    abandoned_claims("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_abandoned_claims_do_not_keep_their_connections() {
    abandoned_claims("mysql").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cut_serves_buffered_then_refuses_then_recovers() {
    database_cut("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_cut_serves_buffered_then_refuses_then_recovers() {
    database_cut("mysql").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_black_hole_refuses_within_bounds_then_recovers() {
    database_black_hole("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_black_hole_refuses_within_bounds_then_recovers() {
    database_black_hole("mysql").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_slow_database_never_starves_steady_callers() {
    slow_database("postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_slow_database_never_starves_steady_callers() {
    slow_database("mysql").await;
}

/// A name the store does not have is remembered as missing for a second: asked again
/// meanwhile, the service answers "not found" without the database (here black-holed, so a
/// read would hang until the claim timeout). Created through the service it is served at
/// once; created by another node it is found once the second is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_are_remembered_briefly_and_cost_the_database_nothing() {
    use snowdrift_store::segment::SegmentService;
    let Proxied {
        proxy,
        store,
        table,
    } = proxied_tag("postgres", "known", 100).await;
    let config = BufferConfig {
        wait: WAIT,
        claim_timeout: CLAIM_TIMEOUT,
        ..BufferConfig::default()
    };
    let service = SegmentService::new(store.clone(), config);
    let missing = |r: Result<_, Error>| matches!(r, Err(Error::TagNotFound(_)));
    assert!(missing(
        bounded("a made-up name", service.next("made-up", 1)).await
    ));
    proxy.black_hole();
    for _ in 0..100 {
        let asked = std::time::Instant::now();
        assert!(missing(
            bounded("it again", service.next("made-up", 1)).await
        ));
        assert!(
            asked.elapsed() < Duration::from_millis(200),
            "{:?}",
            asked.elapsed()
        );
    }
    proxy.heal();
    // Created through the service: served at once, whatever it remembered.
    bounded(
        "creating it here",
        service.create_tag(&NewTag {
            tag: "made-up".into(),
            step: 10,
            description: None,
            template: None,
        }),
    )
    .await
    .unwrap();
    assert_eq!(
        bounded("its first ID", service.next("made-up", 1))
            .await
            .unwrap()
            .start,
        1
    );
    // Created by another node (straight in the store): found once the second is up.
    assert!(missing(
        bounded("a later name", service.next("later", 1)).await
    ));
    bounded(
        "creating it elsewhere",
        store.create_tag(&NewTag {
            tag: "later".into(),
            step: 10,
            description: None,
            template: None,
        }),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        bounded("found", service.next("later", 1))
            .await
            .unwrap()
            .start,
        1
    );
    Proxied {
        proxy,
        store,
        table,
    }
    .teardown("postgres")
    .await;
}
