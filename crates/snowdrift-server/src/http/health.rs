//! `/healthz` (the process is up), `/readyz` (every generator can issue) and
//! `/v1/generators` (what each generator is and holds).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::AppState;
use crate::generators::Generators;
use crate::source::{IdSource, Source};

/// 200 while the process serves HTTP.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// 200 when every generator can issue now, else 503 naming the ones that cannot and why.
pub async fn readyz(State(state): State<Arc<AppState>>) -> (StatusCode, Json<Value>) {
    let report = check(&state.generators).await;
    let ready = report.iter().all(|g| g.ready);
    let generators: Vec<Value> = report
        .iter()
        .map(|g| json!({"name": g.name, "ready": g.ready, "reason": g.reason}))
        .collect();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({"ready": ready, "generators": generators})),
    )
}

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

/// Every configured generator with its kind and state.
pub async fn generators(State(state): State<Arc<AppState>>) -> Json<Value> {
    let list: Vec<Value> = state
        .generators
        .configured()
        .map(|(name, source)| describe(name, source))
        .collect();
    let buffers: Vec<Value> = state
        .generators
        .segments()
        .status()
        .iter()
        .map(|(tag, st)| {
            json!({
                "tag": tag,
                "current_left": st.current_left,
                "current_len": st.current_len,
                "segments_ahead": st.segments_ahead,
                "ids_ahead": st.ids_ahead,
                "target_ahead": st.target_ahead,
                "refills": st.pushed,
                "starved": st.starved,
            })
        })
        .collect();
    Json(json!({"generators": list, "segment_buffers": buffers}))
}

fn describe(name: &str, source: &Source) -> Value {
    let mut v = json!({"name": name, "kind": source.kind().name()});
    match source {
        Source::Snowflake(s) => {
            v["layout"] = s.layout_name().into();
            if let Some(w) = s.worker() {
                v["worker"] = worker_json(&w);
            }
        }
        Source::Segment(s) => {
            v["tag"] = s.tag().into();
        }
        Source::Counter(c) => {
            let stats = c.counter().stats();
            v["round_trips"] = stats.round_trips.into();
            v["served"] = stats.served.into();
        }
        _ => {}
    }
    v
}

/// A worker lease as JSON: what `/v1/generators` and the dashboard show.
fn worker_json(w: &snowdrift_store::worker::WorkerStatus) -> Value {
    let peers: Vec<Value> = w
        .peers
        .iter()
        .map(|p| json!({"worker_id": p.worker_id, "holder": p.holder, "ahead_ms": p.ahead_ms}))
        .collect();
    json!({
        "worker_id": w.worker_id,
        "holder": w.holder,
        "registry": w.backend,
        "state": w.state.as_str(),
        "ready": w.is_ready(),
        "epoch": w.epoch,
        "renewals": w.renewals,
        "deadline_ms": w.deadline_ms,
        "mark_ms": w.mark_ms,
        "now_ms": w.now_ms,
        "peers": peers,
        "last_error": w.last_error,
    })
}
