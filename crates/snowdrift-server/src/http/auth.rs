//! Auth for HTTP routes: which role and name each route needs, and the refusals as the
//! contract's errors with `WWW-Authenticate` (401, 403) and `Retry-After` (429).
//!
//! Open without a token: `/healthz` and `/readyz` (for load balancers and orchestrators),
//! `/metrics` (for scrapers: names and numbers, no hosts or addresses), `/openapi.json`, and
//! `/ui` with its assets (the page holds no data; it asks for a token to read
//! `/v1/generators`). `/v1/generators` lists every generator with its worker lease, holder
//! and registry, so it needs `read` on every name (`*`), as listing tags does.
//! A route this table does not know needs an admin token for every name, so a new route is
//! closed until someone decides otherwise.

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

use snowdrift_proto::http::Route;

use crate::auth::{Role, Target};
use crate::config::Kind;
use crate::error::Error;
use crate::source::IdSource;
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
    let Some((role, on)) = need(route.as_str()) else {
        return Ok(request);
    };
    let (mut parts, body) = request.into_parts();
    // The extractor only reads what the router stored, so it is ready at once. Were it ever
    // not, `None` below asks the token for every name: closed, not open.
    let params = RawPathParams::from_request_parts(&mut parts, &()).now_or_never();
    let request = Request::from_parts(parts, body);
    // Path parameters that are not UTF-8 name nothing: the token is still checked for the
    // role, and the handler refuses the request with a 400.
    let param = |key: &str| -> Option<String> {
        let params = params.as_ref()?.as_ref().ok()?;
        params
            .iter()
            .find_map(|(k, v)| (k == key).then(|| v.to_string()))
    };
    let name = match on {
        On::Param(key) => param(key),
        On::Snowflake(key) => snowflake_name(state, &param(key).unwrap_or_default()),
        On::All => None,
    };
    let target = match (on, &name) {
        (On::All, _) => Target::All,
        _ if params.is_none() => Target::All,
        (_, Some(name)) => Target::Name(name),
        // Also a Leaf snowflake route on a server without snowflake generators: the handler
        // answers 404 to any valid token.
        (_, None) => Target::Any,
    };
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or_default());
    match tokens.authorize(authorization, target, role) {
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

/// The names a route's request touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum On {
    /// The name in this path parameter.
    Param(&'static str),
    /// The snowflake generator the Leaf route picks with this parameter.
    Snowflake(&'static str),
    /// Every name.
    All,
}

/// What a route (by its template) needs: nothing (open), or a role on some names. A route
/// the table does not know needs an admin token for every name, so a new route is closed
/// until someone decides otherwise.
fn need(template: &str) -> Option<(Role, On)> {
    let Some(route) = Route::from_pattern(template) else {
        return Some((Role::Admin, On::All));
    };
    let need = match route {
        Route::Healthz
        | Route::Readyz
        | Route::Metrics
        | Route::OpenApi
        | Route::Ui
        | Route::UiScript
        | Route::UiStyle => return None,
        Route::Ids | Route::Decode => (Role::Read, On::Param("name")),
        Route::LeafSegment => (Role::Read, On::Param("tag")),
        Route::LeafSnowflake => (Role::Read, On::Snowflake("key")),
        Route::LeafDecode | Route::LeafDecodeQuery => (Role::Read, On::Snowflake("")),
        // Every tag's buffer, as /v1/generators shows it.
        Route::LeafCache => (Role::Read, On::All),
        // The tag table, as listing /v1/tags.
        Route::LeafDb => (Role::Admin, On::All),
        Route::Tag => (Role::Admin, On::Param("tag")),
        Route::Generators => (Role::Read, On::All),
        // Listing and creating tags.
        Route::Tags => (Role::Admin, On::All),
    };
    Some(need)
}

/// The generator a Leaf snowflake route serves for `key`: the key when it names a snowflake
/// generator (Leaf ignores the key; snowdrift lets it pick), else the default one.
pub(crate) fn snowflake_name(state: &AppState, key: &str) -> Option<String> {
    let generators = &state.generators;
    if generators.is_generator(key)
        && generators
            .get(key)
            .is_ok_and(|s| s.kind() == Kind::Snowflake)
    {
        return Some(key.to_string());
    }
    generators
        .default_snowflake()
        .map(|(name, _)| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_routes_stay_open_and_unknown_ones_are_closed() {
        for open in [
            "/healthz",
            "/readyz",
            "/metrics",
            "/openapi.json",
            "/ui",
            "/ui/app.js",
        ] {
            assert_eq!(need(open), None, "{open}");
        }
        let read_name = Some((Role::Read, On::Param("name")));
        assert_eq!(need("/v1/ids/{name}"), read_name);
        assert_eq!(need("/v1/ids/{name}/decode/{id}"), read_name);
        assert_eq!(
            need("/api/segment/get/{tag}"),
            Some((Role::Read, On::Param("tag")))
        );
        assert_eq!(
            need("/v1/tags/{tag}"),
            Some((Role::Admin, On::Param("tag")))
        );
        assert_eq!(need("/v1/generators"), Some((Role::Read, On::All)));
        let admin_all = Some((Role::Admin, On::All));
        assert_eq!(need("/v1/tags"), admin_all);
        assert_eq!(need("/v1/something/new"), admin_all);
        assert_eq!(need("/uix"), admin_all);
    }

    /// openapi.json marks exactly the operations this table guards, so the document never
    /// shows a closed route as open or the other way round.
    #[test]
    fn openapi_security_matches_the_table() {
        let spec: serde_json::Value =
            serde_json::from_str(include_str!("../../openapi.json")).expect("openapi.json");
        let paths = spec["paths"].as_object().expect("paths");
        assert!(paths.len() >= 10, "{}", paths.len());
        for (path, item) in paths {
            for (method, op) in item.as_object().expect("path item") {
                let Some(op) = op.as_object() else { continue };
                let documented = op.contains_key("security");
                assert_eq!(
                    documented,
                    need(path).is_some(),
                    "{method} {path}: openapi.json security and auth::http::need disagree"
                );
            }
        }
    }
}
