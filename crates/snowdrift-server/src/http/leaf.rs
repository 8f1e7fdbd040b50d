//! Meituan Leaf's routes, so a client written for Leaf works unchanged: the ID as
//! `text/plain`. Unlike Leaf, an error is a non-200 status with a message, never a `0` with
//! 200.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::path::ApiPath;
use crate::config::Kind;
use crate::error::Error;
use crate::source::{IdSource, Ids, Source};
use crate::state::AppState;
use crate::state::issue;

/// `GET /api/segment/get/{tag}`: one segment ID.
pub async fn segment(
    State(state): State<Arc<AppState>>,
    tag: Result<ApiPath<String>, Error>,
) -> Response {
    let answer = match tag {
        Ok(ApiPath(tag)) => segment_id(&state, &tag).await,
        Err(e) => Err(e),
    };
    text(answer).into_response()
}

/// `GET /api/snowflake/get/{key}`: one snowflake ID. Leaf ignores the key; here a key that
/// names a snowflake generator picks it, any other key gets the default one.
pub async fn snowflake(
    State(state): State<Arc<AppState>>,
    key: Result<ApiPath<String>, Error>,
) -> Response {
    let answer = match key {
        Ok(ApiPath(key)) => snowflake_id(&state, &key).await,
        Err(e) => Err(e),
    };
    text(answer).into_response()
}

/// One ID of segment tag `tag`, for the route above and the fast path (`crate::fast`).
pub(crate) async fn segment_id(state: &AppState, tag: &str) -> Result<String, Error> {
    let source = match state.generators.get(tag) {
        Ok(s) if s.kind() == Kind::Segment => s,
        Ok(s) => {
            return Err(Error::unsupported(format!(
                "{tag:?} is a {} generator, not a segment tag",
                s.kind().name()
            )));
        }
        Err(e) => return Err(e),
    };
    one(tag, &source).await
}

/// One snowflake ID for `key`, for the route above and the fast path (`crate::fast`).
pub(crate) async fn snowflake_id(state: &AppState, key: &str) -> Result<String, Error> {
    let Some((name, source)) = snowflake_for(state, key) else {
        return Err(Error::not_found("this server has no snowflake generator"));
    };
    one(&name, &source).await
}

/// `GET /api/snowflake/decode/{id}`: the fields of a snowflake ID of the default generator,
/// as JSON.
pub async fn decode(State(state): State<Arc<AppState>>, ApiPath(id): ApiPath<String>) -> Response {
    let Some((name, source)) = snowflake_for(&state, "") else {
        return Error::not_found("this server has no snowflake generator").into_response();
    };
    match crate::decode::id(&state.generators, &name, &source, &id, None) {
        Ok(v) => Json::<Value>(v).into_response(),
        Err(e) => e.into_response(),
    }
}

fn snowflake_for(state: &AppState, key: &str) -> Option<(String, Arc<Source>)> {
    if state.generators.is_generator(key)
        && let Ok(s) = state.generators.get(key)
        && s.kind() == Kind::Snowflake
    {
        return Some((key.to_string(), s));
    }
    let (name, s) = state.generators.default_snowflake()?;
    Some((name.to_string(), s))
}

async fn one(name: &str, source: &Source) -> Result<String, Error> {
    let id = match issue(name, source, 1, None).await? {
        Ids::Runs(runs) => runs.first().map(|run| run.first.to_string()),
        Ids::Text(text) => text.into_iter().next(),
    };
    id.ok_or_else(|| Error::unavailable("no ID was issued"))
}

/// The status and text body of a Leaf answer. Leaf clients read the body as text: errors
/// are text too, with the contract's status.
pub(crate) fn text(answer: Result<String, Error>) -> (StatusCode, String) {
    match answer {
        Ok(id) => (StatusCode::OK, id),
        Err(e) => (
            super::error::status(e.kind()),
            format!("error: {}: {}", e.code(), e.message()),
        ),
    }
}
