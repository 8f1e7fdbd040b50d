//! What `/metrics` shows, and what feeds it: IDs issued, batch sizes, request latency (HTTP
//! and gRPC), segment buffers, snowflake leases, in Prometheus' text format. The route
//! itself is `http::metrics`; every transport records here.
//!
//! The cost stays flat in the number of segment tags and small per request: what exists
//! once per tag (IDs issued, buffer counters) is kept outside the metrics registry and
//! written straight into the response, and every handle a request records into is made
//! once and found again by name, without allocating.

pub(crate) mod buffers;
mod handles;
mod issued;
mod latency;
pub(crate) mod text;
mod tinyid;

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

pub use issued::issued;
pub(crate) use issued::write as write_issued;
pub use latency::Track;
pub(crate) use latency::{record_http, write_fast};
pub(crate) use tinyid::answered as tinyid_answered;
pub(crate) static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

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
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("snowdrift_request_duration_seconds".into()),
                    &buckets,
                )
                .and_then(|b| {
                    b.set_buckets_for_metric(Matcher::Full("snowdrift_batch_size".into()), &sizes)
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(TSO_GROUP.into()),
                        &[
                            1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1_000.0,
                        ],
                    )
                })
                .ok()
                .and_then(|b| b.install_recorder().ok())?;
            metrics::describe_histogram!(
                "snowdrift_request_duration_seconds",
                metrics::Unit::Seconds,
                "HTTP requests by route pattern, gRPC calls by method (a stream until its end)."
            );
            metrics::describe_histogram!(
                "snowdrift_batch_size",
                metrics::Unit::Count,
                "IDs per request that issued IDs, by kind."
            );
            metrics::describe_counter!(
                tinyid::NAME,
                "Answers of Tinyid's routes by route and Tinyid code: 200, 5 (token missing, unknown or not for the bizType), 6 (anything else); all are HTTP 200."
            );
            describe_snowflake();
            describe_tso();
            metrics::describe_gauge!(
                "snowdrift_ticket_server_up",
                "1 while a ticket server takes calls, 0 while it is down (label server: k for the k-th of servers, from 1, whose IDs are k mod N)."
            );
            Some(handle)
        })
        .is_some()
}

/// The help of each snowflake generator's series, set from its lease at scrape time
/// (`http::metrics`).
fn describe_snowflake() {
    use metrics::{Unit, describe_counter, describe_gauge};
    describe_gauge!(
        "snowdrift_worker_ready",
        "1 while the generator's worker lease lets it issue, else 0."
    );
    describe_gauge!(
        "snowdrift_worker_state",
        "1 for the state the generator's worker lease is in (starting, waiting_for_mark, issuing, lease_lost, clock_behind, stopped), 0 for the others."
    );
    describe_gauge!("snowdrift_worker_id", "The worker ID the generator holds.");
    describe_counter!(
        "snowdrift_worker_lease_losses_total",
        "Worker leases lost (and regained under a new epoch) since start."
    );
    describe_counter!(
        "snowdrift_worker_id_changes_total",
        "Lost worker leases regained under another worker ID (the lost one was taken meanwhile) since start."
    );
    describe_counter!(
        "snowdrift_worker_lease_renewals_total",
        "Worker lease renewals since start."
    );
    describe_gauge!(
        "snowdrift_worker_lease_seconds_left",
        Unit::Seconds,
        "Time until the lease's deadline, when issuing stops unless it is renewed."
    );
    describe_gauge!(
        "snowdrift_worker_mark_ahead_seconds",
        Unit::Seconds,
        "How far the durable high-water mark is ahead of the clock."
    );
    describe_gauge!(
        "snowdrift_clock_offset_to_peers_max_seconds",
        Unit::Seconds,
        "The largest clock offset to a live peer on the registry."
    );
    describe_gauge!(
        "snowdrift_layout_seconds_left",
        Unit::Seconds,
        "Time until the layout's time field is full and the generator must stop."
    );
    describe_gauge!(
        "snowdrift_borrowed_seconds",
        Unit::Seconds,
        "Time borrowed from future ticks (sequence exhaustion with max_lead)."
    );
    describe_gauge!(
        "snowdrift_worker_unverified",
        "1 when the worker ID is leased only on this machine while the server listens beyond loopback."
    );
    describe_gauge!(
        "snowdrift_snowflake_extension",
        "The extension value IDs are issued under (raised by a start behind the high-water mark)."
    );
}

/// The histogram of requests merged into one timestamp-oracle allocation, by generator.
pub(crate) const TSO_GROUP: &str = "snowdrift_tso_group_requests";

/// The help of each timestamp oracle's series, set from its report at scrape time.
fn describe_tso() {
    use metrics::{Unit, describe_counter, describe_gauge};
    metrics::describe_histogram!(
        TSO_GROUP,
        Unit::Count,
        "Requests served by one allocation of the leader (PD's batching), by generator."
    );
    describe_gauge!(
        "snowdrift_tso_leader",
        "1 while this node leads the timestamp oracle, else 0 (it forwards to the leader)."
    );
    describe_counter!(
        "snowdrift_tso_terms_total",
        "Terms this node has led the oracle since start."
    );
    describe_gauge!(
        "snowdrift_tso_window_seconds",
        Unit::Seconds,
        "The window a leader saves ahead (tso window); a leader saves again when half is left."
    );
    describe_gauge!(
        "snowdrift_tso_window_seconds_left",
        Unit::Seconds,
        "While leading: how far the saved window reaches past the physical time in use."
    );
    describe_gauge!(
        "snowdrift_tso_lease_seconds_left",
        Unit::Seconds,
        "While leading: time until the leader must stop issuing unless its lease is renewed."
    );
    describe_counter!(
        "snowdrift_tso_batches_total",
        "Allocations, each serving a merged group of requests (PD's batching)."
    );
    describe_counter!(
        "snowdrift_tso_batched_requests_total",
        "Requests served by those allocations; divided by batches, the mean group size."
    );
    describe_counter!(
        "snowdrift_tso_window_saves_total",
        "Window ends saved in etcd."
    );
    describe_counter!(
        "snowdrift_tso_forwards_total",
        "Requests this node forwarded to the leader."
    );
    describe_counter!(
        "snowdrift_tso_forward_calls_total",
        "gRPC calls that carried them to the leader (requests waiting together share one)."
    );
    describe_counter!(
        "snowdrift_tso_forward_errors_total",
        "Forwarded requests that failed (the leader gone, or refusing)."
    );
    describe_counter!(
        "snowdrift_tso_forward_refused_total",
        "Forwards refused by reason: plaintext_token (the leader is plain http and forward_plaintext is off), term (the answer names another term than the leader key), shape (not one run of the count asked), out_of_range (wraps, not a tso ID, or too far ahead), not_above_served (not above what this node served)."
    );
    describe_counter!(
        "snowdrift_tso_leader_key_refused_total",
        "Leader keys found that no campaign wrote, by fault (no_lease, lease_not_named, lease_expired): not forwarded to."
    );
    describe_counter!(
        "snowdrift_tso_leader_keys_replaced_total",
        "Leader keys bound to no lease that this node took over after they stayed a whole lease."
    );
    describe_counter!(
        "snowdrift_tso_clock_steps_back_total",
        "Clock readings below the one before, while leading; IDs kept going up regardless."
    );
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
