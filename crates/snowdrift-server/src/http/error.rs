//! Errors and answers as axum responses. The statuses, bodies and headers are the answer
//! layer's (`crate::answer`): each [`ErrorKind`] has its one status there, and every error
//! body is the contract's `{"error": {"code": "...", "message": "..."}}`, with
//! `WWW-Authenticate` on 401 and 403 (RFC 6750) and `Retry-After` on 429 (RFC 9110).

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::answer::{self, Answer};
use crate::error::{Error, ErrorKind};

pub use crate::answer::{body, www_authenticate};

/// The HTTP status of `kind`.
pub fn status(kind: ErrorKind) -> StatusCode {
    status_code(answer::refusal::status(kind))
}

/// The answer layer's status as axum's.
pub(crate) fn status_code(status: answer::Status) -> StatusCode {
    // Every `answer::Status` is a valid code; the fallback is never taken.
    StatusCode::from_u16(status.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
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

/// `answer` as a response: its status, `content-type` and body, then the headers a refusal
/// adds.
pub(crate) fn to_response(answer: Answer) -> Response {
    let Answer {
        status,
        content_type,
        body,
        extra,
    } = answer;
    let mut response = (status_code(status), [(CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    if let Some(value) = extra.www_authenticate {
        headers.insert(WWW_AUTHENTICATE, HeaderValue::from_static(value));
    }
    if let Some(secs) = extra.retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        to_response(Answer::refused(&self))
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
        let response = Error::not_found("no tag \"a\"").into_response();
        assert_eq!(
            response.headers().get(CONTENT_TYPE).unwrap(),
            "application/json"
        );
    }
}
