//! Counter mode against a real Redis (`SNOWDRIFT_TEST_REDIS`, default
//! `redis://127.0.0.1:6379`). Every test works under its own key prefix and deletes its keys.
#![cfg(feature = "redis")]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use snowdrift_core::clock::{Clock, ManualClock};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_store::Error;
use snowdrift_store::counter::{MAX_BATCH, RedisCounter, RedisCounterBuilder};

/// 2026-11-22T23:59:59Z: one second before a new day.
const BEFORE_MIDNIGHT: u64 = 1_795_391_999_000;
const DAY_MS: u64 = 86_400_000;

fn url() -> String {
    std::env::var("SNOWDRIFT_TEST_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A test's own key prefix and a raw connection beside the counters.
struct Keys {
    prefix: String,
    conn: MultiplexedConnection,
}

impl Keys {
    async fn new(test: &str) -> Self {
        let prefix = format!(
            "{}:",
            snowdrift_testkit::unique_name(&format!("snowdrift-test:{test}"))
        );
        let client = redis::Client::open(url()).unwrap();
        let conn = client.get_multiplexed_async_connection().await.unwrap();
        Keys { prefix, conn }
    }

    /// A counter builder under this test's prefix.
    fn counter(&self, name: &str) -> RedisCounterBuilder {
        RedisCounter::builder(name).prefix(&self.prefix)
    }

    async fn list(&mut self) -> Vec<String> {
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", self.prefix))
            .query_async(&mut self.conn)
            .await
            .unwrap();
        keys.sort();
        keys
    }

    async fn get(&mut self, key: &str) -> Option<i64> {
        redis::cmd("GET")
            .arg(key)
            .query_async(&mut self.conn)
            .await
            .unwrap()
    }

    async fn set(&mut self, key: &str, value: i64) {
        let () = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .query_async(&mut self.conn)
            .await
            .unwrap();
    }

    async fn pttl(&mut self, key: &str) -> i64 {
        redis::cmd("PTTL")
            .arg(key)
            .query_async(&mut self.conn)
            .await
            .unwrap()
    }

    /// Calls of `INCRBY` the server has run so far (all clients).
    async fn incrby_calls(&mut self) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut self.conn)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("cmdstat_incrby:calls="))
            .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
    }

    async fn cleanup(mut self) {
        let keys = self.list().await;
        if !keys.is_empty() {
            let () = redis::cmd("DEL")
                .arg(&keys)
                .query_async(&mut self.conn)
                .await
                .unwrap();
        }
    }
}

