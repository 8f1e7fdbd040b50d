//! The server's errors as values: [`Error`] (with an [`ErrorKind`]) is what every source,
//! the auth and the request checks return; each transport maps the kinds once, at its edge
//! (`answer::refusal` for both HTTP paths, `grpc::status`, `resp::refusal`). [`ConfigError`] and [`StartError`]
//! are what loading a config and starting a server can fail with.

use std::time::Duration;

/// What went wrong, in the terms of the public contract. Each transport has one mapping
/// from these to its own statuses; the [`code`](ErrorKind::code) is the contract's stable
/// `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is wrong: a bad count, format, name, body or parameter (HTTP 400).
    InvalidRequest,
    /// No token, or one the server does not know (401).
    Unauthorized,
    /// The token lacks the role or the name (403).
    Forbidden,
    /// No such generator, tag or route (404).
    NotFound,
    /// The name is taken (409).
    Conflict,
    /// The request is well formed, but the generator it names cannot answer it in the form
    /// asked: its kind or configuration lacks it (a format without an `obfuscate_key`, runs
    /// of text IDs). HTTP 409, as it depends on the generator; gRPC INVALID_ARGUMENT.
    Unsupported,
    /// The token is over its rate, or the generator over the rate its format allows (a
    /// uuid2's 64 per window); [`Error::retry_after`] says when to try again (429).
    RateLimited,
    /// The node cannot issue now: no lease, a store down with the buffers empty, a clock
    /// behind its high-water mark. Another node, or a later try, may (503).
    Unavailable,
    /// The generator has used up a range it cannot leave: a tag at `i64::MAX`, a
    /// counter's field, the width of its obfuscation (503).
    Exhausted,
    /// A bug in snowdrift, never the caller's mistake (500).
    Internal,
}

impl ErrorKind {
    /// The contract's stable error code (`invalid_request`, `not_found`, ...).
    pub const fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Forbidden => "forbidden",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Exhausted => "exhausted",
            ErrorKind::Internal => "internal",
        }
    }
}

/// An error a caller gets, on any protocol: a kind and a message a person can act on.
/// Never a stack trace or an internal path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    retry_after: Option<Duration>,
}

impl Error {
    /// An error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The request is wrong.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }

    /// No such generator, tag or route.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    /// The generator cannot answer this request in the form asked.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    /// The name is taken.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    /// Cannot issue now.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable, message)
    }

    /// A range the generator cannot leave is used up.
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Exhausted, message)
    }

    /// No known token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unauthorized, message)
    }

    /// The token may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, message)
    }

    /// Over a rate limit; try again after `wait`.
    pub fn rate_limited(message: impl Into<String>, wait: Duration) -> Self {
        Self {
            retry_after: Some(wait),
            ..Self::new(ErrorKind::RateLimited, message)
        }
    }

    /// A bug in snowdrift.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The contract's stable code of the kind.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// What happened and what to do.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For [`ErrorKind::RateLimited`]: how long to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl From<snowdrift_store::Error> for Error {
    fn from(e: snowdrift_store::Error) -> Self {
        use snowdrift_store::Error as E;
        let message = e.to_string();
        match e {
            E::TagNotFound(_) => Self::not_found(message),
            E::TagExists(_) => Self::conflict(message),
            E::InvalidInput(_) | E::TagTemplated { .. } => Self::invalid(message),
            E::Overflow { .. }
            | E::CounterOverflow { .. }
            | E::VersionOverflow { .. }
            | E::PeriodFull { .. } => Self::exhausted(message),
            _ => Self::unavailable(message),
        }
    }
}

impl From<snowdrift_core::Error> for Error {
    fn from(e: snowdrift_core::Error) -> Self {
        // A uuid2 generator's window is a rate the format sets, with a known end: the caller
        // learns when to come back rather than that the node is down.
        if let snowdrift_core::Error::DceWindowFull { wait_ms } = e {
            return Self::rate_limited(e.to_string(), Duration::from_millis(wait_ms));
        }
        // Core errors on the issue path are clock, lease and overflow conditions: the node
        // cannot issue now, and another node (or a later try) may.
        Self::unavailable(e.to_string())
    }
}

/// The configuration is invalid; the message names the key and what is allowed, and says
/// where the key was set (the file and line, the environment variable or the flag) when
/// the config was loaded from those.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid configuration: {}{message}", place.as_deref().map(|p| format!("{p}: ")).unwrap_or_default())]
pub struct ConfigError {
    message: String,
    /// The key at fault (`limits.max_count`), when the one who found it knows.
    key: Option<String>,
    /// Where that key was set.
    place: Option<String>,
}

impl ConfigError {
    pub(crate) fn new(message: String) -> Self {
        Self {
            message,
            key: None,
            place: None,
        }
    }

    /// The error about `key`, whose message `message` names it.
    pub(crate) fn at(key: &str, message: String) -> Self {
        Self::new(message).with_key(key)
    }

    /// Says which key is at fault, so the error can be placed where it was set.
    pub(crate) fn with_key(mut self, key: &str) -> Self {
        self.key = Some(key.to_string());
        self
    }

    /// Says where the key at fault was set.
    pub(crate) fn placed(mut self, place: String) -> Self {
        self.place = Some(place);
        self
    }

    /// What is wrong, without the "invalid configuration" in front and without where.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The key at fault (`limits.max_count`, `generator[0].layout`), when known.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Where the key at fault was set: `FILE line N`, `environment variable NAME` or
    /// `flag --NAME`; `None` when it was not set (a default) or is not known.
    pub fn place(&self) -> Option<&str> {
        self.place.as_deref()
    }
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A generator's store or coordinator refused it, or could not be reached.
    #[error("generator {name:?}: {source}")]
    Generator {
        /// The generator.
        name: String,
        /// What went wrong.
        source: snowdrift_store::Error,
    },
    /// A store or coordinator refused or could not be reached.
    #[error(transparent)]
    Store(#[from] snowdrift_store::Error),
    /// Listening or serving failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The message of a core error about a name, key or setting, without the "invalid
/// configuration" the core's `Display` puts in front (the caller says where it was).
pub(crate) fn core_reason(e: snowdrift_core::Error) -> String {
    match e {
        snowdrift_core::Error::InvalidConfig(message) => message,
        other => other.to_string(),
    }
}

/// `text` quoted for a message, cut to its first 64 characters (with how long it was) when
/// longer: errors name what was sent without echoing a megabyte of it back, into a log line
/// or a gRPC `grpc-message` header a client would refuse.
pub fn quoted(text: &str) -> String {
    const MOST: usize = 64;
    match text.char_indices().nth(MOST) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes in all)", &text[..end], text.len()),
    }
}
