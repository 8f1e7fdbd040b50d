//! The Redis-protocol (RESP) listener: any Redis client, in any language, is an ID client.
//!
//! On when `[server] resp_listen` is set (`127.0.0.1:6380`, say); it serves the same
//! generators, tokens and limits as the HTTP API, on a port of its own:
//!
//! | command | reply |
//! | --- | --- |
//! | `INCR name` | the next ID of generator or tag `name`: an integer, or a bulk string for text kinds (UUID, ULID, ObjectId, templated counters) and for snowflake layouts that may pass `i64::MAX` |
//! | `INCRBY name n` | `n` (1 to `limits.max_count`) new IDs, answered with the last, `r`: the IDs `r-n+1 ..= r` are the caller's. Segment tags (one store), plain counters and tso only; other kinds get `-WRONGTYPE` for `n` above 1 (`INCRBY name 1` is `INCR name`, as redis-py's `incr` sends it) |
//! | `SNOWFLAKE [name [format]]` | one ID of snowflake generator `name` (the default one without a name); with a format (`base62`, `obfuscated-sqids`, ... as `format=` over HTTP), a bulk string in that format |
//! | `AUTH [user] token` | `+OK` when the server knows the token (the user is ignored); needed first when auth is on |
//! | `HELLO [2\|3 [AUTH user token] [SETNAME name]]` | the server's description; `HELLO 3` switches to RESP3 |
//! | `MULTI`, `EXEC`, `DISCARD` | commands queued (`+QUEUED`), then run in order, `EXEC` answering the array of their replies (redis-py's default `pipeline()`) |
//! | `INFO [section ...]` | the server section: `redis_version`, `loading:0` (ioredis' ready check) |
//! | `PING`, `ECHO`, `SELECT 0`, `QUIT`, `CLIENT SETNAME\|GETNAME\|INFO\|ID\|SETINFO` | as Redis answers them, enough for redis-cli, redis-benchmark and client libraries |
//!
//! Anything else (`GET`, `SET`, ...) is `-ERR unknown command ...` naming what is
//! supported. Errors map the API's: `-NOAUTH`/`-WRONGPASS` (no or unknown token),
//! `-NOPERM` (token not for that name), `-TRYAGAIN` (rate limit, generator unavailable),
//! `-WRONGTYPE` (a kind that cannot do it), `-ERR` (the rest). A request is bounded to
//! `limits.resp_max_frame` bytes in all (its length lines say its size, so a larger one is
//! refused before its bytes come: `-ERR frame of N bytes is over the limit of M
//! (limits.resp_max_frame)`) and 16 arguments, and must be whole within the shorter of
//! `limits.header_timeout` and `limits.body_timeout` of its first byte; a malformed one is
//! answered with `-ERR Protocol error: ...`. Either way its connection is closed, other
//! connections untouched.
//!
//! At shutdown the listener stops accepting, connections finish the requests they have
//! received, idle ones close, and after `server.shutdown_timeout` the rest are cut off.

mod command;
mod connection;
mod issue;
mod refusal;
mod reply;
mod session;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use std::net::SocketAddr;

use crate::error::StartError;
use crate::state::AppState;

use session::Session;

/// The RESP listener at `server.resp_listen`, bound; `None` when it is unset.
pub async fn bind(resp_listen: Option<SocketAddr>) -> Result<Option<TcpListener>, StartError> {
    let Some(addr) = resp_listen else {
        return Ok(None);
    };
    TcpListener::bind(addr).await.map(Some).map_err(|e| {
        StartError::Io(std::io::Error::new(
            e.kind(),
            format!("server.resp_listen {addr}: {e}"),
        ))
    })
}

/// The RESP listener, serving in a task of its own until the server stops.
#[derive(Debug)]
pub struct Running(Option<JoinHandle<()>>);

impl Running {
    /// Waits until the listener has stopped and its connections have finished (or been
    /// cut off at the shutdown timeout).
    pub async fn finish(self) {
        if let Some(task) = self.0 {
            let _ = task.await;
        }
    }
}

/// Starts serving `listener` (if any) with `state`, and returns `shutdown` wrapped so that
/// its completion also stops the RESP listener, which then gives its connections
/// `shutdown_timeout` to finish.
pub fn spawn(
    listener: Option<TcpListener>,
    state: Arc<AppState>,
    shutdown_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (impl Future<Output = ()> + Send + 'static, Running) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let task = listener.map(|l| tokio::spawn(accept(l, state, shutdown_timeout, stop_rx)));
    let shutdown = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    (shutdown, Running(task))
}

/// Accepts connections until `stop` turns true or its sender goes away (the server
/// stopped some other way), then waits for the connections at most `shutdown_timeout`.
async fn accept(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "RESP listener serving");
    }
    let mut connections = JoinSet::new();
    let mut next_id: u64 = 1;
    while !*stop.borrow() {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Replies are small and written once per batch: no Nagle delay.
                    let _ = stream.set_nodelay(true);
                    let local = stream.local_addr().unwrap_or(peer);
                    // Over the cap shared with the HTTP listener: closed at once.
                    let Some(stream) = state.conns.admit(stream) else {
                        continue;
                    };
                    let session = Session::new(state.clone(), next_id, peer, local);
                    next_id += 1;
                    let timeout = state.conns.limits().resp_timeout();
                    connections.spawn(connection::serve(
                        stream,
                        session,
                        timeout,
                        stop.clone(),
                    ));
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(error = %e, "RESP listener: accept failed; retrying");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            // Reaps finished connections, so the set holds only live ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(shutdown_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            timeout = ?shutdown_timeout,
            connections = connections.len(),
            "RESP requests still in flight at the shutdown timeout were cut off"
        );
        connections.shutdown().await;
    }
}
