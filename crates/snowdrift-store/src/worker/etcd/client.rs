//! [`EtcdKv`] for a real etcd, through `etcd-client`: the registry's transactions, ranges
//! and lease calls as gRPC requests, each failure mapped to the store's error kinds.

use std::sync::Arc;

use etcd_client as etcd;
use etcd_client::{
    Client, CompareOp, EventType, GetOptions, LeaseTimeToLiveOptions, PutOptions, SortOrder,
    SortTarget, TxnOp, WatchOptions,
};

use super::kv::{Compare, EtcdKv, KeyChange, KeyValue, KvFuture, LeaseStatus, Op, Txn, TxnAnswer};
use crate::error::Error;

/// A connected etcd client, shared (its per-service handles are a few KiB).
#[derive(Clone)]
pub(crate) struct ClientKv {
    client: Arc<Client>,
}

impl std::fmt::Debug for ClientKv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKv").finish_non_exhaustive()
    }
}

impl ClientKv {
    pub(crate) fn new(client: Client) -> Self {
        Self {
            client: Arc::new(client),
        }
    }
}

impl EtcdKv for ClientKv {
    fn txn(&self, txn: Txn) -> KvFuture<'_, TxnAnswer> {
        Box::pin(async move {
            let request = etcd::Txn::new()
                .when(txn.when.into_iter().map(compare).collect::<Vec<_>>())
                .and_then(ops(txn.then))
                .or_else(ops(txn.otherwise));
            let answer = self
                .client
                .kv_client()
                .txn(request)
                .await
                .map_err(unavailable)?;
            let succeeded = answer.succeeded();
            let gets = answer
                .op_responses()
                .into_iter()
                .filter_map(|r| match r {
                    etcd::TxnOpResponse::Get(g) => Some(g.kvs().iter().map(key_value).collect()),
                    _ => None,
                })
                .collect();
            Ok(TxnAnswer { succeeded, gets })
        })
    }

    fn range(&self, key: String, prefix: bool) -> KvFuture<'_, Vec<KeyValue>> {
        Box::pin(async move {
            let options = prefix.then(|| GetOptions::new().with_prefix());
            let answer = self
                .client
                .kv_client()
                .get(key, options)
                .await
                .map_err(unavailable)?;
            Ok(answer.kvs().iter().map(key_value).collect())
        })
    }

    fn grant(&self, ttl: i64) -> KvFuture<'_, (i64, i64)> {
        Box::pin(async move {
            let granted = self
                .client
                .lease_client()
                .grant(ttl, None)
                .await
                .map_err(unavailable)?;
            Ok((granted.id(), granted.ttl()))
        })
    }

    fn keep_alive(&self, lease: i64) -> KvFuture<'_, bool> {
        Box::pin(async move {
            // etcd-client opens a keep-alive stream, sends one request and waits for its
            // answer; the stream ends when the keeper is dropped here.
            match self.client.lease_client().keep_alive(lease).await {
                Ok(_) => Ok(true),
                // The client's own answer when etcd reports a TTL of 0: the lease is gone.
                Err(etcd::Error::LeaseKeepAliveError(_)) => Ok(false),
                Err(e) => Err(unavailable(e)),
            }
        })
    }

    fn time_to_live(&self, lease: i64) -> KvFuture<'_, LeaseStatus> {
        Box::pin(async move {
            let status = self
                .client
                .lease_client()
                .time_to_live(lease, Some(LeaseTimeToLiveOptions::new().with_keys()))
                .await
                .map_err(unavailable)?;
            Ok(LeaseStatus {
                ttl: status.ttl(),
                granted_ttl: status.granted_ttl(),
                keys: status.keys().iter().map(|k| text(k)).collect(),
            })
        })
    }

    fn revoke(&self, lease: i64) -> KvFuture<'_, ()> {
        Box::pin(async move {
            self.client
                .lease_client()
                .revoke(lease)
                .await
                .map_err(unavailable)?;
            Ok(())
        })
    }

    fn watch(&self, key: String, from: i64) -> KvFuture<'_, KeyChange> {
        Box::pin(async move {
            let mut from = from;
            'watch: loop {
                let mut stream = self
                    .client
                    .watch_client()
                    .watch(
                        key.clone(),
                        Some(WatchOptions::new().with_start_revision(from)),
                    )
                    .await
                    .map_err(unavailable)?;
                while let Some(response) = stream.message().await.map_err(unavailable)? {
                    if response.canceled() {
                        // `from` was compacted away. The caller read the key at `from - 1`
                        // or later, so the compacted history holds no change it has not
                        // seen: watch from the oldest revision etcd kept. Handing back a
                        // restart instead made the caller read the key and watch from the
                        // same compacted revision again, a busy loop on etcd for as long
                        // as a leader key stays unchanged past a compaction.
                        let compacted = response.compact_revision();
                        if compacted > from {
                            from = compacted;
                            continue 'watch;
                        }
                        return Ok(KeyChange::Restart);
                    }
                    let events = response.events();
                    if events.iter().any(|e| e.event_type() == EventType::Delete) {
                        return Ok(KeyChange::Deleted);
                    }
                    if !events.is_empty() {
                        return Ok(KeyChange::Put);
                    }
                }
                return Ok(KeyChange::Restart);
            }
        })
    }

    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

