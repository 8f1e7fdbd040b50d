//! `kind = "tso"`: three servers in this process elect a leader on the real etcd; clients
//! ask every node at once and record what they saw; the history checker (uniqueness,
//! consecutive batches, real-time order) must find nothing, through a leader that resigns
//! and a leader cut off from etcd by the fault proxy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use snowdrift_testkit::FaultProxy;
use snowdrift_testkit::history::History;
use tokio::sync::Mutex;

use crate::support::{Running, TempDir, load, try_load};

/// One node: its directory, its address and the running server.
pub(crate) struct Node {
    pub(crate) running: Option<Running>,
    pub(crate) base: String,
    _dir: TempDir,
}

/// Starts a node serving tso generator `name` on etcd `etcd` with leader lease `ttl`,
/// advertising its own address.
pub(crate) async fn node(name: &str, etcd: &str, ttl: &str) -> Node {
    let dir = TempDir::new("tso");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = load(
        &dir.0,
        &format!(
            "[server]\nlisten = \"{addr}\"\nadvertise = \"http://{addr}\"\n\n\
             [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{etcd}\"\nttl = \"{ttl}\"\n"
        ),
    );
    let server = snowdrift_server::Server::start(&config).await.unwrap();
    let reloader = server.reloader();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(snowdrift_server::run(listener, server, async move {
        let _ = stopped.await;
    }));
    Node {
        running: Some(Running {
            addr,
            resp: None,
            stop: Some(stop),
            task,
            reloader,
        }),
        base: format!("http://{addr}"),
        _dir: dir,
    }
}

/// GET `url` as JSON.
pub(crate) async fn get_json(http: &reqwest::Client, url: String) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The generator's entry in `/v1/generators` of `base`.
pub(crate) async fn tso_status(http: &reqwest::Client, base: &str, name: &str) -> Value {
    let all: Value = get_json(http, format!("{base}/v1/generators")).await;
    all["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {all}"))["tso"]
        .clone()
}

