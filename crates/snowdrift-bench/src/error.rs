//! Why a run did not start or did not finish: a value whose chain of causes (outermost
//! first) is what `snowdrift bench` prints.

/// Why a run did not start or did not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is out of its range or does not fit the others; the message says which
    /// and what is allowed.
    #[error("{0}")]
    Options(String),
    /// The target did what the load cannot go on from: refused the first request or the
    /// token, closed without an answer, or sent what is not an answer.
    #[error("{0}")]
    Target(String),
    /// A step failed: `what` names the step, `source` says why.
    #[error("{what}")]
    Context {
        /// The step, e.g. `cannot reach 127.0.0.1:8080; is the server running?`.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<Error>,
    },
    /// A thread of the load panicked.
    #[error("a bench thread panicked")]
    Panicked,
    /// A socket, the epoll set or the runtime failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// `--target` is not a URL.
    #[error(transparent)]
    Url(#[from] url::ParseError),
    /// The `--ca` file is not PEM.
    #[error(transparent)]
    Pem(#[from] rustls::pki_types::pem::Error),
    /// The target's host is not a name a certificate can be checked against.
    #[error(transparent)]
    ServerName(#[from] rustls::pki_types::InvalidDnsNameError),
    /// TLS refused a certificate or could not be set up.
    #[error(transparent)]
    Tls(#[from] rustls::Error),
    /// The token cannot be sent as gRPC metadata.
    #[error(transparent)]
    Metadata(#[from] tonic::metadata::errors::InvalidMetadataValue),
    /// The gRPC channel could not be made or connected.
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    /// A gRPC call was refused or failed.
    #[error(transparent)]
    Status(Box<tonic::Status>),
    /// A task of the gRPC load failed to finish.
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
    /// The client refused its settings or gave no ID.
    #[error(transparent)]
    Client(#[from] snowdrift_client::Error),
    /// The generator could not be built or refused an ID.
    #[error(transparent)]
    Generator(#[from] snowdrift_core::Error),
    /// A latency histogram could not be made.
    #[error(transparent)]
    Histogram(#[from] hdrhistogram::CreationError),
    /// Two latency histograms could not be added.
    #[error(transparent)]
    HistogramAdd(#[from] hdrhistogram::AdditionError),
}

impl From<tonic::Status> for Error {
    fn from(status: tonic::Status) -> Self {
        Error::Status(Box::new(status))
    }
}

impl Error {
    /// The error and its causes on one line, outermost first, joined by `: `.
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(e) = cause {
            out.push_str(": ");
            out.push_str(&e.to_string());
            cause = e.source();
        }
        out
    }
}

/// Names the step an error happened in, as its outermost cause.
pub(crate) trait Context<T> {
    /// `what` as the step.
    fn context(self, what: &str) -> Result<T, Error>;
    /// The step made only on failure.
    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T, E: Into<Error>> Context<T> for Result<T, E> {
    fn context(self, what: &str) -> Result<T, Error> {
        self.with_context(|| what.to_string())
    }

    fn with_context(self, what: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|e| Error::Context {
            what: what(),
            source: Box::new(e.into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_the_step_then_each_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let inner: Result<(), _> = Err(io);
        let e = inner
            .context("cannot connect to 127.0.0.1:1")
            .with_context(|| "opening connection 1".to_string())
            .unwrap_err();
        assert_eq!(
            e.chain(),
            "opening connection 1: cannot connect to 127.0.0.1:1: refused"
        );
    }
}
