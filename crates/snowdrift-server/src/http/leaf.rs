//! Meituan Leaf's routes, so a client written for Leaf works unchanged: the ID as
//! `text/plain`, by GET or POST (Leaf maps its routes without a method), its monitor's
//! `/decodeSnowflakeId`, `/cache` and `/db`. An error is a non-200 status with a message,
//! never a `0` with 200; with `leaf.errors = "leaf"` it is what Leaf answers: 500 with Spring
//! Boot's JSON error body.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::path::ApiPath;
use crate::config::{Kind, LeafErrors};
use crate::error::Error;
use crate::source::{IdSource, Ids, Source};
use crate::state::AppState;
use crate::state::issue;
use snowdrift_core::layout::Role;

/// `GET|POST /api/segment/get/{tag}`: one segment ID.
pub async fn segment(
    State(state): State<Arc<AppState>>,
    uri: axum::http::Uri,
    tag: Result<ApiPath<String>, Error>,
) -> Response {
    let answer = match tag {
        Ok(ApiPath(tag)) => segment_id(&state, &tag).await,
        Err(e) => Err(e),
    };
    respond(text(&state, || uri.path().to_string(), answer))
}

/// `GET|POST /api/snowflake/get/{key}`: one snowflake ID. Leaf ignores the key; here a key that
/// names a snowflake generator picks it, any other key gets the default one.
pub async fn snowflake(
    State(state): State<Arc<AppState>>,
    uri: axum::http::Uri,
    key: Result<ApiPath<String>, Error>,
) -> Response {
    let answer = match key {
        Ok(ApiPath(key)) => snowflake_id(&state, &key).await,
        Err(e) => Err(e),
    };
    respond(text(&state, || uri.path().to_string(), answer))
}

