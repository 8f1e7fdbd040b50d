//! The HTTP/1.1 fast path: single-ID requests answered without hyper's and axum's
//! per-request machinery, so that one ID per request costs what a Redis `INCR` does.
//!
//! Every connection starts here. While its requests are plain GETs of `/v1/ids/{name}` or
//! of Leaf's single-ID routes over HTTP/1.1 ([`request::parse`]), each is answered by the
//! same code as the axum route (`crate::answer`, through [`answer()`]) and timed in the same
//! histogram; pipelined requests are answered in one write, up to a bound. With auth on,
//! each request's token is checked against what the route needs as the router's layer
//! checks it ([`auth`]), and a refusal is answered here with the same status, headers and
//! body. At the first request that is anything else (another route, a body, HTTP/2, a
//! malformed head), the connection is handed to hyper with the bytes already read
//! (`crate::handover`), and hyper serves it from then on. The fast path refuses only what it
//! must: auth's refusals, and a head that is malformed (400) or over `limits.max_head`
//! (431), answered with the contract's error body where hyper's would be empty (after the
//! hand-over, `crate::handover::ErrorBodies` gives hyper's own such answers that body);
//! every other error and limit stays hyper's and axum's.
//!
//! Why (BENCHMARKS.md, "Server load"): at 20,000 single-ID requests/s, hyper with a constant
//! answer took 1.5-2.9 µs of CPU per request more than a loop like this one, and the
//! server's axum stack 2.6-5.6 µs more than that. With this path the server took 18.5-19.2 µs
//! per request at that rate instead of 23.6-24.7 µs.

mod auth;
mod response;

use std::io;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::answer::{self, Answer, Extra, JSON, Status};
use crate::error::Error;
use crate::state::AppState;
use snowdrift_proto::wire::http1::{self as request, Head, Route};

/// An answer body up to this size is copied behind its head and any pipelined answers
/// before it, for one write; a larger one is written from where it is.
const SMALL: usize = 16 * 1024;

/// Queued answers are written once they reach this size, whatever is still to be read.
const FLUSH: usize = 64 * 1024;

/// How far a connection got on the fast path.
pub(crate) enum Ended<I> {
    /// It closed: the client went away or asked to close, or the server is stopping.
    Closed,
    /// Its next request is hyper's: the connection and what was read of it.
    HandOver(I, BytesMut),
}

/// Answers `io`'s requests while they are fast-path ones; returns when the connection ends
/// or must go to hyper. Once `stop` changes, the request being answered is finished and
/// the connection closed: at once if it is idle.
pub(crate) async fn serve<I>(
    mut io: I,
    state: &AppState,
    stop: &mut watch::Receiver<()>,
) -> io::Result<Ended<I>>
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let limits = *state.conns.limits();
    let (header_timeout, max_head) = (limits.header_timeout, limits.max_head);
    let mut read = BytesMut::with_capacity(4096);
    let mut out = Vec::new();
    let mut gate = auth::Gate::default();
    // When the first byte of the request being read came.
    let mut begun: Option<tokio::time::Instant> = None;
    loop {
        loop {
            let (len, close) = match request::parse(&read, max_head) {
                Head::Partial => break,
                // What hyper would answer with an empty body, answered with the contract's
                // error body instead; the connection cannot go on after either.
                head @ (Head::Malformed | Head::TooLarge) => {
                    let status = if head == Head::TooLarge {
                        Status::REQUEST_HEADER_FIELDS_TOO_LARGE
                    } else {
                        Status::BAD_REQUEST
                    };
                    let body = answer::refusal::head_body(status.code()).unwrap_or_default();
                    response::head(&mut out, status, JSON, body.len(), true, Extra::default());
                    out.extend_from_slice(&body);
                    io.write_all(&out).await?;
                    io.shutdown().await?;
                    return Ok(Ended::Closed);
                }
                Head::Get {
                    len,
                    route,
                    name,
                    query,
                    close,
                    authorization,
                } => {
                    let start = Instant::now();
                    let Answer {
                        status,
                        content_type,
                        body,
                        extra,
                    } = match gate.admit(state, route, name, authorization) {
                        Ok(()) => answer(state, route, name, query).await,
                        Err(refused) => Answer::refused(&refused),
                    };
                    // Timed to the answer, not its write, as the router's requests are.
                    crate::metrics::record_http(route.pattern(), "GET", status.code(), start);
                    response::head(&mut out, status, content_type, body.len(), close, extra);
                    if body.len() <= SMALL {
                        out.extend_from_slice(&body);
                    } else {
                        // A large batch goes out from its own buffer, with what is queued
                        // before it, rather than copied.
                        io.write_all_buf(&mut Buf::chain(out.as_slice(), body.as_slice()))
                            .await?;
                        out.clear();
                    }
                    (len, close)
                }
                // Anything else is hyper's.
                _ => {
                    io.write_all(&out).await?;
                    return Ok(Ended::HandOver(io, read));
                }
            };
            read.advance(len);
            begun = None;
            if close {
                io.write_all(&out).await?;
                io.shutdown().await?;
                return Ok(Ended::Closed);
            }
            // Pipelined answers are held for one write, but not without bound: a few bytes
            // of requests must not make a connection hold megabytes of answers.
            if out.len() >= FLUSH {
                io.write_all(&out).await?;
                out.clear();
            }
        }
        if !out.is_empty() {
            io.write_all(&out).await?;
            out.clear();
        }
        if stop.has_changed().unwrap_or(true) {
            return Ok(Ended::Closed);
        }
        // A request begun must be whole within `header_timeout` of its first byte (an idle
        // connection is the `Conn`'s idle timeout's to close).
        match (read.is_empty(), begun) {
            (true, _) => begun = None,
            (false, None) => begun = Some(tokio::time::Instant::now()),
            (false, Some(_)) => {}
        }
        let deadline = begun.map(|at| at + header_timeout);
        // Room for a whole request in each read; `reserve` first moves what is left of a
        // partial one to the front, so the buffer stays near one head's limit.
        read.reserve(1024);
        tokio::select! {
            n = io.read_buf(&mut read) => if n? == 0 {
                return Ok(Ended::Closed);
            },
            _ = stop.changed() => return Ok(Ended::Closed),
            () = crate::conn::until(deadline) => {
                tracing::debug!("request head not whole within limits.header_timeout; closing");
                return Ok(Ended::Closed);
            }
        }
    }
}

/// The answer to a GET of `route`, from the answer layer the axum routes answer from too,
/// so that both paths answer alike.
async fn answer(state: &AppState, route: Route, name: &str, query: Option<&str>) -> Answer {
    let leaf = match route {
        Route::Ids => {
            return match answer::ids::next(state, name, query).await {
                Ok(body) => Answer::json(body),
                // A generator over its rate (uuid2's 64 per window) says when to retry,
                // as the router's answer does.
                Err(e) => Answer::refused(&e),
            };
        }
        Route::LeafSegment => answer::leaf::segment_id(state, name).await,
        Route::LeafSnowflake => answer::leaf::snowflake_id(state, name).await,
        // The reader takes only routes with a fast prefix; one added to the table without
        // an answer here is a bug to report, not the client's mistake.
        other => {
            return Answer::refused(&Error::internal(format!(
                "route {} has a fast prefix but no fast answer; please report this",
                other.pattern()
            )));
        }
    };
    let path = match route {
        Route::LeafSegment => "/api/segment/get/",
        _ => "/api/snowflake/get/",
    };
    answer::leaf::text(state, || format!("{path}{name}"), leaf)
}
