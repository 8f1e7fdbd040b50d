//! What a gRPC call's request body may cost, on every gRPC route (`IdService`, health,
//! reflection): each message at most `limits.grpc_max_message` bytes, refused with
//! RESOURCE_EXHAUSTED at its 5-byte length prefix, before its bytes are buffered (tonic
//! would otherwise collect up to 4 MB per call first); and the whole body ended within
//! `limits.body_timeout` of the call's headers, or DEADLINE_EXCEEDED. Both are statuses in
//! the body's error, which tonic answers the call with.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tonic::Status;
use tower::{Layer, Service};

use super::status::ERROR_CODE_KEY;
use crate::deadline::{BoxError, Timed};

/// The path of `TsoPeer.Forward`, whose body has no time bound.
const FORWARD_PATH: &str = "/snowdrift.v1.TsoPeer/Forward";

/// The length prefix of every gRPC message: a compression flag and a big-endian `u32`.
const PREFIX: usize = 5;

/// The layer: bodies under `max_message` per message and `timeout` in all.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    max_message: usize,
    timeout: Duration,
}

impl Guard {
    /// Messages of at most `max_message` bytes, bodies ended within `timeout`.
    pub fn new(max_message: usize, timeout: Duration) -> Self {
        Self {
            max_message,
            timeout,
        }
    }
}

impl<S> Layer<S> for Guard {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            guard: *self,
        }
    }
}

/// A service behind [`Guard`].
#[derive(Debug, Clone)]
pub struct Guarded<S> {
    inner: S,
    guard: Guard,
}

impl<S> Service<Request> for Guarded<S>
where
    S: Service<Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> S::Future {
        let Guard {
            max_message,
            timeout,
        } = self.guard;
        // A follower's `Forward` stream lasts as long as the leader leads: its messages are
        // bounded, its length is not. What bounds a stream that is not a follower's is its
        // place under `max_streams` and the requests it may have in flight (`peer.rs`).
        if request.uri().path() == FORWARD_PATH {
            return self
                .inner
                .call(request.map(|body| Body::new(Capped::new(body, max_message))));
        }
        self.inner.call(request.map(|body| {
            Body::new(Capped::new(
                Timed::new(body, timeout, too_slow),
                max_message,
            ))
        }))
    }
}

/// A contract error code on a status of this layer: both are the caller's request.
fn with_code(mut status: Status) -> Status {
    status
        .metadata_mut()
        .insert(ERROR_CODE_KEY, "invalid_request".parse().expect("ASCII"));
    status
}

fn too_slow(timeout: Duration) -> BoxError {
    Box::new(with_code(Status::deadline_exceeded(
        crate::deadline::message(timeout),
    )))
}

/// What a call whose message is over the cap is told.
pub(crate) fn too_large(len: u32, max: usize) -> Status {
    with_code(Status::resource_exhausted(format!(
        "request message of {len} bytes is over the limit of {max} (limits.grpc_max_message)"
    )))
}

/// A gRPC request body whose messages' length prefixes are read as they pass: one over
/// `max` fails the body there.
struct Capped<B> {
    body: B,
    max: usize,
    /// The prefix being read, and how much of it has come.
    prefix: [u8; PREFIX],
    have: usize,
    /// Bytes of the current message still to come.
    left: usize,
    failed: bool,
}

impl<B> Capped<B> {
    fn new(body: B, max: usize) -> Self {
        Self {
            body,
            max,
            prefix: [0; PREFIX],
            have: 0,
            left: 0,
            failed: false,
        }
    }

    /// Follows the framing through `data`: an error at a prefix over the cap.
    fn check(&mut self, mut data: &[u8]) -> Result<(), Status> {
        while !data.is_empty() {
            if self.left > 0 {
                let n = self.left.min(data.len());
                self.left -= n;
                data = &data[n..];
                continue;
            }
            let n = (PREFIX - self.have).min(data.len());
            self.prefix[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == PREFIX {
                self.have = 0;
                let [_, a, b, c, d] = self.prefix;
                let len = u32::from_be_bytes([a, b, c, d]);
                match usize::try_from(len) {
                    Ok(len) if len <= self.max => self.left = len,
                    _ => return Err(too_large(len, self.max)),
                }
            }
        }
        Ok(())
    }
}

impl<B> http_body::Body for Capped<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx)).map(|f| f.map_err(Into::into));
        if let Some(data) = frame.as_ref().and_then(|f| f.as_ref().ok()?.data_ref())
            && let Err(status) = this.check(data)
        {
            this.failed = true;
            tracing::debug!(
                max = this.max,
                "gRPC request message over limits.grpc_max_message"
            );
            return Poll::Ready(Some(Err(Box::new(status))));
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(len: u32) -> Vec<u8> {
        let mut v = vec![0u8];
        v.extend_from_slice(&len.to_be_bytes());
        v
    }

    #[test]
    fn prefixes_are_followed_across_chunks_and_one_over_the_cap_is_refused() {
        let mut capped = Capped::new((), 100);
        // Two messages of 100 and 3 bytes, cut at every awkward place.
        let mut wire = framed(100);
        wire.extend_from_slice(&[7; 100]);
        wire.extend_from_slice(&framed(3));
        wire.extend_from_slice(b"abc");
        for chunk in wire.chunks(3) {
            capped.check(chunk).unwrap();
        }
        assert_eq!((capped.have, capped.left), (0, 0));
        // The next prefix says 101 bytes: refused at its last byte, with nothing after it.
        let next = framed(101);
        capped.check(&next[..4]).unwrap();
        let status = capped.check(&next[4..]).unwrap_err();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(
            status.message(),
            "request message of 101 bytes is over the limit of 100 (limits.grpc_max_message)"
        );
    }
}
