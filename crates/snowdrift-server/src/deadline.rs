//! Request bodies under `limits.body_timeout`: a body that has not ended that long after its
//! request's head came fails, so a client sending a byte now and then cannot hold a request
//! (and the connection or HTTP/2 stream under it) for ever. The connection's idle timeout
//! does not catch it: each byte is activity.
//!
//! [`Timed`] is the body every transport wraps: `http::body_deadline` answers 408 when it
//! fails, `grpc::guard` the DEADLINE_EXCEEDED status tonic answers with.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

/// A boxed error, as HTTP bodies carry them.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that fails with `refuse(timeout)` once `at` has passed before it ended.
/// The timer is made only when the body first has to wait, so a body that arrived with its
/// head costs none.
pub(crate) struct Timed<B> {
    body: B,
    at: Instant,
    timeout: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    refuse: fn(Duration) -> BoxError,
    /// Set when the deadline cut the body, for the layer that answers for it.
    expired: Option<Arc<AtomicBool>>,
    ended: bool,
}

impl<B> Timed<B> {
    /// `body`, which must end within `timeout` from now; past it, it fails with
    /// `refuse(timeout)`.
    pub(crate) fn new(body: B, timeout: Duration, refuse: fn(Duration) -> BoxError) -> Self {
        Self {
            body,
            at: Instant::now() + timeout,
            timeout,
            sleep: None,
            refuse,
            expired: None,
            ended: false,
        }
    }

    /// Also sets `expired` when the deadline cuts the body.
    pub(crate) fn noting(mut self, expired: Arc<AtomicBool>) -> Self {
        self.expired = Some(expired);
        self
    }
}

impl<B> http_body::Body for Timed<B>
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
        if this.ended {
            return Poll::Ready(None);
        }
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            if frame.is_none() || this.body.is_end_stream() {
                // Done: a body that ended is never cut, and its timer is dropped.
                this.sleep = None;
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let at = this.at;
        let sleep = this
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.ended = true;
        if let Some(expired) = &this.expired {
            expired.store(true, Ordering::Relaxed);
        }
        tracing::debug!(timeout = ?this.timeout, "request body not whole within limits.body_timeout");
        Poll::Ready(Some(Err((this.refuse)(this.timeout))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// What a request whose body was cut is told, on any protocol.
pub(crate) fn message(timeout: Duration) -> String {
    format!(
        "request body: not whole within limits.body_timeout ({timeout:?}) of the request's \
         head; send the body with the head, at once"
    )
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use axum::body::Body;

    use super::*;

    fn refusal(timeout: Duration) -> BoxError {
        message(timeout).into()
    }

    async fn frame<B: http_body::Body + Unpin>(
        body: &mut B,
    ) -> Option<Result<Frame<B::Data>, B::Error>> {
        std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await
    }

    /// A body that sends `first` and then never ends.
    struct Stalled(Option<Bytes>);

    impl http_body::Body for Stalled {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            match self.0.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => Poll::Pending,
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_does_not_end_fails_at_the_deadline_and_one_that_ends_never() {
        let start = Instant::now();
        let mut timed = Timed::new(
            Stalled(Some(Bytes::from_static(b"ab"))),
            Duration::from_secs(3),
            refusal,
        );
        let first = frame(&mut timed).await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "ab");
        let e = frame(&mut timed).await.unwrap().unwrap_err();
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        assert!(e.to_string().contains("limits.body_timeout (3s)"), "{e}");
        assert!(frame(&mut timed).await.is_none());

        let mut whole = Timed::new(Body::from("whole"), Duration::from_secs(3), refusal);
        tokio::time::advance(Duration::from_secs(10)).await;
        let got = frame(&mut whole).await.unwrap().unwrap();
        assert_eq!(got.into_data().unwrap(), "whole");
        assert!(frame(&mut whole).await.is_none());
    }
}
