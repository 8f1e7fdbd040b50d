//! `/v1/tags`: segment tags (admin). Tags share one namespace with generators. The bodies
//! are `snowdrift_proto::http`'s shapes.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use snowdrift_core::counter::CounterTemplate;
use snowdrift_proto::http as shape;
use snowdrift_store::segment::{
    DEFAULT_STEP, NewTag, TagUpdate, parse_utc_offset, show_utc_offset,
};

use super::path::ApiPath;
use crate::error::Error;
use crate::state::AppState;

/// A tag as the API shows it; `max_id` is a string like every ID. A tag with a template
/// also shows it, its UTC offset and the period `max_id` counts in (once its count has
/// started in a dated period); a tag without one shows exactly Leaf's fields.
pub fn tag_json(tag: &snowdrift_store::segment::Tag) -> shape::Tag {
    let template = tag.template.as_ref();
    shape::Tag {
        tag: tag.tag.clone(),
        max_id: tag.max_id.to_string(),
        step: tag.step,
        description: tag.description.clone(),
        template: template.map(|t| t.as_str().to_string()),
        utc_offset: template.map(|t| show_utc_offset(t.utc_offset_seconds())),
        period: template
            .filter(|_| tag.period != 0)
            .map(|_| tag.period.to_string()),
    }
}

/// The template of a new tag, with its UTC offset: refused with what is wrong.
fn template_of(
    template: Option<&str>,
    utc_offset: Option<&str>,
) -> Result<Option<CounterTemplate>, Error> {
    let Some(text) = template else {
        return match utc_offset {
            Some(_) => Err(Error::invalid(
                "utc_offset applies to a tag with a template; give one, or drop utc_offset",
            )),
            None => Ok(None),
        };
    };
    let parsed =
        CounterTemplate::parse(text).map_err(|e| Error::invalid(format!("template: {e}")))?;
    let offset = utc_offset.map(parse_utc_offset).transpose()?.unwrap_or(0);
    let parsed = parsed
        .with_utc_offset(offset)
        .map_err(|e| Error::invalid(format!("utc_offset: {e}")))?;
    Ok(Some(parsed))
}

/// Every tag in the store.
pub async fn list(State(state): State<Arc<AppState>>) -> Result<Json<shape::Tags>, Error> {
    let tags = state.generators.segments().list_tags().await?;
    Ok(Json(shape::Tags {
        tags: tags.iter().map(tag_json).collect(),
    }))
}

/// One tag.
pub async fn get(
    State(state): State<Arc<AppState>>,
    ApiPath(tag): ApiPath<String>,
) -> Result<Json<shape::Tag>, Error> {
    Ok(Json(tag_json(
        &state.generators.segments().get_tag(&tag).await?,
    )))
}

/// Creates a tag; 409 when the name is a generator's or another tag's.
pub async fn create(
    State(state): State<Arc<AppState>>,
    body: Result<Json<shape::NewTag>, JsonRejection>,
) -> Result<(StatusCode, Json<shape::Tag>), Response> {
    let Json(body) = body.map_err(json_error)?;
    if state.generators.is_generator(&body.tag) {
        return Err(Error::conflict(format!(
            "{:?} is the name of a generator; tags and generators share one namespace",
            body.tag
        ))
        .into_response());
    }
    let template = template_of(body.template.as_deref(), body.utc_offset.as_deref())
        .map_err(IntoResponse::into_response)?;
    let new = NewTag {
        tag: body.tag,
        step: body.step.unwrap_or(DEFAULT_STEP),
        description: body.description,
        template,
    };
    let tag = state
        .generators
        .segments()
        .create_tag(&new)
        .await
        .map_err(|e| Error::from(e).into_response())?;
    Ok((StatusCode::CREATED, Json(tag_json(&tag))))
}

/// Changes a tag's step and/or description.
pub async fn update(
    State(state): State<Arc<AppState>>,
    ApiPath(tag): ApiPath<String>,
    body: Result<Json<shape::TagPatch>, JsonRejection>,
) -> Result<Json<shape::Tag>, Response> {
    let Json(body) = body.map_err(json_error)?;
    let update = TagUpdate {
        step: body.step,
        description: body.description,
    };
    let tag = state
        .generators
        .segments()
        .update_tag(&tag, &update)
        .await
        .map_err(|e| Error::from(e).into_response())?;
    Ok(Json(tag_json(&tag)))
}

/// A JSON body that could not be read, in the contract's shape: 400, or 413 for one over
/// `limits.max_body` (a refusal only HTTP has).
fn json_error(e: JsonRejection) -> Response {
    let message = format!("request body: {}", e.body_text());
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return super::error::respond(StatusCode::PAYLOAD_TOO_LARGE, "invalid_request", &message);
    }
    Error::invalid(message).into_response()
}
