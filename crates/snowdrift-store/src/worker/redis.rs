//! Worker leases in Redis: `SET key holder NX PX ttl`, renewed and released by a compare-and-set script.

use std::sync::Arc;
use std::time::Duration;

use super::sql::{ttl_millis, validate_holder, validate_namespace, validate_space};
use super::{PeerClocks, PeerTime};
use crate::error::{Error, Result};

mod client;
pub(crate) mod conn;

use conn::{RedisConn, Value};

/// Takes a free ID in `0..space` (ARGV: prefix, space, holder, ttl in ms, and the
/// claiming node's clock in ms, or an empty string for the lowest free ID). With a clock,
/// the lowest free ID whose mark is at or before it, else the free ID whose mark passes
/// soonest (ties by ID; an unreadable mark last). Lua numbers are doubles, exact up to
/// 2^53, which bounds the space; a mark's time is its stored number modulo 2^47, taken
/// digit by digit so no step leaves that range. When every ID is held, answers `full`
/// followed by each ID and its holder, read in the same atomic step.
const CLAIM_LOWEST: &str = r"
local prefix, space, holder, ttl, now = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local function take(id)
  local key = prefix .. ':worker:' .. string.format('%d', id)
  if redis.call('SET', key, holder, 'NX', 'PX', ttl) then
    redis.call('DEL', prefix .. ':time:' .. string.format('%d', id))
    local t = redis.call('TIME')
    redis.call('SET', prefix .. ':since:' .. string.format('%d', id),
      string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000)) .. ':' .. ttl, 'PX', ttl)
    return true
  end
  return false
end
local function ready_at(id)
  local s = redis.call('GET', prefix .. ':mark:' .. string.format('%d', id))
  if not s then return 0 end
  local ms = 0
  for i = 1, #s do
    local d = string.byte(s, i) - 48
    if d < 0 or d > 9 then return nil end
    ms = (ms * 10 + d) % 140737488355328
  end
  return ms
end
local best, best_at = nil, nil
for id = 0, space - 1 do
  if not now then
    if take(id) then return {'ok', string.format('%d', id)} end
  elseif redis.call('EXISTS', prefix .. ':worker:' .. string.format('%d', id)) == 0 then
    local at = ready_at(id)
    if at and at <= now then
      take(id)
      return {'ok', string.format('%d', id)}
    end
    if best == nil or (at and (best_at == nil or at < best_at)) then
      best, best_at = id, at
    end
  end
end
if best then
  take(best)
  return {'ok', string.format('%d', best)}
end
local answer = {'full'}
for id = 0, space - 1 do
  local held = redis.call('GET', prefix .. ':worker:' .. string.format('%d', id))
  if held then
    table.insert(answer, string.format('%d', id))
    table.insert(answer, held)
  end
end
return answer
";

/// Takes one ID, or extends it when the caller holds it already (KEYS: lease, clock,
/// claim time; ARGV: holder, ttl in ms).
const CLAIM: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('DEL', KEYS[2])
  local t = redis.call('TIME')
  redis.call('SET', KEYS[3], string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000)) .. ':' .. ARGV[2], 'PX', ARGV[2])
  return {'ok'}
end
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return {'ok'}
end
return {'taken', held or ''}
";

/// Extends the lease if the caller still holds it (KEYS: lease, clock, claim time; ARGV:
/// holder, ttl).
const RENEW: &str = r"
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then return {'lost', held or ''} end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
return {'ok'}
";

/// The mistake [`RenewAnyHolder`](super::mistakes::Mistake::RenewAnyHolder) (planted by
/// the simulator only): extends the lease key whoever it names now.
const RENEW_ANY_HOLDER: &str = r"
if redis.call('PEXPIRE', KEYS[1], ARGV[2]) == 0 then return {'lost', ''} end
return {'ok'}
";

/// Drops the lease, the clock report and the claim time if the caller holds it (KEYS:
/// lease, clock, claim time; ARGV: holder).
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
end
return 1
";

/// Records the layout if the caller holds the lease (KEYS: lease, layout; ARGV: holder,
/// layout).
const WRITE_LAYOUT: &str = r"
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then return {'lost', held or ''} end
redis.call('SET', KEYS[2], ARGV[2])
return {'ok'}
";

