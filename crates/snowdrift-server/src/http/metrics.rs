//! `/metrics` in Prometheus' text format, and what feeds it: IDs issued, batch sizes,
//! request latency, segment buffers.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::AppState;
use crate::config::Kind;
use crate::source::{SnowflakeSource, Source};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process-wide Prometheus recorder (once; later calls reuse it). Returns
/// `false` when another recorder was installed first, in which case `/metrics` says so.
pub fn install_recorder() -> bool {
    HANDLE
        .get_or_init(|| {
            let buckets = [
                0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05,
                0.1, 0.25, 0.5, 1.0, 2.5,
            ];
            let sizes = [1.0, 10.0, 100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0];
            PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("snowdrift_request_duration_seconds".into()),
                    &buckets,
                )
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full("snowdrift_batch_size".into()), &sizes)
                })
                .ok()
                .and_then(|b| b.install_recorder().ok())
        })
        .is_some()
}

/// Every few seconds, folds the histogram samples recorded since the last time into their
/// buckets. Without it, samples pile up (tens of bytes per request) until someone scrapes
/// `/metrics`. Runs on the current runtime until it stops; several servers in one process
/// each run one, which is harmless.
pub fn spawn_upkeep() {
    let Some(Some(handle)) = HANDLE.get() else {
        return;
    };
    let handle = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            every.tick().await;
            handle.run_upkeep();
        }
    });
}

/// Counts `count` IDs issued by generator `name`.
pub fn issued(name: &str, kind: Kind, count: u64) {
    let labels = [
        ("generator", name.to_string()),
        ("kind", kind.name().to_string()),
    ];
    metrics::counter!("snowdrift_ids_issued_total", &labels).increment(count);
    metrics::histogram!("snowdrift_batch_size", &labels).record(count as f64);
}

/// Times every request by route (the route pattern, not the raw path, so label values stay
/// few).
pub async fn track(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();
    let method = req.method().to_string();
    let start = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    let labels = [("route", route), ("method", method), ("status", status)];
    metrics::histogram!("snowdrift_request_duration_seconds", &labels)
        .record(start.elapsed().as_secs_f64());
    response
}

/// The metrics, refreshed with the gauges that are read rather than counted.
pub async fn render(State(state): State<Arc<AppState>>) -> Response {
    let Some(Some(handle)) = HANDLE.get() else {
        return crate::error::ApiError::unavailable(
            "metrics are off: another metrics recorder was installed in this process",
        )
        .into_response();
    };
    for (tag, st) in state.generators.segments().status() {
        let labels = [("tag", tag)];
        metrics::gauge!("snowdrift_segment_current_left", &labels).set(st.current_left as f64);
        metrics::gauge!("snowdrift_segment_ids_ahead", &labels).set(st.ids_ahead as f64);
        metrics::gauge!("snowdrift_segment_segments_ahead", &labels).set(st.segments_ahead as f64);
        metrics::gauge!("snowdrift_segment_refills_total", &labels).set(st.pushed as f64);
        metrics::gauge!("snowdrift_segment_starved_total", &labels).set(st.starved as f64);
    }
    for (name, source) in state.generators.configured() {
        if let Source::Snowflake(s) = source {
            snowflake_gauges(name, s);
        }
    }
    (
        [("content-type", "text/plain; version=0.0.4")],
        handle.render(),
    )
        .into_response()
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
        metrics::gauge!("snowdrift_worker_lease_losses_total", &labels)
            .set(w.epoch.saturating_sub(1) as f64);
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
        metrics::gauge!("snowdrift_layout_days_left", &labels)
            .set(((end - now) as f64 / 86_400_000.0).max(0.0));
    }
    if let Some(lead) = s.lead() {
        metrics::gauge!("snowdrift_borrowed_seconds", &labels).set(lead.as_secs_f64());
    }
}
