//! API errors as gRPC statuses: the code that matches the HTTP status, the same message, and
//! the contract's stable error code in the `snowdrift-error-code` metadata entry; a rate
//! limit's wait in `retry-after` (whole seconds), as HTTP sends it.

use axum::http::StatusCode;
use tonic::{Code, Status};

use crate::auth::{Denied, retry_after_secs};
use crate::error::ApiError;

pub use snowdrift_proto::grpc::{ERROR_CODE_KEY, RETRY_AFTER_KEY};

/// The gRPC code for an HTTP status, as gRPC's own HTTP mapping and the contract agree.
pub fn code_for(status: StatusCode) -> Code {
    match status {
        StatusCode::BAD_REQUEST => Code::InvalidArgument,
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::Unimplemented,
        StatusCode::CONFLICT => Code::AlreadyExists,
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::TOO_MANY_REQUESTS => Code::ResourceExhausted,
        StatusCode::SERVICE_UNAVAILABLE => Code::Unavailable,
        s if s.is_client_error() => Code::FailedPrecondition,
        _ => Code::Internal,
    }
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Self {
        let mut status = Status::new(code_for(e.status), e.message);
        // The codes are static ASCII words, so they are always valid metadata values.
        if let Ok(value) = e.code.parse() {
            status.metadata_mut().insert(ERROR_CODE_KEY, value);
        }
        status
    }
}

impl From<Denied> for Status {
    fn from(denied: Denied) -> Self {
        let mut status = Status::from(denied.error);
        if let Some(wait) = denied.retry_after {
            status
                .metadata_mut()
                .insert(RETRY_AFTER_KEY, retry_after_secs(wait).into());
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_contract_codes() {
        let cases = [
            (
                ApiError::bad_request("b"),
                Code::InvalidArgument,
                "invalid_request",
            ),
            (ApiError::not_found("n"), Code::NotFound, "not_found"),
            (ApiError::conflict("c"), Code::AlreadyExists, "conflict"),
            (ApiError::unavailable("u"), Code::Unavailable, "unavailable"),
            (
                ApiError {
                    status: StatusCode::TOO_MANY_REQUESTS,
                    code: "rate_limited",
                    message: "slow down".into(),
                },
                Code::ResourceExhausted,
                "rate_limited",
            ),
        ];
        for (error, code, word) in cases {
            let message = error.message.clone();
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(status.message(), message);
            let got = status.metadata().get(ERROR_CODE_KEY);
            assert_eq!(got.and_then(|v| v.to_str().ok()), Some(word));
        }
        assert_eq!(code_for(StatusCode::UNAUTHORIZED), Code::Unauthenticated);
        assert_eq!(code_for(StatusCode::FORBIDDEN), Code::PermissionDenied);
        assert_eq!(code_for(StatusCode::INTERNAL_SERVER_ERROR), Code::Internal);
    }
}
