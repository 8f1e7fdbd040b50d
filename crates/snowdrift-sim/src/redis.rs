//! The simulated Redis: a primary and an asynchronous replica, with the semantics of Redis 7
//! that the worker registry depends on.
//!
//! - **Keys and TTLs.** A key's TTL is an absolute time in ms by the serving host's wall
//!   clock, as Redis stores it. An expired key is gone for every command from its expiry
//!   on: deleted when a command touches it (lazily) and by the active expiry cycle every
//!   [`EXPIRE_EVERY`]; each deletion is replicated as a `DEL`, as the primary does.
//! - **Commands.** `GET`, `SET` (with `NX`, `PX`), `DEL`, `EXISTS`, `PEXPIRE`, `PTTL`,
//!   `TIME`, `MGET` and `SCAN cursor MATCH pattern COUNT n` (a cursor that finds every key
//!   that exists throughout the scan, and may or may not find the others, as Redis's does).
//! - **Scripts** run in Lua 5.1 ([`crate::lua`]), atomically: nothing else runs between their
//!   commands, and time stands still for expiry while one runs (Redis 7 freezes it at the
//!   script's start).
//! - **Replication is asynchronous.** The primary acknowledges a write as soon as it has
//!   applied it; the replica applies it [`Redis::lag`] later, as effects with absolute
//!   expiry times (`SET ... PXAT`, `PEXPIREAT`: how Redis 7 propagates a script and a TTL).
//!   A failover promotes the replica: a planned one (`FAILOVER`) waits for the replica to
//!   catch up and loses nothing; a crash of the primary loses every write the replica had
//!   not applied, acknowledged or not. After a failover the new primary counts TTLs by its
//!   own host's clock.
//!
//! Not modelled: persistence across a restart of a lone primary (the registry's docs ask
//! for `appendonly yes`), eviction, other data types (every key here is a string), Redis
//! Cluster (the registry does not support it).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use snowdrift_store::worker::sim::Value;
use tokio::time::Instant;

use crate::world::WALL_START_MS;

/// How often the active expiry cycle runs (Redis's default `hz 10`).
pub const EXPIRE_EVERY: Duration = Duration::from_millis(100);

/// One stored string.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    value: Vec<u8>,
    /// When it expires, ms by the serving host's clock; `None` for no TTL.
    expires_ms: Option<u64>,
}

/// A write as the primary propagates it to its replica.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Effect {
    Set {
        key: String,
        value: Vec<u8>,
        expires_ms: Option<u64>,
    },
    ExpireAt {
        key: String,
        at_ms: u64,
    },
    Del {
        key: String,
    },
}

/// One host's data set.
#[derive(Debug, Clone, Default)]
struct Keyspace {
    keys: BTreeMap<String, Entry>,
}

impl Keyspace {
    fn apply(&mut self, effect: &Effect) {
        match effect {
            Effect::Set {
                key,
                value,
                expires_ms,
            } => {
                self.keys.insert(
                    key.clone(),
                    Entry {
                        value: value.clone(),
                        expires_ms: *expires_ms,
                    },
                );
            }
            Effect::ExpireAt { key, at_ms } => {
                if let Some(e) = self.keys.get_mut(key) {
                    e.expires_ms = Some(*at_ms);
                }
            }
            Effect::Del { key } => {
                self.keys.remove(key);
            }
        }
    }

    /// The key's entry if it exists and has not expired at `now_ms` (a read-only view: what a
    /// replica answers, which never deletes on its own).
    fn peek(&self, key: &str, now_ms: u64) -> Option<&Entry> {
        self.keys
            .get(key)
            .filter(|e| e.expires_ms.is_none_or(|at| at > now_ms))
    }
}

