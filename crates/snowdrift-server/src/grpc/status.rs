//! Errors as gRPC statuses: the code that matches the HTTP status of the same kind, the same
//! message, and the contract's stable error code in the `snowdrift-error-code` metadata
//! entry; a rate limit's wait in `retry-after` (whole seconds), as HTTP sends it.

use tonic::{Code, Status};

use crate::auth::retry_after_secs;
use crate::error::{Error, ErrorKind};

pub use snowdrift_proto::grpc::{ERROR_CODE_KEY, RETRY_AFTER_KEY};

/// The gRPC code for an error kind, as gRPC's own HTTP mapping and the contract agree.
pub fn code_for(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::Unsupported => Code::InvalidArgument,
        ErrorKind::Unauthorized => Code::Unauthenticated,
        ErrorKind::Forbidden => Code::PermissionDenied,
        ErrorKind::NotFound => Code::NotFound,
        ErrorKind::Conflict => Code::AlreadyExists,
        ErrorKind::RateLimited => Code::ResourceExhausted,
        ErrorKind::Unavailable | ErrorKind::Exhausted => Code::Unavailable,
        ErrorKind::Internal => Code::Internal,
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Self {
        let mut status = Status::new(code_for(e.kind()), e.message());
        // The codes are static ASCII words, so they are always valid metadata values.
        if let Ok(value) = e.code().parse() {
            status.metadata_mut().insert(ERROR_CODE_KEY, value);
        }
        if let Some(wait) = e.retry_after() {
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
                Error::invalid("b"),
                Code::InvalidArgument,
                "invalid_request",
            ),
            (Error::not_found("n"), Code::NotFound, "not_found"),
            (Error::conflict("c"), Code::AlreadyExists, "conflict"),
            (Error::unavailable("u"), Code::Unavailable, "unavailable"),
            (
                Error::rate_limited("slow down", std::time::Duration::from_millis(1500)),
                Code::ResourceExhausted,
                "rate_limited",
            ),
        ];
        for (error, code, word) in cases {
            let message = error.message().to_string();
            let wait = error.retry_after();
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(status.message(), message);
            let got = status.metadata().get(ERROR_CODE_KEY);
            assert_eq!(got.and_then(|v| v.to_str().ok()), Some(word));
            let retry = status.metadata().get(RETRY_AFTER_KEY);
            assert_eq!(retry.is_some(), wait.is_some());
        }
        assert_eq!(code_for(ErrorKind::Unauthorized), Code::Unauthenticated);
        assert_eq!(code_for(ErrorKind::Forbidden), Code::PermissionDenied);
        assert_eq!(code_for(ErrorKind::Exhausted), Code::Unavailable);
        assert_eq!(code_for(ErrorKind::Internal), Code::Internal);
    }
}
