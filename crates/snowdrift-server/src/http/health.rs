//! `/healthz` (the process is up), `/readyz` (every generator can issue) and
//! `/v1/generators` (what each generator is and holds).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::source::{IdSource, Source};
use crate::state::AppState;

/// 200 while the process serves HTTP.
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
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
    match source {
        Source::Snowflake(s) => {
            v["layout"] = s.layout_name().into();
            let o = s.options();
            v["output"] = if o.bit_reversed {
                "bit-reversed"
            } else {
                "plain"
            }
            .into();
            v["clock"] = json!({
                "on_backward": o.on_backward.name(),
                "backward_wait_ms": o.backward_wait.as_millis() as u64,
                "max_lead_ms": o.max_lead.as_millis() as u64,
                "random_sequence_start": o.random_sequence_start,
                "extension": s.extension(),
                "extension_max": snowdrift_core::layout::mask(s.layout().extension_bits()),
            });
            if let Some(w) = s.worker() {
                v["worker"] = worker_json(&w);
                v["worker"]["verified"] = (!s.unverified()).into();
                if let Some(id) = w.worker_id {
                    v["worker"]["fields"] = node_fields(s.layout(), id);
                }
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
        Source::Uuid(u) => {
            for (key, value) in u.settings() {
                v[key] = value;
            }
        }
        Source::Tso(t) => {
            v["tso"] = tso_json(t.tso());
        }
        Source::ZkVersion(z) => {
            v["znode"] = z.path().into();
        }
        _ => {}
    }
    v
}

/// A timestamp oracle as JSON: who leads, the term and window, the counters.
fn tso_json(t: &crate::tso::Tso) -> Value {
    use crate::tso::Role;
    let r = t.report();
    let c = t.config();
    let mut v = json!({
        "epoch_ms": c.epoch_ms,
        "logical_bits": c.logical_bits,
        "window_ms": c.window_ms,
        "terms": r.terms,
        "batches": r.batches,
        "batched_requests": r.batched_requests,
        "window_saves": r.window_saves,
        "forwards": r.forwards,
        "forward_calls": r.forward_calls,
        "forward_errors": r.forward_errors,
        "forward_refused": crate::tso::Refusal::ALL
            .iter()
            .zip(r.refused)
            .map(|(why, n)| (why.label().to_string(), Value::from(n)))
            .collect::<serde_json::Map<_, _>>(),
        "leader_keys_refused": crate::tso::KEY_FAULTS
            .iter()
            .zip(r.forged_keys)
            .map(|(fault, n)| (fault.to_string(), Value::from(n)))
            .collect::<serde_json::Map<_, _>>(),
        "leader_keys_replaced": r.keys_replaced,
    });
    match r.role {
        Role::Leader { term } => {
            v["role"] = "leader".into();
            v["term"] = term.into();
            if let Some(st) = r.status {
                v["physical_ms"] = st.physical_ms.into();
                v["window_end_ms"] = st.window_end_ms.into();
                v["clock_steps_back"] = st.clock_steps_back.into();
            }
            if let Some(left) = r.lease_left {
                v["lease_ms_left"] = (left.as_millis() as u64).into();
            }
        }
        Role::Follower { leader, term } => {
            v["role"] = "follower".into();
            v["leader"] = leader.into();
            v["leader_term"] = term.into();
        }
        Role::Electing { error } => {
            v["role"] = "electing".into();
            v["last_error"] = error.into();
        }
        Role::Stopped => v["role"] = "stopped".into(),
    }
    v
}

/// A worker lease as JSON: what `/v1/generators` and the dashboard show.
/// The worker ID split into the layout's node fields, high first (`{"datacenter": 3,
/// "worker": 7}` for Twitter's worker ID 103).
fn node_fields(layout: &snowdrift_core::layout::Layout, worker_id: u64) -> Value {
    use snowdrift_core::layout::Role;
    let nodes: Vec<_> = layout
        .fields()
        .iter()
        .filter(|f| f.role() == Role::Node)
        .collect();
    let mut shift: u32 = nodes.iter().map(|f| u32::from(f.bits())).sum();
    let mut fields = serde_json::Map::new();
    for f in nodes {
        shift -= u32::from(f.bits());
        fields.insert(f.name().into(), ((worker_id >> shift) & f.max()).into());
    }
    Value::Object(fields)
}

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
