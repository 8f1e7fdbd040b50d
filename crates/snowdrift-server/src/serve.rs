//! The accept loop: every connection a listener hands over starts on the fast path for
//! single IDs (`crate::fast`) and is served by hyper (HTTP/1.1, or HTTP/2 by prior knowledge
//! as gRPC clients speak it) from its first request the fast path does not take, until a
//! graceful stop.
//!
//! In place of `axum::serve`, which serves each connection with HTTP upgrade support
//! (`Upgrade:` for WebSockets, which snowdrift has none of) and leaves hyper's connection
//! builder out of reach.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::serve::Listener;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;

use crate::conn::ConnLimits;
use crate::fast::{self, Ended};
use crate::handover::{ErrorBodies, Rewind};
use crate::state::AppState;

/// Serves `app` on each connection `listener` accepts until `stop` completes; then stops
/// accepting, tells every connection to finish the request it is on and close, and returns
/// once all have closed. Accept errors (out of file descriptors and the like) are handled
/// by the listener, which backs off and tries again.
pub(crate) async fn serve<L>(
    mut listener: L,
    app: Router,
    state: Arc<AppState>,
    stop: impl Future<Output = ()>,
) where
    L: Listener,
    L::Io: Unpin,
{
    let service = TowerToHyperService::new(app);
    let builder = builder(state.conns.limits());
    // Every connection holds a receiver: the stop is a change, and the loop's wait for the
    // connections to close is the wait for every receiver to drop.
    let (stopping, _) = watch::channel(());
    tokio::pin!(stop);
    loop {
        let (io, _peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let mut stop = stopping.subscribe();
        let (state, service, builder) = (state.clone(), service.clone(), builder.clone());
        tokio::spawn(async move {
            // A client that resets or sends garbage ends only its own connection.
            let (io, read) = match fast::serve(io, &state, &mut stop).await {
                Ok(Ended::HandOver(io, read)) => (io, read),
                Ok(Ended::Closed) => return,
                Err(e) => {
                    tracing::trace!(error = %e, "connection ended with an error");
                    return;
                }
            };
            let connection = builder.serve_connection(
                TokioIo::new(ErrorBodies::new(Rewind::new(io, read))),
                service,
            );
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                _ = stop.changed() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = ended {
                tracing::trace!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    stopping.send_replace(());
    stopping.closed().await;
}

/// hyper's connection settings from `[limits]`: a request head of HTTP/1.1 must arrive
/// whole within `header_timeout` (hyper's timer also runs while it waits for the next
/// request, so an idle HTTP/1.1 connection it serves closes then) and fit in `max_head`;
/// HTTP/2 peers are pinged every half `idle_timeout` and dropped when a ping goes unanswered
/// for as long, and their header lists are bounded by `max_head` too.
fn builder(limits: &ConnLimits) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(limits.max_head);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.idle_timeout / 2)
        .keep_alive_timeout(limits.idle_timeout / 2)
        // What a stream whose client does not read may hold beyond its flow-control window:
        // with the 16 KiB text batches of `grpc::stream`, under 50 KiB per stream.
        .max_send_buf_size(32 * 1024)
        .max_header_list_size(u32::try_from(limits.max_head).unwrap_or(u32::MAX));
    builder
}