/// What the simulated Redis did, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedisStats {
    /// Requests answered (a script, a command or a pipeline each count once).
    pub requests: u64,
    /// Requests that wrote.
    pub writes: u64,
    /// Scripts run.
    pub scripts: u64,
    /// Keys returned by reads (`GET`, `MGET`, `SCAN`).
    pub keys_read: u64,
    /// Keys that expired (lazily or by the active cycle).
    pub expired: u64,
    /// Failovers, and the acknowledged writes they lost.
    pub failovers: u64,
    /// Writes acknowledged by a primary that its promoted replica never applied.
    pub lost_writes: u64,
}

/// A Redis primary with one replica.
#[derive(Debug)]
pub struct Redis {
    primary: Keyspace,
    replica: Keyspace,
    /// Writes the replica has not applied yet: when the primary applied them, and what.
    backlog: VecDeque<(Instant, Vec<Effect>)>,
    /// How long the replica trails the primary.
    pub lag: Duration,
    /// The wall clock of the primary's host minus true time, ms; and the replica's.
    offsets_ms: (i64, i64),
    /// No primary serves until then (a failover under way, a restart).
    down_until: Option<Instant>,
    /// When the run began (true wall time [`WALL_START_MS`]).
    t0: Instant,
    /// What it did so far.
    pub stats: RedisStats,
}

/// A command's failure, as Redis's error reply says it.
pub type CommandError = String;

impl Redis {
    /// An empty Redis in a run that began at `t0`, whose replica trails by `lag`, its hosts'
    /// clocks `offsets_ms` (primary, replica) off true time.
    pub fn new(t0: Instant, lag: Duration, offsets_ms: (i64, i64)) -> Self {
        Self {
            t0,
            primary: Keyspace::default(),
            replica: Keyspace::default(),
            backlog: VecDeque::new(),
            lag,
            offsets_ms,
            down_until: None,
            stats: RedisStats::default(),
        }
    }

    /// The primary's wall clock at `now`, ms since 1970.
    pub fn clock_ms(&self, now: Instant) -> u64 {
        self.true_ms(now).saturating_add_signed(self.offsets_ms.0)
    }

    fn true_ms(&self, now: Instant) -> u64 {
        WALL_START_MS
            + u64::try_from(now.saturating_duration_since(self.t0).as_millis()).unwrap_or(0)
    }

    /// Fails while no primary serves; counts the request.
    pub fn serve(&mut self, now: Instant) -> Result<(), CommandError> {
        if self.down_until.is_some_and(|t| now < t) {
            return Err("Connection refused: no Redis primary (simulated failover)".into());
        }
        self.stats.requests += 1;
        Ok(())
    }

    /// The replica applies what it has received by `now`.
    pub fn replicate(&mut self, now: Instant) {
        while let Some((at, _)) = self.backlog.front() {
            if *at + self.lag > now {
                break;
            }
            if let Some((_, effects)) = self.backlog.pop_front() {
                for e in &effects {
                    self.replica.apply(e);
                }
            }
        }
    }

    /// The active expiry cycle at `now`: deletes every expired key, replicating each
    /// deletion.
    pub fn expire(&mut self, now: Instant) {
        if self.down_until.is_some_and(|t| now < t) {
            return;
        }
        let now_ms = self.clock_ms(now);
        let gone: Vec<String> = self
            .primary
            .keys
            .iter()
            .filter(|(_, e)| e.expires_ms.is_some_and(|at| at <= now_ms))
            .map(|(k, _)| k.clone())
            .collect();
        if gone.is_empty() {
            return;
        }
        let mut effects = Vec::new();
        for key in gone {
            self.stats.expired += 1;
            self.primary.keys.remove(&key);
            effects.push(Effect::Del { key });
        }
        self.backlog.push_back((now, effects));
        self.replicate(now);
    }

