//! A leader's `TsoPeer.Forward` is on the public gRPC port, so anyone who can call
//! `IdService` can open it, and its body has no time bound (a follower's stream lasts as
//! long as the leader leads). What holds back a caller that is not a follower: every
//! stream takes a place under `limits.max_streams`, as every `IdService` call does, and a
//! stream's requests in flight are bounded, so one that sends without reading its answers
//! is held back by flow control instead of making the leader serve and keep all of them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::tso_peer_client::TsoPeerClient;
use snowdrift_proto::grpc::{ForwardRequest, NextRequest};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

use crate::support::{Running, TempDir, load};
use crate::tso::{client, leader};

/// One tso node, leading, with room for `max_streams` gRPC calls.
async fn leading(name: &str, max_streams: usize) -> (Running, Channel, TempDir) {
    let dir = TempDir::new("tso-forward");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = load(
        &dir.0,
        &format!(
            "[server]\nlisten = \"{addr}\"\nadvertise = \"http://{addr}\"\n\
             [limits]\nmax_streams = {max_streams}\n\
             [[generator]]\nname = \"{name}\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"{}\"\n",
            snowdrift_testkit::urls::etcd()
        ),
    );
    let server = snowdrift_server::Server::start(&config).await.unwrap();
    let reloader = server.reloader();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(snowdrift_server::run(listener, server, async move {
        let _ = stopped.await;
    }));
    let base = format!("http://{addr}");
    leader(&client(), &[base.as_str()], name).await;
    let channel = Endpoint::from_shared(base)
        .unwrap()
        .connect()
        .await
        .unwrap();
    let running = Running {
        addr,
        resp: None,
        stop: Some(stop),
        task,
        reloader,
    };
    (running, channel, dir)
}

fn request(id: u64, name: &str) -> ForwardRequest {
    ForwardRequest {
        id,
        name: name.into(),
        count: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_streams_hold_places_under_max_streams() {
    let name = snowdrift_testkit::unique_name("ts");
    let (running, channel, _dir) = leading(&name, 2).await;
    // Two streams, each answered once (so each is open on the leader), then left open.
    let mut open = Vec::new();
    for k in 0..2 {
        let (tx, mut rx) = tokio::sync::mpsc::channel(4);
        tx.send(request(k, &name)).await.unwrap();
        let requests = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut replies = TsoPeerClient::new(channel.clone())
            .forward(requests)
            .await
            .unwrap()
            .into_inner();
        let reply = replies.message().await.unwrap().unwrap();
        assert_eq!((reply.id, reply.code), (k, 0), "{reply:?}");
        open.push((tx, replies));
    }
    let next = || {
        let (mut ids, name) = (IdServiceClient::new(channel.clone()), name.clone());
        async move {
            ids.next(NextRequest {
                name,
                count: Some(1),
                ..Default::default()
            })
            .await
        }
    };
    let refused = next().await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert!(
        refused.message().contains("limits.max_streams"),
        "{refused:?}"
    );
    // A third stream is refused the same way.
    let third = TsoPeerClient::new(channel.clone())
        .forward(futures_util::stream::iter([request(9, &name)]))
        .await;
    let refused = match third {
        Err(status) => status,
        Ok(replies) => replies.into_inner().message().await.unwrap_err(),
    };
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    // Closing one stream's request side ends it and gives its place back.
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match next().await {
            Ok(batch) => {
                assert_eq!(batch.into_inner().count, 1);
                break;
            }
            Err(e) if Instant::now() < deadline => {
                assert_eq!(e.code(), Code::Unavailable, "{e:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the stream's place never came back: {e:?}"),
        }
    }
    drop(open);
    drop(running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_stream_that_never_reads_is_held_back() {
    let name = snowdrift_testkit::unique_name("ts");
    let (running, channel, _dir) = leading(&name, 16).await;
    // Requests without end, counted as the client's transport takes them.
    let taken = Arc::new(AtomicU64::new(0));
    let requests = {
        let (taken, name) = (taken.clone(), name.clone());
        futures_util::stream::iter(0u64..).map(move |id| {
            taken.fetch_add(1, Ordering::Relaxed);
            request(id, &name)
        })
    };
    let replies = TsoPeerClient::new(channel.clone())
        .forward(requests)
        .await
        .unwrap();
    // Never read. Once the leader stops reading too, the windows fill and nothing more is
    // taken; a leader that read on (serving each request and keeping its answer) would
    // take requests for as long as memory lasted.
    let mut counts = Vec::new();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        counts.push(taken.load(Ordering::Relaxed));
    }
    let settled = counts.windows(2).any(|w| w[0] == w[1]);
    assert!(
        settled,
        "the leader kept reading a stream whose answers were never read: {counts:?}"
    );
    println!("requests taken, every 500 ms: {counts:?}");
    // The leader still serves everyone else. (Not on that connection: the unread stream
    // holds its HTTP/2 window, which is the point.)
    let other = Endpoint::from_shared(format!("http://{}", running.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let batch = IdServiceClient::new(other)
        .next(NextRequest {
            name: name.clone(),
            count: Some(3),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(batch.count, 3);
    drop(replies);
    drop(running);
}
