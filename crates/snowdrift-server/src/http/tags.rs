//! `/v1/tags`: segment tags (admin). Tags share one namespace with generators.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use snowdrift_store::segment::{DEFAULT_STEP, NewTag, Tag, TagUpdate};

use super::AppState;
use super::path::ApiPath;
use crate::error::ApiError;

/// The body of `POST /v1/tags`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    tag: String,
    step: Option<i64>,
    description: Option<String>,
}

/// The body of `PATCH /v1/tags/{tag}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    step: Option<i64>,
    description: Option<String>,
}

/// A tag as JSON; `max_id` is a string like every ID.
pub fn tag_json(tag: &Tag) -> Value {
    json!({
        "tag": tag.tag,
        "max_id": tag.max_id.to_string(),
        "step": tag.step,
        "description": tag.description,
    })
}

/// Every tag in the store.
pub async fn list(State(state): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    let tags = state.generators.segments().list_tags().await?;
    Ok(Json(
        json!({"tags": tags.iter().map(tag_json).collect::<Vec<_>>()}),
    ))
}

/// One tag.
pub async fn get(
    State(state): State<Arc<AppState>>,
    ApiPath(tag): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(tag_json(
        &state.generators.segments().get_tag(&tag).await?,
    )))
}

/// Creates a tag; 409 when the name is a generator's or another tag's.
pub async fn create(
    State(state): State<Arc<AppState>>,
    body: Result<Json<CreateBody>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Json(body) = body.map_err(json_error)?;
    if state.generators.is_generator(&body.tag) {
        return Err(ApiError::conflict(format!(
            "{:?} is the name of a generator; tags and generators share one namespace",
            body.tag
        )));
    }
    let new = NewTag {
        tag: body.tag,
        step: body.step.unwrap_or(DEFAULT_STEP),
        description: body.description,
    };
    let tag = state.generators.segments().create_tag(&new).await?;
    Ok((StatusCode::CREATED, Json(tag_json(&tag))))
}

/// Changes a tag's step and/or description.
pub async fn update(
    State(state): State<Arc<AppState>>,
    ApiPath(tag): ApiPath<String>,
    body: Result<Json<UpdateBody>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let Json(body) = body.map_err(json_error)?;
    let update = TagUpdate {
        step: body.step,
        description: body.description,
    };
    Ok(Json(tag_json(
        &state
            .generators
            .segments()
            .update_tag(&tag, &update)
            .await?,
    )))
}

/// A JSON body that could not be read, in the contract's shape.
fn json_error(e: JsonRejection) -> ApiError {
    let mut err = ApiError::bad_request(format!("request body: {}", e.body_text()));
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        err.status = StatusCode::PAYLOAD_TOO_LARGE;
    }
    err
}
