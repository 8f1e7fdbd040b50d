//! One client connection: read what the client sent, answer every complete request in it,
//! write the answers at once, repeat; close on a protocol error (after saying why), on
//! `QUIT`, or when the server stops.
//!
//! Memory per connection is bounded: the input holds at most one unfinished request
//! (which the frame parser bounds) plus one read, and the output is written out whenever
//! it passes [`OUTPUT_FLUSH`].

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::conn::{Conn, until};

use super::refusal::Refusal;
use super::session::{Flow, Session};
use snowdrift_proto::wire::resp as frame;

/// A RESP client's connection, held under the connection limits.
type Stream = Conn<TcpStream>;

/// Bytes asked of the socket per read.
const READ_SIZE: usize = 16 * 1024;

/// Output past this is written before more requests are answered, so a long pipeline
/// costs no more memory than a short one.
const OUTPUT_FLUSH: usize = 64 * 1024;

/// After the last reply of a closing connection, how long and how much of what the client
/// still sends is read and dropped. Closing a socket with unread input makes the kernel
/// send a reset, which can destroy the reply (the protocol error's explanation) before the
/// client reads it.
const LINGER: Duration = Duration::from_secs(1);
/// The most bytes [`linger`] reads and drops.
const LINGER_BYTES: usize = 1024 * 1024;

/// Serves `session` on `stream` until the client leaves, a protocol error, `QUIT`, or
/// `stop` turning true (or its sender going away). Requests received in full before the
/// stop are answered; a connection waiting for a request closes at once. A request must be
/// whole within `timeout` of its first byte (`ConnLimits::resp_timeout`).
pub async fn serve(
    mut stream: Stream,
    mut session: Session,
    timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut input: Vec<u8> = Vec::with_capacity(READ_SIZE);
    let mut output: Vec<u8> = Vec::with_capacity(READ_SIZE);
    // When the first byte of the request being read came: it must be whole within
    // `timeout` (an idle connection is the `Conn`'s idle timeout's to close).
    let mut begun: Option<Instant> = None;
    loop {
        let (used, close) = answer(&input, &mut session, &mut output, &mut stream).await;
        input.drain(..used);
        if used > 0 || input.is_empty() {
            begun = None;
        }
        if !input.is_empty() && begun.is_none() {
            begun = Some(Instant::now());
        }
        if stream.write_all(&output).await.is_err() {
            return;
        }
        output.clear();
        if close {
            linger(stream, stop).await;
            return;
        }
        if *stop.borrow() {
            let _ = stream.shutdown().await;
            return;
        }
        input.reserve(READ_SIZE);
        let deadline = begun.map(|at| at + timeout);
        tokio::select! {
            read = stream.read_buf(&mut input) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            // Whether the server stops or its listener is gone, nothing is in flight here.
            _ = stop.changed() => return,
            () = until(deadline) => {
                tracing::debug!(
                    "RESP request not whole within limits.header_timeout or body_timeout; \
                     closing"
                );
                return;
            }
        }
    }
}

/// Answers every complete request at the front of `input` into `output` (writing it out
/// when it grows past [`OUTPUT_FLUSH`]): how many bytes of `input` were used, and whether
/// to close.
async fn answer(
    input: &[u8],
    session: &mut Session,
    output: &mut Vec<u8>,
    stream: &mut Stream,
) -> (usize, bool) {
    let mut used = 0;
    loop {
        let request = match frame::parse(&input[used..], &session.limits()) {
            Ok(Some(request)) => request,
            Ok(None) => return (used, false),
            Err(e @ frame::FrameError::FrameTooLarge { .. }) => {
                tracing::debug!(error = %e, "RESP request over limits.resp_max_frame; closing");
                Refusal::err(format!("{e} (limits.resp_max_frame)")).write(output);
                return (used, true);
            }
            Err(e) => {
                tracing::debug!(error = %e, "RESP protocol error; closing the connection");
                Refusal::err(format!("Protocol error: {e}")).write(output);
                return (used, true);
            }
        };
        used += request.len;
        if !request.args.is_empty() && session.execute(&request.args, output).await == Flow::Close {
            return (used, true);
        }
        if output.len() >= OUTPUT_FLUSH {
            if stream.write_all(output).await.is_err() {
                return (used, true);
            }
            output.clear();
        }
    }
}

/// Ends the connection: the write side now, the read side once the client has closed its
/// own, [`LINGER`] / [`LINGER_BYTES`] have passed, or the server stops.
async fn linger(mut stream: Stream, mut stop: watch::Receiver<bool>) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let mut sink = vec![0u8; READ_SIZE];
    let mut dropped = 0;
    let drain = async {
        while dropped < LINGER_BYTES {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => dropped += n,
            }
        }
    };
    tokio::select! {
        _ = tokio::time::timeout(LINGER, drain) => {}
        _ = stop.wait_for(|stopping| *stopping) => {}
    }
}
