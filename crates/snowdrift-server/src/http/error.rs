//! Errors as HTTP responses: each [`ErrorKind`] has its one status here, and every error
//! body is the contract's `{"error": {"code": "...", "message": "..."}}`, with
//! `WWW-Authenticate` on 401 and 403 (RFC 6750) and `Retry-After` on 429 (RFC 9110).

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use snowdrift_proto::http::{ErrorBody, ErrorDetail};

use crate::auth::retry_after_secs;
use crate::error::{Error, ErrorKind};

/// The HTTP status of `kind`.
pub fn status(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
        ErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict | ErrorKind::Unsupported => StatusCode::CONFLICT,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Unavailable | ErrorKind::Exhausted => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The JSON body of an error with `code` and `message`.
pub fn body(code: &str, message: &str) -> Vec<u8> {
    let body = ErrorBody {
        error: ErrorDetail {
            code: code.to_string(),
            message: message.to_string(),
        },
    };
    // Two strings in a struct always serialize.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// A response with `status` and the contract's error body: for the refusals that only HTTP
/// has (405, 413), which are no [`ErrorKind`].
pub fn respond(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        body(code, message),
    )
        .into_response()
}

/// The `WWW-Authenticate` value a refusal of `kind` carries (RFC 6750), if any.
pub fn www_authenticate(kind: ErrorKind) -> Option<&'static str> {
    match kind {
        ErrorKind::Unauthorized => Some("Bearer realm=\"snowdrift\""),
        ErrorKind::Forbidden => Some("Bearer realm=\"snowdrift\", error=\"insufficient_scope\""),
        _ => None,
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = status(self.kind());
        let mut response = respond(status, self.code(), self.message());
        let headers = response.headers_mut();
        if let Some(value) = www_authenticate(self.kind()) {
            headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static(value));
        }
        if let Some(wait) = self.retry_after() {
            headers.insert(RETRY_AFTER, HeaderValue::from(retry_after_secs(wait)));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_get_the_contract_s_statuses_and_headers() {
        for (e, code) in [
            (Error::invalid("x"), 400),
            (Error::unauthorized("x"), 401),
            (Error::forbidden("x"), 403),
            (Error::not_found("x"), 404),
            (Error::conflict("x"), 409),
            (
                Error::rate_limited("x", std::time::Duration::from_millis(1200)),
                429,
            ),
            (Error::unavailable("x"), 503),
            (Error::exhausted("x"), 503),
            (Error::internal("x"), 500),
        ] {
            let kind = e.kind();
            let response = e.into_response();
            assert_eq!(response.status().as_u16(), code, "{kind:?}");
            let headers = response.headers();
            assert_eq!(
                headers.contains_key(WWW_AUTHENTICATE),
                [401, 403].contains(&code)
            );
            assert_eq!(
                headers
                    .get(RETRY_AFTER)
                    .map(|v| v.to_str().unwrap_or_default()),
                (code == 429).then_some("2")
            );
        }
        let parsed: ErrorBody = serde_json::from_slice(&body("not_found", "no tag \"a\"")).unwrap();
        assert_eq!(
            (parsed.error.code.as_str(), parsed.error.message.as_str()),
            ("not_found", "no tag \"a\"")
        );
    }
}
