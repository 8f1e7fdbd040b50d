//! A tso follower hands out nothing it cannot check (issue 27): the attack of one `put` of
//! the leader key in etcd naming a fake gRPC server, without a lease and under a lease the
//! attacker granted, against three real nodes on the real etcd. The fake answers whatever
//! the attack needs (the same run every time, a run that wraps at 2^64, one below what
//! was served, one without or with another term); the clients' history from all nodes must
//! hold no duplicate and no order violation, the nodes must say what happened (503 body,
//! `/v1/generators`, metrics), and the fake must never see a `forward_token` in cleartext.
//! The lies come on the `TsoPeer` stream a follower forwards over, or (a fake without it, as
//! a leader of an older version) as answers to `Next` calls.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use snowdrift_proto::grpc::id_service_server::{IdService, IdServiceServer};
use snowdrift_proto::grpc::tso_peer_server::{TsoPeer, TsoPeerServer};
use snowdrift_proto::grpc::{
    DecodeRequest, DecodeResponse, ForwardReply, ForwardRequest, IdBatch, IdRun, NextRequest,
    StreamRequest,
};
use tonic::{Request, Response, Status};

use crate::support::{TempDir, load};
use crate::tso::{Load, client, curl_tls, get_json, leader, node, summary, tso_status};

/// What the fake leader answers to `Next`.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// One run of the count asked for, from `first`, every time.
    Same(u64),
    /// A run starting 2 below 2^64: it wraps.
    NearMax,
    /// No runs at all.
    Empty,
}

/// A gRPC IdService that is not snowdrift: it answers `answer`, names `term` (0: none) in
/// its metadata as a leader does, and records every call and every token it was sent.
#[derive(Clone)]
struct Fake {
    answer: Arc<Mutex<Answer>>,
    term: Arc<AtomicI64>,
    calls: Arc<AtomicU64>,
    /// Requests that came on `TsoPeer` streams.
    streamed: Arc<AtomicU64>,
    tokens: Arc<Mutex<Vec<String>>>,
}

#[tonic::async_trait]
impl IdService for Fake {
    async fn next(&self, request: Request<NextRequest>) -> Result<Response<IdBatch>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(token) = request.metadata().get("authorization") {
            let token = String::from_utf8_lossy(token.as_bytes()).to_string();
            self.tokens.lock().unwrap().push(token);
        }
        let r = request.into_inner();
        let (batch, term) = self.lie(r.name, r.count.unwrap_or(1));
        let mut response = Response::new(batch);
        if term != 0 {
            response
                .metadata_mut()
                .insert("snowdrift-tso-term", term.to_string().parse().unwrap());
        }
        Ok(response)
    }

    type StreamStream = futures_util::stream::BoxStream<'static, Result<IdBatch, Status>>;

    async fn stream(
        &self,
        _: Request<StreamRequest>,
    ) -> Result<Response<Self::StreamStream>, Status> {
        Err(Status::unimplemented("a fake"))
    }

    async fn decode(&self, _: Request<DecodeRequest>) -> Result<Response<DecodeResponse>, Status> {
        Err(Status::unimplemented("a fake"))
    }
}

/// The same lies on the stream a follower forwards over (each answer naming the term).
#[tonic::async_trait]
impl TsoPeer for Fake {
    type ForwardStream = futures_util::stream::BoxStream<'static, Result<ForwardReply, Status>>;

    async fn forward(
        &self,
        request: Request<tonic::Streaming<ForwardRequest>>,
    ) -> Result<Response<Self::ForwardStream>, Status> {
        use futures_util::StreamExt;
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(token) = request.metadata().get("authorization") {
            let token = String::from_utf8_lossy(token.as_bytes()).to_string();
            self.tokens.lock().unwrap().push(token);
        }
        let fake = self.clone();
        let replies = request.into_inner().filter_map(move |r| {
            let fake = fake.clone();
            async move {
                let r = r.ok()?;
                fake.streamed.fetch_add(1, Ordering::SeqCst);
                let (batch, term) = fake.lie(r.name, r.count);
                Some(Ok(ForwardReply {
                    id: r.id,
                    batch: Some(batch),
                    term,
                    ..Default::default()
                }))
            }
        });
        Ok(Response::new(replies.boxed()))
    }
}

