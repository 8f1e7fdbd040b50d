//! The client against real servers, in this process: IDs from the cache are never repeated,
//! batches are fetched far less often than IDs are taken, final errors come at once, and
//! with two servers one going away is not noticed, both going away drains the cache and
//! then says so, and a server coming back is used again.

mod compat;
mod handles;
mod liar;
mod server;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use snowdrift_client::{Client, ErrorKind};

use server::{Server, create_tag};

fn client(endpoints: &[String]) -> Client {
    Client::builder()
        .endpoints(endpoints.iter().cloned())
        .deadline(Duration::from_secs(1))
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_come_from_the_cache_and_are_never_repeated() {
    let dir = server::dir("client-cache");
    let s = Server::start(&dir, 0, None).await;
    create_tag(&s.base(), "order", 1000).await;
    let client = client(&[s.base()]);
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for i in 0..20_000u64 {
                got.push(client.next("order").await.unwrap());
                if i % 1000 == 0 {
                    got.extend(client.next_n("snowflake", 7).await.unwrap());
                }
            }
            got
        }));
    }
    let mut seen = HashSet::new();
    for t in tasks {
        for id in t.await.unwrap() {
            assert!(seen.insert(id), "{id} handed out twice");
        }
    }
    assert_eq!(seen.len(), 3 * (20_000 + 20 * 7));
    let stats = client.stats("order").unwrap();
    // Served counts IDs that left the shared cache: handed out, or held in a thread's block
    // of at most 1,024 (the runtime has 2 worker threads).
    assert!(
        (60_000..=60_000 + 2 * 1024).contains(&stats.served),
        "{stats:?}"
    );
    // Batches start at 100 and grow with the rate: far fewer fetches than IDs.
    assert!(stats.fetches < 600, "{stats:?}");
    assert!(stats.batch > 100, "the batch did not grow: {stats:?}");
    // The server's next ID is above everything the client handed out.
    let next = client_of_one(&s.base()).next("order").await.unwrap();
    assert!(seen.iter().all(|&id| id < next || id > 1 << 40), "{next}");
    s.stop().await;
}

/// A server whose `limits.max_count` (1,000 here) is below the client's batches (5,000 to
/// 50,000): its `Next` refuses each of those counts before issuing anything, and its
/// `Stream` serves them in messages of its own size. Every ID comes, once, and the refusal
/// is paid once per endpoint. (Before, the client asked for messages of 10,000, which such
/// a server refuses too: no ID came.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_allows_smaller_batches_is_served_by_streams() {
    let dir = server::dir("client-max-count");
    let s = Server::start_with(&dir, 0, None, "[limits]\nmax_count = 1000").await;
    create_tag(&s.base(), "order", 1_000_000).await;
    let client = Client::builder()
        .endpoints([s.base()])
        .batch(5_000, 50_000)
        .deadline(Duration::from_secs(5))
        .build()
        .unwrap();
    for name in ["order", "snowflake"] {
        let mut seen = HashSet::new();
        for _ in 0..120_000 {
            let id = client.next(name).await.unwrap();
            assert!(seen.insert(id), "{name}: {id} handed out twice");
        }
        let stats = client.stats(name).unwrap();
        assert!(stats.fetches >= 3, "{name}: {stats:?}");
    }
    // The refusal is remembered for the endpoint: one refused `Next` in all, every later
    // batch of either name streamed straight away.
    let metrics = reqwest::get(format!("{}/metrics", s.base()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let refused: Vec<&str> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("snowdrift_request_duration_seconds_count")
                && l.contains("IdService/Next")
                && !l.contains("status=\"OK\"")
        })
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].ends_with(" 1"), "{refused:?}");
    s.stop().await;
}