/// One ID of segment tag `tag`, for the route above and the fast path (`crate::fast`).
pub(crate) async fn segment_id(state: &AppState, tag: &str) -> Result<String, Error> {
    let source = match state.generators.get(tag) {
        Ok(s) if s.kind() == Kind::Segment => s,
        Ok(s) => {
            return Err(Error::unsupported(format!(
                "{tag:?} is a {} generator, not a segment tag",
                s.kind().as_str()
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
/// The ID is decimal digits only (400 naming the first other character); a number no ID of
/// the generator reads as (above its layout's largest, or 2^64) names no resource: 404, as
/// on `/v1/ids/{name}/decode/{id}`.
pub async fn decode(State(state): State<Arc<AppState>>, ApiPath(id): ApiPath<String>) -> Response {
    let Some((name, source)) = snowflake_for(&state, "") else {
        return Error::not_found("this server has no snowflake generator").into_response();
    };
    if let Err(e) = digits_only("the ID", &id) {
        return e.into_response();
    }
    match crate::decode::id(&state.generators, &name, &source, &id, None) {
        Ok(v) => Json::<Value>(v).into_response(),
        Err(e) if e.kind() == crate::error::ErrorKind::InvalidRequest => {
            Error::not_found(e.message()).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// Refuses `text` unless it is one or more ASCII digits, naming the first other character
/// and where it is (a sign, a space or a tab are not part of a decimal ID).
fn digits_only(what: &str, text: &str) -> Result<(), Error> {
    crate::decode::written_plainly(text)?;
    match text.chars().enumerate().find(|(_, c)| !c.is_ascii_digit()) {
        None if !text.is_empty() => Ok(()),
        None => Err(Error::invalid(format!(
            "{what} is empty: give a decimal snowflake ID"
        ))),
        Some((at, c)) => Err(Error::invalid(format!(
            "{what} {} holds {c:?} at character {}: give a decimal snowflake ID, digits only",
            crate::error::quoted(text),
            at + 1
        ))),
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

/// The status, content type and body of a Leaf answer to a request for `path` (made only
/// for Leaf's error body, so a served ID allocates nothing for it). Leaf
/// clients read the body as text: with `leaf.errors = "snowdrift"` errors are text too, with
/// the contract's status; with `"leaf"`, status 500 and the JSON body Leaf's Spring Boot
/// server sends for its `LeafServerException`.
pub(crate) fn text(
    state: &AppState,
    path: impl FnOnce() -> String,
    answer: Result<String, Error>,
) -> (StatusCode, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match answer {
        Ok(id) => (StatusCode::OK, TEXT, id),
        Err(e) if state.leaf_errors == LeafErrors::Leaf => {
            (StatusCode::INTERNAL_SERVER_ERROR, "application/json", {
                let path = path();
                leaf_error_body(&path, leaf_code(&path, &e))
            })
        }
        Err(e) => (
            super::error::status(e.kind()),
            TEXT,
            format!("error: {}: {}", e.code(), e.message()),
        ),
    }
}

/// Leaf's result code for an error, as its `SegmentIDGenImpl` gives them: segment `-2`
/// (`EXCEPTION_ID_KEY_NOT_EXISTS`) for any tag Leaf would not find in its cache, which is
/// every tag that is unknown, invalid or names another kind of generator; `-3`
/// (`EXCEPTION_ID_TWO_SEGMENTS_ARE_NULL`) only when the tag exists but no segment is ready;
/// snowflake `-1`, Leaf's code when it cannot issue (its clock-behind refusal).
fn leaf_code(path: &str, e: &Error) -> i64 {
    use crate::error::ErrorKind;
    if !path.starts_with("/api/segment/") {
        -1
    } else if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Exhausted) {
        -3
    } else {
        -2
    }
}

/// Spring Boot's default error JSON for Leaf's `LeafServerException(result.toString())`.
fn leaf_error_body(path: &str, code: i64) -> String {
    let timestamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3f+0000");
    serde_json::json!({
        "timestamp": timestamp.to_string(),
        "status": 500,
        "error": "Internal Server Error",
        "message": format!("Result{{id={code}, status=EXCEPTION}}"),
        "path": path,
    })
    .to_string()
}

fn respond((status, content_type, body): (StatusCode, &'static str, String)) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, content_type)],
        body,
    )
        .into_response()
}

/// `GET|POST /decodeSnowflakeId?snowflakeId=ID`: Leaf's monitor decode, with Leaf's field
/// names and string values: `timestamp` (`ms(yyyy-MM-dd HH:mm:ss.SSS)`, UTC here),
/// `workerId` (every node field's bits together, as Leaf's 10-bit worker ID) and
/// `sequenceId`, under the layout of the default snowflake generator.
pub async fn decode_query(
    State(state): State<Arc<AppState>>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
) -> Response {
    let decoded = super::query::Params::parse(query.as_deref(), &["snowflakeId"])
        .and_then(|params| leaf_decode(&state, params.get("snowflakeId")));
    let has_snowflake = snowflake_for(&state, "").is_some();
    match decoded {
        Ok(map) => Json(map).into_response(),
        // Leaf answers a bad ID with 200 and an errorMsg.
        Err(e) if state.leaf_errors == LeafErrors::Leaf && has_snowflake => Json(
            serde_json::json!({"errorMsg": format!("snowflake Id反解析发生异常! {}", e.message())}),
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

fn leaf_decode(state: &AppState, text: Option<&str>) -> Result<Value, Error> {
    let Some((_, source)) = snowflake_for(state, "") else {
        return Err(Error::not_found("this server has no snowflake generator"));
    };
    let Some(s) = source.snowflake() else {
        return Err(Error::not_found("this server has no snowflake generator"));
    };
    let text = text.ok_or_else(|| {
        Error::invalid("give the ID to decode as snowflakeId=ID, as Leaf's monitor takes it")
    })?;
    digits_only("snowflakeId", text)?;
    // Digits that no ID of the generator reads as name no resource (404), as on the other
    // decode routes.
    let id: u64 = text.parse().map_err(|_| {
        Error::not_found(format!(
            "snowflakeId {} is above 2^64 - 1, so no snowflake ID",
            crate::error::quoted(text)
        ))
    })?;
    let layout = s.layout();
    let id = if s.options().bit_reversed {
        crate::decode::unreversed(layout, id).map_err(|e| Error::not_found(e.message()))?
    } else {
        id
    };
    let d = layout
        .decode(id)
        .map_err(|e| Error::not_found(e.to_string()))?;
    let mut worker = 0u64;
    let mut sequence = 0u64;
    for (f, v) in layout.fields().iter().zip(&d.values) {
        match f.role() {
            Role::Node => worker = (worker << f.bits()) | v,
            Role::Sequence => sequence = *v,
            _ => {}
        }
    }
    let when = jiff::Timestamp::from_millisecond(i64::try_from(d.time_ms).unwrap_or(i64::MAX))
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_default();
    Ok(serde_json::json!({
        "timestamp": format!("{}({when})", d.time_ms),
        "workerId": worker.to_string(),
        "sequenceId": sequence.to_string(),
    }))
}

/// `GET /cache`: Leaf's monitor page of segment buffers, in Leaf's columns: per tag whether
/// it is initialised, whether the next segment is ready, which of the two buffers is current
/// (`pos`), and each buffer's next value, end (`max`) and step. Leaf holds two segments;
/// snowdrift's chain may hold up to eight ahead, so buffer `1 - pos` shows the first of them,
/// and the last columns (beyond Leaf's) how many segments and IDs are ahead in all.
pub async fn cache(State(state): State<Arc<AppState>>) -> Response {
    use snowdrift_core::segment::SegmentView;
    let cells = |v: Option<SegmentView>| {
        let v = v.unwrap_or(SegmentView {
            value: 0,
            max: 0,
            step: 0,
        });
        format!("<td>{}</td><td>{}</td><td>{}</td>", v.value, v.max, v.step)
    };
    let mut rows = String::new();
    for (tag, st) in state.generators.segments().status() {
        let pos = st.segment % 2;
        let (zero, one) = if pos == 0 {
            (st.current, st.next)
        } else {
            (st.next, st.current)
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{pos}</td>{}{}<td>{}</td><td>{}</td></tr>\n",
            escape(&tag),
            st.current.is_some(),
            st.next.is_some(),
            cells(zero),
            cells(one),
            st.segments_ahead,
            st.ids_ahead,
        ));
    }
    page(
        "Segment buffers",
        "<tr><th>name</th><th>init</th><th>next</th><th>pos</th><th>value0</th><th>max0</th>\
         <th>step0</th><th>value1</th><th>max1</th><th>step1</th><th>segments ahead</th>\
         <th>IDs ahead</th></tr>",
        &rows,
    )
}

/// `GET /db`: Leaf's monitor page of the tag table (`leaf_alloc`), in Leaf's columns but the
/// last: the description, where Leaf shows the update time (not every store keeps one).
pub async fn db(State(state): State<Arc<AppState>>) -> Response {
    let tags = match state.generators.segments().list_tags().await {
        Ok(tags) => tags,
        Err(e) => return Error::from(e).into_response(),
    };
    let mut rows = String::new();
    for t in &tags {
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&t.tag),
            t.max_id,
            t.step,
            escape(t.description.as_deref().unwrap_or("")),
        ));
    }
    page(
        "leaf_alloc",
        "<tr><th>tag</th><th>max</th><th>step</th><th>description</th></tr>",
        &rows,
    )
}

fn page(title: &str, head: &str, rows: &str) -> Response {
    axum::response::Html(format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1>\n<table border=\"1\">\n{head}\n{rows}</table></body></html>\n"
    ))
    .into_response()
}

/// Text made safe inside HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
