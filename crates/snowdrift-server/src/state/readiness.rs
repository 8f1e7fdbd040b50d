//! Whether each configured generator can issue now, and why not: what `/readyz` reports and
//! the gRPC health service follows.

use std::borrow::Cow;

use snowdrift_store::segment::SegmentService;
use snowdrift_store::worker::WorkerState;

use super::Generators;
use crate::source::Source;

/// Whether one generator, or one tag served under its own name, can issue now, and why not.
pub struct Readiness<'a> {
    /// The generator's or tag's name.
    pub name: Cow<'a, str>,
    /// True when it can issue now.
    pub ready: bool,
    /// Why it cannot.
    pub reason: Option<String>,
}

/// The readiness of every configured generator and of every tag this node serves under its
/// own name (so a tag that fails requests makes the node unready too): what `/readyz`
/// reports, and what the gRPC health service follows.
pub async fn check(generators: &Generators) -> Vec<Readiness<'_>> {
    let mut report = Vec::new();
    for (name, source) in generators.configured() {
        let (ready, reason) = readiness(generators.segments(), source).await;
        report.push(Readiness {
            name: Cow::Borrowed(name),
            ready,
            reason,
        });
    }
    for (tag, _) in generators.segments().status() {
        if generators.is_generator(&tag) {
            continue;
        }
        let (ready, reason) = segment_readiness(generators.segments(), &tag).await;
        report.push(Readiness {
            name: Cow::Owned(tag),
            ready,
            reason,
        });
    }
    report
}

/// Whether a segment tag can issue now: IDs are buffered, or else its refills are not
/// failing and the store answers for it.
async fn segment_readiness(segments: &SegmentService, tag: &str) -> (bool, Option<String>) {
    let buffered = segments
        .status_of(tag)
        .is_some_and(|st| st.current_left + st.ids_ahead > 0);
    if buffered {
        return (true, None);
    }
    if let Some(error) = segments.refill_error(tag) {
        return (
            false,
            Some(format!("the buffer is empty and refills fail: {error}")),
        );
    }
    match segments.get_tag(tag).await {
        Ok(_) => (true, None),
        Err(e) => (false, Some(e.to_string())),
    }
}

/// Whether `source` can issue now, and why not.
async fn readiness(segments: &SegmentService, source: &Source) -> (bool, Option<String>) {
    match source {
        Source::Segment(s) => segment_readiness(segments, s.tag()).await,
        Source::Snowflake(s) => match s.worker() {
            Some(w) if w.is_ready() => (true, None),
            Some(w) if w.state == WorkerState::WaitingForMark => (
                false,
                Some(format!(
                    "worker {} is waiting for the clock to pass its high-water mark (this node \
                     restarted within the mark's window); it starts issuing by itself",
                    w.worker_id
                        .map_or_else(|| "?".to_string(), |id| id.to_string())
                )),
            ),
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
        Source::Tso(t) => match t.tso().report().role {
            crate::tso::Role::Leader { .. } | crate::tso::Role::Follower { .. } => (true, None),
            crate::tso::Role::Electing { error } => (
                false,
                Some(format!(
                    "no leader of the timestamp oracle is known yet (an election is under \
                     way){}",
                    error.map(|e| format!(": {e}")).unwrap_or_default()
                )),
            ),
            crate::tso::Role::Stopped => (false, Some("shut down".to_string())),
        },
        _ => (true, None),
    }
}
