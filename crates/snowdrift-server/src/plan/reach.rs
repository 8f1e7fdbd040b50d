//! `--check-config=connect`: every store, worker registry, ticket server, Redis counter and
//! etcd cluster a plan names, reached once the way start reaches it, with what answered and
//! what did not. Nothing is kept; what start would create (a missing Leaf table, a ticket
//! sequence, a lock directory) is created here too.

use std::future::Future;
use std::time::Duration;

use snowdrift_store::segment::SegmentStore;
use snowdrift_store::tso::EtcdTso;
use snowdrift_store::worker::WorkerRegistry;

use super::{Plan, SourcePlan};
use crate::config::mask_url;

/// The longest one reach may take: a black-holed address fails instead of hanging the check.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(10);

/// One thing the plan connects to, and whether it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// What it is for: `store`, `worker registry of generator "sf"`, ...
    pub what: String,
    /// Its URL, password masked.
    pub url: String,
    /// Why it could not be reached; `None` when it answered.
    pub error: Option<String>,
}

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
            let answer = bounded(SegmentStore::connect(&url, &store.table)).await;
            out.push(reached("store", &url, answer));
        }
        let mut registries = Vec::new();
        for g in self.generators() {
            match &g.source {
                SourcePlan::Snowflake { lease, .. } => {
                    let key = (lease.registry_url.clone(), lease.namespace.clone());
                    if registries.contains(&key) {
                        continue;
                    }
                    let answer = bounded(WorkerRegistry::connect(
                        &lease.registry_url,
                        &lease.namespace,
                    ))
                    .await;
                    let what = format!("worker registry of generator {:?}", g.name);
                    out.push(reached(&what, &lease.registry_url, answer));
                    registries.push(key);
                }
                SourcePlan::Ticket { pool } => {
                    let what = format!("ticket server of generator {:?}", g.name);
                    match bounded(pool.reach()).await {
                        Ok(servers) => {
                            for (url, answer) in servers {
                                out.push(reached(&what, &url, answer));
                            }
                        }
                        Err(e) => out.push(reached(&what, "(the pool)", Err::<(), _>(e))),
                    }
                }
                SourcePlan::Counter(plan) => {
                    let answer = bounded(plan.connect(&g.name)).await;
                    let what = format!("Redis of counter {:?}", g.name);
                    out.push(reached(&what, &plan.url, answer));
                }
                SourcePlan::Tso(plan) => {
                    let answer =
                        bounded(EtcdTso::connect(&plan.url, super::TSO_NAMESPACE, &g.name)).await;
                    let what = format!("etcd of tso generator {:?}", g.name);
                    out.push(reached(&what, &plan.url, answer));
                }
                SourcePlan::ZkVersion { url, znode } => {
                    let answer =
                        bounded(snowdrift_store::zk_version::ZkVersion::connect(url, znode)).await;
                    let what = format!("ZooKeeper of zk-version generator {:?}", g.name);
                    out.push(reached(&what, url, answer));
                }
                _ => {}
            }
        }
        out
    }
}

async fn bounded<T, E: std::fmt::Display>(
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(REACH_TIMEOUT, work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {REACH_TIMEOUT:?}")),
    }
}

fn reached<T, E: std::fmt::Display>(what: &str, url: &str, answer: Result<T, E>) -> Reached {
    Reached {
        what: what.to_string(),
        url: mask_url(url),
        error: answer.err().map(|e| e.to_string()),
    }
}
