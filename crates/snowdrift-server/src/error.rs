//! The server's errors: configuration errors at start, and API errors as the public contract
//! shapes them (`{"error": {"code": "...", "message": "..."}}`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The configuration is invalid; the message names the key and what is allowed.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {message}")]
pub struct ConfigError {
    message: String,
}

impl ConfigError {
    pub(crate) fn new(message: String) -> Self {
        Self { message }
    }
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A generator could not be built from its configuration.
    #[error("generator {name:?}: {message}")]
    Generator {
        /// The generator.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// A store or coordinator refused or could not be reached.
    #[error(transparent)]
    Store(#[from] snowdrift_store::Error),
    /// Listening or serving failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// An error an API caller gets: an HTTP status, a stable code and a message a person can act
/// on. Never a stack trace or an internal path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable, machine-readable code such as `not_found`.
    pub code: &'static str,
    /// What happened and what to do.
    pub message: String,
}

impl ApiError {
    /// 400: the request is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 404: no such generator, tag or route.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: the name is taken.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 503: cannot issue now (no lease, database down and buffers empty, clock behind...).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// 503 `exhausted`: the generator has used up a range it cannot leave (a tag at
    /// `i64::MAX`, a counter's field, the width of its obfuscation).
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "exhausted", message)
    }

    /// 500: a bug in snowdrift, never the caller's mistake.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// The JSON body of the contract.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({"error": {"code": self.code, "message": self.message}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

impl From<snowdrift_store::Error> for ApiError {
    fn from(e: snowdrift_store::Error) -> Self {
        use snowdrift_store::Error as E;
        let message = e.to_string();
        match e {
            E::TagNotFound(_) => Self::not_found(message),
            E::TagExists(_) => Self::conflict(message),
            E::InvalidInput(_) => Self::bad_request(message),
            E::Overflow { .. } | E::CounterOverflow { .. } => Self::exhausted(message),
            _ => Self::unavailable(message),
        }
    }
}

impl From<snowdrift_core::Error> for ApiError {
    fn from(e: snowdrift_core::Error) -> Self {
        // Core errors on the issue path are clock, lease and overflow conditions: the node
        // cannot issue now, and another node (or a later try) may.
        Self::unavailable(e.to_string())
    }
}
