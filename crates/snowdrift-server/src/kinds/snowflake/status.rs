//! What a snowflake generator shows of itself: its layout, clock policies and worker lease
//! for `/v1/generators`, its gauges for `/metrics`, its readiness for `/readyz`.

use serde_json::{Value, json};
use snowdrift_store::worker::WorkerState;

use super::SnowflakeSource;

/// Adds the layout, clock policies and worker lease of `s` to `v`.
pub(super) fn describe(s: &SnowflakeSource, v: &mut Value) {
    v["layout"] = s.layout_name().into();
    if let Some(tail) = s.tail() {
        // The secret is never shown.
        v["mastodon"] = json!({
            "table": tail.table(),
            "hash": "md5",
            "hashed_bits": tail.sequence_bits(),
        });
    }
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

/// Whether `s` can issue now: its lease holds and the clock is past its mark.
pub(super) fn readiness(s: &SnowflakeSource) -> Result<(), String> {
    match s.worker() {
        Some(w) if w.is_ready() => Ok(()),
        Some(w) if w.state == WorkerState::WaitingForMark => Err(format!(
            "worker {} is waiting for the clock to pass its high-water mark (this node \
             restarted within the mark's window); it starts issuing by itself",
            w.worker_id
                .map_or_else(|| "?".to_string(), |id| id.to_string())
        )),
        Some(w) => Err(format!(
            "worker lease {}{}",
            w.state,
            w.last_error.map(|e| format!(": {e}")).unwrap_or_default()
        )),
        None => Err("shut down".to_string()),
    }
}

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
        "worker_id_changes": w.worker_id_changes,
        "deadline_ms": w.deadline_ms,
        "mark_ms": w.mark_ms,
        "now_ms": w.now_ms,
        "peers": peers,
        "last_error": w.last_error,
    })
}

/// A snowflake generator's lease, clock and layout, read at scrape time.
pub(super) fn gauges(name: &str, s: &SnowflakeSource) {
    let labels = [("generator", name.to_string())];
    let secs = |ms: i128| ms as f64 / 1000.0;
    if let Some(w) = s.worker() {
        let now = i128::from(w.now_ms);
        metrics::gauge!("snowdrift_worker_ready", &labels).set(f64::from(u8::from(w.is_ready())));
        for state in WorkerState::ALL {
            let labels = [
                ("generator", name.to_string()),
                ("state", state.as_str().to_string()),
            ];
            metrics::gauge!("snowdrift_worker_state", &labels)
                .set(f64::from(u8::from(state == w.state)));
        }
        if let Some(id) = w.worker_id {
            metrics::gauge!("snowdrift_worker_id", &labels).set(id as f64);
        }
        // Each epoch after the first began with a lost lease regained.
        metrics::counter!("snowdrift_worker_lease_losses_total", &labels)
            .absolute(w.epoch.saturating_sub(1));
        metrics::counter!("snowdrift_worker_lease_renewals_total", &labels).absolute(w.renewals);
        metrics::counter!("snowdrift_worker_id_changes_total", &labels)
            .absolute(w.worker_id_changes);
        metrics::gauge!("snowdrift_worker_lease_seconds_left", &labels)
            .set(secs((i128::from(w.deadline_ms) - now).max(0)));
        metrics::gauge!("snowdrift_worker_mark_ahead_seconds", &labels)
            .set(secs(i128::from(w.mark_ms) - now));
        let worst = w
            .peers
            .iter()
            .map(|p| p.ahead_ms.unsigned_abs())
            .max()
            .unwrap_or(0);
        metrics::gauge!("snowdrift_clock_offset_to_peers_max_seconds", &labels)
            .set(worst as f64 / 1000.0);
        let end = i128::from(s.layout().lifetime().end_ms);
        metrics::gauge!("snowdrift_layout_seconds_left", &labels)
            .set(((end - now) as f64 / 1000.0).max(0.0));
    }
    if let Some(lead) = s.lead() {
        metrics::gauge!("snowdrift_borrowed_seconds", &labels).set(lead.as_secs_f64());
    }
    metrics::gauge!("snowdrift_worker_unverified", &labels)
        .set(f64::from(u8::from(s.unverified())));
    if let Some(extension) = s.extension() {
        metrics::gauge!("snowdrift_snowflake_extension", &labels).set(extension as f64);
    }
}
