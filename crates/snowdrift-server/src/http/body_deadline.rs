//! `limits.body_timeout` for HTTP: the handler that was reading a body cut by its deadline
//! gets an error, and the request is answered 408 with the contract's error body (on
//! HTTP/1.1 with `Connection: close`, so hyper closes the connection; on HTTP/2 hyper
//! resets the rest of the stream).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode, Version};
use axum::response::Response;
use futures_util::future::Either;
use tower::{Layer, Service};

use crate::deadline::{BoxError, Timed, message};

/// Why an HTTP request body failed: it took longer than `limits.body_timeout`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BodyTimedOut(String);

fn http_refusal(timeout: Duration) -> BoxError {
    Box::new(BodyTimedOut(message(timeout)))
}

/// The HTTP layer: every request body must end within `timeout` of the request's head.
#[derive(Debug, Clone, Copy)]
pub struct BodyDeadline {
    timeout: Duration,
}

impl BodyDeadline {
    /// Bodies must end within `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl<S> Layer<S> for BodyDeadline {
    type Service = Deadlined<S>;

    fn layer(&self, inner: S) -> Deadlined<S> {
        Deadlined {
            inner,
            timeout: self.timeout,
        }
    }
}

/// A service behind [`BodyDeadline`].
#[derive(Debug, Clone)]
pub struct Deadlined<S> {
    inner: S,
    timeout: Duration,
}

impl<S> Service<Request> for Deadlined<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future =
        Either<S::Future, Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // Most requests (GETs) have no body: nothing to time, nothing boxed.
        if http_body::Body::is_end_stream(request.body()) {
            return Either::Left(self.inner.call(request));
        }
        let timeout = self.timeout;
        let expired = Arc::new(AtomicBool::new(false));
        let http1 = request.version() <= Version::HTTP_11;
        let request = request.map(|body| {
            Body::new(Timed::new(body, timeout, http_refusal).noting(Arc::clone(&expired)))
        });
        let call = self.inner.call(request);
        Either::Right(Box::pin(async move {
            let response = call.await?;
            if !expired.load(Ordering::Relaxed) {
                return Ok(response);
            }
            // Whatever the handler made of its failed read, the client is told why.
            let mut response = super::error::respond(
                StatusCode::REQUEST_TIMEOUT,
                "invalid_request",
                &message(timeout),
            );
            if http1 {
                // The rest of the body would be read as the next request: the connection
                // cannot go on.
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(response)
        }))
    }
}
