//! `GET /metrics`: the registered metrics (histograms, snowflake gauges), then the series
//! kept outside the registry (IDs issued by name, segment buffers), in one response.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use crate::kinds::IdSource;
use crate::metrics::text::Out;
use crate::metrics::{HANDLE, buffers, write_fast, write_issued};
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
        source.gauges(name);
    }
    let buffers = state.generators.segments().status();
    let failing = state.generators.segments().refills_failing();
    let mut out = Out::default();
    out.push_str(&handle.render());
    write_build_info(&mut out);
    write_issued(&mut out);
    write_fast(&mut out);
    write_connections(&mut out, &state.conns);
    buffers::write(&mut out, &buffers, failing);
    let chunks = out.into_chunks().into_iter().map(Ok::<_, Infallible>);
    let body = Body::from_stream(futures_util::stream::iter(chunks));
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// `snowdrift_build_info{version, commit}` 1, as Prometheus exporters name their build: a
/// query can join it to any series to see which build served it.
fn write_build_info(out: &mut Out) {
    use crate::metrics::text::{family, sample};
    let build = crate::build_info::get();
    family(
        out,
        "snowdrift_build_info",
        "gauge",
        "Always 1; the labels name the running build: version and commit (with -dirty when the tree had changes).",
    );
    let commit = build.commit_text();
    sample(
        out,
        "snowdrift_build_info",
        &[("version", build.version), ("commit", &commit)],
        1,
    );
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
