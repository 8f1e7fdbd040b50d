//! Meituan Leaf's routes as axum handlers: by GET or POST (Leaf maps its routes without a
//! method), their answers from `crate::answer::leaf`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::response::{Html, IntoResponse, Response};

use super::error::to_response;
use super::path::ApiPath;
use crate::answer::leaf;
use crate::error::Error;
use crate::state::AppState;

/// `GET|POST /api/segment/get/{tag}`: one segment ID.
pub async fn segment(
    State(state): State<Arc<AppState>>,
    uri: axum::http::Uri,
    tag: Result<ApiPath<String>, Error>,
) -> Response {
    let answer = match tag {
        Ok(ApiPath(tag)) => leaf::segment_id(&state, &tag).await,
        Err(e) => Err(e),
    };
    to_response(leaf::text(&state, || uri.path().to_string(), answer))
}

/// `GET|POST /api/snowflake/get/{key}`: one snowflake ID. Leaf ignores the key; here a key that
/// names a snowflake generator picks it, any other key gets the default one.
pub async fn snowflake(
    State(state): State<Arc<AppState>>,
    uri: axum::http::Uri,
    key: Result<ApiPath<String>, Error>,
) -> Response {
    let answer = match key {
        Ok(ApiPath(key)) => leaf::snowflake_id(&state, &key).await,
        Err(e) => Err(e),
    };
    to_response(leaf::text(&state, || uri.path().to_string(), answer))
}

/// `GET /api/snowflake/decode/{id}`: the fields of a snowflake ID of the default generator.
pub async fn decode(State(state): State<Arc<AppState>>, ApiPath(id): ApiPath<String>) -> Response {
    leaf::decode(&state, &id).map(Json).into_response()
}

/// `GET|POST /decodeSnowflakeId?snowflakeId=ID`: Leaf's monitor decode.
pub async fn decode_query(
    State(state): State<Arc<AppState>>,
    RawQuery(query): RawQuery,
) -> Response {
    leaf::decode_query(&state, query.as_deref())
        .map(Json)
        .into_response()
}

/// `GET /cache`: Leaf's monitor page of segment buffers.
pub async fn cache(State(state): State<Arc<AppState>>) -> Response {
    Html(leaf::cache(&state)).into_response()
}

/// `GET /db`: Leaf's monitor page of the tag table.
pub async fn db(State(state): State<Arc<AppState>>) -> Response {
    leaf::db(&state).await.map(Html).into_response()
}