    /// The primary fails over to its replica at `now`; no primary serves for `outage`.
    /// `planned` (the `FAILOVER` command) lets the replica catch up first; otherwise (the
    /// primary's host died) what it had not applied is lost. The old primary comes back as
    /// the new replica, resynchronised in full.
    pub fn failover(&mut self, now: Instant, outage: Duration, planned: bool) {
        if planned {
            for (_, effects) in self.backlog.drain(..) {
                for e in &effects {
                    self.replica.apply(e);
                }
            }
        } else {
            self.stats.lost_writes += self.backlog.len() as u64;
            self.backlog.clear();
        }
        self.stats.failovers += 1;
        self.primary = self.replica.clone();
        self.offsets_ms = (self.offsets_ms.1, self.offsets_ms.0);
        self.down_until = Some(self.down_until.map_or(now, |t| t.max(now)) + outage);
    }

    /// Runs one command from a client at `now`.
    pub fn command(&mut self, args: &[Vec<u8>], now: Instant) -> Result<Value, CommandError> {
        let now_ms = self.clock_ms(now);
        let mut effects = Vec::new();
        let answer = Exec {
            redis: self,
            now_ms,
            effects: &mut effects,
        }
        .call(args);
        self.commit(now, effects);
        answer
    }

    /// Runs `script` on `keys` and `args` at `now`, atomically.
    pub fn eval(
        &mut self,
        script: &str,
        keys: &[String],
        args: &[String],
        now: Instant,
    ) -> Result<Value, CommandError> {
        self.stats.scripts += 1;
        let now_ms = self.clock_ms(now);
        let mut effects = Vec::new();
        let answer = crate::lua::run(
            script,
            keys,
            args,
            &mut Exec {
                redis: self,
                now_ms,
                effects: &mut effects,
            },
        );
        // A script that failed halfway keeps the writes it made (Redis has no rollback).
        self.commit(now, effects);
        answer
    }

    fn commit(&mut self, now: Instant, effects: Vec<Effect>) {
        if !effects.is_empty() {
            self.stats.writes += 1;
            self.backlog.push_back((now, effects));
            self.replicate(now);
        }
    }

    /// Who holds `key` (its value) at `now`, by the data set that decides the next claim:
    /// the primary's, which a promoted replica becomes.
    pub fn live_value(&self, key: &str, now: Instant) -> Option<String> {
        self.primary
            .peek(key, self.clock_ms(now))
            .map(|e| String::from_utf8_lossy(&e.value).into_owned())
    }

    /// The keys starting with `prefix` that exist at `now`.
    pub fn live_keys(&self, prefix: &str, now: Instant) -> usize {
        let now_ms = self.clock_ms(now);
        self.primary
            .keys
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(k, _)| self.primary.peek(k, now_ms).is_some())
            .count()
    }

    /// The replica's view of `key` at `now` (for the tests of replication).
    pub fn replica_value(&self, key: &str, now: Instant) -> Option<String> {
        self.replica
            .peek(
                key,
                self.true_ms(now).saturating_add_signed(self.offsets_ms.1),
            )
            .map(|e| String::from_utf8_lossy(&e.value).into_owned())
    }
}

/// One command or script's access to the primary: time stands still at `now_ms`, and every
/// write is recorded for the replica.
pub struct Exec<'a> {
    redis: &'a mut Redis,
    now_ms: u64,
    effects: &'a mut Vec<Effect>,
}

fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

fn int(arg: &[u8]) -> Result<i64, CommandError> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| "ERR value is not an integer or out of range".to_string())
}

fn wrong_args(name: &str) -> CommandError {
    format!(
        "ERR wrong number of arguments for '{}' command",
        name.to_lowercase()
    )
}