/// The index of the node that leads, once exactly one of `bases` says it does and every
/// other names it.
pub(crate) async fn leader(http: &reqwest::Client, bases: &[&str], name: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut roles = Vec::new();
        for base in bases {
            roles.push(tso_status(http, base, name).await);
        }
        let leaders: Vec<usize> = (0..bases.len())
            .filter(|&i| roles[i]["role"] == "leader")
            .collect();
        if let [one] = leaders.as_slice() {
            let others_agree = (0..bases.len())
                .filter(|&i| i != *one)
                .all(|i| roles[i]["leader"].as_str() == Some(bases[*one]));
            if others_agree {
                return *one;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no single leader after 20 s: {roles:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clients that ask every node in turn, recording each request, until `stop`.
pub(crate) struct Load {
    history: Arc<Mutex<History>>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<(u64, u64, Duration)>>,
}

impl Load {
    pub(crate) fn start(
        bases: Vec<String>,
        name: &str,
        clients: usize,
        base_time: Instant,
    ) -> Self {
        let history = Arc::new(Mutex::new(History::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..clients)
            .map(|c| {
                let (history, stop, bases) = (history.clone(), stop.clone(), bases.clone());
                let name = name.to_string();
                tokio::spawn(async move {
                    let http = client();
                    let (mut ok, mut failed) = (0u64, 0u64);
                    let mut slowest = Duration::ZERO;
                    let mut i = c;
                    while !stop.load(Ordering::Relaxed) {
                        let base = &bases[i % bases.len()];
                        let count = 1 + (i * 7 + c) % 40;
                        i += 1;
                        let invoke = base_time.elapsed().as_nanos() as u64;
                        let answer = http
                            .get(format!("{base}/v1/ids/{name}?count={count}"))
                            .send()
                            .await;
                        let ids: Vec<u64> = match answer {
                            Ok(r) if r.status() == 200 => {
                                let v: Value = r.json().await.unwrap();
                                crate::support::ids_of(&v)
                            }
                            Ok(r) => {
                                let status = r.status().as_u16();
                                assert_eq!(status, 503, "{}", r.text().await.unwrap());
                                Vec::new()
                            }
                            // A node shut down under the client.
                            Err(_) => Vec::new(),
                        };
                        let complete = base_time.elapsed().as_nanos() as u64;
                        slowest = slowest.max(Duration::from_nanos(complete - invoke));
                        if ids.is_empty() {
                            failed += 1;
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        } else {
                            assert_eq!(ids.len(), count, "a batch of {count}");
                            ok += 1;
                        }
                        history
                            .lock()
                            .await
                            .push(&format!("c{c}"), invoke, complete, ids)
                            .unwrap();
                    }
                    (ok, failed, slowest)
                })
            })
            .collect();
        Self {
            history,
            stop,
            tasks,
        }
    }

    /// Stops the clients; the history, the requests that got IDs and that failed, and the
    /// slowest request.
    pub(crate) async fn finish(self) -> (History, u64, u64, Duration) {
        self.stop.store(true, Ordering::Relaxed);
        let (mut ok, mut failed, mut slowest) = (0, 0, Duration::ZERO);
        for t in self.tasks {
            let (o, f, s) = t.await.unwrap();
            ok += o;
            failed += f;
            slowest = slowest.max(s);
        }
        let history = Arc::try_unwrap(self.history).unwrap().into_inner();
        (history, ok, failed, slowest)
    }
}

/// The counts of a report and its first violations (a broken build finds hundreds).
pub(crate) fn summary(report: &snowdrift_testkit::history::HistoryReport) -> String {
    format!(
        "{} operations, {} IDs: {} duplicates, {} gaps, {} real-time order violations; first: {:#?}",
        report.operations,
        report.ids,
        report.duplicate_count,
        report.gap_count,
        report.real_time_count,
        &report.violations[..report.violations.len().min(3)]
    )
}

/// IDs issued so far in `history`.
fn ids_in(history: &History) -> usize {
    history.id_count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_issue_linearizable_ids_through_a_leader_handover() {
    let name = snowdrift_testkit::unique_name("ts");
    let etcd = snowdrift_testkit::urls::etcd();
    let mut nodes = Vec::new();
    // A long lease: a successor that waited for it instead of the resignation would show.
    for _ in 0..3 {
        nodes.push(node(&name, &etcd, "10s").await);
    }
    let http = client();
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let refs: Vec<&str> = bases.iter().map(String::as_str).collect();
    let first = leader(&http, &refs, &name).await;
    for base in &bases {
        let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
        assert_eq!(ready.status(), 200, "{}", ready.text().await.unwrap());
    }

    let base_time = Instant::now();
    let load = Load::start(bases.clone(), &name, 6, base_time);
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // The leader resigns (a graceful stop): another node takes over at once.
    let before_handover = base_time.elapsed().as_nanos() as u64;
    let stopped = nodes[first].running.take().unwrap();
    stopped.shutdown().await.unwrap();
    let rest: Vec<&str> = (0..3).filter(|&i| i != first).map(|i| refs[i]).collect();
    let second = leader(&http, &rest, &name).await;
    let handover = Duration::from_nanos(base_time.elapsed().as_nanos() as u64 - before_handover);
    // The lease would have let another lead only 6.7-10 s after the last renewal.
    assert!(
        handover < Duration::from_secs(5),
        "{handover:?}: the stopped leader did not resign"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (history, ok, failed, slowest) = load.finish().await;

    let report = history.check();
    assert!(report.is_clean(), "{}", summary(&report));
    assert!(ok > 500, "only {ok} requests got IDs ({failed} failed)");
    // A request racing the handover is answered or refused soon, not held until the old
    // leader's lease (10 s) would pass: a follower whose leader did not answer asks again
    // shortly instead of waiting for its view of the leader to change (which took the 10 s).
    assert!(
        slowest < Duration::from_secs(5),
        "a request took {slowest:?} across the handover"
    );
    eprintln!(
        "tso: {ok} requests, {} IDs, {failed} failed (to the node that stopped, or during \
         the handover of {handover:?})",
        ids_in(&history)
    );

    // The new leader's IDs decode to the present, above the old leader's window.
    let new_base = rest[second];
    let v: Value = get_json(&http, format!("{new_base}/v1/ids/{name}?count=3")).await;
    let id = v["ids"][0].as_str().unwrap().to_string();
    let decoded: Value = get_json(&http, format!("{new_base}/v1/ids/{name}/decode/{id}")).await;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let time_ms = decoded["time_ms"].as_u64().unwrap();
    // Ahead of the clock by at most the window (3 s) the old leader saved, plus slack.
    assert!(
        time_ms + 5_000 > now_ms && time_ms < now_ms + 5_000,
        "{decoded} vs now {now_ms}"
    );
    assert_eq!(
        decoded["id"].as_str().unwrap().parse::<u64>().unwrap() >> 18,
        time_ms,
        "{decoded}"
    );

    // Metrics say who leads, and that followers forwarded.
    let leader_metrics = http
        .get(format!("{new_base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = format!("snowdrift_tso_leader{{generator=\"{name}\"}} 1");
    assert!(leader_metrics.contains(&series), "{leader_metrics}");
    let groups = format!("snowdrift_tso_group_requests_count{{generator=\"{name}\"}}");
    assert!(leader_metrics.contains(&groups), "{leader_metrics}");
    crate::metrics::promtool_check(&leader_metrics);
    let follower = rest[1 - second];
    let status = tso_status(&http, follower, &name).await;
    assert_eq!(status["role"], "follower", "{status}");
    assert!(status["forwards"].as_u64().unwrap() > 0, "{status}");
    // The real leader's answers pass every check, though two calls are in flight at once.
    for (reason, n) in status["forward_refused"].as_object().unwrap() {
        assert_eq!(n, 0, "{reason}: {status}");
    }
    // Requests waiting together share a call.
    assert!(
        status["forward_calls"].as_u64().unwrap() <= status["forwards"].as_u64().unwrap(),
        "{status}"
    );

    for n in &mut nodes {
        if let Some(r) = n.running.take() {
            r.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_cut_off_from_etcd_stops_issuing_before_another_leads() {
    let name = snowdrift_testkit::unique_name("ts");
    let etcd = snowdrift_testkit::urls::etcd();
    let (proxy, through_proxy) = FaultProxy::start_for_url(&etcd).await.unwrap();
    // The node behind the proxy starts first, so it leads.
    let cut_node = node(&name, &through_proxy, "2s").await;
    let http = client();
    leader(&http, &[cut_node.base.as_str()], &name).await;
    let mut nodes = vec![cut_node];
    for _ in 0..2 {
        nodes.push(node(&name, &etcd, "2s").await);
    }
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let refs: Vec<&str> = bases.iter().map(String::as_str).collect();
    assert_eq!(leader(&http, &refs, &name).await, 0);

    let base_time = Instant::now();
    let load = Load::start(bases.clone(), &name, 6, base_time);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    // Every packet to etcd is dropped: renewals hang, the lease runs out on etcd's side,
    // and the old leader must have stopped before that.
    proxy.black_hole();
    let new_leader = leader(&http, &refs[1..], &name).await + 1;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (history, ok, failed, _) = load.finish().await;

    let report = history.check();
    assert!(report.is_clean(), "{}", summary(&report));
    assert!(ok > 300, "only {ok} requests got IDs ({failed} failed)");
    let cut = tso_status(&http, refs[0], &name).await;
    assert_ne!(cut["role"], "leader", "{cut}");
    let status = tso_status(&http, refs[new_leader], &name).await;
    assert_eq!(status["role"], "leader", "{status}");
    proxy.heal();
    for n in &mut nodes {
        if let Some(r) = n.running.take() {
            r.shutdown().await.unwrap();
        }
    }
}

#[test]
fn tso_configuration_mistakes_are_refused_with_the_key() {
    let dir = TempDir::new("tso-config");
    let refused = |toml: &str| {
        try_load(&dir.0, toml)
            .err()
            .unwrap_or_else(|| panic!("accepted:\n{toml}"))
            .to_string()
    };
    let generator = "[[generator]]\nname = \"ts\"\nkind = \"tso\"\ninsecure_coordinator = true\n";
    let listen = "[server]\nlisten = \"127.0.0.1:9000\"\n";
    let e = refused(&format!("{listen}{generator}"));
    assert!(e.contains("kind tso needs url"), "{e}");
    let etcd = "url = \"etcd://127.0.0.1:2379\"\n";
    let e = refused(&format!("{listen}{generator}{etcd}url2 = 1\n"));
    assert!(e.contains("url2"), "{e}");
    let e = refused(&format!("{listen}{generator}{etcd}logical_bits = 8\n"));
    assert!(
        e.contains("logical_bits") && e.contains("limits.max_count"),
        "{e}"
    );
    let e = refused(&format!("{listen}{generator}{etcd}logical_bits = 40\n"));
    assert!(e.contains("logical_bits") && e.contains("1..=32"), "{e}");
    let e = refused(&format!("{listen}{generator}{etcd}ttl = \"1500ms\"\n"));
    assert!(
        e.contains("ttl") && e.contains("whole number of seconds"),
        "{e}"
    );
    let e = refused(&format!(
        "{listen}{generator}url = \"redis://127.0.0.1:6379\"\n"
    ));
    assert!(e.contains("not an etcd URL"), "{e}");
    let e = refused(&format!(
        "[server]\nlisten = \"0.0.0.0:9000\"\ninsecure_bind = true\n{generator}{etcd}"
    ));
    assert!(e.contains("server.advertise"), "{e}");
    let e = refused(&format!(
        "[server]\nlisten = \"127.0.0.1:9000\"\nadvertise = \"10.0.0.5:9000\"\n{generator}{etcd}"
    ));
    assert!(e.contains("server.advertise") && e.contains("http"), "{e}");
    let token = "[[auth.token]]\nname = \"app\"\nhash = \"sha256:0000000000000000000000000000000000000000000000000000000000000000\"\ngenerators = [\"*\"]\nrole = \"read\"\n";
    let e = refused(&format!("{listen}{token}{generator}{etcd}"));
    assert!(e.contains("forward_token"), "{e}");
    // With auth on over plain http, the forward token would travel in cleartext.
    let forward = "forward_token = \"sd_x\"\n";
    let e = refused(&format!("{listen}{token}{generator}{etcd}{forward}"));
    assert!(
        e.contains("forward_plaintext") && e.contains("cleartext"),
        "{e}"
    );
    load(
        &dir.0,
        &format!("{listen}{token}{generator}{etcd}{forward}forward_plaintext = true\n"),
    );
    let e = refused(&format!(
        "{listen}[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nforward_plaintext = true\n"
    ));
    assert!(e.contains("\"forward_plaintext\" does not apply"), "{e}");
    let e = refused(&format!("{listen}{generator}{etcd}window = \"0s\"\n"));
    assert!(e.contains("window"), "{e}");
    let e = refused(&format!(
        "{listen}[[generator]]\nname = \"sf\"\nkind = \"snowflake\"\nwindow = \"3s\"\n"
    ));
    assert!(e.contains("\"window\" does not apply"), "{e}");
    // And one that is right.
    load(
        &dir.0,
        &format!("{listen}{generator}{etcd}window = \"5s\"\nlogical_bits = 20\nttl = \"4s\"\n"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transport_takes_its_turn_in_one_order() {
    use snowdrift_proto::grpc::id_service_client::IdServiceClient;
    use snowdrift_proto::grpc::{NextRequest, StreamRequest};
    let name = snowdrift_testkit::unique_name("ts");
    let dir = TempDir::new("tso-transports");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = load(
        &dir.0,
        &format!(
            "[server]\nlisten = \"{addr}\"\nadvertise = \"http://{addr}\"\nresp_listen = \"127.0.0.1:0\"\n\n\
             [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{}\"\n",
            snowdrift_testkit::urls::etcd()
        ),
    );
    let server = snowdrift_server::Server::start(&config).await.unwrap();
    let resp = server.resp_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(snowdrift_server::run(listener, server, async move {
        let _ = stopped.await;
    }));
    let base = format!("http://{addr}");
    let http = client();
    leader(&http, &[base.as_str()], &name).await;

    let runs: Value = get_json(&http, format!("{base}/v1/ids/{name}?count=5&form=runs")).await;
    assert_eq!(runs["kind"], "tso", "{runs}");
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1, "{runs}");
    let mut last: u64 = runs["runs"][0]["first"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap()
        + 4;

    let channel = tonic::transport::Endpoint::from_shared(base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = IdServiceClient::new(channel);
    let batch = grpc
        .next(NextRequest {
            name: name.clone(),
            count: Some(5),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((batch.kind.as_str(), batch.runs.len()), ("tso", 1));
    assert!(batch.runs[0].first > last, "{batch:?} after {last}");
    last = batch.runs[0].first + 4;

    let mut stream = grpc
        .stream(StreamRequest {
            name: name.clone(),
            count: 30_000,
            batch: Some(10_000),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut messages = 0;
    while let Some(m) = stream.message().await.unwrap() {
        assert_eq!(m.runs.len(), 1, "{m:?}");
        let run = &m.runs[0];
        assert!(run.first > last && run.count == 10_000 && run.stride == 1);
        last = run.first + run.count - 1;
        messages += 1;
    }
    assert_eq!(messages, 3);

    let mut redis = redis::Client::open(format!("redis://{resp}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let one: u64 = redis::cmd("INCR")
        .arg(&name)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(one > last, "INCR {one} after {last}");
    let r: u64 = redis::cmd("INCRBY")
        .arg(&name)
        .arg(100)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(r - 99 > one, "INCRBY answered {r} after {one}");

    let v: Value = get_json(&http, format!("{base}/v1/ids/{name}")).await;
    let after: u64 = v["ids"][0].as_str().unwrap().parse().unwrap();
    assert!(after > r, "{after} after {r}");
    let _ = stop.send(());
    running.await.unwrap().unwrap();
}

/// `curl` over TLS trusting `cert`, with `token`: (status, body).
pub(crate) fn curl_tls(cert: &std::path::Path, token: &str, url: &str) -> (u16, String) {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "30", "--cacert"])
        .arg(cert)
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["-w", "\n%{http_code}"])
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_forwards_over_tls_with_its_forward_token() {
    use snowdrift_server::auth::{TokenHash, generate_token};
    let name = snowdrift_testkit::unique_name("ts");
    let dir = TempDir::new("tso-tls");
    let pair = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = dir.0.join("cert.pem");
    std::fs::write(&cert, pair.cert.pem()).unwrap();
    std::fs::write(dir.0.join("key.pem"), pair.key_pair.serialize_pem()).unwrap();
    let (app, fwd) = (generate_token().unwrap(), generate_token().unwrap());
    let tokens = format!(
        "[[auth.token]]\nname = \"app\"\nhash = \"{}\"\ngenerators = [\"*\"]\nrole = \"admin\"\n\n\
         [[auth.token]]\nname = \"forward\"\nhash = \"{}\"\ngenerators = [\"{name}\"]\nrole = \"read\"\n",
        TokenHash::of(&app),
        TokenHash::of(&fwd)
    );
    // Issue 40: TLS nodes on an etcd that answers anyone (the test machine's): a start
    // without insecure_coordinator is refused, saying why, before it campaigns.
    let refused_dir = dir.0.join("refused");
    std::fs::create_dir_all(&refused_dir).unwrap();
    let config = load(
        &refused_dir,
        &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\nadvertise = \"https://localhost:1\"\n\
             tls_cert = \"{c}/cert.pem\"\ntls_key = \"{c}/key.pem\"\n\n{tokens}\n\
             [[generator]]\nname = \"{name}\"\nkind = \"tso\"\nurl = \"{}\"\nforward_token = \"{fwd}\"\n",
            snowdrift_testkit::urls::etcd(),
            c = dir.0.display()
        ),
    );
    match snowdrift_server::Server::start(&config).await {
        Ok(_) => panic!("a tso started on an etcd that answers clients without credentials"),
        Err(e) => assert!(
            e.to_string()
                .contains("which takes requests from clients without a user or client certificate")
                && e.to_string().contains("insecure_coordinator = true"),
            "{e}"
        ),
    }
    // A node with its own directory, TLS on the shared certificate, presenting `forward`.
    let start = |i: usize, forward: String| {
        let (dir, tokens, name) = (dir.0.join(format!("n{i}")), tokens.clone(), name.clone());
        let cert_dir = cert.parent().unwrap().to_path_buf();
        async move {
            std::fs::create_dir_all(&dir).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let config = load(
                &dir,
                &format!(
                    "[server]\nlisten = \"127.0.0.1:{port}\"\nadvertise = \"https://localhost:{port}\"\n\
                     tls_cert = \"{c}/cert.pem\"\ntls_key = \"{c}/key.pem\"\n\n{tokens}\n\
                     [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{}\"\nforward_token = \"{forward}\"\n",
                    snowdrift_testkit::urls::etcd(),
                    c = cert_dir.display()
                ),
            );
            let server = snowdrift_server::Server::start(&config).await.unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let task = tokio::spawn(snowdrift_server::run(listener, server, async move {
                let _ = stopped.await;
            }));
            (format!("https://localhost:{port}"), stop, task)
        }
    };
    let role = |base: &str| {
        let (code, body) = curl_tls(&cert, &app, &format!("{base}/v1/generators"));
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["generators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name.as_str())
            .unwrap()["tso"]
            .clone()
    };
    let (leader_base, leader_stop, leader_task) = start(0, fwd.clone()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while role(&leader_base)["role"] != "leader" {
        assert!(Instant::now() < deadline, "{}", role(&leader_base));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // The follower forwards over TLS (the leader's certificate checked against its own
    // tls_cert), presenting its forward token; the client's token is the follower's to check.
    let (follower, follower_stop, follower_task) = start(1, fwd.clone()).await;
    let (code, body) = curl_tls(&cert, &app, &format!("{follower}/v1/ids/{name}?count=3"));
    assert_eq!(code, 200, "{body}");
    let status = role(&follower);
    assert_eq!(status["role"], "follower", "{status}");
    assert_eq!(status["leader"], leader_base.as_str(), "{status}");
    assert!(status["forwards"].as_u64().unwrap() >= 1, "{status}");
    assert_eq!(status["forward_errors"], 0, "{status}");

    // A node whose forward token the leader does not know gets a clear refusal.
    let (wrong, wrong_stop, wrong_task) = start(2, generate_token().unwrap()).await;
    let (code, body) = curl_tls(&cert, &app, &format!("{wrong}/v1/ids/{name}"));
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("forward_token"), "{body}");

    for (stop, task) in [
        (wrong_stop, wrong_task),
        (follower_stop, follower_task),
        (leader_stop, leader_task),
    ] {
        let _ = stop.send(());
        task.await.unwrap().unwrap();
    }
}
