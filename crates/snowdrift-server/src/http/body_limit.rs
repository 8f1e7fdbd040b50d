//! A request whose `Content-Length` is over `limits.max_body` is answered 413 before
//! anything reads its body, so a client that sent `Expect: 100-continue` gets the refusal
//! instead of `100 Continue` (hyper sends that when a body is first read). Bodies without a
//! length (chunked) are bounded while read, by axum's `DefaultBodyLimit`.

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::StatusCode;
use axum::http::header::CONTENT_LENGTH;
use axum::response::Response;
use futures_util::future::Either;
use tower::{Layer, Service};

/// Refuses declared bodies over `max` bytes.
#[derive(Debug, Clone, Copy)]
pub struct DeclaredBodyLimit {
    max: usize,
}

impl DeclaredBodyLimit {
    /// Bodies over `max` bytes.
    pub fn new(max: usize) -> Self {
        Self { max }
    }
}

impl<S> Layer<S> for DeclaredBodyLimit {
    type Service = Limited<S>;

    fn layer(&self, inner: S) -> Limited<S> {
        Limited {
            inner,
            max: self.max,
        }
    }
}

/// A service behind [`DeclaredBodyLimit`].
#[derive(Debug, Clone)]
pub struct Limited<S> {
    inner: S,
    max: usize,
}

impl<S> Service<Request> for Limited<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Either<S::Future, Ready<Result<Response, Infallible>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        match declared {
            Some(len) if len > self.max as u64 => Either::Right(ready(Ok(super::error::respond(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                &format!(
                    "request body: {len} bytes is over limits.max_body ({} bytes)",
                    self.max
                ),
            )))),
            _ => Either::Left(self.inner.call(request)),
        }
    }
}