/// Raises the mark if the caller holds the lease (KEYS: lease, mark; ARGV: holder, mark).
/// Marks are compared as decimal strings without leading zeros (longer is larger), so no
/// value is rounded through a double.
const WRITE_MARK: &str = r"
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then return {'lost', held or ''} end
local mark = redis.call('GET', KEYS[2])
if mark and not string.match(mark, '^[1-9]%d*$') and mark ~= '0' then
  return {'corrupt', mark}
end
if not mark or #mark < #ARGV[2] or (#mark == #ARGV[2] and mark < ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
return {'ok'}
";

/// Stores `time:holder` for the caller's lease, expiring with it (KEYS: lease, clock;
/// ARGV: holder, time in ms).
const PUBLISH_TIME: &str = r"
local held = redis.call('GET', KEYS[1])
if held ~= ARGV[1] then return {'lost', held or ''} end
local left = redis.call('PTTL', KEYS[1])
if left > 0 then
  redis.call('SET', KEYS[2], ARGV[2] .. ':' .. ARGV[1], 'PX', left)
else
  redis.call('SET', KEYS[2], ARGV[2] .. ':' .. ARGV[1])
end
return {'ok'}
";

/// Reserves an ID for good: the lease key without a TTL, and the layout, unless the key
/// exists (KEYS: lease, layout; ARGV: holder, layout). Answers `ok`, or `taken` and the
/// holder (a key without a TTL already `holder`'s is `ok`).
const RESERVE: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], ARGV[2])
  return {'ok'}
end
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] and redis.call('PTTL', KEYS[1]) == -1 then return {'ok'} end
return {'taken', held or ''}
";

/// Ends a reservation: raises the mark (compared as WRITE_MARK does) and drops the lease
/// and claim-time keys, only while the lease key is the holder's and has no TTL (KEYS:
/// lease, mark, claim time, clock; ARGV: holder, mark). Answers `ok`, `gone`, or
/// `corrupt` and the mark.
const UNRESERVE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('PTTL', KEYS[1]) ~= -1 then
  return {'gone'}
end
local mark = redis.call('GET', KEYS[2])
if mark and not string.match(mark, '^[1-9]%d*$') and mark ~= '0' then
  return {'corrupt', mark}
end
if not mark or #mark < #ARGV[2] or (#mark == #ARGV[2] and mark < ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
return {'ok'}
";

/// The largest node space a claim script can walk exactly (Lua numbers are doubles).
const MAX_SPACE: u64 = 1 << 53;

/// Worker leases in Redis.
///
/// Worker ID `N` is leased by the key `{prefix}:worker:N`, holding the holder's name, set
/// with `SET ... NX PX ttl`: Redis refuses the second of two racing claims, and drops the
/// key when the lease expires. Renew, release, mark and clock writes are Lua scripts that
/// compare the holder and act in one atomic step (never a `GET` then a `SET`, the race
/// that gave Yitter's Redis helper duplicate worker IDs). [`claim_free`] walks the space
/// from 0 inside one script, so nodes starting together get distinct IDs. The high-water
/// mark of `N` is the persistent key `{prefix}:mark:N`; a clock report is
/// `{prefix}:time:N` (`time:holder`), expiring with the lease, and so is `{prefix}:since:N`
/// (`claim time:ttl`, both in ms, by Redis's clock). The layout issued under up to the mark
/// is the persistent key `{prefix}:layout:N`, written only by the holder.
///
/// A lease ends `ttl` after Redis ran the command, which is after the node sent it, by
/// Redis's clock. Two limits are Redis's own: its expiry follows the server's wall clock,
/// so a forward step of that clock ends leases early (keep NTP slewing on the Redis host);
/// and replication is asynchronous, so a replica promoted after a failover may not know a
/// lease (or a mark) that the old primary acknowledged. What that means: a failover after
/// the primary's host died can give a worker ID to a second node while the first still
/// issues under it (a lost claim or renewal), or let a restart behind a lost mark issue
/// IDs again; the deterministic simulation shows both (`scripts/simulate --registry redis
/// --redis-crash-failover`). A planned failover (`FAILOVER`, which waits for the replica)
/// loses nothing. Run one primary, with `appendonly yes` and `appendfsync always` if
/// marks must survive a restart, fail over only the planned way, or use etcd, ZooKeeper or
/// SQL where that matters. The scripts name keys they compute, so Redis Cluster is not
/// supported.
///
/// [`claim_free`]: Self::claim_free
#[derive(Clone)]
pub struct RedisRegistry {
    conn: Arc<dyn RedisConn>,
    prefix: String,
}