fn compare(c: Compare) -> etcd::Compare {
    match c {
        Compare::Value(key, value) => etcd::Compare::value(key, CompareOp::Equal, value),
        Compare::CreateRevision(key, revision) => {
            etcd::Compare::create_revision(key, CompareOp::Equal, revision)
        }
        Compare::ModRevision(key, revision) => {
            etcd::Compare::mod_revision(key, CompareOp::Equal, revision)
        }
        Compare::Lease(key, lease) => etcd::Compare::lease(key, CompareOp::Equal, lease),
    }
}

fn ops(ops: Vec<Op>) -> Vec<TxnOp> {
    ops.into_iter()
        .map(|op| match op {
            Op::Get { key, prefix } => {
                TxnOp::get(key, prefix.then(|| GetOptions::new().with_prefix()))
            }
            Op::GetByValue {
                prefix,
                descending,
                limit,
            } => {
                let order = if descending {
                    SortOrder::Descend
                } else {
                    SortOrder::Ascend
                };
                TxnOp::get(
                    prefix,
                    Some(
                        GetOptions::new()
                            .with_prefix()
                            .with_sort(SortTarget::Value, order)
                            .with_limit(limit),
                    ),
                )
            }
            Op::Put { key, value, lease } => TxnOp::put(
                key,
                value,
                (lease != 0).then(|| PutOptions::new().with_lease(lease)),
            ),
            Op::Delete { key } => TxnOp::delete(key, None),
        })
        .collect()
}

fn key_value(kv: &etcd::KeyValue) -> KeyValue {
    KeyValue {
        key: text(kv.key()),
        value: text(kv.value()),
        lease: kv.lease(),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    }
}

/// etcd's bytes as text (snowdrift writes only text; anything else shows replaced).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// An etcd failure as the store's error kind.
fn unavailable(e: etcd::Error) -> Error {
    crate::etcd_connection::failed(e)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A watch from a compacted revision waits for the key's next change, as a watch from a
    /// kept one does; it does not hand back at once (its caller would read the key and
    /// watch from the same compacted revision again, forever).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_watch_from_a_compacted_revision_waits_for_the_next_change() {
        let url = snowdrift_testkit::urls::etcd().replace("etcd://", "http://");
        let mut client = Client::connect([url], None).await.unwrap();
        let key = format!(
            "/{}/leader",
            snowdrift_testkit::unique_name("compacted_watch")
        );
        let put = client.put(key.as_str(), "a", None).await.unwrap();
        let from = put.header().unwrap().revision() + 1;
        // Revisions past the key's, then compacted up to the last of them.
        let mut last = 0;
        for i in 0..3 {
            let other = client
                .put(format!("{key}-other-{i}"), "x", None)
                .await
                .unwrap();
            last = other.header().unwrap().revision();
        }
        client.compact(last, None).await.unwrap();
        let kv = ClientKv::new(client.clone());
        let watching = tokio::spawn({
            let key = key.clone();
            async move { kv.watch(key, from).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(
            !watching.is_finished(),
            "the watch ended without a change: {:?}",
            watching.await
        );
        client.put(key.as_str(), "b", None).await.unwrap();
        let seen = tokio::time::timeout(Duration::from_secs(5), watching)
            .await
            .expect("the watch sees the change")
            .unwrap()
            .unwrap();
        assert_eq!(seen, KeyChange::Put);
        client
            .delete(
                key.as_str(),
                Some(etcd_client::DeleteOptions::new().with_prefix()),
            )
            .await
            .unwrap();
    }
}
