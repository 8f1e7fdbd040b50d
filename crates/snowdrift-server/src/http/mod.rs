//! The HTTP API: routes, shared state, and the contract's error shape for every failure
//! (bad query, bad JSON, unknown route, wrong method).

mod auth;
pub mod error;
pub(crate) mod health;
pub(crate) mod ids;
pub(crate) mod leaf;
pub(crate) mod metrics;
mod openapi;
mod path;
mod query;
mod tags;
mod ui;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;

use crate::error::Error;

use crate::state::AppState;

/// The router for `state`.
pub fn router(state: Arc<AppState>, max_body: usize) -> Router {
    Router::new()
        .route("/v1/ids/{name}", get(ids::next))
        .route("/v1/ids/{name}/decode/{id}", get(ids::decode))
        .route("/v1/tags", get(tags::list).post(tags::create))
        .route("/v1/tags/{tag}", get(tags::get).patch(tags::update))
        .route("/v1/generators", get(health::generators))
        .route("/api/segment/get/{tag}", get(leaf::segment))
        .route("/api/snowflake/get/{key}", get(leaf::snowflake))
        .route("/api/snowflake/decode/{id}", get(leaf::decode))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics::render))
        .route("/openapi.json", get(openapi::spec))
        .route("/ui", get(ui::page))
        .route("/ui/app.js", get(ui::script))
        .route("/ui/style.css", get(ui::style))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(auth::RequireLayer::new(state.clone()))
        .layer(crate::metrics::Track::HTTP)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
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
