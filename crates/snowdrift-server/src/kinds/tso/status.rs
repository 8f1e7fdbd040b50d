//! What a timestamp oracle shows of itself: who leads, the term and window and the counters
//! for `/v1/generators` and `/metrics`, and whether a leader is known for `/readyz`.

use serde_json::{Value, json};

use super::oracle::{Role, Tso};

/// A timestamp oracle as JSON: who leads, the term and window, the counters.
pub(super) fn json(t: &super::oracle::Tso) -> Value {
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
        "forward_refused": super::oracle::Refusal::ALL
            .iter()
            .zip(r.refused)
            .map(|(why, n)| (why.label().to_string(), Value::from(n)))
            .collect::<serde_json::Map<_, _>>(),
        "leader_keys_refused": super::oracle::KEY_FAULTS
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

/// Whether a leader is known, so requests can be served (by this node or forwarded).
pub(super) fn readiness(t: &Tso) -> Result<(), String> {
    match t.report().role {
        Role::Leader { .. } | Role::Follower { .. } => Ok(()),
        Role::Electing { error } => Err(format!(
            "no leader of the timestamp oracle is known yet (an election is under way){}",
            error.map(|e| format!(": {e}")).unwrap_or_default()
        )),
        Role::Stopped => Err("shut down".to_string()),
    }
}

/// A timestamp oracle's role, window, lease and counters, read at scrape time; `window_ms`
/// is the window it saves ahead (`window`), against which what is left reads as a share.
pub(super) fn gauges(name: &str, r: &super::oracle::TsoReport, window_ms: u64) {
    let labels = [("generator", name.to_string())];
    let leading = matches!(r.role, super::oracle::Role::Leader { .. });
    metrics::gauge!("snowdrift_tso_leader", &labels).set(f64::from(u8::from(leading)));
    metrics::gauge!("snowdrift_tso_window_seconds", &labels).set(window_ms as f64 / 1000.0);
    metrics::counter!("snowdrift_tso_terms_total", &labels).absolute(r.terms);
    let window_left = r
        .status
        .filter(|_| leading)
        .and_then(|st| {
            st.window_end_ms
                .map(|end| end.saturating_sub(st.physical_ms))
        })
        .unwrap_or(0);
    metrics::gauge!("snowdrift_tso_window_seconds_left", &labels).set(window_left as f64 / 1000.0);
    metrics::gauge!("snowdrift_tso_lease_seconds_left", &labels)
        .set(r.lease_left.map_or(0.0, |d| d.as_secs_f64()));
    metrics::counter!("snowdrift_tso_batches_total", &labels).absolute(r.batches);
    metrics::counter!("snowdrift_tso_batched_requests_total", &labels).absolute(r.batched_requests);
    metrics::counter!("snowdrift_tso_window_saves_total", &labels).absolute(r.window_saves);
    metrics::counter!("snowdrift_tso_forwards_total", &labels).absolute(r.forwards);
    metrics::counter!("snowdrift_tso_forward_calls_total", &labels).absolute(r.forward_calls);
    metrics::counter!("snowdrift_tso_forward_errors_total", &labels).absolute(r.forward_errors);
    for (why, n) in super::oracle::Refusal::ALL.iter().zip(r.refused) {
        let labels = [
            ("generator", name.to_string()),
            ("reason", why.label().to_string()),
        ];
        metrics::counter!("snowdrift_tso_forward_refused_total", &labels).absolute(n);
    }
    for (fault, n) in super::oracle::KEY_FAULTS.iter().zip(r.forged_keys) {
        let labels = [
            ("generator", name.to_string()),
            ("fault", (*fault).to_string()),
        ];
        metrics::counter!("snowdrift_tso_leader_key_refused_total", &labels).absolute(n);
    }
    metrics::counter!("snowdrift_tso_leader_keys_replaced_total", &labels)
        .absolute(r.keys_replaced);
    if let Some(st) = r.status {
        metrics::counter!("snowdrift_tso_clock_steps_back_total", &labels)
            .absolute(st.clock_steps_back);
    }
}
