//! Two-segment paths no route serves. gRPC calls reach `/{service}/{method}`, so a call to a
//! service this server does not have lands here and gets UNIMPLEMENTED, which gRPC clients
//! and tools understand (an HTTP 404 page reads to them as a protocol error); any other
//! request gets the HTTP API's own 404.

use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use tonic::Status;

use crate::error::Error;

/// UNIMPLEMENTED for a gRPC request, the contract's 404 for anything else.
pub async fn unknown(request: Request) -> Response {
    let path = request.uri().path();
    let is_grpc = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"));
    if is_grpc {
        Status::unimplemented(format!(
            "this server has no gRPC method {path}; it serves snowdrift.v1.IdService, \
             grpc.health.v1.Health and grpc.reflection.v1.ServerReflection"
        ))
        .into_http::<axum::body::Body>()
    } else {
        // The same answer as the HTTP router's fallback.
        Error::not_found(format!("no route {path}; see /openapi.json for the API")).into_response()
    }
}