impl std::fmt::Debug for RedisRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRegistry")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisRegistry {
    /// Connects to `redis://HOST[:PORT][/DB]`; `namespace` prefixes every key (see the
    /// type's docs). The connection reconnects by itself; each command gives up after 5 s.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let conn = crate::redis_connection::connect(url).await?;
        Ok(Self {
            conn: Arc::new(client::ClientConn::new(conn)),
            prefix: namespace.to_string(),
        })
    }

    /// The registry over `conn`, any Redis that speaks [`RedisConn`] (the deterministic
    /// simulator's); `namespace` as for [`connect`](Self::connect).
    #[cfg(feature = "sim")]
    pub fn over(conn: Arc<dyn RedisConn>, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        Ok(Self {
            conn,
            prefix: namespace.to_string(),
        })
    }

    /// Runs `script` on `keys` and `args`; its answer as `T`.
    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &'static str,
        keys: Vec<String>,
        args: &[&str],
    ) -> Result<T> {
        let args = args.iter().map(|a| a.to_string()).collect();
        answer(self.conn.eval(script, keys, args).await?)
    }

    /// One command (its name first); its answer as `T`.
    async fn query<T: redis::FromRedisValue>(&self, command: &[&str]) -> Result<T> {
        let command = command.iter().map(|a| a.to_string()).collect();
        answer(self.conn.query(command).await?)
    }

    fn lease_key(&self, worker_id: u64) -> String {
        format!("{}:worker:{worker_id}", self.prefix)
    }

    fn mark_key(&self, worker_id: u64) -> String {
        format!("{}:mark:{worker_id}", self.prefix)
    }

    fn time_key(&self, worker_id: u64) -> String {
        format!("{}:time:{worker_id}", self.prefix)
    }

    fn since_key(&self, worker_id: u64) -> String {
        format!("{}:since:{worker_id}", self.prefix)
    }

    fn layout_key(&self, worker_id: u64) -> String {
        format!("{}:layout:{worker_id}", self.prefix)
    }

    /// Runs a script on the lease, clock and claim-time keys of `worker_id`.
    async fn run3(
        &self,
        script: &'static str,
        worker_id: u64,
        args: &[&str],
    ) -> Result<Vec<String>> {
        let keys = vec![
            self.lease_key(worker_id),
            self.time_key(worker_id),
            self.since_key(worker_id),
        ];
        self.eval(script, keys, args).await
    }

    /// Runs a script on the lease and one other key; its answer is a list of strings.
    async fn run(
        &self,
        script: &'static str,
        worker_id: u64,
        other_key: String,
        args: &[&str],
    ) -> Result<Vec<String>> {
        self.eval(script, vec![self.lease_key(worker_id), other_key], args)
            .await
    }

    /// Leases the lowest worker ID in `0..space` that no live lease holds to `holder` for
    /// `ttl` (one script: find and take are one atomic step); [`Error::WorkersExhausted`]
    /// when every one is held.
    ///
    /// With `now_ms` (the claiming node's clock) it prefers a free ID whose high-water
    /// mark is at or before `now_ms`: the lowest such, else the one whose mark passes
    /// soonest. Still one script.
    pub async fn claim_free(
        &self,
        space: u64,
        holder: &str,
        ttl: Duration,
        now_ms: Option<u64>,
    ) -> Result<u64> {
        validate_space(space)?;
        validate_holder(holder)?;
        if space > MAX_SPACE {
            return Err(Error::InvalidInput(format!(
                "a Redis registry serves at most 2^53 worker IDs, not {space}"
            )));
        }
        let ttl_ms = ttl_millis(ttl)?.to_string();
        let now = now_ms.map(|n| n.to_string()).unwrap_or_default();
        let answer: Vec<String> = self
            .eval(
                CLAIM_LOWEST,
                Vec::new(),
                &[&self.prefix, &space.to_string(), holder, &ttl_ms, &now],
            )
            .await?;
        match answer.first().map(String::as_str) {
            Some("ok") => answer
                .get(1)
                .and_then(|id| id.parse().ok())
                .ok_or_else(|| self.bad_answer("claim_free", &answer)),
            Some("full") => {
                let holders = answer[1..]
                    .chunks(2)
                    .map(|pair| match pair {
                        [id, holder] => id
                            .parse()
                            .map(|id| (id, holder.clone()))
                            .map_err(|_| self.bad_answer("claim_free", &answer)),
                        _ => Err(self.bad_answer("claim_free", &answer)),
                    })
                    .collect::<Result<_>>()?;
                Err(Error::WorkersExhausted { space, holders })
            }
            _ => Err(self.bad_answer("claim_free", &answer)),
        }
    }

    /// Leases exactly `worker_id` to `holder` for `ttl`, or extends it when `holder` holds
    /// it already. [`Error::WorkerTaken`] when another live holder has it.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let ttl_ms = ttl_millis(ttl)?.to_string();
        let answer = self.run3(CLAIM, worker_id, &[holder, &ttl_ms]).await?;
        match answer.first().map(String::as_str) {
            Some("ok") => Ok(()),
            Some("taken") => Err(Error::WorkerTaken {
                worker_id,
                holder: answer.get(1).cloned().unwrap_or_default(),
            }),
            _ => Err(self.bad_answer("claim", &answer)),
        }
    }

    /// Extends `holder`'s lease on `worker_id` to `ttl` from now (Redis's clock).
    /// [`Error::LeaseLost`] when it expired or another holder has it.
    pub async fn renew(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let ttl_ms = ttl_millis(ttl)?.to_string();
        let script = if super::mistakes::planted(super::mistakes::Mistake::RenewAnyHolder) {
            RENEW_ANY_HOLDER
        } else {
            RENEW
        };
        let answer = self.run3(script, worker_id, &[holder, &ttl_ms]).await?;
        self.lost_or_ok(worker_id, holder, "renew", &answer)
    }

    /// Gives `worker_id` back at once (its mark stays). Does nothing when `holder` does not
    /// hold it.
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        validate_holder(holder)?;
        let keys = vec![
            self.lease_key(worker_id),
            self.time_key(worker_id),
            self.since_key(worker_id),
        ];
        let _: i64 = self.eval(RELEASE, keys, &[holder]).await?;
        Ok(())
    }

    /// Reserves `worker_id` for `holder` for good (see
    /// [`WorkerRegistry::reserve`](super::WorkerRegistry::reserve)): the lease key without
    /// a TTL, set only if it is missing, in one script. [`Error::WorkerTaken`] when
    /// someone else has it.
    pub async fn reserve(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let keys = vec![self.lease_key(worker_id), self.layout_key(worker_id)];
        let answer: Vec<String> = self.eval(RESERVE, keys, &[holder, layout]).await?;
        match answer.first().map(String::as_str) {
            Some("ok") => Ok(()),
            Some("taken") => Err(Error::WorkerTaken {
                worker_id,
                holder: answer.get(1).cloned().unwrap_or_default(),
            }),
            _ => Err(self.bad_answer("reserve", &answer)),
        }
    }

    /// Ends `holder`'s reservation of `worker_id`, raising its mark to `mark` in the same
    /// script; `Ok(false)` when the key is no longer that reservation.
    pub async fn unreserve(&self, worker_id: u64, holder: &str, mark: u64) -> Result<bool> {
        validate_holder(holder)?;
        let keys = vec![
            self.lease_key(worker_id),
            self.mark_key(worker_id),
            self.since_key(worker_id),
            self.time_key(worker_id),
        ];
        let answer: Vec<String> = self
            .eval(UNRESERVE, keys, &[holder, &mark.to_string()])
            .await?;
        match answer.first().map(String::as_str) {
            Some("ok") => Ok(true),
            Some("gone") => Ok(false),
            Some("corrupt") => Err(self.bad_mark(
                worker_id,
                answer.get(1).map(String::as_str).unwrap_or_default(),
            )),
            _ => Err(self.bad_answer("unreserve", &answer)),
        }
    }

    /// The live leases, by worker ID.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        let ids = self.scan_ids("worker").await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut mget = vec!["MGET".to_string()];
        mget.extend(ids.iter().map(|id| self.lease_key(*id)));
        let held: Vec<Option<String>> = answer(self.conn.query(mget).await?)?;
        // A key that expired between the scan and the read is no longer a lease.
        Ok(ids
            .into_iter()
            .zip(held)
            .filter_map(|(id, holder)| holder.map(|h| (id, h)))
            .collect())
    }

    /// The worker IDs of the keys `{prefix}:{kind}:N`, sorted. `SCAN` does not block Redis
    /// the way `KEYS` does; a key that exists throughout the scan is always found.
    async fn scan_ids(&self, kind: &str) -> Result<Vec<u64>> {
        let pattern = format!("{}:{kind}:*", self.prefix);
        let head = pattern.len() - 1;
        let mut cursor = 0u64;
        let mut ids = Vec::new();
        loop {
            let (next, keys): (u64, Vec<String>) = self
                .query(&[
                    "SCAN",
                    &cursor.to_string(),
                    "MATCH",
                    &pattern,
                    "COUNT",
                    "1000",
                ])
                .await?;
            // A key not of the form prefix:kind:N was not written here; it is no lease.
            ids.extend(
                keys.iter()
                    .filter_map(|k| k.get(head..)?.parse::<u64>().ok()),
            );
            if next == 0 {
                break;
            }
            cursor = next;
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// The high-water mark of `worker_id` (ms since the Unix epoch), `None` if none was
    /// ever written.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        let mark: Option<String> = self.query(&["GET", &self.mark_key(worker_id)]).await?;
        mark.map(|m| m.parse().map_err(|_| self.bad_mark(worker_id, &m)))
            .transpose()
    }

    /// The error for a mark key holding `m`, which is not a number.
    fn bad_mark(&self, worker_id: u64, m: &str) -> Error {
        Error::InvalidInput(format!(
            "Redis key {} holds {m:?}, not a high-water mark: it was edited by hand; set it to the last time used (ms) or delete it",
            self.mark_key(worker_id)
        ))
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (a lower value leaves it as
    /// it is). [`Error::LeaseLost`] unless `holder` holds the lease; the check and the write
    /// are one script.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let answer = self
            .run(
                WRITE_MARK,
                worker_id,
                self.mark_key(worker_id),
                &[holder, &mark_ms.to_string()],
            )
            .await?;
        if answer.first().map(String::as_str) == Some("corrupt") {
            return Err(Error::InvalidInput(format!(
                "Redis key {} holds {:?}, not a high-water mark: it was edited by hand; set it to the last time used (ms) or delete it",
                self.mark_key(worker_id),
                answer.get(1).map(String::as_str).unwrap_or_default()
            )));
        }
        self.lost_or_ok(worker_id, holder, "write_mark", &answer)
    }

    /// Records `holder`'s clock reading `now_ms` on `worker_id`. [`Error::LeaseLost`] unless
    /// `holder` holds the lease.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, now_ms: u64) -> Result<()> {
        validate_holder(holder)?;
        let answer = self
            .run(
                PUBLISH_TIME,
                worker_id,
                self.time_key(worker_id),
                &[holder, &now_ms.to_string()],
            )
            .await?;
        self.lost_or_ok(worker_id, holder, "publish_time", &answer)
    }

    /// The latest clock reading of every live holder that published one, by worker ID.
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        let ids = self.scan_ids("time").await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = Vec::new();
        for id in &ids {
            pipe.push(vec!["GET".to_string(), self.time_key(*id)]);
            pipe.push(vec!["GET".to_string(), self.lease_key(*id)]);
        }
        let answers = self
            .conn
            .pipeline(pipe)
            .await?
            .into_iter()
            .map(answer)
            .collect::<Result<Vec<Option<String>>>>()?;
        let mut peers = Vec::new();
        for (id, pair) in ids.into_iter().zip(answers.chunks(2)) {
            let [Some(report), Some(holder)] = pair else {
                continue;
            };
            // A report counts only while its writer still holds the lease.
            let Some((time, by)) = report.split_once(':') else {
                continue;
            };
            if by != holder {
                continue;
            }
            if let Ok(time_ms) = time.parse() {
                peers.push(PeerTime {
                    worker_id: id,
                    holder: holder.clone(),
                    time_ms,
                });
            }
        }
        Ok(peers)
    }

    /// The highest and lowest clock reports of the others. This reads every report
    /// ([`peer_times`](Self::peer_times)) and picks: a sorted set would read two, but its
    /// members outlive their leases, so each read would have to clear the stale ones.
    pub async fn peer_clocks(&self, holder: &str) -> Result<PeerClocks> {
        Ok(PeerClocks::among(self.peer_times().await?, holder))
    }

    /// The layout recorded beside `worker_id`'s mark, if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        self.query(&["GET", &self.layout_key(worker_id)]).await
    }

    /// Records the layout `holder` issues under; [`Error::LeaseLost`] unless it holds the
    /// lease (one script).
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let answer = self
            .run(
                WRITE_LAYOUT,
                worker_id,
                self.layout_key(worker_id),
                &[holder, layout],
            )
            .await?;
        self.lost_or_ok(worker_id, holder, "write_layout", &answer)
    }

    /// Every live lease with its claim time and ttl, time left (Redis's), mark and layout.
    ///
    /// A lease key without a TTL (set by hand, or persisted) is listed as
    /// [`never_expires`](super::WorkerEntry::never_expires): no server can take the ID. A
    /// key `{prefix}:worker:` without a worker ID after it is listed as unreadable, and a
    /// value that cannot be read (a mark that is not a number, a key of another type) is
    /// flagged on its entry.
    pub async fn list(&self) -> Result<super::WorkerList> {
        let mut out = super::WorkerList::default();
        let mut ids = Vec::new();
        for key in self.scan_keys("worker").await? {
            let head = self.lease_key(0).len() - 1;
            // Parsed as scan_ids parses it.
            match key
                .get(head..)
                .and_then(|n| std::str::from_utf8(n).ok())
                .and_then(|n| n.parse::<u64>().ok())
            {
                Some(id) => ids.push(id),
                None => out.unreadable.push(super::UnreadableEntry::new(
                    String::from_utf8_lossy(&key),
                    "a lease key without a worker ID after :worker: — snowdrift did not write it, and servers ignore it; delete it",
                )),
            }
        }
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(out);
        }
        let mut pipe = Vec::new();
        for id in &ids {
            let get = |key: String| vec!["GET".to_string(), key];
            pipe.push(get(self.lease_key(*id)));
            pipe.push(vec!["PTTL".to_string(), self.lease_key(*id)]);
            pipe.push(get(self.since_key(*id)));
            pipe.push(get(self.mark_key(*id)));
            pipe.push(get(self.layout_key(*id)));
        }
        // A key of another type fails its own command only.
        let answers = self.conn.pipeline_each(pipe).await?;
        for (id, row) in ids.into_iter().zip(answers.chunks(5)) {
            let [holder, left, since, mark, layout] = row else {
                return Err(Error::Unavailable(
                    format!(
                        "Redis answered {} of {} reads of prefix {}",
                        row.len(),
                        5,
                        self.prefix
                    )
                    .into(),
                ));
            };
            // -2: expired between the scan and the read.
            let left: i64 = match value(left) {
                Ok(Some(left)) => left,
                Ok(None) | Err(_) => -2,
            };
            if left == -2 {
                continue;
            }
            let mut entry = super::WorkerEntry::new(id, "?".into());
            match value::<Vec<u8>>(holder) {
                Ok(Some(h)) => entry.holder = String::from_utf8_lossy(&h).into_owned(),
                Ok(None) => continue,
                Err(e) => entry.flag(format!(
                    "Redis key {} cannot be read as a holder ({e}): it was written by hand; a server skips this ID while it is there",
                    self.lease_key(id)
                )),
            }
            match value::<Vec<u8>>(since) {
                Ok(None) => {}
                Ok(Some(since)) => {
                    let since = String::from_utf8_lossy(&since);
                    match since
                        .split_once(':')
                        .and_then(|(s, t)| Some((s.parse().ok()?, t.parse().ok()?)))
                    {
                        Some((s, t)) => {
                            entry.since_ms = Some(s);
                            entry.lease_ttl_ms = Some(t);
                        }
                        None => entry.flag(format!(
                            "Redis key {} holds {since:?}, not claim time:ttl (ms): it was edited by hand; it expires with the lease",
                            self.since_key(id)
                        )),
                    }
                }
                Err(e) => entry.flag(format!(
                    "Redis key {} cannot be read ({e}): it was written by hand; delete it",
                    self.since_key(id)
                )),
            }
            if left < 0 {
                entry.stuck_or_reserved(format!(
                    "the key has no TTL: Redis never drops it, and no server can take this ID (its claim finds the key there); unless a live server holds it (its next renew gives the key a TTL again), delete the key {} to free it",
                    self.lease_key(id)
                ));
            } else {
                entry.lease_left_ms = Some(left as u64);
                // A holder renews every third of its ttl: below half, it has missed renewals.
                entry.expiring = matches!(entry.lease_ttl_ms, Some(t) if (left as u64) < t / 2);
                entry.flag_long_lease(&format!(
                    "once no server uses it, delete the key {} to free it",
                    self.lease_key(id)
                ));
            }
            match value::<Vec<u8>>(mark) {
                Ok(None) => {}
                Ok(Some(m)) => {
                    let m = String::from_utf8_lossy(&m);
                    match m.parse() {
                        Ok(m) => entry.mark = Some(m),
                        Err(_) => entry.flag(self.bad_mark(id, &m).to_string()),
                    }
                }
                Err(e) => entry.flag(format!(
                    "Redis key {} cannot be read as a high-water mark ({e}): it was written by hand; set it to the last time used (ms)",
                    self.mark_key(id)
                )),
            }
            match value::<Vec<u8>>(layout) {
                Ok(layout) => {
                    entry.layout = layout.map(|l| String::from_utf8_lossy(&l).into_owned())
                }
                Err(e) => entry.flag(format!(
                    "Redis key {} cannot be read as a layout ({e}): it was written by hand; delete it",
                    self.layout_key(id)
                )),
            }
            out.entries.push(entry);
        }
        Ok(out)
    }

    /// The keys `{prefix}:{kind}:*`, as Redis holds them (a key need not be UTF-8).
    async fn scan_keys(&self, kind: &str) -> Result<Vec<Vec<u8>>> {
        let pattern = format!("{}:{kind}:*", self.prefix);
        let mut cursor = 0u64;
        let mut all = Vec::new();
        loop {
            let (next, keys): (u64, Vec<Vec<u8>>) = self
                .query(&[
                    "SCAN",
                    &cursor.to_string(),
                    "MATCH",
                    &pattern,
                    "COUNT",
                    "1000",
                ])
                .await?;
            all.extend(keys);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        all.sort_unstable();
        all.dedup();
        Ok(all)
    }

    /// `ok`, or [`Error::LeaseLost`] saying who holds the ID now.
    fn lost_or_ok(
        &self,
        worker_id: u64,
        holder: &str,
        what: &str,
        answer: &[String],
    ) -> Result<()> {
        match answer.first().map(String::as_str) {
            Some("ok") => Ok(()),
            Some("lost") => {
                let reason = match answer.get(1).map(String::as_str) {
                    None | Some("") => {
                        "no lease: it expired or was released (Redis dropped the key)".to_string()
                    }
                    Some(other) => format!("{other:?} holds it now"),
                };
                Err(Error::LeaseLost {
                    worker_id,
                    holder: holder.to_string(),
                    reason,
                })
            }
            _ => Err(self.bad_answer(what, answer)),
        }
    }

    fn bad_answer(&self, what: &str, answer: &[String]) -> Error {
        Error::Unavailable(
            format!(
                "Redis answered {what} on prefix {} with {answer:?}, which no script here returns; is another program writing these keys?",
                self.prefix
            )
            .into(),
        )
    }
}

/// One answer of a pipeline run with `ignore_errors`, as `T`: `Err` with the server's error
/// (a key of another type) or what did not parse.
fn value<T: redis::FromRedisValue>(
    answer: &std::result::Result<Value, String>,
) -> std::result::Result<Option<T>, String> {
    match answer {
        Ok(v) => redis::from_redis_value_ref::<Option<T>>(v).map_err(|e| e.to_string()),
        Err(e) => Err(e.clone()),
    }
}

/// A reply as `T`, or the error Redis answered (a script's error, a key of another type)
/// or why it is not a `T`.
fn answer<T: redis::FromRedisValue>(v: Value) -> Result<T> {
    if let Value::ServerError(e) = v {
        return Err(redis::RedisError::from(e).into());
    }
    redis::from_redis_value(v).map_err(|e| redis::RedisError::from(e).into())
}
