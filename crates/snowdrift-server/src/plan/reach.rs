//! `--check-config=connect`: every store, worker registry, ticket server, Redis counter and
//! etcd cluster a plan names, reached once the way start reaches it, with what answered and
//! what did not. Nothing is kept; what start would create (a missing Leaf table, a ticket
//! sequence, a lock directory) is created here too.

use snowdrift_store::segment::SegmentStore;

use super::Plan;
pub use crate::kinds::{REACH_TIMEOUT, Reached};

impl Plan {
    /// Reaches everything the plan connects to, one after another, each bounded by
    /// [`REACH_TIMEOUT`].
    pub async fn reach(&self) -> Vec<Reached> {
        let mut out = Vec::new();
        let store = self.store();
        let urls = if store.urls.is_empty() {
            vec![store.url.clone()]
        } else {
            store.urls.clone()
        };
        for url in urls {
            let answer = Reached::bounded(SegmentStore::connect(&url, &store.table)).await;
            out.push(Reached::new("store", &url, answer));
        }
        let mut seen = Vec::new();
        for g in self.generators() {
            out.extend(g.source.reach(&g.name, &mut seen).await);
        }
        out
    }
}
