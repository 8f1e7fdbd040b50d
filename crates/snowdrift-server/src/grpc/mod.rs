//! The gRPC API (`snowdrift.v1.IdService`, plus the standard health and reflection services)
//! as axum routes, so it shares the HTTP listener: gRPC clients speak HTTP/2 with
//! `content-type: application/grpc` to `/{service}/{method}` paths, which no HTTP route uses.
//!
//! The messages and client come from `proto/snowdrift.proto`, in `snowdrift_proto::grpc`:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use snowdrift_proto::grpc::{NextRequest, id_service_client::IdServiceClient};
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:8080")
//!     .connect()
//!     .await?;
//! let mut client = IdServiceClient::new(channel);
//! let request = NextRequest { name: "snowflake".into(), count: Some(1000), ..Default::default() };
//! let batch = client.next(request).await?.into_inner();
//! let ids: Vec<u64> = batch.ids().collect();
//! # Ok(()) }
//! ```

mod auth;
mod convert;
pub mod guard;
mod health;
pub mod limit;
mod peer;
mod service;
mod status;
mod stream;
mod unknown;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use tokio::sync::watch;
use tonic::server::NamedService;

pub use peer::PeerApi;
pub use service::IdApi;
pub use status::{ERROR_CODE_KEY, RETRY_AFTER_KEY, code_for};
pub use stream::IdStream;

use crate::state::AppState;

/// The messages, server and client generated from `proto/snowdrift.proto`, which
/// `snowdrift-proto` owns.
pub use snowdrift_proto::grpc as pb;

use pb::id_service_server::IdServiceServer;
use pb::tso_peer_server::TsoPeerServer;

/// The gRPC routes for `state` (`Stream` calls bounded by `max_stream` IDs, `IdService`
/// calls and followers' `TsoPeer.Forward` streams in flight bounded together by `calls`
/// (`limits.max_streams`) once their token passed; every
/// request message bounded by `max_message` bytes and every request body by
/// `limits.body_timeout` ([`guard`]); every call timed in
/// `snowdrift_request_duration_seconds`), and a shutdown future to serve them with: it
/// completes when `shutdown` does, after marking the health service NOT_SERVING (ending its
/// Watch streams) and telling running streams to end at their next batch, so a graceful
/// shutdown is not held up by a stream of a hundred million IDs or a health watcher.
pub async fn router(
    state: Arc<AppState>,
    max_stream: u64,
    max_message: usize,
    calls: limit::CallLimit,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (Router, impl Future<Output = ()> + Send + 'static) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let (health, health_service) = health::start(state.clone()).await;
    let guard = guard::Guard::new(max_message, state.conns.limits().body_timeout);
    // The token before the place under `max_streams`, and both before the body is read.
    let ids = tower::ServiceBuilder::new()
        .layer(auth::TokenFirst::new(state.clone()))
        .layer(calls.clone())
        .service(
            // The guard bounds each message as framed; tonic's own cap bounds it decoded
            // too, whatever framing a future change lets through.
            IdServiceServer::new(IdApi::new(state.clone(), max_stream, stop_rx.clone()))
                .max_decoding_message_size(max_message),
        );
    // A follower's one stream to the leader: its token checked first, as `IdService`'s,
    // and a place under `max_streams` held for as long as it lasts (one per follower and
    // tso generator), so that streams opened by someone who is not a follower, which no
    // body timeout ends, are bounded as every other call is.
    let peer = tower::ServiceBuilder::new()
        .layer(auth::TokenFirst::new(state.clone()))
        .layer(calls.clone())
        .service(
            TsoPeerServer::new(PeerApi::new(state.clone(), stop_rx.clone()))
                .max_decoding_message_size(max_message),
        );
    let router = Router::new()
        .route_service(&path::<IdServiceServer<IdApi>>(), ids)
        .route_service(&path::<TsoPeerServer<PeerApi>>(), peer)
        .route_service(&path_of(&health_service), health_service)
        .route("/{service}/{method}", axum::routing::any(unknown::unknown));
    let router = reflection(router)
        .layer(guard)
        .layer(crate::metrics::Track::GRPC);
    let shutdown = async move {
        shutdown.await;
        health.stop().await;
        let _ = stop_tx.send(true);
    };
    (router, shutdown)
}

/// Adds the reflection services (v1, and v1alpha for older tools such as grpcurl before
/// 1.8.8) describing `snowdrift.v1` and the health service.
fn reflection(router: Router) -> Router {
    let build = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    // The descriptor sets are compiled into the binary (and checked by protox at build
    // time), so they can only fail to load through a bug, which the tests would show.
    let v1 = build()
        .build_v1()
        .expect("the descriptor sets compiled into snowdrift are valid");
    let v1alpha = build()
        .build_v1alpha()
        .expect("the descriptor sets compiled into snowdrift are valid");
    router
        .route_service(&path_of(&v1), v1)
        .route_service(&path_of(&v1alpha), v1alpha)
}

/// The route of every method of service `S`.
fn path<S: NamedService>() -> String {
    format!("/{}/{{*method}}", S::NAME)
}

fn path_of<S: NamedService>(_: &S) -> String {
    path::<S>()
}