fn template(text: &str) -> CounterTemplate {
    CounterTemplate::parse(text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_sharing_one_counter_get_no_duplicates() {
    let keys = Keys::new("shared").await;
    // An odd batch, and calls of 1 to 5 values, so that batches often run short and
    // leftovers are dropped.
    let counter = Arc::new(keys.counter("c").batch(7).connect(&url()).await.unwrap());
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let counter = counter.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for i in 0..40u64 {
                let n = 1 + (t + i) % 5;
                let values = counter.next(n).await.unwrap();
                assert_eq!(values.len() as u64, n);
                // The values of one call are consecutive.
                assert!(values.windows(2).all(|w| w[1] == w[0] + 1), "{values:?}");
                got.extend(values);
            }
            got
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(
        unique.len(),
        all.len(),
        "duplicates among {} values",
        all.len()
    );
    assert!(all.iter().all(|&v| v >= 1));
    let stats = counter.stats();
    assert_eq!(stats.served, all.len() as u64);
    assert!(stats.dropped > 0, "leftovers were never dropped: {stats:?}");
    keys.cleanup().await;
}

#[tokio::test]
async fn one_incrby_serves_a_whole_batch() {
    let mut keys = Keys::new("batching").await;
    let counter = keys.counter("c").batch(100).connect(&url()).await.unwrap();
    let key = counter.key_at(0).unwrap();
    assert_eq!(key, format!("{}c", keys.prefix));
    let server_before = keys.incrby_calls().await;
    let mut values = Vec::new();
    for _ in 0..1000 {
        values.extend(counter.next(1).await.unwrap());
    }
    assert_eq!(values, (1..=1000).collect::<Vec<i64>>());
    assert_eq!(counter.stats().round_trips, 10);
    assert_eq!(keys.get(&key).await, Some(1000));
    // The server saw (at least) those ten; other clients may add their own.
    assert!(keys.incrby_calls().await - server_before >= 10);
    // A counter that never resets never expires.
    assert_eq!(keys.pttl(&key).await, -1);

    // More than a batch in one call: one INCRBY of exactly that many.
    let big = counter.next(250).await.unwrap();
    assert_eq!(big, (1001..=1250).collect::<Vec<i64>>());
    assert_eq!(counter.stats().round_trips, 11);
    assert_eq!(keys.get(&key).await, Some(1250));

    // Without batching every value costs a round trip.
    let unbatched = keys.counter("u").batch(1).connect(&url()).await.unwrap();
    for _ in 0..20 {
        unbatched.next(1).await.unwrap();
    }
    assert_eq!(unbatched.stats().round_trips, 20);
    keys.cleanup().await;
}

#[tokio::test]
async fn a_new_day_starts_from_one_under_a_new_key() {
    let mut keys = Keys::new("rollover").await;
    let clock = ManualClock::new(BEFORE_MIDNIGHT);
    let counter = keys
        .counter("order")
        .template(template("ORD{date:%Y%m%d}{seq:08}"))
        .batch(100)
        .clock(clock.clone())
        .connect(&url())
        .await
        .unwrap();
    let ttl = counter.key_ttl().unwrap();
    assert_eq!(ttl, Duration::from_secs(2 * 86_400 + 3_600));
    assert_eq!(
        counter.next_rendered(3).await.unwrap(),
        [
            "ORD2026112200000001",
            "ORD2026112200000002",
            "ORD2026112200000003"
        ]
    );
    let old_key = counter.key_at(clock.now_ms()).unwrap();
    assert_eq!(old_key, format!("{}order:20261122", keys.prefix));

    clock.advance(1_000); // 2026-11-23T00:00:00Z
    assert_eq!(
        counter.next_rendered(2).await.unwrap(),
        ["ORD2026112300000001", "ORD2026112300000002"]
    );
    let new_key = counter.key_at(clock.now_ms()).unwrap();
    assert_eq!(new_key, format!("{}order:20261123", keys.prefix));
    // The rest of yesterday's batch was dropped, not carried into today.
    let stats = counter.stats();
    assert_eq!((stats.round_trips, stats.served, stats.dropped), (2, 5, 97));
    assert_eq!(keys.list().await, [old_key.clone(), new_key.clone()]);
    assert_eq!(keys.get(&old_key).await, Some(100));
    assert_eq!(keys.get(&new_key).await, Some(100));
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap();
    for key in [&old_key, &new_key] {
        let left = keys.pttl(key).await;
        assert!(left > 0 && left <= ttl_ms, "{key}: {left} ms left");
    }

    // The bare values repeat each day, so the counter does not hand them out alone...
    assert!(matches!(counter.next(1).await, Err(Error::InvalidInput(_))));
    // ...but a block names its period.
    let block = counter.next_block(2).await.unwrap();
    assert_eq!((block.period_key.as_str(), block.first), ("20261123", 3));
    keys.cleanup().await;
}

#[tokio::test]
async fn a_full_width_is_an_error_not_a_wrap() {
    let mut keys = Keys::new("width").await;
    let clock = ManualClock::new(BEFORE_MIDNIGHT);
    let counter = keys
        .counter("t")
        .template(template("T{date:%Y%m%d}-{seq:03}"))
        .batch(10)
        .clock(clock.clone())
        .connect(&url())
        .await
        .unwrap();
    let key = counter.key_at(clock.now_ms()).unwrap();
    keys.set(&key, 995).await;
    assert_eq!(
        counter.next_rendered(2).await.unwrap(),
        ["T20261122-996", "T20261122-997"]
    );
    assert_eq!(
        counter.next_rendered(2).await.unwrap(),
        ["T20261122-998", "T20261122-999"]
    );
    for _ in 0..2 {
        match counter.next_rendered(1).await {
            Err(Error::CounterOverflow { max, key: k, .. }) => {
                assert_eq!((max, k.as_str()), (999, key.as_str()));
            }
            other => panic!("expected an overflow, got {other:?}"),
        }
    }
    // Another process on the same counter finds it full too.
    let other = keys
        .counter("t")
        .template(template("T{date:%Y%m%d}-{seq:03}"))
        .clock(clock.clone())
        .connect(&url())
        .await
        .unwrap();
    let err = other.next_rendered(1).await.unwrap_err();
    assert!(err.to_string().contains("{seq:03}"), "{err}");
    // A call that wants more than is left fails whole; smaller calls get the rest.
    let nearly = keys
        .counter("t2")
        .template(template("T{date:%Y%m%d}-{seq:03}"))
        .batch(10)
        .clock(clock.clone())
        .connect(&url())
        .await
        .unwrap();
    keys.set(&nearly.key_at(clock.now_ms()).unwrap(), 997).await;
    assert!(matches!(
        nearly.next_rendered(3).await,
        Err(Error::CounterOverflow { .. })
    ));
    assert_eq!(
        nearly.next_rendered(2).await.unwrap(),
        ["T20261122-998", "T20261122-999"]
    );
    assert!(nearly.next_rendered(1).await.is_err());
    // The next day starts again.
    clock.advance(1_000);
    assert_eq!(counter.next_rendered(1).await.unwrap(), ["T20261123-001"]);
    keys.cleanup().await;
}

#[tokio::test]
async fn the_top_of_i64_is_served_once_then_refused() {
    let mut keys = Keys::new("i64").await;
    let counter = keys.counter("c").batch(100).connect(&url()).await.unwrap();
    let key = counter.key_at(0).unwrap();
    keys.set(&key, i64::MAX - 3).await;
    // INCRBY 100 would overflow; the counter asks for exactly what the call needs.
    assert_eq!(counter.next(2).await.unwrap(), [i64::MAX - 2, i64::MAX - 1]);
    assert_eq!(counter.next(1).await.unwrap(), [i64::MAX]);
    match counter.next(1).await {
        Err(Error::CounterOverflow { max, field, .. }) => {
            assert_eq!((max, field.as_str()), (i64::MAX.unsigned_abs(), "i64"));
        }
        other => panic!("expected an overflow, got {other:?}"),
    }
    assert_eq!(keys.get(&key).await, Some(i64::MAX));

    // The same through MULTI/EXEC, for a counter whose keys expire.
    let clock = ManualClock::new(BEFORE_MIDNIGHT);
    let yearly = keys
        .counter("y")
        .template(template("{date:%Y}-{seq}"))
        .clock(clock.clone())
        .connect(&url())
        .await
        .unwrap();
    let key = yearly.key_at(clock.now_ms()).unwrap();
    keys.set(&key, i64::MAX - 1).await;
    assert_eq!(
        yearly.next_rendered(1).await.unwrap(),
        [format!("2026-{}", i64::MAX)]
    );
    assert!(matches!(
        yearly.next_rendered(1).await,
        Err(Error::CounterOverflow { .. })
    ));
    assert_eq!(keys.get(&key).await, Some(i64::MAX));
    keys.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_counter_never_overlap() {
    let keys = Keys::new("two").await;
    let clock = ManualClock::new(BEFORE_MIDNIGHT - DAY_MS);
    // Separate instances, each with its own connection, as two processes would have.
    let mut counters = Vec::new();
    for batch in [10, 13] {
        let plain = keys
            .counter("p")
            .batch(batch)
            .connect(&url())
            .await
            .unwrap();
        let daily = keys
            .counter("d")
            .template(template("D{date:%Y%m%d}{seq:06}"))
            .batch(batch)
            .clock(clock.clone())
            .connect(&url())
            .await
            .unwrap();
        counters.push(Arc::new((plain, daily)));
    }
    let mut tasks = Vec::new();
    for (i, pair) in counters.iter().enumerate() {
        for t in 0..3u64 {
            let pair = pair.clone();
            tasks.push(tokio::spawn(async move {
                let (mut plain, mut rendered) = (Vec::new(), Vec::new());
                for k in 0..30u64 {
                    let n = 1 + (k + t + i as u64) % 4;
                    plain.extend(pair.0.next(n).await.unwrap());
                    rendered.extend(pair.1.next_rendered(n).await.unwrap());
                }
                (plain, rendered)
            }));
        }
    }
    let (mut plain, mut rendered) = (Vec::new(), Vec::new());
    for task in tasks {
        let (p, r) = task.await.unwrap();
        plain.extend(p);
        rendered.extend(r);
    }
    assert_eq!(plain.iter().collect::<HashSet<_>>().len(), plain.len());
    assert_eq!(
        rendered.iter().collect::<HashSet<_>>().len(),
        rendered.len()
    );
    assert!(rendered.iter().all(|r| r.starts_with("D20261121")));
    let served: u64 = counters.iter().map(|c| c.0.stats().served).sum();
    assert_eq!(served, plain.len() as u64);
    keys.cleanup().await;
}

#[tokio::test]
async fn bad_input_is_refused_and_writes_nothing() {
    let mut keys = Keys::new("bad").await;
    let long = "n".repeat(129);
    let refused: Vec<(&str, RedisCounterBuilder)> = vec![
        ("empty name", keys.counter("")),
        ("long name", keys.counter(&long)),
        ("':' in name", keys.counter("a:b")),
        ("'..' as name", keys.counter("..")),
        ("space in name", keys.counter("a b")),
        ("batch 0", keys.counter("c").batch(0)),
        ("batch too large", keys.counter("c").batch(MAX_BATCH + 1)),
        ("no calls", keys.counter("c").max_per_call(0)),
        (
            "expiry on a counter that never resets",
            keys.counter("c").key_ttl(Duration::from_secs(86_400)),
        ),
        (
            "expiry shorter than a day",
            keys.counter("c")
                .template(template("{date:%F}{seq}"))
                .key_ttl(Duration::from_secs(86_400)),
        ),
        ("long prefix", keys.counter("c").prefix("p".repeat(129))),
    ];
    for (what, builder) in refused {
        match builder.connect(&url()).await {
            Err(Error::InvalidInput(message)) => assert!(!message.is_empty()),
            other => panic!("{what}: expected InvalidInput, got {other:?}"),
        }
    }
    let counter = keys
        .counter("c")
        .max_per_call(50)
        .connect(&url())
        .await
        .unwrap();
    for n in [0, 51, u64::MAX] {
        let err = counter.next(n).await.unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{n}: {err}");
        assert!(err.to_string().contains("use 1 to 50"), "{err}");
    }
    assert_eq!(counter.stats().round_trips, 0);
    assert!(keys.list().await.is_empty());
    keys.cleanup().await;
}

#[tokio::test]
async fn a_key_set_below_zero_is_reported() {
    let mut keys = Keys::new("corrupt").await;
    let counter = keys.counter("c").batch(10).connect(&url()).await.unwrap();
    let key = counter.key_at(0).unwrap();
    keys.set(&key, -5).await;
    match counter.next(1).await {
        Err(Error::CounterCorrupt { key: k, value }) => assert_eq!((k, value), (key, -5)),
        other => panic!("expected CounterCorrupt, got {other:?}"),
    }
    keys.cleanup().await;
}
