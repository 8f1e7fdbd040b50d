//! Worker leases on etcd: a key per worker ID under a lease, claimed by a transaction on `create_revision == 0`.
//!
//! The registry speaks to etcd through [`EtcdKv`] (`kv.rs`): `etcd-client` for a real etcd
//! (`client.rs`), or the deterministic simulator's etcd (cargo feature `sim`), so the
//! simulation runs these very requests.

mod client;
pub(crate) mod kv;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use client::ClientKv;
use futures_util::future::try_join_all;
use kv::{Compare, EtcdKv, KeyValue, LeaseStatus, Op, Txn};

use super::claim;
use super::sql::{ttl_millis, validate_holder, validate_namespace, validate_space};
use super::{PeerClocks, PeerTime, UnreadableEntry, WorkerEntry, WorkerList};
use crate::error::{Error, Result};

/// How many times a claim starts over when other nodes took every ID it saw free, and a
/// mark write when other writes of the same mark came first.
const MAX_RACES: usize = 64;

/// How many leases' time left [`EtcdRegistry::list`] asks etcd for at once.
const LIST_IN_FLIGHT: usize = 64;

/// Worker leases on etcd (v3 API).
///
/// Worker ID `N` is leased by the key `/{namespace}/worker/N`, holding the holder's name,
/// attached to an etcd lease of `ttl` (whole seconds, rounded up). A claim is a transaction
/// that writes the key only if it does not exist (`create_revision == 0`), so two nodes
/// never both win one ID; when the lease expires, etcd deletes the key and the ID is free.
/// A renew is a lease keep-alive (etcd answers with the remaining TTL; 0 means the lease
/// is gone) followed by a check that the key is still attached to it. The high-water mark
/// of `N` is `/{namespace}/mark/N`, a key without a lease (it outlives every lease),
/// written by a transaction that checks that the lease key still names the holder and
/// that the mark did not change since it was read; the mark only goes up. A clock report is
/// `/{namespace}/time/N`, attached to the same lease, and so is `/{namespace}/since/N`, the
/// claiming node's clock when it claimed (written with the claim). The layout issued under
/// up to the mark is `/{namespace}/layout/N`, without a lease, written only by the holder.
///
/// etcd counts a lease's TTL from when its leader handled the keep-alive (after the node
/// sent it), on its monotonic clock, and a new leader extends every lease rather than
/// shortening it. Its TTL is whole seconds with a minimum of about 1.5 election timeouts
/// (2 s with etcd's defaults): a shorter `ttl` is rounded up to that, so the lease lasts
/// longer than asked, which is safe for fencing but makes a crashed node's ID free later.
#[derive(Debug, Clone)]
pub struct EtcdRegistry {
    kv: Arc<dyn EtcdKv>,
    root: String,
}

