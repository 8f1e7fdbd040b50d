//! The etcd worker registry's requests over an [`EtcdKv`]: the same keys, transactions and
//! checks as [`worker/etcd.rs`](super::super::etcd) sends to a real etcd, request for
//! request, for a simulated etcd.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::kv::{Compare, EtcdKv, KeyValue, Op, Txn};
use crate::error::{Error, Result};
use crate::worker::sql::{ttl_millis, validate_holder, validate_namespace, validate_space};
use crate::worker::{PeerTime, UnreadableEntry, WorkerEntry, WorkerList, claim};

/// How many times a claim starts over, and a mark write retries (etcd.rs's `MAX_RACES`).
const MAX_RACES: usize = 64;

/// Worker leases on an etcd reached through an [`EtcdKv`]: the key layout and requests of
/// the etcd registry (`/{namespace}/worker/N` under a lease, claimed by a
/// `create_revision == 0` transaction; `mark/N` without a lease, raised by a transaction on
/// the lease key's value and the mark's `mod_revision`; `time/N` and `since/N` under the
/// lease; `layout/N`).
#[derive(Debug, Clone)]
pub struct SimEtcdRegistry {
    kv: Arc<dyn EtcdKv>,
    root: String,
}

impl SimEtcdRegistry {
    /// The registry under `/{namespace}` of `kv`.
    pub fn new(kv: Arc<dyn EtcdKv>, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        Ok(Self {
            kv,
            root: format!("/{namespace}"),
        })
    }

    fn key(&self, kind: &str, worker_id: u64) -> String {
        format!("{}/{kind}/{worker_id}", self.root)
    }

    fn prefix(&self, kind: &str) -> String {
        format!("{}/{kind}/", self.root)
    }

    /// The keys under each kind's prefix, in one transaction (one revision).
    async fn ranges<const N: usize>(&self, kinds: [&str; N]) -> Result<[Vec<KeyValue>; N]> {
        let txn = Txn {
            then: kinds
                .iter()
                .map(|k| Op::Get {
                    key: self.prefix(k),
                    prefix: true,
                })
                .collect(),
            ..Txn::default()
        };
        let answer = self.kv.txn(txn).await?;
        answer.gets.try_into().map_err(|got: Vec<_>| {
            Error::Unavailable(
                format!(
                    "etcd answered a transaction of {N} ranges with {} ranges",
                    got.len()
                )
                .into(),
            )
        })
    }

    async fn grant(&self, ttl: Duration) -> Result<i64> {
        let seconds = ttl_seconds(ttl)?;
        let (id, granted) = self.kv.grant(seconds).await?;
        if granted < seconds {
            self.revoke_quietly(id).await;
            return Err(Error::Unavailable(
                format!("etcd granted a lease of {granted} s for a ttl of {seconds} s").into(),
            ));
        }
        Ok(id)
    }

    async fn revoke_quietly(&self, lease: i64) {
        let _ = self.kv.revoke(lease).await;
    }

    async fn create(&self, worker_id: u64, holder: &str, lease: i64) -> Result<Option<KeyValue>> {
        let key = self.key("worker", worker_id);
        let txn = Txn {
            when: vec![Compare::CreateRevision(key.clone(), 0)],
            then: vec![
                Op::Put {
                    key: key.clone(),
                    value: holder.into(),
                    lease,
                },
                Op::Put {
                    key: self.key("since", worker_id),
                    value: self.kv.now_ms().to_string(),
                    lease,
                },
            ],
            otherwise: vec![Op::Get { key, prefix: false }],
        };
        let answer = self.kv.txn(txn).await?;
        if answer.succeeded {
            return Ok(None);
        }
        Ok(first(answer.gets))
    }

    /// As the etcd registry's `claim_free`.
    pub async fn claim_free(
        &self,
        space: u64,
        holder: &str,
        ttl: Duration,
        now_ms: Option<u64>,
    ) -> Result<u64> {
        validate_space(space)?;
        validate_holder(holder)?;
        let lease = self.grant(ttl).await?;
        let claimed = claim::claim_free(
            &SimClaim {
                registry: self,
                holder,
                lease,
            },
            space,
            now_ms,
        )
        .await;
        if claimed.is_err() {
            self.revoke_quietly(lease).await;
        }
        claimed
    }

