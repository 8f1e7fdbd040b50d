//! The client's errors: a kind to branch on and a message that says what to do.

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The client's own settings are wrong (no endpoint, a URL that does not parse, a count
    /// of 0): fix the code or config.
    InvalidInput,
    /// The server says the request is wrong (bad count, bad name): final, not retried.
    InvalidRequest,
    /// No generator or tag of that name on the servers: final, not retried.
    NotFound,
    /// The token is missing or unknown: final, not retried.
    Unauthorized,
    /// The token may not use that name: final, not retried.
    Forbidden,
    /// The name's IDs are text and a number was asked for, or the other way round.
    WrongKind,
    /// No server could be reached (or none could issue) and the cache is empty. The message
    /// names the endpoints, their last errors and since when.
    Unavailable,
    /// The servers answered IDs this client refused: IDs it had already received for the
    /// name (a server that repeats IDs), a run that wraps past 2^64 - 1, or another broken
    /// answer. The message says which endpoint sent what. Not final: the client asks the
    /// other endpoints, and the refusing one again after its backoff.
    Refused,
}

/// An error from the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What happened and what to do.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True when asking again cannot help until something changes (a name, a token, the
    /// code); false for outages and refused answers, which the client rides out by itself.
    pub fn is_final(&self) -> bool {
        !matches!(self.kind, ErrorKind::Unavailable | ErrorKind::Refused)
    }

    /// The error a gRPC status stands for.
    pub(crate) fn from_status(endpoint: &str, status: &tonic::Status) -> Self {
        use tonic::Code;
        let kind = match status.code() {
            Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
                ErrorKind::InvalidRequest
            }
            Code::NotFound => ErrorKind::NotFound,
            Code::Unauthenticated => ErrorKind::Unauthorized,
            Code::PermissionDenied => ErrorKind::Forbidden,
            _ => ErrorKind::Unavailable,
        };
        Self::new(kind, format!("{endpoint}: {}", status.message()))
    }
}