impl Fake {
    /// The batch the fake answers for `count` IDs of `name`, and the term it names.
    fn lie(&self, name: String, count: u64) -> (IdBatch, i64) {
        let runs = match *self.answer.lock().unwrap() {
            Answer::Same(first) => vec![IdRun {
                first,
                count,
                stride: 1,
            }],
            Answer::NearMax => vec![IdRun {
                first: u64::MAX - 2,
                count,
                stride: 1,
            }],
            Answer::Empty => Vec::new(),
        };
        let batch = IdBatch {
            name,
            kind: "tso".into(),
            count,
            runs,
            // A leader from before `kind_code`: the string alone must do.
            ..Default::default()
        };
        (batch, self.term.load(Ordering::SeqCst))
    }

    /// Serves a fake answering `answer` on a port of its own (also on the `TsoPeer` stream
    /// a follower forwards over, with `stream`; else only `Next`, as a leader of an older
    /// version); its `http://` URL.
    async fn start(answer: Answer, stream: bool) -> (Self, String) {
        let fake = Self {
            answer: Arc::new(Mutex::new(answer)),
            term: Arc::new(AtomicI64::new(0)),
            calls: Arc::new(AtomicU64::new(0)),
            streamed: Arc::new(AtomicU64::new(0)),
            tokens: Arc::new(Mutex::new(Vec::new())),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut router = axum::Router::new().route_service(
            "/snowdrift.v1.IdService/{*method}",
            IdServiceServer::new(fake.clone()),
        );
        if stream {
            router = router.route_service(
                "/snowdrift.v1.TsoPeer/{*method}",
                TsoPeerServer::new(fake.clone()),
            );
        }
        tokio::spawn(async move { axum::serve(listener, router).await });
        (fake, url)
    }

    /// [`Fake::start`] with the `TsoPeer` stream, over TLS with `cert_pem`/`key_pem`: a
    /// certificate of the attacker's own, not the cluster's.
    async fn start_tls(answer: Answer, cert_pem: &str, key_pem: &str) -> (Self, String) {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        use hyper_util::service::TowerToHyperService;
        use tokio_rustls::rustls;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let fake = Self {
            answer: Arc::new(Mutex::new(answer)),
            term: Arc::new(AtomicI64::new(0)),
            calls: Arc::new(AtomicU64::new(0)),
            streamed: Arc::new(AtomicU64::new(0)),
            tokens: Arc::new(Mutex::new(Vec::new())),
        };
        let router = axum::Router::new()
            .route_service(
                "/snowdrift.v1.IdService/{*method}",
                IdServiceServer::new(fake.clone()),
            )
            .route_service(
                "/snowdrift.v1.TsoPeer/{*method}",
                TsoPeerServer::new(fake.clone()),
            );
        let certs = vec![CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap()];
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "https://localhost:{}",
            listener.local_addr().unwrap().port()
        );
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, router) = (acceptor.clone(), router.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), TowerToHyperService::new(router))
                        .await;
                });
            }
        });
        (fake, url)
    }

    fn set(&self, answer: Answer, term: i64) {
        *self.answer.lock().unwrap() = answer;
        self.term.store(term, Ordering::SeqCst);
    }
}

/// An etcd client, as the attacker has one.
async fn etcd() -> etcd_client::Client {
    let url = snowdrift_testkit::urls::etcd().replace("etcd://", "http://");
    etcd_client::Client::connect([url], None).await.unwrap()
}

fn leader_key(name: &str) -> String {
    format!("/snowdrift/tso/{name}/leader")
}

/// A run of tso IDs 10 s ahead of now: above anything the nodes served, and within what a
/// leader could have issued, so only the checks on who answered keep it out.
fn ahead() -> u64 {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    (now_ms + 10_000) << 18
}