    /// As the etcd registry's `claim`.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let lease = self.grant(ttl).await?;
        let existing = match self.create(worker_id, holder, lease).await {
            Ok(None) => return Ok(()),
            Ok(Some(kv)) => kv,
            Err(e) => {
                self.revoke_quietly(lease).await;
                return Err(e);
            }
        };
        self.revoke_quietly(lease).await;
        if existing.value == holder {
            return self.renew(worker_id, holder, ttl).await;
        }
        Err(Error::WorkerTaken {
            worker_id,
            holder: existing.value,
        })
    }

    async fn held(&self, worker_id: u64, holder: &str) -> Result<KeyValue> {
        let found = self.kv.range(self.key("worker", worker_id), false).await?;
        match found.into_iter().next() {
            Some(kv) if kv.value == holder => Ok(kv),
            Some(kv) => Err(lost(
                worker_id,
                holder,
                format!("{:?} holds it now", kv.value),
            )),
            None => Err(lost(
                worker_id,
                holder,
                "no lease: it expired or was released (etcd deleted the key)".into(),
            )),
        }
    }

    /// As the etcd registry's `renew`: a keep-alive, then a check that the key is still on
    /// the lease.
    pub async fn renew(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let seconds = ttl_seconds(ttl)?;
        let kv = self.held(worker_id, holder).await?;
        if self.kv.keep_alive(kv.lease).await? <= 0 {
            return Err(lost(
                worker_id,
                holder,
                "the etcd lease expired before the keep-alive reached it".into(),
            ));
        }
        let status = self.kv.time_to_live(kv.lease).await?;
        if status.ttl <= 0 {
            return Err(lost(
                worker_id,
                holder,
                "the etcd lease expired right after the keep-alive".into(),
            ));
        }
        let key = self.key("worker", worker_id);
        if !status.keys.contains(&key) {
            return Err(lost(
                worker_id,
                holder,
                "the key left the lease (deleted by hand?)".into(),
            ));
        }
        if status.granted_ttl < seconds {
            return Err(Error::InvalidInput(format!(
                "the etcd lease on worker ID {worker_id} was granted for {} s, and a renew cannot make it longer than that ({seconds} s asked)",
                status.granted_ttl
            )));
        }
        Ok(())
    }

    /// As the etcd registry's `release`: revokes the lease.
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        validate_holder(holder)?;
        let kv = match self.held(worker_id, holder).await {
            Ok(kv) => kv,
            Err(Error::LeaseLost { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        match self.kv.revoke(kv.lease).await {
            Ok(()) => Ok(()),
            Err(e) => match self.held(worker_id, holder).await {
                Err(Error::LeaseLost { .. }) => Ok(()),
                _ => Err(e),
            },
        }
    }

    /// The live leases, by worker ID.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        let kvs = self.kv.range(self.prefix("worker"), true).await?;
        let mut holders: Vec<(u64, String)> = kvs
            .into_iter()
            .filter_map(|kv| Some((self.id_in(&kv, "worker")?, kv.value)))
            .collect();
        holders.sort();
        Ok(holders)
    }

    fn id_in(&self, kv: &KeyValue, kind: &str) -> Option<u64> {
        kv.key
            .strip_prefix(&self.root)?
            .strip_prefix('/')?
            .strip_prefix(kind)?
            .strip_prefix('/')?
            .parse()
            .ok()
    }

    /// The high-water mark of `worker_id`, if any.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        let found = self.kv.range(self.key("mark", worker_id), false).await?;
        found
            .first()
            .map(|kv| self.mark_of(worker_id, kv))
            .transpose()
    }

    fn mark_of(&self, worker_id: u64, kv: &KeyValue) -> Result<u64> {
        kv.value.parse().map_err(|_| {
            Error::InvalidInput(format!(
                "etcd key {} holds {:?}, not a high-water mark",
                self.key("mark", worker_id),
                kv.value
            ))
        })
    }

    /// As the etcd registry's `write_mark`: raised only, by a transaction on the lease
    /// key's value and the mark's `mod_revision`.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let lease_key = self.key("worker", worker_id);
        let mark_key = self.key("mark", worker_id);
        for _ in 0..MAX_RACES {
            let current = self.kv.range(mark_key.clone(), false).await?;
            let (current, revision) = match current.first() {
                Some(m) => (Some(self.mark_of(worker_id, m)?), m.mod_revision),
                None => (None, 0),
            };
            let raise = current.is_none_or(|m| m < mark_ms);
            let txn = Txn {
                when: vec![
                    Compare::Value(lease_key.clone(), holder.into()),
                    Compare::ModRevision(mark_key.clone(), revision),
                ],
                then: if raise {
                    vec![Op::Put {
                        key: mark_key.clone(),
                        value: mark_ms.to_string(),
                        lease: 0,
                    }]
                } else {
                    Vec::new()
                },
                otherwise: vec![Op::Get {
                    key: lease_key.clone(),
                    prefix: false,
                }],
            };
            let answer = self.kv.txn(txn).await?;
            if answer.succeeded {
                return Ok(());
            }
            match first(answer.gets) {
                Some(l) if l.value == holder => {}
                Some(l) => {
                    return Err(lost(
                        worker_id,
                        holder,
                        format!("{:?} holds it now", l.value),
                    ));
                }
                None => {
                    return Err(lost(
                        worker_id,
                        holder,
                        "no lease: it expired or was released (etcd deleted the key)".into(),
                    ));
                }
            }
        }
        Err(Error::Unavailable(
            format!("the mark of worker ID {worker_id} changed under each of {MAX_RACES} writes")
                .into(),
        ))
    }

    /// As the etcd registry's `publish_time`.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, now_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let kv = self.held(worker_id, holder).await?;
        let lease_key = self.key("worker", worker_id);
        let txn = Txn {
            when: vec![
                Compare::Value(lease_key.clone(), holder.into()),
                Compare::Lease(lease_key, kv.lease),
            ],
            then: vec![Op::Put {
                key: self.key("time", worker_id),
                value: now_ms.to_string(),
                lease: kv.lease,
            }],
            otherwise: Vec::new(),
        };
        if self.kv.txn(txn).await?.succeeded {
            Ok(())
        } else {
            Err(lost(
                worker_id,
                holder,
                "the lease changed while the report was written".into(),
            ))
        }
    }

    /// As the etcd registry's `peer_times`.
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        let [leases, times] = self.ranges(["worker", "time"]).await?;
        let live: HashMap<u64, (i64, &str)> = leases
            .iter()
            .filter_map(|kv| Some((self.id_in(kv, "worker")?, (kv.lease, kv.value.as_str()))))
            .collect();
        let mut peers: Vec<PeerTime> = times
            .iter()
            .filter_map(|kv| {
                let id = self.id_in(kv, "time")?;
                let (lease, holder) = live.get(&id)?;
                (*lease == kv.lease).then_some(())?;
                Some(PeerTime {
                    worker_id: id,
                    holder: holder.to_string(),
                    time_ms: kv.value.parse().ok()?,
                })
            })
            .collect();
        peers.sort_by_key(|p| p.worker_id);
        Ok(peers)
    }

    /// The layout recorded beside `worker_id`'s mark, if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        let found = self.kv.range(self.key("layout", worker_id), false).await?;
        Ok(found.into_iter().next().map(|kv| kv.value))
    }

    /// Records the layout `holder` issues under, if it holds the lease.
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let txn = Txn {
            when: vec![Compare::Value(self.key("worker", worker_id), holder.into())],
            then: vec![Op::Put {
                key: self.key("layout", worker_id),
                value: layout.into(),
                lease: 0,
            }],
            otherwise: Vec::new(),
        };
        if self.kv.txn(txn).await?.succeeded {
            return Ok(());
        }
        self.held(worker_id, holder).await?;
        Err(lost(
            worker_id,
            holder,
            "the lease changed while the layout was written".into(),
        ))
    }

    /// As the etcd registry's `list`: one range read, then a time-to-live per lease.
    pub async fn list(&self) -> Result<WorkerList> {
        let [leases, since, marks, layouts] =
            self.ranges(["worker", "since", "mark", "layout"]).await?;
        let by_id = |kvs: &[KeyValue], kind: &str| -> HashMap<u64, KeyValue> {
            kvs.iter()
                .filter_map(|kv| Some((self.id_in(kv, kind)?, kv.clone())))
                .collect()
        };
        let (since, marks, layouts) = (
            by_id(&since, "since"),
            by_id(&marks, "mark"),
            by_id(&layouts, "layout"),
        );
        let mut out = WorkerList::default();
        for kv in &leases {
            let Some(id) = self.id_in(kv, "worker") else {
                out.unreadable.push(UnreadableEntry::new(
                    kv.key.clone(),
                    "a key under worker/ without a worker ID after it",
                ));
                continue;
            };
            let mut entry = WorkerEntry::new(id, kv.value.clone());
            if kv.lease == 0 {
                entry.stuck("no lease: etcd never deletes this key");
            } else {
                let ttl = self.kv.time_to_live(kv.lease).await?;
                if ttl.ttl <= 0 {
                    continue;
                }
                let (left, granted) = (ttl.ttl as u64 * 1000, ttl.granted_ttl as u64 * 1000);
                entry.lease_left_ms = Some(left);
                entry.lease_ttl_ms = Some(granted);
                entry.expiring = left < granted / 2;
                if let Some(s) = since.get(&id).filter(|s| s.lease == kv.lease) {
                    match s.value.parse() {
                        Ok(ms) => entry.since_ms = Some(ms),
                        Err(_) => entry.flag(format!("{} is not a claim time", s.key)),
                    }
                }
            }
            if let Some(m) = marks.get(&id) {
                match self.mark_of(id, m) {
                    Ok(mark) => entry.mark = Some(mark),
                    Err(e) => entry.flag(e.to_string()),
                }
            }
            entry.layout = layouts.get(&id).map(|l| l.value.clone());
            out.entries.push(entry);
        }
        Ok(out)
    }
}

