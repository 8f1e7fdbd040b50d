//! `/healthz` (the process is up), `/readyz` (every generator can issue) and
//! `/v1/generators` (what each generator is and holds).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::kinds::{IdSource, Source};
use crate::state::AppState;

/// 200 while the process serves HTTP, with the build it runs (version, commit, dirty).
pub async fn healthz() -> Json<Value> {
    let build = crate::build_info::get();
    Json(json!({
        "status": "ok",
        "version": build.version,
        "commit": build.commit,
        "dirty": build.dirty,
    }))
}

/// 200 when every generator can issue now, else 503 naming the ones that cannot and why.
pub async fn readyz(State(state): State<Arc<AppState>>) -> (StatusCode, Json<Value>) {
    let report = crate::state::readiness::check(&state.generators).await;
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
    let mut v = json!({"name": name, "kind": source.kind().as_str()});
    source.describe(&mut v);
    v
}