/// Polls `check` on every node's status until one passes (or 20 s).
async fn until_a_node(
    http: &reqwest::Client,
    bases: &[String],
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for base in bases {
            let status = tso_status(http, base, name).await;
            if check(&status) {
                return Ok(status);
            }
        }
        if Instant::now() > deadline {
            return Err(format!("no node {what} within 20 s"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leaseless_leader_key_naming_a_fake_serves_nothing_and_is_taken_over() {
    let name = snowdrift_testkit::unique_name("tsf");
    let url = snowdrift_testkit::urls::etcd();
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(node(&name, &url, "2s").await);
    }
    let http = client();
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let refs: Vec<&str> = bases.iter().map(String::as_str).collect();
    leader(&http, &refs, &name).await;
    let (fake, fake_url) = Fake::start(Answer::Same(ahead()), false).await;
    fake.set(Answer::Same(ahead()), 1);

    let base_time = Instant::now();
    let load = Load::start(bases.clone(), &name, 6, base_time);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    // The attack: one unauthenticated put, no lease.
    let mut etcd = etcd().await;
    etcd.put(leader_key(&name), format!("{fake_url} x term=1"), None)
        .await
        .unwrap();
    let refused = until_a_node(&http, &bases, &name, "refused the leaseless key", |s| {
        s["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("bound to no lease"))
    })
    .await;
    let refused = match refused {
        Ok(status) => status,
        Err(e) => {
            let (history, ok, _, _) = load.finish().await;
            panic!(
                "{e}; the clients got {ok} answers: {}; the fake was asked {} times",
                summary(&history.check()),
                fake.calls.load(Ordering::SeqCst)
            );
        }
    };
    assert!(
        refused["last_error"]
            .as_str()
            .unwrap()
            .contains(&leader_key(&name)),
        "{refused}"
    );
    // The nodes take the key over once it has stayed a whole lease, and lead again.
    until_a_node(&http, &bases, &name, "took the key over", |s| {
        s["leader_keys_replaced"].as_u64() >= Some(1)
    })
    .await
    .unwrap();
    leader(&http, &refs, &name).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let (history, ok, failed, slowest) = load.finish().await;

    let report = history.check();
    assert!(report.is_clean(), "{}", summary(&report));
    assert!(ok > 100, "only {ok} requests got IDs ({failed} failed)");
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0, "the fake was asked");
    let key = etcd.get(leader_key(&name), None).await.unwrap();
    assert_ne!(key.kvs()[0].lease(), 0, "the key is a campaign's again");
    let mut seen = 0;
    for base in &bases {
        let status = tso_status(&http, base, &name).await;
        seen += status["leader_keys_refused"]["no_lease"].as_u64().unwrap();
        let metrics = http
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let series = format!(
            "snowdrift_tso_leader_key_refused_total{{generator=\"{name}\",fault=\"no_lease\"}}"
        );
        assert!(metrics.contains(&series), "{metrics}");
        crate::metrics::promtool_check(&metrics);
    }
    assert!(seen >= 1, "no node counted the leaseless key");
    eprintln!(
        "leaseless key: {ok} requests answered, {failed} failed, slowest {slowest:?}, the \
         fake asked 0 times"
    );
    for n in &mut nodes {
        if let Some(r) = n.running.take() {
            r.shutdown().await.unwrap();
        }
    }
}

/// GET `/v1/ids/{name}?count=count` on `base`: (status, body).
async fn ask(http: &reqwest::Client, base: &str, name: &str, count: u64) -> (u16, String) {
    let r = http
        .get(format!("{base}/v1/ids/{name}?count={count}"))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fake_under_the_attackers_own_lease_gets_no_answer_past_the_checks() {
    let name = snowdrift_testkit::unique_name("tsf");
    let url = snowdrift_testkit::urls::etcd();
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(node(&name, &url, "2s").await);
    }
    let http = client();
    let bases: Vec<String> = nodes.iter().map(|n| n.base.clone()).collect();
    let refs: Vec<&str> = bases.iter().map(String::as_str).collect();
    leader(&http, &refs, &name).await;
    // What every node served before the attack.
    let mut served: Vec<u64> = Vec::new();
    for base in &bases {
        let v = get_json(&http, format!("{base}/v1/ids/{name}?count=5")).await;
        served.extend(crate::support::ids_of::<u64>(&v));
    }
    let below = served[0];

    // The attacker grants a lease and writes the key as a campaign would, naming the fake,
    // which names that lease as its term.
    let (fake, fake_url) = Fake::start(Answer::NearMax, true).await;
    let mut etcd = etcd().await;
    let lease = etcd.lease_grant(60, None).await.unwrap().id();
    etcd.put(
        leader_key(&name),
        format!("{fake_url} x term={lease}"),
        Some(etcd_client::PutOptions::new().with_lease(lease)),
    )
    .await
    .unwrap();
    // Every node follows it (the real leader's key is gone from under it).
    let deadline = Instant::now() + Duration::from_secs(20);
    for base in &bases {
        loop {
            let s = tso_status(&http, base, &name).await;
            if s["role"] == "follower" && s["leader"] == fake_url.as_str() {
                break;
            }
            assert!(Instant::now() < deadline, "{s}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    // Each kind of lie, to every node: refused with a 503 that says what was wrong.
    let lies: [(Answer, i64, &str, &str); 5] = [
        (Answer::NearMax, lease, "wrap past 2^64", "out_of_range"),
        (Answer::Empty, lease, "0 runs", "shape"),
        (Answer::Same(below), lease, "not above", "not_above_served"),
        (Answer::Same(ahead()), 0, "named no term", "term"),
        (
            Answer::Same(ahead()),
            lease + 1,
            "the leader key names term",
            "term",
        ),
    ];
    for (answer, term, says, _) in lies {
        fake.set(answer, term);
        for base in &bases {
            let (status, body) = ask(&http, base, &name, 3).await;
            assert_eq!(status, 503, "{answer:?} term {term} from {base}: {body}");
            assert!(body.contains(says), "{answer:?}: {body}");
        }
    }
    // They were asked over the stream (the fake serves it), not by `Next` calls.
    assert!(fake.streamed.load(Ordering::SeqCst) >= 15);
    for (_, _, _, reason) in lies {
        let mut n = 0;
        for base in &bases {
            n += tso_status(&http, base, &name).await["forward_refused"][reason]
                .as_u64()
                .unwrap();
        }
        assert!(n >= 3, "{reason}: {n}");
    }
    let metrics = http
        .get(format!("{}/metrics", bases[0]))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series = format!(
        "snowdrift_tso_forward_refused_total{{generator=\"{name}\",reason=\"out_of_range\"}}"
    );
    assert!(metrics.contains(&series), "{metrics}");

    // A lie that passes every check a node can make alone (its term right, above all it
    // served, within reach) is served once by a node, and refused when repeated to it:
    // without TLS and auth nothing tells such a fake from the leader (see docs/src/kinds/tso.md).
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let run = now_ms << 18;
    fake.set(Answer::Same(run), lease);
    let (status, body) = ask(&http, &bases[0], &name, 3).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = ask(&http, &bases[0], &name, 3).await;
    assert_eq!(status, 503, "the same run twice from one node: {body}");
    assert!(body.contains("not above"), "{body}");

    // Once the attacker's lease goes, the nodes elect one of themselves and serve above
    // everything, the fake's run included.
    etcd.lease_revoke(lease).await.unwrap();
    leader(&http, &refs, &name).await;
    let v = get_json(&http, format!("{}/v1/ids/{name}?count=3", bases[0])).await;
    let after: Vec<u64> = crate::support::ids_of(&v);
    assert!(after[0] > run + 2, "{after:?} after the fake's {run}");
    assert!(
        fake.tokens.lock().unwrap().is_empty(),
        "auth is off: no token"
    );
    for n in &mut nodes {
        if let Some(r) = n.running.take() {
            r.shutdown().await.unwrap();
        }
    }
}

/// A node's stop signal and its serving task.
type Running = (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), snowdrift_server::StartError>>,
);

/// `n` tso nodes over TLS on one self-signed certificate (in `dir`), with auth on and a
/// `forward` token, once one of them leads; what the fake-leader tests ask them.
struct TlsNodes {
    name: String,
    cert: std::path::PathBuf,
    app: String,
    bases: Vec<String>,
    running: Vec<Running>,
}

impl TlsNodes {
    async fn start(dir: &TempDir, prefix: &str, n: usize) -> Self {
        use snowdrift_server::auth::{TokenHash, generate_token};
        let name = snowdrift_testkit::unique_name(prefix);
        let pair = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(dir.0.join("cert.pem"), pair.cert.pem()).unwrap();
        std::fs::write(dir.0.join("key.pem"), pair.key_pair.serialize_pem()).unwrap();
        let (app, fwd) = (generate_token().unwrap(), generate_token().unwrap());
        let tokens = format!(
            "[[auth.token]]\nname = \"app\"\nhash = \"{}\"\ngenerators = [\"*\"]\nrole = \"admin\"\n\n\
             [[auth.token]]\nname = \"forward\"\nhash = \"{}\"\ngenerators = [\"{name}\"]\nrole = \"read\"\n",
            TokenHash::of(&app),
            TokenHash::of(&fwd)
        );
        let mut nodes = Self {
            name,
            cert: dir.0.join("cert.pem"),
            app,
            bases: Vec::new(),
            running: Vec::new(),
        };
        for i in 0..n {
            let node_dir = dir.0.join(format!("n{i}"));
            std::fs::create_dir_all(&node_dir).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let config = load(
                &node_dir,
                &format!(
                    "[server]\nlisten = \"127.0.0.1:{port}\"\nadvertise = \"https://localhost:{port}\"\n\
                     tls_cert = \"{c}/cert.pem\"\ntls_key = \"{c}/key.pem\"\n\n{tokens}\n\
                     [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{}\"\nttl = \"2s\"\n\
                     forward_token = \"{fwd}\"\n",
                    snowdrift_testkit::urls::etcd(),
                    c = dir.0.display(),
                    name = nodes.name
                ),
            );
            let server = snowdrift_server::Server::start(&config).await.unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let task = tokio::spawn(snowdrift_server::run(listener, server, async move {
                let _ = stopped.await;
            }));
            nodes.bases.push(format!("https://localhost:{port}"));
            nodes.running.push((stop, task));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while !nodes
            .bases
            .iter()
            .any(|b| nodes.status(b)["role"] == "leader")
        {
            assert!(Instant::now() < deadline, "no leader");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        nodes
    }

    /// The node's `tso` part of `/v1/generators`.
    fn status(&self, base: &str) -> Value {
        let (code, body) = curl_tls(&self.cert, &self.app, &format!("{base}/v1/generators"));
        assert_eq!(code, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["generators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == self.name.as_str())
            .unwrap()["tso"]
            .clone()
    }

    /// Three IDs from the node, kept in `ids` when it answers 200.
    fn take(&self, base: &str, ids: &mut Vec<u64>) -> (u16, String) {
        let url = format!("{base}/v1/ids/{}?count=3", self.name);
        let (code, body) = curl_tls(&self.cert, &self.app, &url);
        if code == 200 {
            let v: Value = serde_json::from_str(&body).unwrap();
            ids.extend(crate::support::ids_of::<u64>(&v));
        }
        (code, body)
    }

    /// Names `fake_url` the leader in a campaign's form under the attacker's own lease
    /// (which the fake echoes as its term), and waits until every node follows it.
    async fn follow_fake(&self, fake: &Fake, fake_url: &str) -> (etcd_client::Client, i64) {
        let mut etcd = etcd().await;
        let lease = etcd.lease_grant(60, None).await.unwrap().id();
        fake.set(Answer::Same(ahead()), lease);
        etcd.put(
            leader_key(&self.name),
            format!("{fake_url} x term={lease}"),
            Some(etcd_client::PutOptions::new().with_lease(lease)),
        )
        .await
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(40);
        for base in &self.bases {
            while self.status(base)["leader"] != fake_url {
                assert!(Instant::now() < deadline, "{}", self.status(base));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        (etcd, lease)
    }

    async fn stop(self) {
        for (stop, task) in self.running {
            let _ = stop.send(());
            task.await.unwrap().unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fake_leader_on_plain_http_never_gets_the_forward_token() {
    let dir = TempDir::new("tso-trust-tls");
    let nodes = TlsNodes::start(&dir, "tsf", 3).await;
    let mut ids: Vec<u64> = Vec::new();
    for base in &nodes.bases {
        let (code, body) = nodes.take(base, &mut ids);
        assert_eq!(code, 200, "{body}");
    }

    // The attacker's key, in a campaign's form under its own lease, names a plain-http
    // fake that answers a run above everything, in the right term.
    let (fake, fake_url) = Fake::start(Answer::Same(ahead()), false).await;
    let (mut etcd, lease) = nodes.follow_fake(&fake, &fake_url).await;
    for base in &nodes.bases {
        for _ in 0..5 {
            let (code, body) = nodes.take(base, &mut ids);
            assert_eq!(code, 503, "{body}");
            assert!(body.contains("forward_token in cleartext"), "{body}");
        }
        let refused = nodes.status(base)["forward_refused"]["plaintext_token"]
            .as_u64()
            .unwrap();
        assert!(refused >= 5, "{}", nodes.status(base));
    }
    assert!(
        fake.tokens.lock().unwrap().is_empty(),
        "the fake got a token: {:?}",
        fake.tokens.lock().unwrap()
    );
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    let unique: std::collections::BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicates in {ids:?}");

    etcd.lease_revoke(lease).await.unwrap();
    nodes.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_forwarded_value_of_1_marks_a_call_forwarded() {
    use snowdrift_proto::grpc::id_service_client::IdServiceClient;
    let name = snowdrift_testkit::unique_name("tsf");
    let url = snowdrift_testkit::urls::etcd();
    let mut leader_node = node(&name, &url, "2s").await;
    let http = client();
    leader(&http, &[leader_node.base.as_str()], &name).await;
    let mut follower = node(&name, &url, "2s").await;
    let bases = [leader_node.base.as_str(), follower.base.as_str()];
    assert_eq!(leader(&http, &bases, &name).await, 0);
    let channel = tonic::transport::Endpoint::from_shared(follower.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = IdServiceClient::new(channel);
    let call = |value: Option<&'static str>| {
        let mut request = Request::new(NextRequest {
            name: name.clone(),
            count: Some(2),
            ..Default::default()
        });
        if let Some(v) = value {
            request
                .metadata_mut()
                .insert("snowdrift-forwarded", v.parse().unwrap());
        }
        request
    };
    // A client's call to a follower is forwarded to the leader and answered.
    let answer = grpc.next(call(None)).await.unwrap();
    assert_eq!(answer.get_ref().runs[0].count, 2);
    // "0" (or anything but "1") is refused, saying what is allowed; it used to count as
    // forwarded, so the follower refused to forward it.
    for value in ["0", "true", "yes", ""] {
        let e = grpc.next(call(Some(value))).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{value:?}: {e:?}");
        assert!(e.message().contains("only \"1\""), "{value:?}: {e:?}");
    }
    // "1" is a forwarded call: a follower answers it itself or refuses, never forwards it.
    let e = grpc.next(call(Some("1"))).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
    assert!(e.message().contains("not forwarded again"), "{e:?}");
    for n in [&mut follower, &mut leader_node] {
        if let Some(r) = n.running.take() {
            r.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_whose_etcd_answers_a_second_late_keeps_leading() {
    // Every answer from etcd to the leader arrives 1 s late (as on a loaded machine: etcd
    // slow to answer, requests still reaching it): each renewal succeeds, but renewals
    // scheduled a third of the lease after the previous one was answered, each two round
    // trips long, let the leader's validity (4 s of a 5 s lease) lapse between them.
    let name = snowdrift_testkit::unique_name("tsf");
    let url = snowdrift_testkit::urls::etcd();
    let (proxy, through_proxy) = snowdrift_testkit::FaultProxy::start_for_url(&url)
        .await
        .unwrap();
    proxy.delay(Duration::from_secs(1));
    let slow = node(&name, &through_proxy, "5s").await;
    let http = client();
    leader(&http, &[slow.base.as_str()], &name).await;
    let other = node(&name, &url, "5s").await;
    let bases = vec![slow.base.clone(), other.base.clone()];
    let refs: Vec<&str> = bases.iter().map(String::as_str).collect();
    assert_eq!(leader(&http, &refs, &name).await, 0);

    let base_time = Instant::now();
    let load = Load::start(bases.clone(), &name, 4, base_time);
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_secs(15) {
        let s = tso_status(&http, &slow.base, &name).await;
        assert!(
            s["role"] == "leader" && s["terms"] == 1,
            "after {:?} with etcd 1 s late: {s}",
            watched.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (history, ok, failed, _) = load.finish().await;
    let report = history.check();
    assert!(report.is_clean(), "{}", summary(&report));
    assert!(ok > 50, "only {ok} requests got IDs ({failed} failed)");
    proxy.heal();
    for mut n in [other, slow] {
        if let Some(r) = n.running.take() {
            r.shutdown().await.unwrap();
        }
    }
}

/// Issue 40: a leader named in etcd whose certificate the system's roots trust (a public
/// certificate of the attacker's own host) is not thereby a member. Followers check an
/// `https://` leader against the cluster's `server.tls_cert` alone: the fake, under a CA
/// this process's roots trust (`SSL_CERT_FILE`, which rustls-native-certs reads), never
/// gets a call or the forward token, and nothing it answers is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fake_leader_with_a_publicly_trusted_certificate_is_not_a_member() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let dir = TempDir::new("tso-trust-roots");
    // The "public" CA the attacker's certificate comes from.
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let public_roots = dir.0.join("public-roots.pem");
    std::fs::write(&public_roots, ca.pem()).unwrap();
    let fake_key = KeyPair::generate().unwrap();
    let fake_cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&fake_key, &ca, &ca_key)
        .unwrap();
    // SAFETY: set before any node reads the system's roots; nextest runs this test in a
    // process of its own.
    unsafe { std::env::set_var("SSL_CERT_FILE", &public_roots) };

    let nodes = TlsNodes::start(&dir, "tsp", 2).await;
    let mut ids: Vec<u64> = Vec::new();
    for base in &nodes.bases {
        let (code, body) = nodes.take(base, &mut ids);
        assert_eq!(code, 200, "{body}");
    }

    // The attacker's key, in a campaign's form under its own lease, names an https://
    // fake whose certificate the system's roots trust, answering a run above everything.
    let (fake, fake_url) = Fake::start_tls(
        Answer::Same(ahead()),
        &fake_cert.pem(),
        &fake_key.serialize_pem(),
    )
    .await;
    let (mut etcd, lease) = nodes.follow_fake(&fake, &fake_url).await;
    for base in &nodes.bases {
        for _ in 0..3 {
            let (code, body) = nodes.take(base, &mut ids);
            assert_eq!(code, 503, "{body}");
        }
    }
    assert_eq!(
        fake.calls.load(Ordering::SeqCst) + fake.streamed.load(Ordering::SeqCst),
        0,
        "the fake was called"
    );
    assert!(
        fake.tokens.lock().unwrap().is_empty(),
        "the fake got a token: {:?}",
        fake.tokens.lock().unwrap()
    );
    let unique: std::collections::BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "duplicates in {ids:?}");

    etcd.lease_revoke(lease).await.unwrap();
    nodes.stop().await;
}
