//! `GET /openapi.json`: the HTTP API's description. It is a file checked in beside the crate
//! (`openapi.json`) and embedded at build time, so the binary serves exactly the document the
//! route test and schemathesis check against the router.

use axum::http::header;
use axum::response::IntoResponse;

/// The OpenAPI 3.0 document of every HTTP route.
pub const SPEC: &str = include_str!("../../openapi.json");

/// The document, as JSON.
pub async fn spec() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], SPEC)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_document_is_openapi_json() {
        let v: serde_json::Value = serde_json::from_str(super::SPEC).unwrap();
        assert_eq!(v["openapi"], "3.0.3");
        assert!(v["paths"].as_object().is_some_and(|p| !p.is_empty()));
    }
}
