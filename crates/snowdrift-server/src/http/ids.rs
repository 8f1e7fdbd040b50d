//! `GET /v1/ids/{name}` and `GET /v1/ids/{name}/decode/{id}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{RawQuery, State};
use serde_json::{Value, json};
use snowdrift_core::codec::Format;

use super::AppState;
use super::path::ApiPath;
use super::query::Params;
use crate::config::Kind;
use crate::error::ApiError;
use crate::source::{IdSource, Ids, Source};

/// `{"name": "...", "ids": ["...", ...]}`: `count` new IDs, as strings.
pub async fn next(
    State(state): State<Arc<AppState>>,
    ApiPath(name): ApiPath<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let params = Params::parse(query.as_deref(), &["count", "format"])?;
    let count = params.count(state.max_count)?;
    let format = params.format()?;
    let source = state.generators.get(&name)?;
    let ids = issue(&name, &source, count).await?;
    let text = render(&source, &ids, format)?;
    Ok(Json(json!({"name": name, "ids": text})))
}

/// Takes `count` IDs from `source` and counts them in the metrics.
pub async fn issue(name: &str, source: &Source, count: u64) -> Result<Ids, ApiError> {
    let ids = source.next(count).await?;
    super::metrics::issued(name, source.kind(), ids.len());
    Ok(ids)
}

/// The IDs as text in `format` (64-bit kinds; decimal by default).
pub fn render(source: &Source, ids: &Ids, format: Option<Format>) -> Result<Vec<String>, ApiError> {
    match ids {
        Ids::Text(text) => {
            if let Some(f) = format {
                return Err(ApiError::bad_request(format!(
                    "format={f} applies to 64-bit IDs; {} IDs have one standard text form",
                    source.kind().name()
                )));
            }
            Ok(text.clone())
        }
        Ids::Runs(runs) => {
            let format = format.unwrap_or_default();
            if format == Format::Decimal {
                return Ok(runs
                    .iter()
                    .flat_map(|r| r.iter())
                    .map(|id| id.to_string())
                    .collect());
            }
            let codec = match source {
                Source::Snowflake(s) => format.codec(s.layout()),
                _ if format == Format::Friendly => {
                    return Err(ApiError::bad_request(format!(
                        "format=friendly shows the fields of a snowflake layout; {} IDs have none",
                        source.kind().name()
                    )));
                }
                // Only the friendly form depends on the layout.
                _ => format.codec(&snowdrift_core::layout::Layout::preset("twitter")?),
            };
            runs.iter()
                .flat_map(|r| r.iter())
                .map(|id| codec.encode(id).map_err(ApiError::from))
                .collect()
        }
    }
}

/// The fields inside an ID.
pub async fn decode(
    State(state): State<Arc<AppState>>,
    ApiPath((name, id)): ApiPath<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let params = Params::parse(query.as_deref(), &["format"])?;
    let format = params.format()?;
    let source = state.generators.get(&name)?;
    decode_with(&source, &id, format).map(Json)
}

/// What `id` (a text in `format`) holds under `source`'s kind.
pub fn decode_with(source: &Source, id: &str, format: Option<Format>) -> Result<Value, ApiError> {
    match source {
        Source::Snowflake(s) => {
            crate::decode::snowflake_text(s.layout(), s.layout_name(), id, format)
                .map_err(ApiError::bad_request)
        }
        other => {
            if format.is_some() {
                return Err(ApiError::bad_request(format!(
                    "format applies to snowflake IDs, not {}",
                    other.kind().name()
                )));
            }
            match other.kind() {
                Kind::Segment | Kind::Ticket | Kind::Counter => {
                    Err(ApiError::bad_request(format!(
                        "{} IDs are plain counters: there are no fields to decode",
                        other.kind().name()
                    )))
                }
                kind => crate::decode::text_kind(kind, id).map_err(ApiError::bad_request),
            }
        }
    }
}
