//! `GET /v1/ids/{name}` and `GET /v1/ids/{name}/decode/{id}`: the answers of
//! `crate::answer::ids` as axum responses.

use std::sync::Arc;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::path::ApiPath;
use crate::answer;
use crate::error::Error;
use crate::state::AppState;

/// `{"name": "...", "ids": ["...", ...]}`: `count` new IDs, as strings.
pub async fn next(
    State(state): State<Arc<AppState>>,
    ApiPath(name): ApiPath<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, Error> {
    let body = answer::ids::next(&state, &name, query.as_deref()).await?;
    Ok(([(CONTENT_TYPE, answer::JSON)], body).into_response())
}

/// The fields inside an ID (or, for an obfuscated counter ID, the original).
pub async fn decode(
    State(state): State<Arc<AppState>>,
    ApiPath((name, id)): ApiPath<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Error> {
    answer::ids::decode(&state, &name, &id, query.as_deref()).map(Json)
}