impl EtcdRegistry {
    /// Connects to `url` and checks that etcd answers: `etcd://HOST:PORT[,HOST:PORT...]`
    /// (or `http://`), `https://...?ca=FILE&cert=FILE&key=FILE` for TLS, with
    /// `USER:PASSWORD@` before the hosts for etcd's RBAC (the user needs readwrite on
    /// `/{namespace}/`). `namespace` roots every key (see the type's docs). Each request
    /// gives up after 5 s.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let root = format!("/{namespace}");
        let client = crate::etcd_connection::Target::parse(url)?
            .connect(&format!("{root}/"))
            .await?;
        Ok(Self {
            kv: Arc::new(client::ClientKv::new(client)),
            root,
        })
    }

    /// The registry under `/{namespace}` of any [`EtcdKv`]: the simulator's etcd.
    #[cfg(feature = "sim")]
    pub fn over(kv: Arc<dyn EtcdKv>, namespace: &str) -> Result<Self> {
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

    /// The keys under `{root}/{kind}/` for each of `kinds`, read in one transaction, so
    /// all at one revision (a lease and the mark or report beside it agree).
    async fn ranges<const N: usize>(&self, kinds: [&str; N]) -> Result<[Vec<KeyValue>; N]> {
        self.reads(kinds.map(|k| Op::Get {
            key: self.prefix(k),
            prefix: true,
        }))
        .await
    }

    /// Runs the reads `ops` in one transaction (one revision): what each read.
    async fn reads<const N: usize>(&self, ops: [Op; N]) -> Result<[Vec<KeyValue>; N]> {
        let txn = Txn {
            then: ops.into(),
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

    /// Grants a lease of `ttl`, rounded up to whole seconds: its ID.
    async fn grant(&self, ttl: Duration) -> Result<i64> {
        let seconds = ttl_seconds(ttl)?;
        let (id, granted) = self.kv.grant(seconds).await?;
        if granted < seconds {
            // etcd only ever raises a TTL; a shorter one would break fencing.
            self.revoke_quietly(id).await;
            return Err(Error::Unavailable(
                format!("etcd granted a lease of {granted} s for a ttl of {seconds} s").into(),
            ));
        }
        Ok(id)
    }

    /// Revokes a lease nobody uses; if that fails, it expires by itself after its TTL.
    async fn revoke_quietly(&self, lease: i64) {
        let _ = self.kv.revoke(lease).await;
    }

    /// The writes that make `holder` the holder of `worker_id` under `lease`: the lease key
    /// and the time it was taken, both bound to the lease.
    fn held_under(&self, worker_id: u64, holder: &str, lease: i64) -> Vec<Op> {
        vec![
            Op::Put {
                key: self.key("worker", worker_id),
                value: holder.into(),
                lease,
            },
            Op::Put {
                key: self.key("since", worker_id),
                value: self.kv.now_ms().to_string(),
                lease,
            },
        ]
    }

    /// Writes the lease key of `worker_id` under `lease` unless it exists: `None` on
    /// success, else the key as it is.
    async fn create(&self, worker_id: u64, holder: &str, lease: i64) -> Result<Option<KeyValue>> {
        let key = self.key("worker", worker_id);
        let txn = Txn {
            when: vec![Compare::CreateRevision(key.clone(), 0)],
            then: self.held_under(worker_id, holder, lease),
            otherwise: vec![Op::Get { key, prefix: false }],
        };
        let answer = self.kv.txn(txn).await?;
        if answer.succeeded {
            return Ok(None);
        }
        Ok(first(answer.gets))
    }

    /// Leases the lowest worker ID in `0..space` that no live lease holds to `holder` for
    /// `ttl`; [`Error::WorkersExhausted`] when every one is held.
    ///
    /// The held IDs are read first, then the free ones are claimed from the lowest, each
    /// with a `create_revision == 0` transaction: an ID another node took in between is
    /// skipped, so nodes starting at the same instant all get distinct IDs.
    ///
    /// With `now_ms` (the claiming node's clock) it prefers a free ID whose high-water
    /// mark is at or before `now_ms`: the lowest such, else the one whose mark passes
    /// soonest. Leases and marks are read in one transaction.
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
            &EtcdClaim {
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

    /// Leases exactly `worker_id` to `holder` for `ttl`, under a lease granted for this
    /// call, also when `holder` holds it already. [`Error::WorkerTaken`] when another live
    /// holder has it.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let lease = self.grant(ttl).await?;
        let claimed = self.claim_under(worker_id, holder, lease).await;
        if claimed.is_err() {
            self.revoke_quietly(lease).await;
        }
        claimed
    }

    /// [`claim`](Self::claim) under `lease`, granted for it.
    ///
    /// A key that names `holder` already is an earlier attempt's whose answer never came
    /// back (a timeout, a lost answer). That attempt's lease cannot be trusted: the revoke
    /// of its error path, or of a call dropped at its timeout, may still be on its way and
    /// delete the key whenever it arrives, while this node issues under it (simulation seed
    /// 4 on 10 nodes: `ISSUED WITHOUT THE LEASE`). So the key moves onto this call's lease,
    /// in a transaction on its `mod_revision`, and the old lease is left to expire or be
    /// revoked with nothing of it.
    async fn claim_under(&self, worker_id: u64, holder: &str, lease: i64) -> Result<()> {
        // The key can change between the two transactions (expire, be revoked, be taken):
        // a few rounds settle it, each either creating, taking over or finding another.
        for _ in 0..3 {
            let existing = match self.create(worker_id, holder, lease).await? {
                None => return Ok(()),
                Some(kv) => kv,
            };
            if existing.value != holder {
                return Err(Error::WorkerTaken {
                    worker_id,
                    holder: existing.value,
                });
            }
            if self.rebind(worker_id, holder, &existing, lease).await? {
                return Ok(());
            }
        }
        Err(lost(
            worker_id,
            holder,
            "its lease key changed at every attempt to claim it again".into(),
        ))
    }

    /// Moves `holder`'s lease key of `worker_id`, as `existing` read it, onto `lease`:
    /// false when the key changed since.
    async fn rebind(
        &self,
        worker_id: u64,
        holder: &str,
        existing: &KeyValue,
        lease: i64,
    ) -> Result<bool> {
        let key = self.key("worker", worker_id);
        let txn = Txn {
            when: vec![Compare::ModRevision(key, existing.mod_revision)],
            then: self.held_under(worker_id, holder, lease),
            otherwise: vec![],
        };
        Ok(self.kv.txn(txn).await?.succeeded)
    }

    /// The lease key of `worker_id` if `holder` holds it, else [`Error::LeaseLost`].
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

    /// Extends `holder`'s lease on `worker_id` by a keep-alive: it runs `ttl` from when
    /// etcd handled it. [`Error::LeaseLost`] when the lease expired or the key is another
    /// holder's; [`Error::InvalidInput`] when `ttl` is longer than the lease was granted
    /// for (claim again with the longer ttl).
    pub async fn renew(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let seconds = ttl_seconds(ttl)?;
        let kv = self.held(worker_id, holder).await?;
        if !self.kv.keep_alive(kv.lease).await? {
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
                "the etcd lease on worker ID {worker_id} was granted for {} s, and a renew cannot make it longer than that ({seconds} s asked): renew with the ttl it was claimed with, or release and claim again",
                status.granted_ttl
            )));
        }
        Ok(())
    }

    /// Gives `worker_id` back at once by revoking its lease (its mark stays). Does nothing
    /// when `holder` does not hold it.
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        validate_holder(holder)?;
        let kv = match self.held(worker_id, holder).await {
            Ok(kv) => kv,
            Err(Error::LeaseLost { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        match self.kv.revoke(kv.lease).await {
            Ok(()) => Ok(()),
            // etcd refuses to revoke a lease that expired meanwhile: released all the same.
            Err(e) => match self.held(worker_id, holder).await {
                Err(Error::LeaseLost { .. }) => Ok(()),
                _ => Err(e),
            },
        }
    }

    /// Reserves `worker_id` for `holder` for good: its worker key without a lease (etcd
    /// never deletes it, and no server's claim, which needs the key missing, takes it),
    /// written with `layout` in one transaction only if the key is missing.
    /// [`Error::WorkerTaken`] when someone else has the key; a no-op when `holder`'s
    /// reservation is there already.
    pub async fn reserve(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let key = self.key("worker", worker_id);
        let txn = Txn {
            when: vec![Compare::CreateRevision(key.clone(), 0)],
            then: vec![
                Op::Put {
                    key: key.clone(),
                    value: holder.into(),
                    lease: 0,
                },
                Op::Put {
                    key: self.key("since", worker_id),
                    value: self.kv.now_ms().to_string(),
                    lease: 0,
                },
                Op::Put {
                    key: self.key("layout", worker_id),
                    value: layout.into(),
                    lease: 0,
                },
            ],
            otherwise: vec![Op::Get { key, prefix: false }],
        };
        let answer = self.kv.txn(txn).await?;
        if answer.succeeded {
            return Ok(());
        }
        match first(answer.gets) {
            Some(kv) if kv.value == holder && kv.lease == 0 => Ok(()),
            Some(kv) => Err(Error::WorkerTaken {
                worker_id,
                holder: kv.value,
            }),
            // Its lease ended between the two: free again, but let the caller choose anew.
            None => Err(Error::WorkerTaken {
                worker_id,
                holder: "a server whose lease has just ended".into(),
            }),
        }
    }

    /// Ends `holder`'s reservation of `worker_id`: raises its mark to `mark` and deletes
    /// the worker key, in one transaction that holds only while the key is `holder`'s and
    /// has no lease. `Ok(false)` when it no longer is (edited by hand).
    pub async fn unreserve(&self, worker_id: u64, holder: &str, mark: u64) -> Result<bool> {
        validate_holder(holder)?;
        let lease_key = self.key("worker", worker_id);
        let mark_key = self.key("mark", worker_id);
        for _ in 0..MAX_RACES {
            let current = self.kv.range(mark_key.clone(), false).await?;
            let (current, revision) = match current.first() {
                Some(m) => (Some(self.mark_of(worker_id, m)?), m.mod_revision),
                None => (None, 0),
            };
            let mut then = vec![
                Op::Delete {
                    key: lease_key.clone(),
                },
                Op::Delete {
                    key: self.key("since", worker_id),
                },
            ];
            if current.is_none_or(|m| m < mark) {
                then.push(Op::Put {
                    key: mark_key.clone(),
                    value: mark.to_string(),
                    lease: 0,
                });
            }
            let txn = Txn {
                when: vec![
                    Compare::Value(lease_key.clone(), holder.into()),
                    Compare::Lease(lease_key.clone(), 0),
                    Compare::ModRevision(mark_key.clone(), revision),
                ],
                then,
                otherwise: vec![Op::Get {
                    key: lease_key.clone(),
                    prefix: false,
                }],
            };
            let answer = self.kv.txn(txn).await?;
            if answer.succeeded {
                return Ok(true);
            }
            match first(answer.gets) {
                Some(l) if l.value == holder && l.lease == 0 => {} // the mark moved: read again
                _ => return Ok(false),
            }
        }
        Err(Error::Unavailable(
            format!(
                "the mark of worker ID {worker_id} under {} changed under each of {MAX_RACES} writes; retry",
                self.root
            )
            .into(),
        ))
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

    /// The worker ID in a key `/{namespace}/{kind}/N`; `None` for a key not written here.
    fn id_in(&self, kv: &KeyValue, kind: &str) -> Option<u64> {
        kv.key
            .strip_prefix(&self.root)?
            .strip_prefix('/')?
            .strip_prefix(kind)?
            .strip_prefix('/')?
            .parse()
            .ok()
    }

    /// The high-water mark of `worker_id` (ms since the Unix epoch), `None` if none was
    /// ever written.
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
                "etcd key {} holds {:?}, not a high-water mark: it was edited by hand; set it to the last time used (ms) or delete it",
                self.key("mark", worker_id),
                kv.value
            ))
        })
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (a lower value leaves it as
    /// it is). [`Error::LeaseLost`] unless `holder` holds the lease: the check and the
    /// write are one transaction.
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
                    // A missing key's mod revision compares as 0.
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
                Some(l) if l.value == holder => {} // the mark moved: read again
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
            format!(
                "the mark of worker ID {worker_id} under {} changed under each of {MAX_RACES} writes; retry",
                self.root
            )
            .into(),
        ))
    }

    /// Records `holder`'s clock reading `now_ms` on `worker_id`, attached to its lease.
    /// [`Error::LeaseLost`] unless `holder` holds the lease.
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
                // 13 digits (to the year 2286), so text order is number order for
                // `peer_clocks`'s sorted reads; older versions wrote the same text.
                value: format!("{now_ms:013}"),
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

    /// The latest clock reading of every live holder that published one, by worker ID.
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        let [leases, times] = self.ranges(["worker", "time"]).await?;
        let live: HashMap<u64, (i64, &str)> = leases
            .iter()
            .filter_map(|kv| Some((self.id_in(kv, "worker")?, (kv.lease, kv.value.as_str()))))
            .collect();
        let mut peers: Vec<PeerTime> = times
            .iter()
            .filter_map(|kv| self.report(kv, &live))
            .collect();
        peers.sort_by_key(|p| p.worker_id);
        Ok(peers)
    }

    /// The highest and lowest clock reports of the live holders other than `holder`, in two
    /// small reads whatever the fleet's size: the few highest and lowest reports (etcd sorts
    /// them by value), then the worker keys of those, since a report counts only under the
    /// lease that holds its worker ID. Only when every report read on a side is this node's
    /// or stale does it read them all.
    pub async fn peer_clocks(&self, holder: &str) -> Result<PeerClocks> {
        // This node's own report and one stale one may take two places on a side.
        const TAKE: i64 = 3;
        let side = |descending| Op::GetByValue {
            prefix: self.prefix("time"),
            descending,
            limit: TAKE,
        };
        let [highest, lowest] = self.reads([side(true), side(false)]).await?;
        let mut ids: Vec<u64> = highest
            .iter()
            .chain(&lowest)
            .filter_map(|kv| self.id_in(kv, "time"))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(PeerClocks::default());
        }
        let holders = self
            .kv
            .txn(Txn {
                then: ids
                    .iter()
                    .map(|id| Op::Get {
                        key: self.key("worker", *id),
                        prefix: false,
                    })
                    .collect(),
                ..Txn::default()
            })
            .await?;
        let live: HashMap<u64, (i64, &str)> = holders
            .gets
            .iter()
            .flatten()
            .filter_map(|kv| Some((self.id_in(kv, "worker")?, (kv.lease, kv.value.as_str()))))
            .collect();
        let first_peer = |reports: &[KeyValue]| {
            reports
                .iter()
                .filter_map(|kv| self.report(kv, &live))
                .find(|p| p.holder != holder)
        };
        let clocks = PeerClocks {
            ahead: first_peer(&highest),
            behind: first_peer(&lowest),
        };
        let full = |side: &[KeyValue]| side.len() >= TAKE as usize;
        if (clocks.ahead.is_none() && full(&highest)) || (clocks.behind.is_none() && full(&lowest))
        {
            return Ok(PeerClocks::among(self.peer_times().await?, holder));
        }
        Ok(clocks)
    }

    /// The peer report `kv` (a time key) makes, if its writer's lease still holds the
    /// worker ID (`live`: worker ID to the lease and holder of its worker key).
    fn report(&self, kv: &KeyValue, live: &HashMap<u64, (i64, &str)>) -> Option<PeerTime> {
        let id = self.id_in(kv, "time")?;
        let (lease, holder) = live.get(&id)?;
        // A report counts only under the lease that wrote it.
        (*lease == kv.lease).then_some(())?;
        Some(PeerTime {
            worker_id: id,
            holder: holder.to_string(),
            time_ms: kv.value.parse().ok()?,
        })
    }

    /// The layout recorded beside `worker_id`'s mark, if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        let found = self.kv.range(self.key("layout", worker_id), false).await?;
        Ok(found.into_iter().next().map(|kv| kv.value))
    }

    /// Records the layout `holder` issues under; [`Error::LeaseLost`] unless it holds the
    /// lease (the check and the write are one transaction).
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
        // Say why, as the other writes do.
        self.held(worker_id, holder).await?;
        Err(lost(
            worker_id,
            holder,
            "the lease changed while the layout was written".into(),
        ))
    }

    /// etcd's status of the lease `kv` is attached to; `None` for a key without a lease or
    /// a worker ID (nothing to ask).
    async fn time_left(&self, kv: &KeyValue) -> Result<Option<LeaseStatus>> {
        if kv.lease == 0 || self.id_in(kv, "worker").is_none() {
            return Ok(None);
        }
        self.kv.time_to_live(kv.lease).await.map(Some)
    }

    /// Every live lease with its claim time, time left (etcd's, whole seconds), mark and
    /// layout.
    ///
    /// A worker key without a lease (written by hand) is listed as
    /// [`never_expires`](super::WorkerEntry::never_expires): a server's claim skips it
    /// forever. A key under `worker/` without a worker ID is listed as unreadable, and a
    /// mark or claim time that is not a number is flagged on its entry.
    pub async fn list(&self) -> Result<WorkerList> {
        self.list_leases(true).await
    }

    /// [`list`](Self::list) without each lease's time left, which costs a request per lease:
    /// one read whatever the fleet's size, for a starting node's layout check (which needs
    /// the holders, claim times, marks and layouts, not how long each lease has left).
    pub async fn list_brief(&self) -> Result<WorkerList> {
        self.list_leases(false).await
    }

    async fn list_leases(&self, times: bool) -> Result<WorkerList> {
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
        // A lease's time left is one request each; sent one after another they took a
        // simulated node about 1 s at 1,000 leases (1 ms apart), past the third of a 2 s
        // ttl a starting node's layout check may take, so they go LIST_IN_FLIGHT at a time.
        let mut ttls = Vec::with_capacity(leases.len());
        if times {
            for chunk in leases.chunks(LIST_IN_FLIGHT) {
                ttls.extend(try_join_all(chunk.iter().map(|kv| self.time_left(kv))).await?);
            }
        } else {
            ttls.resize(leases.len(), None);
        }
        let mut out = WorkerList::default();
        for (kv, ttl) in leases.iter().zip(ttls) {
            let Some(id) = self.id_in(kv, "worker") else {
                out.unreadable.push(UnreadableEntry::new(
                    kv.key.clone(),
                    "a key under worker/ without a worker ID after it: snowdrift did not write it, and servers ignore it; delete it",
                ));
                continue;
            };
            let mut entry = WorkerEntry::new(id, kv.value.clone());
            if kv.lease == 0 {
                entry.stuck_or_reserved(format!(
                    "no lease: etcd never deletes this key, a server skips this ID (its claim finds the key there), and no server can hold it (a renew needs the lease); delete the key {} to free it",
                    kv.key
                ));
            } else {
                if let Some(ttl) = ttl {
                    if ttl.ttl <= 0 {
                        // Expired between the range read and this one: free now.
                        continue;
                    }
                    let (left, granted) = (ttl.ttl as u64 * 1000, ttl.granted_ttl as u64 * 1000);
                    entry.lease_left_ms = Some(left);
                    entry.lease_ttl_ms = Some(granted);
                    // A holder keeps its lease above two thirds of the ttl (it renews every
                    // third).
                    entry.expiring = left < granted / 2;
                }
                if let Some(s) = since.get(&id).filter(|s| s.lease == kv.lease) {
                    match s.value.parse() {
                        Ok(ms) => entry.since_ms = Some(ms),
                        Err(_) => entry.flag(format!(
                            "etcd key {} holds {:?}, not a claim time (ms): it was edited by hand; it goes with the lease",
                            s.key, s.value
                        )),
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

/// One [`EtcdRegistry::claim_free`] in progress: every try puts its key under the one
/// lease granted for the claim.
struct EtcdClaim<'a> {
    registry: &'a EtcdRegistry,
    holder: &'a str,
    lease: i64,
}

impl claim::Backend for EtcdClaim<'_> {
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

/// A ttl in whole seconds, rounded up (etcd's unit).
pub(crate) fn ttl_seconds(ttl: Duration) -> Result<i64> {
    Ok((ttl_millis(ttl)? + 999) / 1000)
}

/// The first key of the first non-empty range a transaction's branch read.
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