impl Exec<'_> {
    /// The live entry of `key`, deleting it (and replicating the `DEL`) if it expired.
    fn live(&mut self, key: &str) -> Option<&Entry> {
        let expired = self
            .redis
            .primary
            .keys
            .get(key)
            .is_some_and(|e| e.expires_ms.is_some_and(|at| at <= self.now_ms));
        if expired {
            self.redis.primary.keys.remove(key);
            self.redis.stats.expired += 1;
            self.effects.push(Effect::Del {
                key: key.to_string(),
            });
        }
        self.redis.primary.keys.get(key)
    }

    fn write(&mut self, effect: Effect) {
        self.redis.primary.apply(&effect);
        self.effects.push(effect);
    }

    fn get(&mut self, key: &str) -> Value {
        match self.live(key) {
            Some(e) => {
                let v = Value::BulkString(e.value.clone());
                self.redis.stats.keys_read += 1;
                v
            }
            None => Value::Nil,
        }
    }

    /// Runs one command (its name first).
    pub fn call(&mut self, args: &[Vec<u8>]) -> Result<Value, CommandError> {
        let Some(name) = args.first() else {
            return Err("ERR empty command".into());
        };
        let name = text(name).to_uppercase();
        let rest = &args[1..];
        match (name.as_str(), rest) {
            ("GET", [key]) => Ok(self.get(&text(key))),
            ("MGET", keys) if !keys.is_empty() => Ok(Value::Array(
                keys.iter().map(|k| self.get(&text(k))).collect(),
            )),
            ("SET", [key, value, options @ ..]) => self.set(&text(key), value, options),
            ("DEL", keys) if !keys.is_empty() => {
                let mut n = 0;
                for k in keys {
                    let k = text(k);
                    if self.live(&k).is_some() {
                        self.write(Effect::Del { key: k });
                        n += 1;
                    }
                }
                Ok(Value::Int(n))
            }
            ("EXISTS", keys) if !keys.is_empty() => {
                let n = keys
                    .iter()
                    .filter(|k| self.live(&text(k)).is_some())
                    .count();
                Ok(Value::Int(n as i64))
            }
            ("PEXPIRE", [key, ms]) => {
                let ms = int(ms)?;
                let key = text(key);
                if self.live(&key).is_none() {
                    return Ok(Value::Int(0));
                }
                let at = i64::try_from(self.now_ms)
                    .unwrap_or(i64::MAX)
                    .saturating_add(ms);
                if at <= i64::try_from(self.now_ms).unwrap_or(i64::MAX) {
                    // A TTL in the past deletes the key (replicated as a DEL).
                    self.write(Effect::Del { key });
                } else {
                    self.write(Effect::ExpireAt {
                        key,
                        at_ms: u64::try_from(at).unwrap_or(u64::MAX),
                    });
                }
                Ok(Value::Int(1))
            }
            ("PTTL", [key]) => {
                let now = self.now_ms;
                Ok(Value::Int(match self.live(&text(key)) {
                    None => -2,
                    Some(Entry {
                        expires_ms: None, ..
                    }) => -1,
                    Some(Entry {
                        expires_ms: Some(at),
                        ..
                    }) => i64::try_from(at - now).unwrap_or(i64::MAX),
                }))
            }
            ("TIME", []) => Ok(Value::Array(vec![
                Value::BulkString((self.now_ms / 1000).to_string().into_bytes()),
                Value::BulkString(((self.now_ms % 1000) * 1000).to_string().into_bytes()),
            ])),
            ("SCAN", [cursor, options @ ..]) => self.scan(cursor, options),
            (
                "GET" | "MGET" | "SET" | "DEL" | "EXISTS" | "PEXPIRE" | "PTTL" | "TIME" | "SCAN",
                _,
            ) => Err(wrong_args(&name)),
            _ => Err(format!(
                "ERR unknown command '{name}' (the simulated Redis serves what the worker registry sends)"
            )),
        }
    }

    fn set(&mut self, key: &str, value: &[u8], options: &[Vec<u8>]) -> Result<Value, CommandError> {
        let (mut nx, mut px) = (false, None);
        let mut i = 0;
        while i < options.len() {
            match text(&options[i]).to_uppercase().as_str() {
                "NX" => nx = true,
                "PX" => {
                    let ms = options.get(i + 1).ok_or("ERR syntax error")?;
                    let ms = int(ms)?;
                    if ms <= 0 {
                        return Err("ERR invalid expire time in 'set' command".into());
                    }
                    px = Some(ms);
                    i += 1;
                }
                _ => return Err("ERR syntax error".into()),
            }
            i += 1;
        }
        if nx && self.live(key).is_some() {
            return Ok(Value::Nil);
        }
        let expires_ms = px.map(|ms| self.now_ms.saturating_add(u64::try_from(ms).unwrap_or(0)));
        self.write(Effect::Set {
            key: key.to_string(),
            value: value.to_vec(),
            expires_ms,
        });
        Ok(Value::Okay)
    }

    /// `SCAN cursor [MATCH pattern] [COUNT n]`. Keys are visited in the order of a fixed hash
    /// of their name, and the cursor is the last hash visited plus one, so a key that exists
    /// from the scan's first call to its last is returned (as Redis promises), whatever else
    /// is added or removed meanwhile.
    fn scan(&mut self, cursor: &[u8], options: &[Vec<u8>]) -> Result<Value, CommandError> {
        let cursor = u64::try_from(int(cursor)?).map_err(|_| "ERR invalid cursor".to_string())?;
        let (mut pattern, mut count) = (None, 10usize);
        let mut it = options.iter();
        while let Some(o) = it.next() {
            match text(o).to_uppercase().as_str() {
                "MATCH" => pattern = Some(text(it.next().ok_or("ERR syntax error")?)),
                "COUNT" => {
                    count = usize::try_from(int(it.next().ok_or("ERR syntax error")?)?)
                        .ok()
                        .filter(|c| *c > 0)
                        .ok_or("ERR syntax error")?;
                }
                _ => return Err("ERR syntax error".into()),
            }
        }
        let now_ms = self.now_ms;
        let mut by_hash: Vec<(u64, &String)> = self
            .redis
            .primary
            .keys
            .iter()
            .filter(|(_, e)| e.expires_ms.is_none_or(|at| at > now_ms))
            .map(|(k, _)| (slot(k), k))
            .filter(|(h, _)| *h >= cursor)
            .collect();
        by_hash.sort();
        let visited: Vec<(u64, &String)> = by_hash.into_iter().take(count).collect();
        let next = if visited.len() < count {
            0
        } else {
            visited.last().map_or(0, |(h, _)| h + 1)
        };
        let keys: Vec<Value> = visited
            .iter()
            .filter(|(_, k)| {
                pattern
                    .as_deref()
                    .is_none_or(|p| glob(p.as_bytes(), k.as_bytes()))
            })
            .map(|(_, k)| Value::BulkString(k.as_bytes().to_vec()))
            .collect();
        self.redis.stats.keys_read += keys.len() as u64;
        Ok(Value::Array(vec![
            Value::BulkString(next.to_string().into_bytes()),
            Value::Array(keys),
        ]))
    }
}

/// A key's place in the scan order: a 63-bit FNV-1a hash, at least 1 (0 ends a scan).
fn slot(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    (h >> 1).max(1)
}

/// Redis's glob match of `pattern` against `s`: `*`, `?`, `[...]` and `\` escapes.
fn glob(pattern: &[u8], s: &[u8]) -> bool {
    match pattern.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob(rest, &s[1..]),
        Some((b'\\', rest)) if !rest.is_empty() => {
            s.first() == Some(&rest[0]) && glob(&rest[1..], &s[1..])
        }
        Some((b'[', rest)) => {
            let Some(close) = rest.iter().position(|c| *c == b']') else {
                return s.first() == Some(&b'[') && glob(rest, &s[1..]);
            };
            let (set, after) = (&rest[..close], &rest[close + 1..]);
            let Some(c) = s.first() else { return false };
            let (negate, set) = match set.split_first() {
                Some((b'^', set)) => (true, set),
                _ => (false, set),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= (set[i]..=set[i + 2]).contains(c);
                    i += 3;
                } else {
                    hit |= set[i] == *c;
                    i += 1;
                }
            }
            hit != negate && glob(after, &s[1..])
        }
        Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}
