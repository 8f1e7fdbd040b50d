//! What `--check-config=connect` reports of one thing a plan connects to: each kind reaches
//! what it would connect to at start ([`KindPlan::reach`](super::KindPlan::reach)).

use std::future::Future;
use std::time::Duration;

/// The longest one reach may take: a black-holed address fails instead of hanging the check.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(10);

/// One thing the plan connects to, and whether it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// What it is for: `store`, `worker registry of generator "sf"`, ...
    pub what: String,
    /// Its URL, password masked.
    pub url: String,
    /// Why it could not be reached; `None` when it answered.
    pub error: Option<String>,
}

impl Reached {
    /// What `answer` says of `url` (masked here), reached for `what`.
    pub fn new<T, E: std::fmt::Display>(
        what: impl Into<String>,
        url: &str,
        answer: Result<T, E>,
    ) -> Self {
        Reached {
            what: what.into(),
            url: crate::config::mask_url(url),
            error: answer.err().map(|e| e.to_string()),
        }
    }

    /// `work`, bounded by [`REACH_TIMEOUT`].
    pub async fn bounded<T, E: std::fmt::Display>(
        work: impl Future<Output = Result<T, E>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(REACH_TIMEOUT, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {REACH_TIMEOUT:?}")),
        }
    }
}