/// One [`SimEtcdRegistry::claim_free`] in progress, every try under the one lease.
struct SimClaim<'a> {
    registry: &'a SimEtcdRegistry,
    holder: &'a str,
    lease: i64,
}

impl claim::Backend for SimClaim<'_> {
    const ROUNDS: usize = MAX_RACES;
    const TRIES_PER_ROUND: usize = MAX_RACES;

    async fn survey(&self, _space: u64, marks: bool) -> Result<claim::Survey> {
        let registry = self.registry;
        if !marks {
            let holders = registry.holders().await?;
            return Ok(claim::Survey {
                held: holders.into_iter().map(|(id, _)| id).collect(),
                marks: Default::default(),
            });
        }
        let [leases, marks] = registry.ranges(["worker", "mark"]).await?;
        Ok(claim::Survey {
            held: leases
                .iter()
                .filter_map(|kv| registry.id_in(kv, "worker"))
                .collect(),
            marks: marks
                .iter()
                .filter_map(|kv| Some((registry.id_in(kv, "mark")?, kv.value.parse().ok())))
                .collect(),
        })
    }

    async fn try_claim(&self, id: u64) -> Result<claim::Claim> {
        Ok(
            match self.registry.create(id, self.holder, self.lease).await? {
                None => claim::Claim::Claimed,
                Some(_) => claim::Claim::Taken,
            },
        )
    }

    async fn live_holders(&self) -> Result<Vec<(u64, String)>> {
        self.registry.holders().await
    }

    fn place(&self) -> String {
        format!("under {}", self.registry.root)
    }
}

fn ttl_seconds(ttl: Duration) -> Result<i64> {
    Ok((ttl_millis(ttl)? + 999) / 1000)
}

fn first(gets: Vec<Vec<KeyValue>>) -> Option<KeyValue> {
    gets.into_iter().find_map(|g| g.into_iter().next())
}

fn lost(worker_id: u64, holder: &str, reason: String) -> Error {
    Error::LeaseLost {
        worker_id,
        holder: holder.to_string(),
        reason,
    }
}
