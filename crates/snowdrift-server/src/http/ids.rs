//! `GET /v1/ids/{name}` and `GET /v1/ids/{name}/decode/{id}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use snowdrift_core::codec::{Codec, Format};

use super::AppState;
use super::path::ApiPath;
use super::query::Params;
use crate::config::Kind;
use crate::error::ApiError;
use crate::source::{IdSource, Ids, Source};

/// `{"name": "...", "ids": ["...", ...]}`: `count` new IDs, as strings. The format is
/// checked before any ID is issued, so a bad request wastes none.
pub async fn next(
    State(state): State<Arc<AppState>>,
    ApiPath(name): ApiPath<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = Params::parse(query.as_deref(), &["count", "format"])?;
    let count = params.count(state.max_count)?;
    let format = params.format()?;
    let source = state.generators.get(&name)?;
    let codec = codec_for(&source, format)?;
    let ids = issue(&name, &source, count).await?;
    let body = json_body(&name, &ids, codec.as_ref())?;
    Ok(([(CONTENT_TYPE, "application/json")], body).into_response())
}

/// Takes `count` IDs from `source` and counts them in the metrics.
pub async fn issue(name: &str, source: &Source, count: u64) -> Result<Ids, ApiError> {
    let ids = source.next(count).await?;
    super::metrics::issued(name, source.kind(), ids.len());
    Ok(ids)
}

/// The codec for `format` on `source`'s IDs (`None`: decimal, or the kind's own text form),
/// or why that format does not apply to the kind.
fn codec_for(source: &Source, format: Option<Format>) -> Result<Option<Codec>, ApiError> {
    let Some(format) = format.filter(|f| *f != Format::Decimal) else {
        return Ok(None);
    };
    let text_kind = match source {
        Source::Simple(_) => true,
        Source::Counter(c) => c.counter().template().is_some(),
        _ => false,
    };
    if text_kind {
        return Err(ApiError::bad_request(format!(
            "format={format} applies to 64-bit IDs; {} IDs have one standard text form",
            source.kind().name()
        )));
    }
    match source {
        Source::Snowflake(s) => Ok(Some(format.codec(s.layout()))),
        _ if format == Format::Friendly => Err(ApiError::bad_request(format!(
            "format=friendly shows the fields of a snowflake layout; {} IDs have none",
            source.kind().name()
        ))),
        // Only the friendly form depends on the layout.
        _ => Ok(Some(
            format.codec(&snowdrift_core::layout::Layout::preset("twitter")?),
        )),
    }
}

/// The response body, written straight into one buffer: a batch of 10,000 IDs costs no
/// allocation per ID.
fn json_body(name: &str, ids: &Ids, codec: Option<&Codec>) -> Result<Vec<u8>, ApiError> {
    use std::io::Write;
    let mut out = Vec::with_capacity(32 + name.len() + ids.len() as usize * 24);
    // Writing to a Vec cannot fail, and serde_json escapes every string it writes.
    let bad = |e: &dyn std::fmt::Display| ApiError::unavailable(format!("writing the answer: {e}"));
    out.extend_from_slice(b"{\"name\":");
    serde_json::to_writer(&mut out, name).map_err(|e| bad(&e))?;
    out.extend_from_slice(b",\"ids\":[");
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    match ids {
        Ids::Text(text) => {
            for id in text {
                sep(&mut out);
                serde_json::to_writer(&mut out, id).map_err(|e| bad(&e))?;
            }
        }
        Ids::Runs(runs) => {
            for id in runs.iter().flat_map(|r| r.iter()) {
                sep(&mut out);
                match codec {
                    None => write!(out, "\"{id}\"").map_err(|e| bad(&e))?,
                    Some(codec) => {
                        serde_json::to_writer(&mut out, &codec.encode(id)?).map_err(|e| bad(&e))?
                    }
                }
            }
        }
    }
    out.extend_from_slice(b"]}");
    Ok(out)
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
