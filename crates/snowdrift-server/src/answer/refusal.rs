//! Refusals over HTTP: each [`ErrorKind`] has its one status here, and every error body is
//! the contract's `{"error": {"code": "...", "message": "..."}}`, with `WWW-Authenticate` on
//! 401 and 403 (RFC 6750) and `Retry-After` on 429 (RFC 9110). The fast path and the router
//! both answer from here; a request head refused before any route ([`head`]) gets the same
//! body whether the fast path or hyper refused it.

use snowdrift_proto::http::{ErrorBody, ErrorDetail};

use super::{Extra, Status};
use crate::auth::retry_after_secs;
use crate::error::{Error, ErrorKind};

/// The HTTP status of `kind`.
pub(crate) fn status(kind: ErrorKind) -> Status {
    match kind {
        ErrorKind::InvalidRequest => Status::BAD_REQUEST,
        ErrorKind::Unauthorized => Status::UNAUTHORIZED,
        ErrorKind::Forbidden => Status::FORBIDDEN,
        ErrorKind::NotFound => Status::NOT_FOUND,
        ErrorKind::Conflict | ErrorKind::Unsupported => Status::CONFLICT,
        ErrorKind::RateLimited => Status::TOO_MANY_REQUESTS,
        ErrorKind::Unavailable | ErrorKind::Exhausted => Status::SERVICE_UNAVAILABLE,
        ErrorKind::Internal => Status::INTERNAL_SERVER_ERROR,
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

/// The `WWW-Authenticate` value a refusal of `kind` carries (RFC 6750), if any.
pub fn www_authenticate(kind: ErrorKind) -> Option<&'static str> {
    match kind {
        ErrorKind::Unauthorized => Some("Bearer realm=\"snowdrift\""),
        ErrorKind::Forbidden => Some("Bearer realm=\"snowdrift\", error=\"insufficient_scope\""),
        _ => None,
    }
}

/// The headers refusal `e` adds.
pub(crate) fn extra(e: &Error) -> Extra {
    Extra {
        www_authenticate: www_authenticate(e.kind()),
        retry_after: e.retry_after().map(retry_after_secs),
    }
}

/// The message of the contract's body for a request head refused before any route was
/// read, by the status it is refused with (`code`): 400 (not HTTP/1.1), 431 (over
/// `limits.max_head`), 414 (a target too long). `None` for any other status.
pub(crate) fn head(code: u16) -> Option<&'static str> {
    const TOO_LARGE: u16 = Status::REQUEST_HEADER_FIELDS_TOO_LARGE.code();
    const BAD: u16 = Status::BAD_REQUEST.code();
    const TOO_LONG: u16 = Status::URI_TOO_LONG.code();
    Some(match code {
        BAD => "the request line or a header is not valid HTTP/1.1",
        TOO_LARGE => {
            "the request head (request line and headers) is larger than limits.max_head \
             allows; send fewer or shorter headers"
        }
        TOO_LONG => "the request target is longer than this server accepts",
        _ => return None,
    })
}

/// The body of a request head refused with status `code` ([`head`]): an
/// `invalid_request` error.
pub(crate) fn head_body(code: u16) -> Option<Vec<u8>> {
    head(code).map(|message| body(ErrorKind::InvalidRequest.code(), message))
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
            (Error::unsupported("x"), 409),
            (
                Error::rate_limited("x", std::time::Duration::from_millis(1200)),
                429,
            ),
            (Error::unavailable("x"), 503),
            (Error::exhausted("x"), 503),
            (Error::internal("x"), 500),
        ] {
            let extra = extra(&e);
            assert_eq!(status(e.kind()).code(), code, "{:?}", e.kind());
            assert_eq!(
                extra.www_authenticate.is_some(),
                [401, 403].contains(&code),
                "{:?}",
                e.kind()
            );
            assert_eq!(extra.retry_after, (code == 429).then_some(2));
        }
        let parsed: ErrorBody = serde_json::from_slice(&body("not_found", "no tag \"a\"")).unwrap();
        assert_eq!(
            (parsed.error.code.as_str(), parsed.error.message.as_str()),
            ("not_found", "no tag \"a\"")
        );
    }

    #[test]
    fn only_a_refused_head_s_statuses_have_its_body() {
        for code in [400, 414, 431] {
            let body = head_body(code).unwrap();
            let parsed: ErrorBody = serde_json::from_slice(&body).unwrap();
            assert_eq!(parsed.error.code, "invalid_request");
        }
        assert!(head(431).unwrap().contains("limits.max_head"));
        for code in [200, 401, 404, 413, 500] {
            assert!(head_body(code).is_none(), "{code}");
        }
    }
}
