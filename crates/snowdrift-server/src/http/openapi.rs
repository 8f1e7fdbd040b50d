//! `GET /openapi.json`: the HTTP API as this server accepts it.
//!
//! The checked-in `openapi.json` (embedded at build time) describes every route for any
//! configuration; the served document is that one with what depends on this server filled
//! in: how large `count` may be (`limits.max_count`), whether a token is required (with
//! auth on, the routes that take one need one), and whether Tinyid's routes are served
//! (`tinyid.enabled`). What depends on the generator a name
//! picks (formats without an `obfuscate_key`, runs of text IDs) is documented as a 409: the
//! request is well formed, the generator cannot answer it in that form.

use std::sync::{Arc, LazyLock};

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::state::AppState;

/// The OpenAPI 3.0 document of every HTTP route, for any configuration.
pub const SPEC: &str = include_str!("../../openapi.json");

static TEMPLATE: LazyLock<Value> = LazyLock::new(|| {
    // The file is checked by the unit test below and by the route test against the router.
    serde_json::from_str(SPEC).unwrap_or_else(|e| json!({"error": e.to_string()}))
});

/// The document, as this server accepts requests.
pub async fn spec(State(state): State<Arc<AppState>>) -> Json<Value> {
    let mut doc = document(state.max_count, state.auth.is_enabled());
    if !state.tinyid {
        without_tinyid(&mut doc);
    }
    Json(doc)
}

/// Leaves Tinyid's routes (and their tag) out of `doc`, for a server with
/// `tinyid.enabled = false`.
pub fn without_tinyid(doc: &mut Value) {
    if let Some(paths) = doc["paths"].as_object_mut() {
        paths.retain(|path, _| {
            snowdrift_proto::http::Route::from_pattern(path).is_none_or(|r| !r.is_tinyid())
        });
    }
    if let Some(tags) = doc["tags"].as_array_mut() {
        tags.retain(|t| t["name"] != "tinyid");
    }
}

/// The checked-in document made exact for a server whose `limits.max_count` is `max_count`,
/// with auth on or off (`auth`).
pub fn document(max_count: u64, auth: bool) -> Value {
    let mut doc = TEMPLATE.clone();
    if auth && let Some(paths) = doc["paths"].as_object_mut() {
        // A route that takes a token may go without one only while auth is off.
        let operations = paths.values_mut().filter_map(Value::as_object_mut);
        for op in operations.flat_map(|ops| ops.values_mut()) {
            if let Some(security) = op.get_mut("security").and_then(Value::as_array_mut) {
                security.retain(|s| s.as_object().is_some_and(|s| !s.is_empty()));
            }
        }
    }
    let count = &mut doc["components"]["parameters"]["Count"];
    count["schema"]["maximum"] = max_count.into();
    count["description"] =
        format!("How many IDs, 1 to {max_count} (this server's limits.max_count). Default 1.")
            .into();
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_document_is_openapi_json_with_count_bounded() {
        let v: Value = serde_json::from_str(SPEC).unwrap();
        assert_eq!(v["openapi"], "3.0.3");
        assert!(v["paths"].as_object().is_some_and(|p| !p.is_empty()));
        let served = document(77, false);
        assert_eq!(
            served["components"]["parameters"]["Count"]["schema"]["maximum"],
            77
        );
        let next = &served["paths"]["/v1/ids/{name}"]["get"];
        assert_eq!(next["security"], json!([{"bearerAuth": []}, {}]));
        let with_auth = document(77, true);
        let next = &with_auth["paths"]["/v1/ids/{name}"]["get"];
        assert_eq!(next["security"], json!([{"bearerAuth": []}]));
        assert!(with_auth["paths"]["/healthz"]["get"]["security"].is_null());
        let mut off = document(77, false);
        assert!(off["paths"]["/tinyid/id/nextSegmentIdSimple"].is_object());
        without_tinyid(&mut off);
        let paths = off["paths"].as_object().unwrap();
        assert!(
            paths.keys().all(|p| !p.starts_with("/tinyid/")),
            "{paths:?}"
        );
        assert!(paths.contains_key("/api/segment/get/{tag}"));
        assert!(
            off["tags"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["name"] != "tinyid")
        );
    }
}
