//! Worker leases on etcd: a key per worker ID under a lease, claimed by a transaction on `create_revision == 0`.

use std::collections::HashMap;
use std::time::Duration;

use etcd_client as etcd;
use etcd_client::{
    Client, Compare, CompareOp, GetOptions, KeyValue, LeaseTimeToLiveOptions, PutOptions, Txn,
    TxnOp, TxnOpResponse,
};

use super::PeerTime;
use super::claim;
use super::sql::{ttl_millis, validate_holder, validate_namespace, validate_space};
use crate::error::{Error, Result};

/// How many times a claim starts over when other nodes took every ID it saw free, and a
/// mark write when other writes of the same mark came first.
const MAX_RACES: usize = 64;

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
#[derive(Clone)]
pub struct EtcdRegistry {
    // etcd's client is a few KiB of per-service handles; shared, the registry stays small.
    client: std::sync::Arc<Client>,
    root: String,
}

impl std::fmt::Debug for EtcdRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdRegistry")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
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
            client: std::sync::Arc::new(client),
            root,
        })
    }

    fn lease_key(&self, worker_id: u64) -> String {
        format!("{}/worker/{worker_id}", self.root)
    }

    fn mark_key(&self, worker_id: u64) -> String {
        format!("{}/mark/{worker_id}", self.root)
    }

    fn time_key(&self, worker_id: u64) -> String {
        format!("{}/time/{worker_id}", self.root)
    }

    fn since_key(&self, worker_id: u64) -> String {
        format!("{}/since/{worker_id}", self.root)
    }

    fn layout_key(&self, worker_id: u64) -> String {
        format!("{}/layout/{worker_id}", self.root)
    }

    fn lease_prefix(&self) -> String {
        format!("{}/worker/", self.root)
    }

    /// The keys under `{root}/{kind}/` for each of `kinds`, read in one transaction, so
    /// all at one revision (a lease and the mark or report beside it agree).
    async fn ranges<const N: usize>(&self, kinds: [&str; N]) -> Result<[Vec<KeyValue>; N]> {
        let prefix = Some(GetOptions::new().with_prefix());
        let txn = Txn::new().and_then(
            kinds
                .iter()
                .map(|k| TxnOp::get(format!("{}/{k}/", self.root), prefix.clone()))
                .collect::<Vec<_>>(),
        );
        let answer = self
            .client
            .kv_client()
            .txn(txn)
            .await
            .map_err(unavailable)?;
        let ranges: Vec<Vec<KeyValue>> = answer
            .op_responses()
            .into_iter()
            .filter_map(|r| match r {
                TxnOpResponse::Get(g) => Some(g.kvs().to_vec()),
                _ => None,
            })
            .collect();
        ranges.try_into().map_err(|got: Vec<_>| {
            Error::Unavailable(
                format!(
                    "etcd answered a transaction of {N} ranges with {} ranges",
                    got.len()
                )
                .into(),
            )
        })
    }

    /// Grants a lease of `ttl`, rounded up to whole seconds: (its ID, the TTL etcd granted).
    async fn grant(&self, ttl: Duration) -> Result<(i64, i64)> {
        let seconds = ttl_seconds(ttl)?;
        let granted = self
            .client
            .lease_client()
            .grant(seconds, None)
            .await
            .map_err(unavailable)?;
        if granted.ttl() < seconds {
            // etcd only ever raises a TTL; a shorter one would break fencing.
            self.revoke_quietly(granted.id()).await;
            return Err(Error::Unavailable(
                format!(
                    "etcd granted a lease of {} s for a ttl of {seconds} s",
                    granted.ttl()
                )
                .into(),
            ));
        }
        Ok((granted.id(), granted.ttl()))
    }

    /// Revokes a lease nobody uses; if that fails, it expires by itself after its TTL.
    async fn revoke_quietly(&self, lease: i64) {
        let _ = self.client.lease_client().revoke(lease).await;
    }

    /// Writes the lease key of `worker_id` under `lease` unless it exists: `None` on
    /// success, else the key as it is.
    async fn create(&self, worker_id: u64, holder: &str, lease: i64) -> Result<Option<KeyValue>> {
        let key = self.lease_key(worker_id);
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([
                TxnOp::put(
                    key.clone(),
                    holder,
                    Some(PutOptions::new().with_lease(lease)),
                ),
                TxnOp::put(
                    self.since_key(worker_id),
                    now_ms().to_string(),
                    Some(PutOptions::new().with_lease(lease)),
                ),
            ])
            .or_else([TxnOp::get(key, None)]);
        let answer = self
            .client
            .kv_client()
            .txn(txn)
            .await
            .map_err(unavailable)?;
        if answer.succeeded() {
            return Ok(None);
        }
        Ok(first_kv(answer.op_responses()))
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
        let (lease, _) = self.grant(ttl).await?;
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

    /// Leases exactly `worker_id` to `holder` for `ttl`, or extends it when `holder` holds
    /// it already. [`Error::WorkerTaken`] when another live holder has it.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let (lease, _) = self.grant(ttl).await?;
        let existing = match self.create(worker_id, holder, lease).await {
            Ok(None) => return Ok(()),
            Ok(Some(kv)) => kv,
            Err(e) => {
                self.revoke_quietly(lease).await;
                return Err(e);
            }
        };
        self.revoke_quietly(lease).await;
        if existing.value() == holder.as_bytes() {
            return self.renew(worker_id, holder, ttl).await;
        }
        Err(Error::WorkerTaken {
            worker_id,
            holder: text(existing.value()),
        })
    }

    /// The lease key of `worker_id` if `holder` holds it, else [`Error::LeaseLost`].
    async fn held(&self, worker_id: u64, holder: &str) -> Result<KeyValue> {
        let answer = self
            .client
            .kv_client()
            .get(self.lease_key(worker_id), None)
            .await
            .map_err(unavailable)?;
        match answer.kvs().first() {
            Some(kv) if kv.value() == holder.as_bytes() => Ok(kv.clone()),
            Some(kv) => Err(lost(
                worker_id,
                holder,
                format!("{:?} holds it now", text(kv.value())),
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
        let lease = kv.lease();
        let mut leases = self.client.lease_client();
        match leases.keep_alive(lease).await {
            Ok(_) => {}
            // The client's own answer when etcd reports a TTL of 0: the lease is gone.
            Err(etcd::Error::LeaseKeepAliveError(_)) => {
                return Err(lost(
                    worker_id,
                    holder,
                    "the etcd lease expired before the keep-alive reached it".into(),
                ));
            }
            Err(e) => return Err(unavailable(e)),
        }
        let status = leases
            .time_to_live(lease, Some(LeaseTimeToLiveOptions::new().with_keys()))
            .await
            .map_err(unavailable)?;
        if status.ttl() <= 0 {
            return Err(lost(
                worker_id,
                holder,
                "the etcd lease expired right after the keep-alive".into(),
            ));
        }
        let key = self.lease_key(worker_id);
        if !status.keys().iter().any(|k| k.as_slice() == key.as_bytes()) {
            return Err(lost(
                worker_id,
                holder,
                "the key left the lease (deleted by hand?)".into(),
            ));
        }
        if status.granted_ttl() < seconds {
            return Err(Error::InvalidInput(format!(
                "the etcd lease on worker ID {worker_id} was granted for {} s, and a renew cannot make it longer than that ({seconds} s asked): renew with the ttl it was claimed with, or release and claim again",
                status.granted_ttl()
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
        match self.client.lease_client().revoke(kv.lease()).await {
            Ok(_) => Ok(()),
            // etcd refuses to revoke a lease that expired meanwhile: released all the same.
            Err(e) => match self.held(worker_id, holder).await {
                Err(Error::LeaseLost { .. }) => Ok(()),
                _ => Err(unavailable(e)),
            },
        }
    }

    /// The live leases, by worker ID.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        let answer = self
            .client
            .kv_client()
            .get(self.lease_prefix(), Some(GetOptions::new().with_prefix()))
            .await
            .map_err(unavailable)?;
        let mut holders: Vec<(u64, String)> = answer
            .kvs()
            .iter()
            .filter_map(|kv| Some((self.id_in(kv, "worker")?, text(kv.value()))))
            .collect();
        holders.sort();
        Ok(holders)
    }

    /// The worker ID in a key `/{namespace}/{kind}/N`; `None` for a key not written here.
    fn id_in(&self, kv: &KeyValue, kind: &str) -> Option<u64> {
        let key = std::str::from_utf8(kv.key()).ok()?;
        key.strip_prefix(&self.root)?
            .strip_prefix('/')?
            .strip_prefix(kind)?
            .strip_prefix('/')?
            .parse()
            .ok()
    }

    /// The high-water mark of `worker_id` (ms since the Unix epoch), `None` if none was
    /// ever written.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        let answer = self
            .client
            .kv_client()
            .get(self.mark_key(worker_id), None)
            .await
            .map_err(unavailable)?;
        answer
            .kvs()
            .first()
            .map(|kv| self.mark_of(worker_id, kv))
            .transpose()
    }

    fn mark_of(&self, worker_id: u64, kv: &KeyValue) -> Result<u64> {
        let value = text(kv.value());
        value.parse().map_err(|_| {
            Error::InvalidInput(format!(
                "etcd key {} holds {value:?}, not a high-water mark: it was edited by hand; set it to the last time used (ms) or delete it",
                self.mark_key(worker_id)
            ))
        })
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (a lower value leaves it as
    /// it is). [`Error::LeaseLost`] unless `holder` holds the lease: the check and the
    /// write are one transaction.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let lease_key = self.lease_key(worker_id);
        let mark_key = self.mark_key(worker_id);
        let mut kv = self.client.kv_client();
        for _ in 0..MAX_RACES {
            let current = kv.get(mark_key.clone(), None).await.map_err(unavailable)?;
            let (current, revision) = match current.kvs().first() {
                Some(m) => (Some(self.mark_of(worker_id, m)?), m.mod_revision()),
                None => (None, 0),
            };
            let raise = current.is_none_or(|m| m < mark_ms);
            let write: Vec<TxnOp> = if raise {
                vec![TxnOp::put(mark_key.clone(), mark_ms.to_string(), None)]
            } else {
                Vec::new()
            };
            let txn = Txn::new()
                .when([
                    Compare::value(lease_key.clone(), CompareOp::Equal, holder),
                    // A missing key's mod revision compares as 0.
                    Compare::mod_revision(mark_key.clone(), CompareOp::Equal, revision),
                ])
                .and_then(write)
                .or_else([TxnOp::get(lease_key.clone(), None)]);
            let answer = kv.txn(txn).await.map_err(unavailable)?;
            if answer.succeeded() {
                return Ok(());
            }
            match first_kv(answer.op_responses()) {
                Some(l) if l.value() == holder.as_bytes() => {} // the mark moved: read again
                Some(l) => {
                    return Err(lost(
                        worker_id,
                        holder,
                        format!("{:?} holds it now", text(l.value())),
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
        let lease_key = self.lease_key(worker_id);
        let txn = Txn::new()
            .when([
                Compare::value(lease_key.clone(), CompareOp::Equal, holder),
                Compare::lease(lease_key, CompareOp::Equal, kv.lease()),
            ])
            .and_then([TxnOp::put(
                self.time_key(worker_id),
                now_ms.to_string(),
                Some(PutOptions::new().with_lease(kv.lease())),
            )]);
        let answer = self
            .client
            .kv_client()
            .txn(txn)
            .await
            .map_err(unavailable)?;
        if answer.succeeded() {
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
        let live: HashMap<u64, (i64, String)> = leases
            .iter()
            .filter_map(|kv| Some((self.id_in(kv, "worker")?, (kv.lease(), text(kv.value())))))
            .collect();
        let mut peers: Vec<PeerTime> = times
            .iter()
            .filter_map(|kv| {
                let id = self.id_in(kv, "time")?;
                let (lease, holder) = live.get(&id)?;
                // A report counts only under the lease that wrote it.
                (*lease == kv.lease()).then_some(())?;
                Some(PeerTime {
                    worker_id: id,
                    holder: holder.clone(),
                    time_ms: text(kv.value()).parse().ok()?,
                })
            })
            .collect();
        peers.sort_by_key(|p| p.worker_id);
        Ok(peers)
    }
    /// The layout recorded beside `worker_id`'s mark, if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        let answer = self
            .client
            .kv_client()
            .get(self.layout_key(worker_id), None)
            .await
            .map_err(unavailable)?;
        Ok(answer.kvs().first().map(|kv| text(kv.value())))
    }

    /// Records the layout `holder` issues under; [`Error::LeaseLost`] unless it holds the
    /// lease (the check and the write are one transaction).
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let txn = Txn::new()
            .when([Compare::value(
                self.lease_key(worker_id),
                CompareOp::Equal,
                holder,
            )])
            .and_then([TxnOp::put(self.layout_key(worker_id), layout, None)]);
        let answer = self
            .client
            .kv_client()
            .txn(txn)
            .await
            .map_err(unavailable)?;
        if answer.succeeded() {
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

    /// Every live lease with its claim time, time left (etcd's, whole seconds), mark and
    /// layout.
    ///
    /// A worker key without a lease (written by hand) is listed as
    /// [`never_expires`](super::WorkerEntry::never_expires): a server's claim skips it
    /// forever. A key under `worker/` without a worker ID is listed as unreadable, and a
    /// mark or claim time that is not a number is flagged on its entry.
    pub async fn list(&self) -> Result<super::WorkerList> {
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
        let mut out = super::WorkerList::default();
        let mut leases_client = self.client.lease_client();
        for kv in &leases {
            let Some(id) = self.id_in(kv, "worker") else {
                out.unreadable.push(super::UnreadableEntry::new(
                    text(kv.key()),
                    "a key under worker/ without a worker ID after it: snowdrift did not write it, and servers ignore it; delete it",
                ));
                continue;
            };
            let mut entry = super::WorkerEntry::new(id, text(kv.value()));
            if kv.lease() == 0 {
                entry.stuck(format!(
                    "no lease: etcd never deletes this key, a server skips this ID (its claim finds the key there), and no server can hold it (a renew needs the lease); delete the key {} to free it",
                    text(kv.key())
                ));
            } else {
                let ttl = leases_client
                    .time_to_live(kv.lease(), None)
                    .await
                    .map_err(unavailable)?;
                if ttl.ttl() <= 0 {
                    // Expired between the range read and this one: free now.
                    continue;
                }
                let (left, granted) = (ttl.ttl() as u64 * 1000, ttl.granted_ttl() as u64 * 1000);
                entry.lease_left_ms = Some(left);
                entry.lease_ttl_ms = Some(granted);
                // A holder keeps its lease above two thirds of the ttl (it renews every third).
                entry.expiring = left < granted / 2;
                if let Some(s) = since.get(&id).filter(|s| s.lease() == kv.lease()) {
                    match text(s.value()).parse() {
                        Ok(ms) => entry.since_ms = Some(ms),
                        Err(_) => entry.flag(format!(
                            "etcd key {} holds {:?}, not a claim time (ms): it was edited by hand; it goes with the lease",
                            text(s.key()),
                            text(s.value())
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
            entry.layout = layouts.get(&id).map(|l| text(l.value()));
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
                .filter_map(|kv| {
                    let id = registry.id_in(kv, "mark")?;
                    Some((id, text(kv.value()).parse().ok()))
                })
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

/// The key of the first range in a transaction's answer.
pub(crate) fn first_kv(responses: Vec<TxnOpResponse>) -> Option<KeyValue> {
    responses.into_iter().find_map(|r| match r {
        TxnOpResponse::Get(g) => g.kvs().first().cloned(),
        _ => None,
    })
}

/// This node's clock, ms since 1970 (etcd has none to ask).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lost(worker_id: u64, holder: &str, reason: String) -> Error {
    Error::LeaseLost {
        worker_id,
        holder: holder.to_string(),
        reason,
    }
}

pub(crate) fn unavailable(e: etcd::Error) -> Error {
    crate::etcd_connection::failed(e)
}
