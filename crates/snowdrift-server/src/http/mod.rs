//! The HTTP API: routes, shared state, and the contract's error shape for every failure
//! (bad query, bad JSON, unknown route, wrong method).

pub(crate) mod auth;
mod body_deadline;
mod body_limit;
pub mod error;
pub(crate) mod health;
pub(crate) mod ids;
pub(crate) mod leaf_routes;
pub(crate) mod metrics;
mod openapi;
mod path;
mod tags;
mod tinyid;
mod ui;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{MethodRouter, get};
use snowdrift_proto::http::Route;

use crate::error::Error;

use crate::state::AppState;

/// The router for `state`: every route of the one route table
/// (`snowdrift_proto::http::Route`, from which the fast path takes its routes too), each
/// with its handlers; Tinyid's only with `tinyid.enabled` (without, they are the fallback's
/// 404).
pub fn router(state: Arc<AppState>, max_body: usize) -> Router {
    let body_timeout = state.conns.limits().body_timeout;
    let tinyid = state.tinyid;
    Route::ALL
        .into_iter()
        .filter(|route| tinyid || !route.is_tinyid())
        .fold(Router::new(), |router, route| {
            router.route(route.pattern(), handlers(route))
        })
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(auth::RequireLayer::new(state.clone()))
        // Inside the auth layer's refusal (which reads no body) and the timing, which
        // counts its 408s.
        .layer(body_deadline::BodyDeadline::new(body_timeout))
        .layer(crate::metrics::Track::HTTP)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(body_limit::DeclaredBodyLimit::new(max_body))
        // Outermost, so every answer carries it: refusals of the layers above too.
        .layer(axum::middleware::map_response(nosniff))
        .with_state(state)
}

/// `X-Content-Type-Options: nosniff` on an answer, so a browser never reads an error's text
/// or an ID as HTML or script whatever its content type says. The fast path writes the
/// same header ([`crate::fast`]).
async fn nosniff(mut response: axum::response::Response) -> axum::response::Response {
    response.headers_mut().insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    response
}

/// The handlers of `route`, one per method of [`Route::methods`] (a test checks that every
/// other method gets 405).
fn handlers(route: Route) -> MethodRouter<Arc<AppState>> {
    match route {
        Route::Ids => get(ids::next),
        Route::Decode => get(ids::decode),
        Route::Tags => get(tags::list).post(tags::create),
        Route::Tag => get(tags::get).patch(tags::update),
        Route::Generators => get(health::generators),
        Route::LeafSegment => get(leaf_routes::segment).post(leaf_routes::segment),
        Route::LeafSnowflake => get(leaf_routes::snowflake).post(leaf_routes::snowflake),
        Route::LeafDecode => get(leaf_routes::decode),
        Route::LeafDecodeQuery => get(leaf_routes::decode_query).post(leaf_routes::decode_query),
        Route::LeafCache => get(leaf_routes::cache),
        Route::LeafDb => get(leaf_routes::db),
        Route::TinyidNextId
        | Route::TinyidNextIdSimple
        | Route::TinyidNextSegmentId
        | Route::TinyidNextSegmentIdSimple => tinyid::handlers(route),
        Route::Healthz => get(health::healthz),
        Route::Readyz => get(health::readyz),
        Route::Metrics => get(metrics::render),
        Route::OpenApi => get(openapi::spec),
        Route::Ui => get(ui::page),
        Route::UiScript => get(ui::script),
        Route::UiStyle => get(ui::style),
    }
}

async fn not_found(uri: axum::http::Uri) -> Error {
    Error::not_found(format!(
        "no route {}; see /openapi.json for the API",
        uri.path()
    ))
}

async fn method_not_allowed(
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> axum::response::Response {
    error::respond(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("{method} is not allowed on {}", uri.path()),
    )
}
