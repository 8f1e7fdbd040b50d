//! `snowdrift_ids_issued_total{generator,kind}` and `snowdrift_batch_size{kind}`: what the
//! HTTP, gRPC and RESP interfaces count for every request that issued IDs.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use metrics::Histogram;

use super::handles::Handles;
use super::text::{self, Out};
use crate::config::Kind;

/// IDs issued, by name and kind. Kept here rather than in the metrics registry: with
/// thousands of segment tags, a registered series costs a label set in the registry and
/// several allocations at every scrape; here it is one atomic and, at a scrape, one line.
static ISSUED: LazyLock<Handles<&'static str, AtomicU64>> = LazyLock::new(Handles::default);

/// The batch-size histogram of each kind. One per generator name would be ten series for
/// every segment tag.
static BATCH: LazyLock<Handles<(), Histogram>> = LazyLock::new(Handles::default);

const ISSUED_NAME: &str = "snowdrift_ids_issued_total";

/// Counts `count` IDs issued in one batch by generator (or segment tag) `name` of `kind`.
pub fn issued(name: &str, kind: Kind, count: u64) {
    let kind = kind.as_str();
    ISSUED.with(
        name,
        kind,
        || AtomicU64::new(0),
        |n| n.fetch_add(count, Ordering::Relaxed),
    );
    BATCH.with(
        kind,
        (),
        || metrics::histogram!("snowdrift_batch_size", "kind" => kind),
        |h| h.record(count as f64),
    );
}

/// Writes `snowdrift_ids_issued_total` for every name that has issued IDs.
pub fn write(out: &mut Out) {
    text::family(
        out,
        ISSUED_NAME,
        "counter",
        "IDs issued, by generator or segment tag name and kind.",
    );
    ISSUED.for_each(|name, kind, n| {
        let labels = [("generator", name), ("kind", kind)];
        text::sample(out, ISSUED_NAME, &labels, n.load(Ordering::Relaxed));
    });
}
