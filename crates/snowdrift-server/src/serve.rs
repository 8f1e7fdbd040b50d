//! The accept loop: every connection a listener hands over is served by hyper (HTTP/1.1,
//! or HTTP/2 by prior knowledge as gRPC clients speak it) until a graceful stop.
//!
//! In place of `axum::serve`, which serves each connection with HTTP upgrade support
//! (`Upgrade:` for WebSockets, which snowdrift has none of) and leaves hyper's connection
//! builder out of reach. Without the upgrade wrapper a single-ID request took 0.1-0.2 µs
//! less of its 6 µs of CPU time in an A/B on a quiet day (BENCHMARKS.md, "Server load").

use std::future::Future;

use axum::Router;
use axum::serve::Listener;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;

/// Serves `app` on each connection `listener` accepts until `stop` completes; then stops
/// accepting, tells every connection to finish the request it is on and close, and returns
/// once all have closed. Accept errors (out of file descriptors and the like) are handled
/// by the listener, which backs off and tries again.
pub(crate) async fn serve<L>(mut listener: L, app: Router, stop: impl Future<Output = ()>)
where
    L: Listener,
{
    let service = TowerToHyperService::new(app);
    let builder = Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (io, _peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let connection = builder
            .serve_connection(TokioIo::new(io), service.clone())
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that resets or sends garbage ends only its own connection.
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
