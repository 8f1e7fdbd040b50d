//! `GET /metrics`: the registered metrics (histograms, snowflake gauges), then the series
//! kept outside the registry (IDs issued by name, segment buffers), in one response.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::metrics::text::Out;
use crate::metrics::{HANDLE, buffers, write_fast, write_issued};
use crate::source::{SnowflakeSource, Source};
use crate::state::AppState;

/// The metrics, with the gauges that are read at scrape time rather than counted.
pub async fn render(State(state): State<Arc<AppState>>) -> Response {
    let Some(Some(handle)) = HANDLE.get() else {
        return crate::error::Error::unavailable(
            "metrics are off: another metrics recorder was installed in this process",
        )
        .into_response();
    };
    for (name, source) in state.generators.configured() {
        match source {
            Source::Snowflake(s) => snowflake_gauges(name, s),
            Source::Tso(t) => tso_gauges(name, &t.tso().report()),
            _ => {}
        }
    }
    let buffers = state.generators.segments().status();
    let mut out = Out::default();
    out.push_str(&handle.render());
    write_issued(&mut out);
    write_fast(&mut out);
    write_connections(&mut out, &state.conns);
    buffers::write(&mut out, &buffers);
    let chunks = out.into_chunks().into_iter().map(Ok::<_, Infallible>);
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// The connections under `[limits]`: open now, and refused at the cap since start.
fn write_connections(out: &mut Out, conns: &crate::conn::Admission) {
    use crate::metrics::text::{family, sample};
    family(
        out,
        "snowdrift_connections_open",
        "gauge",
        "Client connections open now (HTTP, gRPC and RESP), under limits.max_connections.",
    );
    sample(out, "snowdrift_connections_open", &[], conns.open());
    family(
        out,
        "snowdrift_connections_max",
        "gauge",
        "limits.max_connections as resolved at start.",
    );
    sample(
        out,
        "snowdrift_connections_max",
        &[],
        conns.limits().max_connections,
    );
    family(
        out,
        "snowdrift_connections_refused_total",
        "counter",
        "Connections closed as soon as they were accepted because limits.max_connections were open.",
    );
    sample(
        out,
        "snowdrift_connections_refused_total",
        &[],
        conns.refused(),
    );
}

/// A timestamp oracle's role, window, lease and counters, read at scrape time.
fn tso_gauges(name: &str, r: &crate::tso::TsoReport) {
    let labels = [("generator", name.to_string())];
    let leading = matches!(r.role, crate::tso::Role::Leader { .. });
    metrics::gauge!("snowdrift_tso_leader", &labels).set(f64::from(u8::from(leading)));
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
    for (why, n) in crate::tso::Refusal::ALL.iter().zip(r.refused) {
        let labels = [
            ("generator", name.to_string()),
            ("reason", why.label().to_string()),
        ];
        metrics::counter!("snowdrift_tso_forward_refused_total", &labels).absolute(n);
    }
    for (fault, n) in crate::tso::KEY_FAULTS.iter().zip(r.forged_keys) {
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

/// A snowflake generator's lease, clock and layout, read at scrape time.
fn snowflake_gauges(name: &str, s: &SnowflakeSource) {
    let labels = [("generator", name.to_string())];
    let secs = |ms: i128| ms as f64 / 1000.0;
    if let Some(w) = s.worker() {
        let now = i128::from(w.now_ms);
        metrics::gauge!("snowdrift_worker_ready", &labels).set(f64::from(u8::from(w.is_ready())));
        if let Some(id) = w.worker_id {
            metrics::gauge!("snowdrift_worker_id", &labels).set(id as f64);
        }
        // Each epoch after the first began with a lost lease regained.
        metrics::counter!("snowdrift_worker_lease_losses_total", &labels)
            .absolute(w.epoch.saturating_sub(1));
        metrics::counter!("snowdrift_worker_lease_renewals_total", &labels).absolute(w.renewals);
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
