//! Whether each configured generator can issue now, and why not: what `/readyz` reports and
//! the gRPC health service follows.

use super::Generators;
use crate::source::Source;

/// Whether one configured generator can issue now, and why not.
pub struct Readiness<'a> {
    /// The generator's name.
    pub name: &'a str,
    /// True when it can issue now.
    pub ready: bool,
    /// Why it cannot.
    pub reason: Option<String>,
}

/// The readiness of every configured generator: what `/readyz` reports, and what the gRPC
/// health service follows.
pub async fn check(generators: &Generators) -> Vec<Readiness<'_>> {
    let mut report = Vec::new();
    for (name, source) in generators.configured() {
        let (ready, reason) = readiness(source).await;
        report.push(Readiness {
            name,
            ready,
            reason,
        });
    }
    report
}

/// Whether `source` can issue now, and why not.
async fn readiness(source: &Source) -> (bool, Option<String>) {
    match source {
        Source::Segment(s) => {
            // Ready when IDs are buffered, or when the store answers for the tag.
            let buffered = s
                .service()
                .status_of(s.tag())
                .is_some_and(|st| st.current_left + st.ids_ahead > 0);
            if buffered {
                return (true, None);
            }
            match s.service().get_tag(s.tag()).await {
                Ok(_) => (true, None),
                Err(e) => (false, Some(e.to_string())),
            }
        }
        Source::Snowflake(s) => match s.worker() {
            Some(w) if w.is_ready() => (true, None),
            Some(w) => (
                false,
                Some(format!(
                    "worker lease {}{}",
                    w.state,
                    w.last_error.map(|e| format!(": {e}")).unwrap_or_default()
                )),
            ),
            None => (false, Some("shut down".to_string())),
        },
        Source::Ticket(t) => {
            let up = t.pool().status().iter().any(|s| s.up);
            (up, (!up).then(|| "every ticket server is down".to_string()))
        }
        _ => (true, None),
    }
}
