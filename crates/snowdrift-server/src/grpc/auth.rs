//! The token of an `IdService` call, checked from its headers before anything reads its
//! body: a call without a token the server knows is answered UNAUTHENTICATED at once (with
//! HTTP's 401 message), so a client without one cannot make the server buffer messages, and
//! does not take one of the `limits.max_streams` places. Which names and role the token
//! allows, and its rate, are judged by the method once the message (and so the name) is
//! read.

use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::header::AUTHORIZATION;
use axum::http::{Request, Response};
use futures_util::future::Either;
use tonic::Status;
use tower::{Layer, Service};

use crate::state::AppState;

/// Refuses calls without a known token when auth is on.
#[derive(Debug, Clone)]
pub struct TokenFirst {
    state: Arc<AppState>,
}

impl TokenFirst {
    /// By the tokens `state` holds at each call (they can be reloaded).
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }
}

impl<S> Layer<S> for TokenFirst {
    type Service = Checked<S>;

    fn layer(&self, inner: S) -> Checked<S> {
        Checked {
            inner,
            state: self.state.clone(),
        }
    }
}

/// A service behind [`TokenFirst`].
#[derive(Debug, Clone)]
pub struct Checked<S> {
    inner: S,
    state: Arc<AppState>,
}

impl<S, B> Service<Request<B>> for Checked<S>
where
    S: Service<Request<B>, Response = Response<tonic::body::Body>>,
{
    type Response = Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = Either<S::Future, Ready<Result<Self::Response, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let tokens = self.state.auth.current();
        if tokens.is_enabled() {
            let authorization = request
                .headers()
                .get(AUTHORIZATION)
                .map(|v| v.to_str().unwrap_or_default());
            if let Err(e) = tokens.identify(authorization) {
                // The body is dropped unread: hyper resets the rest of the stream.
                return Either::Right(ready(Ok(Status::from(e).into_http())));
            }
        }
        Either::Left(self.inner.call(request))
    }
}