fn client_of_one(base: &str) -> Client {
    Client::builder()
        .endpoints([base.to_string()])
        .batch(1, 1)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_and_final_errors() {
    let dir = server::dir("client-kinds");
    let s = Server::start(&dir, 0, None).await;
    create_tag(&s.base(), "order", 1000).await;
    let client = client(&[s.base()]);
    let a = client.next_text("uuid7").await.unwrap();
    let b = client.next_text("uuid7").await.unwrap();
    assert!(a.len() == 36 && a < b, "{a} {b}");
    assert_eq!(
        client.next("uuid7").await.unwrap_err().kind(),
        ErrorKind::WrongKind
    );
    client.next("order").await.unwrap();
    assert_eq!(
        client.next_text("order").await.unwrap_err().kind(),
        ErrorKind::WrongKind
    );
    // Not found is final: one answer, no retries across the attempts' backoff.
    let start = Instant::now();
    let e = client.next("no-such-tag").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.is_final());
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "{:?}",
        start.elapsed()
    );
    let e = Client::builder().build().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = Client::builder()
        .endpoints(["ftp://x"])
        .build()
        .unwrap_err();
    assert!(e.message().contains("http://HOST:PORT"), "{e}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_gone_is_not_noticed_both_gone_drains_the_cache_then_says_so() {
    let dir = server::dir("client-failover");
    let a = Server::start(&dir, 0, None).await;
    let b = Server::start(&dir, 1, None).await;
    create_tag(&a.base(), "order", 500).await;
    let endpoints = [a.base(), b.base()];
    let client = Client::builder()
        .endpoints(endpoints.iter().cloned())
        .batch(50, 50)
        .deadline(Duration::from_millis(500))
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .build()
        .unwrap();
    let mut seen = HashSet::new();
    let mut take = |id: u64| assert!(seen.insert(id), "{id} twice");
    for _ in 0..500 {
        take(client.next("order").await.unwrap());
    }
    // One server goes away: not one error.
    let a_addr = a.addr;
    a.stop().await;
    for _ in 0..2_000 {
        take(client.next("order").await.unwrap());
    }
    // Both away: what is cached is still served, then a clear error naming the endpoints.
    b.stop().await;
    let mut served_after = 0;
    let error = loop {
        match client.next("order").await {
            Ok(id) => {
                take(id);
                served_after += 1;
                assert!(served_after <= 100, "more IDs than two batches hold");
            }
            Err(e) => break e,
        }
    };
    assert_eq!(error.kind(), ErrorKind::Unavailable, "{error}");
    for endpoint in &endpoints {
        assert!(error.message().contains(endpoint.as_str()), "{error}");
    }
    assert!(error.message().contains("\"order\""), "{error}");
    // A server back on the first address is used again without a new client.
    let back = Server::start(&dir, 0, Some(a_addr)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        match client.next("order").await {
            Ok(id) => break id,
            Err(e) if Instant::now() < deadline => {
                assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("no recovery: {e}"),
        }
    };
    take(id);
    back.stop().await;
}

#[test]
fn the_blocking_client_works_from_plain_threads() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = server::dir("client-blocking");
    let s = runtime.block_on(Server::start(&dir, 0, None));
    runtime.block_on(create_tag(&s.base(), "order", 1000));
    let client = snowdrift_client::blocking::Client::builder()
        .endpoints([s.base()])
        .build()
        .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let client = client.clone();
            std::thread::spawn(move || {
                (0..5_000)
                    .map(|_| client.next("order").unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for t in threads {
        for id in t.join().unwrap() {
            assert!(seen.insert(id), "{id} twice");
        }
    }
    assert_eq!(seen.len(), 20_000);
    assert!(client.next_text("ulid").unwrap().len() == 26);
    runtime.block_on(s.stop());
}

async fn wait_until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_follow_the_servers_health_service() {
    let dir = server::dir("client-health");
    let a = Server::start(&dir, 0, None).await;
    let b = Server::start(&dir, 1, None).await;
    // One ID per fetch, so every next() is a call to a server.
    let client = Client::builder()
        .endpoints([a.base(), b.base()])
        .batch(1, 1)
        .backoff(Duration::from_millis(20), Duration::from_millis(200))
        .build()
        .unwrap();
    // Before any fetch, the watchers have heard SERVING from both.
    wait_until("both SERVING", || {
        client.endpoints().iter().all(|e| e.serving == Some(true))
    })
    .await;
    let a_addr = a.addr;
    a.stop().await;
    wait_until("a not serving", || {
        client.endpoints()[0].serving == Some(false)
    })
    .await;
    // Fetches go to b alone: a is not even tried, so it has no failure on record.
    for _ in 0..20 {
        client.next("snowflake").await.unwrap();
    }
    let status = client.endpoints();
    assert_eq!(status[0].failures, 0, "{status:?}");
    assert!(
        status[1].up && status[1].serving == Some(true),
        "{status:?}"
    );
    // a back on its address: its watch reconnects and hears SERVING.
    let back = Server::start(&dir, 0, Some(a_addr)).await;
    wait_until("a SERVING again", || {
        client.endpoints()[0].serving == Some(true)
    })
    .await;
    back.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuid_and_ulid_names_can_be_made_locally_once_their_kind_is_known() {
    let dir = server::dir("client-local");
    let s = Server::start(&dir, 0, None).await;
    let client = Client::builder()
        .endpoints([s.base()])
        .generate_locally(true)
        .batch(100, 100)
        .deadline(Duration::from_millis(300))
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .build()
        .unwrap();
    let mut seen = HashSet::new();
    for name in ["uuid7", "ulid", "objectid"] {
        assert!(seen.insert(client.next_text(name).await.unwrap()));
    }
    s.stop().await;
    // With no server: far more than a batch of UUIDs and ULIDs, in the servers' forms.
    let mut last = String::new();
    for _ in 0..1_000 {
        let u = client.next_text("uuid7").await.unwrap();
        assert!(u.len() == 36 && &u[14..15] == "7" && u > last, "{u}");
        last = u.clone();
        assert!(seen.insert(u));
        let l = client.next_text("ulid").await.unwrap();
        assert_eq!(l.len(), 26, "{l}");
        assert!(seen.insert(l));
    }
    // ObjectIds carry a process and counter the servers coordinate: fetched only, so they
    // run out.
    let mut objectids = 0;
    let e = loop {
        match client.next_text("objectid").await {
            Ok(id) => {
                assert!(seen.insert(id));
                objectids += 1;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(objectids < 100, "{objectids}");
    assert!(client.stats("uuid7").unwrap().fetches == 1);
}

/// TypeIDs and KSUIDs need no coordination either: once the first fetch showed the kind
/// (and, for a TypeID, its prefix), they are made here in the servers' forms, TypeIDs with
/// the prefix of those fetched and in increasing order, even with every server gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typeid_and_ksuid_names_can_be_made_locally_once_their_kind_is_known() {
    let dir = server::dir("client-local-typeid");
    // Generator tables after the `[server]` keys the helper writes.
    let generators = "[[generator]]\nname = \"users\"\nkind = \"typeid\"\nprefix = \"user\"\n\
                      [[generator]]\nname = \"ksuid\"\nkind = \"ksuid\"\n";
    let s = Server::start_with(&dir, 0, None, generators).await;
    let client = Client::builder()
        .endpoints([s.base()])
        .generate_locally(true)
        .batch(100, 100)
        .deadline(Duration::from_millis(300))
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .build()
        .unwrap();
    let mut seen = HashSet::new();
    let mut last = client.next_text("users").await.unwrap();
    assert!(last.starts_with("user_"), "{last}");
    assert!(seen.insert(last.clone()));
    assert!(seen.insert(client.next_text("ksuid").await.unwrap()));
    s.stop().await;
    for _ in 0..1_000 {
        let t = client.next_text("users").await.unwrap();
        let id: snowdrift_core::kinds::TypeId = t.parse().unwrap();
        assert_eq!(id.prefix(), "user", "{t}");
        assert_eq!(id.uuid().get_version_num(), 7, "{t}");
        assert!(t > last, "{t} after {last}");
        last = t.clone();
        assert!(seen.insert(t));
        let k = client.next_text("ksuid").await.unwrap();
        let parsed: snowdrift_core::kinds::Ksuid = k.parse().unwrap();
        assert_eq!(parsed.to_string(), k);
        assert!(seen.insert(k));
    }
    assert_eq!(client.stats("users").unwrap().fetches, 1);
    assert_eq!(client.stats("ksuid").unwrap().fetches, 1);
}

/// xid and cuid2 names are made locally once their kind is known: xids with this host's
/// machine ID (not the server's configured one) and this process's ID (rs/xid's rules), cuid2s of the length the servers'
/// batch had. Nano IDs are fetched only (a batch does not carry the alphabet), so they run
/// out when the server is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xid_and_cuid2_names_are_made_locally_and_nanoids_fetched() {
    use snowdrift_core::kinds::{cuid2, xid};
    let dir = server::dir("client-local-text");
    let s = Server::start_with(
        &dir,
        0,
        None,
        "[[generator]]\nname = \"x\"\nkind = \"xid\"\nmachine_id = 1\n\
         [[generator]]\nname = \"c\"\nkind = \"cuid2\"\nlength = 10\n\
         [[generator]]\nname = \"n\"\nkind = \"nanoid\"\nsize = 30\n",
    )
    .await;
    let client = Client::builder()
        .endpoints([s.base()])
        .generate_locally(true)
        .batch(100, 100)
        .deadline(Duration::from_millis(300))
        .backoff(Duration::from_millis(20), Duration::from_millis(100))
        .build()
        .unwrap();
    let mut seen = HashSet::new();
    for name in ["x", "c", "n"] {
        assert!(seen.insert(client.next_text(name).await.unwrap()));
    }
    s.stop().await;
    let (machine, _) = xid::read_host_machine_id(None, [0; 3]).unwrap();
    let pid = xid::read_process_id();
    // The rest of the fetched batch first (the server's machine_id 1), then local ones.
    let mut local = 0;
    for _ in 0..1_000 {
        let x: xid::Xid = client.next_text("x").await.unwrap().parse().unwrap();
        assert_eq!(x.pid(), pid, "{x}");
        if x.machine() == machine {
            local += 1;
        } else {
            assert_eq!((x.machine(), local), ([0, 0, 1], 0), "{x}");
        }
        assert!(seen.insert(x.to_string()));
        let c = client.next_text("c").await.unwrap();
        cuid2::check(&c, 10).unwrap();
        assert!(seen.insert(c));
    }
    let mut nanoids = 0;
    let e = loop {
        match client.next_text("n").await {
            Ok(id) => {
                assert_eq!(id.len(), 30);
                assert!(seen.insert(id));
                nanoids += 1;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(nanoids < 100, "{nanoids}");
    assert!(local > 900, "{local}");
    assert_eq!(client.stats("x").unwrap().fetches, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_endpoints_are_checked_against_the_given_ca() {
    let dir = server::dir("client-tls");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
    let s = Server::start_with(
        &dir,
        0,
        None,
        &format!(
            "tls_cert = \"{}\"\ntls_key = \"{}\"",
            dir.join("cert.pem").display(),
            dir.join("key.pem").display()
        ),
    )
    .await;
    let url = format!("https://localhost:{}", s.addr.port());
    let trusting = Client::builder()
        .endpoints([url.clone()])
        .ca_certificate(cert.cert.pem())
        .build()
        .unwrap();
    let a = trusting.next("snowflake").await.unwrap();
    assert!(trusting.next("snowflake").await.unwrap() > a);
    // The same server, not trusted: no ID, and an error that names the endpoint.
    let strict = Client::builder()
        .endpoints([url.clone()])
        .attempts(1)
        .build()
        .unwrap();
    let e = strict.next("snowflake").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains(&url), "{e}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_counts_go_to_the_metrics_recorder() {
    // nextest runs each test in its own process, so a global recorder is this test's alone.
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .unwrap();
    let dir = server::dir("client-metrics");
    let s = Server::start(&dir, 0, None).await;
    create_tag(&s.base(), "order", 1000).await;
    // Small batches: a background fetch still running holds the client (and so delays the
    // count at its drop) only briefly.
    let client = Client::builder()
        .endpoints([s.base()])
        .batch(100, 1_000)
        .build()
        .unwrap();
    for _ in 0..1_000 {
        client.next("order").await.unwrap();
    }
    let stats = client.stats("order").unwrap();
    let text = handle.render();
    let value = |text: &str, metric: &str| {
        text.lines()
            .find(|l| l.starts_with(metric) && l.contains("name=\"order\""))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {metric} in:\n{text}"))
    };
    assert_eq!(
        value(&text, "snowdrift_client_fetches_total") as u64,
        stats.fetches
    );
    assert!(value(&text, "snowdrift_client_served_total") > 0.0);
    assert!(value(&text, "snowdrift_client_batch") >= 100.0);
    // Dropped, the client counts what it still cached as wasted: skipped for good.
    assert!(stats.cached > 0, "{stats:?}");
    drop(client);
    wait_until("the dropped cache counted as wasted", || {
        value(&handle.render(), "snowdrift_client_wasted_total") as u64 >= stats.cached
    })
    .await;
    assert!(text.contains("snowdrift_client_fetch_seconds"), "{text}");
    s.stop().await;
}

/// A server whose one generator is the timestamp oracle `name` on the test etcd.
async fn tso_server(
    dir: &std::path::Path,
    name: &str,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let file = dir.join("tso.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"{addr}\"\nadvertise = \"http://{addr}\"\n[store]\nurl = \"sqlite://{}\"\n\
             [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{}\"\n",
            dir.join("ids.db").display(),
            snowdrift_testkit::urls::etcd()
        ),
    )
    .unwrap();
    let config = snowdrift_server::Config::load(Some(&file), Vec::new()).unwrap();
    let server = snowdrift_server::Server::start(&config).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(snowdrift_server::run(listener, server, async move {
        let _ = stopped.await;
    }));
    (format!("http://{addr}"), stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tso_ids_are_never_cached_so_two_clients_see_them_in_order() {
    let dir = server::dir("client-tso");
    let name = snowdrift_testkit::unique_name("ts");
    let (base, stop) = tso_server(&dir, &name).await;
    let (a, b) = (client(std::slice::from_ref(&base)), client(&[base]));
    // A cached ID would be older than the one the other client fetched in between.
    let mut last = 0;
    for i in 0..300 {
        let id = if i % 2 == 0 {
            a.next(&name).await.unwrap()
        } else {
            b.next_n(&name, 3).await.unwrap()[0]
        };
        assert!(id > last, "call {i}: {id} after {last}");
        last = id;
    }
    let batch = a.next_n(&name, 5).await.unwrap();
    assert!(batch.windows(2).all(|w| w[1] == w[0] + 1), "{batch:?}");
    assert!(batch[0] > last);
    let stats = a.stats(&name).unwrap();
    assert_eq!(stats.cached, 0, "{stats:?}");
    // Every call but the first (which learned the kind) was one fetch.
    assert_eq!(stats.fetches, 150 + 1 + 1, "{stats:?}");
    assert_eq!(stats.served, 150 + 5, "{stats:?}");
    let _ = stop.send(());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Concurrent calls for a tso name share fetches: the callers a fetch answered call again
/// at once, and the next fetch waits (less than half a round trip) for them to gather,
/// rather than going for the first of them alone and leaving the rest for the one after.
/// On one runtime thread that is one fetch per round of 16 calls (about 100 fetches for
/// 1,600 calls); without gathering it was two (about 200): the caller that started the
/// next dispatcher left it in the runtime's next-task slot, ahead of the other callers.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn concurrent_tso_calls_gather_into_one_fetch_per_round() {
    let dir = server::dir("client-tso-gather");
    let name = snowdrift_testkit::unique_name("ts");
    // The server on a runtime of its own, as it would be in another process: on this
    // thread, its work would hold each fetch until every caller had joined anyway.
    let (started, base) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = {
        let (dir, name) = (dir.clone(), name.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let (base, stop) = tso_server(&dir, &name).await;
                started.send(base).unwrap();
                let _ = stopped.await;
                let _ = stop.send(());
            });
        })
    };
    let c = client(&[base.recv().unwrap()]);
    c.next(&name).await.unwrap();
    let before = c.stats(&name).unwrap().fetches;
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let ids = c.ids(&name);
            tokio::spawn(async move {
                let mut got = Vec::new();
                for _ in 0..100 {
                    got.push(ids.next().await.unwrap());
                }
                got
            })
        })
        .collect();
    let mut all = std::collections::HashSet::new();
    for t in tasks {
        for id in t.await.unwrap() {
            assert!(all.insert(id), "{id} twice");
        }
    }
    let fetches = c.stats(&name).unwrap().fetches - before;
    assert!(
        fetches <= 150,
        "{fetches} fetches for 1,600 calls of 16 tasks: the calls did not gather"
    );
    let _ = stop.send(());
    server.join().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_named_sends_the_input_a_uuid5_generator_hashes() {
    let dir = server::dir("client-named");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let file = dir.join("named.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nlisten = \"{addr}\"\n[store]\nurl = \"sqlite://{}\"\n\
             [[generator]]\nname = \"site\"\nkind = \"uuid5\"\nnamespace = \"dns\"\n\
             [[generator]]\nname = \"snowflake\"\nkind = \"snowflake\"\n",
            dir.join("ids.db").display(),
        ),
    )
    .unwrap();
    let workers = dir.join("workers").display().to_string();
    let config = snowdrift_server::Config::load(
        Some(&file),
        [("SNOWDRIFT_WORKER__PATH".to_string(), workers)],
    )
    .unwrap();
    let server = snowdrift_server::Server::start(&config).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(snowdrift_server::run(listener, server, async move {
        let _ = stopped.await;
    }));
    let client = client(&[format!("http://{addr}")]);
    // RFC 9562's example: the v5 UUID of "www.example.com" in the DNS namespace.
    let id = client.next_named("site", "www.example.com").await.unwrap();
    assert_eq!(id, "2ed6657d-e927-568b-95e1-2665a8aea6a2");
    assert_eq!(
        client.next_named("site", "www.example.com").await.unwrap(),
        id
    );
    // Without an input the server says what is missing; a 64-bit kind is refused.
    let e = client.next_text("site").await.unwrap_err();
    assert!(e.to_string().contains("input"), "{e}");
    let e = client.next_named("snowflake", "x").await.unwrap_err();
    assert!(
        e.to_string().contains("input") || e.kind() == ErrorKind::WrongKind,
        "{e}"
    );
    let _ = stop.send(());
    let _ = std::fs::remove_dir_all(&dir);
}
