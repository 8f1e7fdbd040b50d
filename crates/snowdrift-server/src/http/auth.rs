//! Auth for HTTP routes: the layer that asks `crate::answer::access` what a matched route
//! needs, reads the names from the request's path parameters, and answers a refusal as the
//! contract's error with `WWW-Authenticate` (401, 403) and `Retry-After` (429).

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request};
use axum::http::header::AUTHORIZATION;
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use futures_util::future::Either;
use tower::{Layer, Service};

use crate::answer::access;
use crate::error::Error;
use crate::state::AppState;

/// The auth layer for the HTTP router: passes a request whose token allows its route,
/// answers any other with 401, 403 or 429. Requests no route matched pass through to the
/// fallback's 404.
///
/// A plain tower layer rather than `axum::middleware::from_fn`: that clones the route and
/// boxes two futures per request, which was measured at a tenth of a single-ID request's
/// CPU time even with auth off. Here a request costs one atomic load when auth is off,
/// and the decision is made before the route is called, with nothing boxed.
#[derive(Debug, Clone)]
pub struct RequireLayer {
    state: Arc<AppState>,
}

impl RequireLayer {
    /// Auth by the tokens `state` holds at each request (they can be reloaded).
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }
}

impl<S> Layer<S> for RequireLayer {
    type Service = Require<S>;

    fn layer(&self, inner: S) -> Require<S> {
        Require {
            inner,
            state: self.state.clone(),
        }
    }
}

/// A route behind [`RequireLayer`].
#[derive(Debug, Clone)]
pub struct Require<S> {
    inner: S,
    state: Arc<AppState>,
}

impl<S> Service<Request> for Require<S>
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
        match admit(&self.state, request) {
            Ok(request) => Either::Left(self.inner.call(request)),
            Err(denied) => Either::Right(ready(Ok(denied.into_response()))),
        }
    }
}

/// The request back if its token allows its route, else why not.
fn admit(state: &AppState, request: Request) -> Result<Request, Error> {
    // One set of tokens for the whole decision, even if a reload swaps them meanwhile.
    let tokens = state.auth.current();
    if !tokens.is_enabled() {
        return Ok(request);
    }
    // No matched route: the fallback's 404 (or 405) guards nothing.
    let Some(route) = request.extensions().get::<MatchedPath>().cloned() else {
        return Ok(request);
    };
    let Some(need) = access::need_of(route.as_str()) else {
        return Ok(request);
    };
    let (mut parts, body) = request.into_parts();
    // The extractor only reads what the router stored, so it is ready at once. Were it ever
    // not, `None` below asks the token for every name: closed, not open.
    let params = RawPathParams::from_request_parts(&mut parts, &()).now_or_never();
    let request = Request::from_parts(parts, body);
    // Path parameters that are not UTF-8 (the extractor's error) name nothing.
    let param = |key: &str| -> Option<&str> {
        let params = params.as_ref()?.as_ref().ok()?;
        params.iter().find_map(|(k, v)| (k == key).then_some(v))
    };
    let touched = need.touches(state, params.is_some().then_some(param));
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or_default());
    match tokens.authorize(authorization, touched.target(), need.role) {
        Ok(()) => Ok(request),
        Err(denied) => {
            tracing::debug!(
                route = route.as_str(),
                code = denied.code(),
                "request refused"
            );
            Err(denied)
        }
    }
}
