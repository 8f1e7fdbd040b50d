//! The simulated ZooKeeper ensemble: a tree of znodes with versions and sessions that
//! expire, with the rules of ZooKeeper 3.x that the worker registry depends on.
//!
//! Modelled as ZooKeeper does it: a session's timeout is negotiated into 2 to 20 ticks of
//! the server's `tickTime`; every request or ping the server hears from the session moves
//! its expiry to the next tick boundary past the timeout (the leader's expiry queue works in
//! whole ticks), and a session past it expires, deleting its ephemeral znodes in the same
//! step; a client that reconnects with an expired session is told so (and only then does
//! it learn of it). A create needs its parent (`NoNode`), which must not be ephemeral
//! (`NoChildrenForEphemerals`), and fails on an existing znode (`NodeExists`); a set, delete
//! or check with a version fails unless it is the znode's (`BadVersion`); a delete of a
//! znode with children fails (`NotEmpty`); a `multi` runs all its operations or none,
//! naming the first that failed; creates and deletes move the parent's `cversion`. A leader
//! change closes every client connection and serves nothing until the new leader is up,
//! which then gives every session its full timeout from then on (sessions survive when
//! their clients reconnect in time). Not modelled: followers' stale reads (the ensemble is
//! one linearizable tree, so `sync` only costs a request), watches, ACLs (no client
//! authenticates), sequential znodes and containers (the registry makes none).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use snowdrift_store::worker::sim::{Mode, MultiWriteError, Stat, WriteOp, ZkError};
use tokio::time::Instant;

use crate::coordinator::Stats;
use crate::world::WALL_START_MS;

#[derive(Debug, Clone)]
struct Znode {
    data: Vec<u8>,
    stat: Stat,
}

#[derive(Debug)]
struct Session {
    timeout: Duration,
    expires: Instant,
    ephemerals: BTreeSet<String>,
}

/// What a request to the ensemble came to, besides its own answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The connection it came on is closed (no leader, or one lost since it was opened):
    /// the client sees the connection drop.
    Closed,
    /// The session expired: the client learns so, and its session is over.
    Expired,
}

/// One request of a session, as the server runs it.
#[derive(Debug, Clone)]
pub enum Request {
    /// A ping: keeps the session alive.
    Ping,
    /// Creates a znode.
    Create(String, Vec<u8>, Mode),
    /// Reads a znode.
    GetData(String),
    /// A znode's stat, if it exists.
    Exists(String),
    /// A znode's children.
    Children(String),
    /// Sets a znode's data.
    SetData(String, Vec<u8>, Option<i32>),
    /// Deletes a znode.
    Delete(String, Option<i32>),
    /// Catches up with the leader.
    Sync,
    /// Writes atomically.
    Multi(Vec<WriteOp>),
}

/// What the server answered a request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Nothing (a ping, a create, a delete, a sync, a multi).
    Done,
    /// A znode's data and stat.
    Data(Vec<u8>, Stat),
    /// A znode's stat, if it exists.
    Stat(Option<Stat>),
    /// Children's names.
    Children(Vec<String>),
}

/// A request's outcome: its answer or ZooKeeper's error; a `multi`'s error names the
/// operation.
pub type Outcome = Result<Answer, MultiWriteError>;

/// The simulated ensemble.
#[derive(Debug)]
pub struct ZooKeeper {
    tick: Duration,
    t0: Instant,
    zxid: i64,
    nodes: BTreeMap<String, Znode>,
    sessions: BTreeMap<i64, Session>,
    next_session: i64,
    no_leader_until: Option<Instant>,
    epoch: u64,
    /// What it did so far: writes are every write request (ZooKeeper logs a failed one as
    /// an error transaction too), session creations and expiries; keep-alives are pings.
    pub stats: Stats,
}

impl ZooKeeper {
    /// An ensemble holding only `/`, whose `tickTime` is `tick`, started at `t0`.
    pub fn new(tick: Duration, t0: Instant) -> Self {
        let root = Znode {
            data: Vec::new(),
            stat: stat(0, 0, None),
        };
        Self {
            tick,
            t0,
            zxid: 0,
            nodes: BTreeMap::from([("/".to_string(), root)]),
            sessions: BTreeMap::new(),
            next_session: 0x0100_0000_0000_0000,
            no_leader_until: None,
            epoch: 0,
            stats: Stats::default(),
        }
    }

    /// The server's `tickTime`.
    pub fn tick(&self) -> Duration {
        self.tick
    }

    /// The leader's term now: a connection opened in an earlier one was closed.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    fn serving(&self, now: Instant) -> bool {
        self.no_leader_until.is_none_or(|t| now >= t)
    }

    /// The leader's expiry queue: `at` rounded up to the next whole tick.
    fn round_up(&self, at: Instant) -> Instant {
        next_tick(self.t0, self.tick, at)
    }

    fn wall_ms(&self, now: Instant) -> i64 {
        let since = now.saturating_duration_since(self.t0).as_millis();
        i64::try_from(u128::from(WALL_START_MS) + since).unwrap_or(i64::MAX)
    }

    /// A client's connect request at `now`: a new session asking for `timeout`
    /// (`session` 0) or an existing one resumed. The session's ID and negotiated timeout,
    /// the leader's term the connection belongs to, or why not.
    pub fn connect(
        &mut self,
        session: i64,
        timeout: Duration,
        now: Instant,
    ) -> Result<(i64, Duration, u64), Refused> {
        if !self.serving(now) {
            return Err(Refused::Closed);
        }
        self.stats.requests += 1;
        if session != 0 {
            return if self.touch(session, now) {
                Ok((session, self.sessions[&session].timeout, self.epoch))
            } else {
                Err(Refused::Expired)
            };
        }
        let timeout = timeout.clamp(2 * self.tick, 20 * self.tick);
        let id = self.next_session;
        self.next_session += 1;
        self.zxid += 1;
        self.stats.writes += 1;
        self.sessions.insert(
            id,
            Session {
                timeout,
                expires: self.round_up(now + timeout),
                ephemerals: BTreeSet::new(),
            },
        );
        Ok((id, timeout, self.epoch))
    }

    /// Moves a live session's expiry on from `now`; `false` when it expired.
    fn touch(&mut self, session: i64, now: Instant) -> bool {
        let Some(s) = self.sessions.get(&session) else {
            return false;
        };
        if s.expires <= now {
            return false;
        }
        let expires = self.round_up(now + s.timeout);
        if let Some(s) = self.sessions.get_mut(&session) {
            s.expires = expires;
        }
        true
    }

    /// Runs `request` of `session`, arrived at `now` on a connection of term `epoch`.
    pub fn handle(
        &mut self,
        session: i64,
        epoch: u64,
        request: Request,
        now: Instant,
    ) -> Result<Outcome, Refused> {
        if !self.serving(now) || epoch != self.epoch {
            return Err(Refused::Closed);
        }
        if !self.touch(session, now) {
            return Err(Refused::Expired);
        }
        self.stats.requests += 1;
        let failed = |e: ZkError| MultiWriteError::RequestFailed { source: e };
        Ok(match request {
            Request::Ping => {
                self.stats.requests -= 1;
                self.stats.keep_alives += 1;
                Ok(Answer::Done)
            }
            Request::Sync => Ok(Answer::Done),
            Request::GetData(path) => match self.nodes.get(&path) {
                Some(n) => {
                    self.stats.keys_read += 1;
                    Ok(Answer::Data(n.data.clone(), n.stat))
                }
                None => Err(failed(ZkError::NoNode)),
            },
            Request::Exists(path) => Ok(Answer::Stat(self.nodes.get(&path).map(|n| n.stat))),
            Request::Children(path) => match self.nodes.get(&path) {
                Some(_) => {
                    let names = self.children(&path);
                    self.stats.keys_read += names.len() as u64;
                    Ok(Answer::Children(names))
                }
                None => Err(failed(ZkError::NoNode)),
            },
            Request::Create(path, data, mode) => self
                .write(session, now, vec![WriteOp::Create { path, data, mode }])
                .map_err(|e| failed(e.1)),
            Request::SetData(path, data, version) => {
                let op = WriteOp::SetData {
                    path: path.clone(),
                    data,
                    version,
                };
                match self.write(session, now, vec![op]) {
                    Ok(_) => Ok(Answer::Stat(self.nodes.get(&path).map(|n| n.stat))),
                    Err((_, e)) => Err(failed(e)),
                }
            }
            Request::Delete(path, version) => self
                .write(session, now, vec![WriteOp::Delete { path, version }])
                .map_err(|e| failed(e.1)),
            Request::Multi(ops) => self
                .write(session, now, ops)
                .map_err(|(index, source)| MultiWriteError::OperationFailed { index, source }),
        })
    }

    fn children(&self, path: &str) -> Vec<String> {
        let prefix = format!("{path}/");
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| {
                let name = &k[prefix.len()..];
                (!name.contains('/')).then(|| name.to_string())
            })
            .collect()
    }

    /// One write transaction of `session`: every operation, or none and the index and
    /// error of the first that failed.
    fn write(
        &mut self,
        session: i64,
        now: Instant,
        ops: Vec<WriteOp>,
    ) -> Result<Answer, (usize, ZkError)> {
        self.zxid += 1;
        self.stats.writes += 1;
        let mut tx = Tx {
            nodes: &self.nodes,
            changes: BTreeMap::new(),
            zxid: self.zxid,
            now_ms: self.wall_ms(now),
            owner: session,
        };
        for (i, op) in ops.into_iter().enumerate() {
            tx.apply(op).map_err(|e| (i, e))?;
        }
        let changes = tx.changes;
        self.commit(changes);
        Ok(Answer::Done)
    }

    fn commit(&mut self, changes: BTreeMap<String, Option<Znode>>) {
        for (path, change) in changes {
            if let Some(old) = self.nodes.get(&path)
                && old.stat.ephemeral_owner != 0
                && change.is_none()
                && let Some(s) = self.sessions.get_mut(&old.stat.ephemeral_owner)
            {
                s.ephemerals.remove(&path);
            }
            match change {
                Some(node) => {
                    if node.stat.ephemeral_owner != 0
                        && let Some(s) = self.sessions.get_mut(&node.stat.ephemeral_owner)
                    {
                        s.ephemerals.insert(path.clone());
                    }
                    self.nodes.insert(path, node);
                }
                None => {
                    self.nodes.remove(&path);
                }
            }
        }
    }

    /// Expires the sessions whose time ran out by `now` (the leader's session tracker),
    /// deleting their ephemeral znodes.
    pub fn expire(&mut self, now: Instant) {
        if !self.serving(now) {
            return;
        }
        let gone: Vec<i64> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.expires <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in gone {
            self.stats.expired += 1;
            self.stats.writes += 1;
            self.close(id, now);
        }
    }

    /// Ends a session, deleting its ephemeral znodes in one transaction.
    fn close(&mut self, id: i64, now: Instant) {
        let Some(session) = self.sessions.remove(&id) else {
            return;
        };
        self.zxid += 1;
        let mut tx = Tx {
            nodes: &self.nodes,
            changes: BTreeMap::new(),
            zxid: self.zxid,
            now_ms: self.wall_ms(now),
            owner: id,
        };
        for path in session.ephemerals {
            // Only this session's own znodes are in the set, and they have no children.
            let _ = tx.apply(WriteOp::Delete {
                path,
                version: None,
            });
        }
        let changes = tx.changes;
        self.commit(changes);
    }

    /// The leader is lost at `now` and a new one serves after `outage`: every connection is
    /// closed, and the new leader gives each session its timeout from then on.
    pub fn elect(&mut self, now: Instant, outage: Duration) {
        let elected = now + outage;
        self.no_leader_until = Some(elected);
        self.epoch += 1;
        let (t0, tick) = (self.t0, self.tick);
        for s in self.sessions.values_mut() {
            s.expires = s.expires.max(next_tick(t0, tick, elected + s.timeout));
        }
    }

    /// The holder named in worker ID lease znode `path`, if it is an ephemeral znode whose
    /// session is alive at `now` by the server's view.
    pub fn live_owner_data(&self, path: &str, now: Instant) -> Option<&[u8]> {
        let node = self.nodes.get(path)?;
        let session = self.sessions.get(&node.stat.ephemeral_owner)?;
        (session.expires > now).then_some(node.data.as_slice())
    }

    /// How many children `path` has.
    pub fn count_children(&self, path: &str) -> usize {
        self.children(path).len()
    }
}

/// A write transaction in progress: the znodes it changed over the tree as it was.
struct Tx<'a> {
    nodes: &'a BTreeMap<String, Znode>,
    changes: BTreeMap<String, Option<Znode>>,
    zxid: i64,
    now_ms: i64,
    owner: i64,
}

impl Tx<'_> {
    fn get(&self, path: &str) -> Option<&Znode> {
        match self.changes.get(path) {
            Some(change) => change.as_ref(),
            None => self.nodes.get(path),
        }
    }

    fn found(&self, path: &str) -> Result<Znode, ZkError> {
        self.get(path).cloned().ok_or(ZkError::NoNode)
    }

    fn apply(&mut self, op: WriteOp) -> Result<(), ZkError> {
        match op {
            WriteOp::Check { path, version } => {
                if self.found(&path)?.stat.version != version {
                    return Err(ZkError::BadVersion);
                }
            }
            WriteOp::Create { path, data, mode } => {
                let parent_path = parent(&path).ok_or(ZkError::NodeExists)?;
                let mut parent = self.found(parent_path)?;
                if parent.stat.ephemeral_owner != 0 {
                    return Err(ZkError::NoChildrenForEphemerals);
                }
                if self.get(&path).is_some() {
                    return Err(ZkError::NodeExists);
                }
                parent.stat.cversion += 1;
                parent.stat.num_children += 1;
                parent.stat.pzxid = self.zxid;
                self.changes.insert(parent_path.to_string(), Some(parent));
                let owner = (mode == Mode::Ephemeral).then_some(self.owner);
                let mut stat = stat(self.zxid, self.now_ms, owner);
                stat.data_length = i32::try_from(data.len()).unwrap_or(i32::MAX);
                self.changes.insert(path, Some(Znode { data, stat }));
            }
            WriteOp::SetData {
                path,
                data,
                version,
            } => {
                let mut node = self.found(&path)?;
                if version.is_some_and(|v| v != node.stat.version) {
                    return Err(ZkError::BadVersion);
                }
                node.stat.version += 1;
                node.stat.mzxid = self.zxid;
                node.stat.mtime = self.now_ms;
                node.stat.data_length = i32::try_from(data.len()).unwrap_or(i32::MAX);
                node.data = data;
                self.changes.insert(path, Some(node));
            }
            WriteOp::Delete { path, version } => {
                let node = self.found(&path)?;
                if version.is_some_and(|v| v != node.stat.version) {
                    return Err(ZkError::BadVersion);
                }
                if node.stat.num_children > 0 {
                    return Err(ZkError::NotEmpty);
                }
                let parent_path =
                    parent(&path).ok_or(ZkError::BadArguments(&"can not delete root node"))?;
                let mut parent = self.found(parent_path)?;
                parent.stat.cversion += 1;
                parent.stat.num_children -= 1;
                parent.stat.pzxid = self.zxid;
                self.changes.insert(parent_path.to_string(), Some(parent));
                self.changes.insert(path, None);
            }
        }
        Ok(())
    }
}

/// The first whole `tick` since `t0` past `at` (ZooKeeper's `roundToNextInterval`).
fn next_tick(t0: Instant, tick: Duration, at: Instant) -> Instant {
    let tick = tick.as_micros().max(1);
    let ticks = at.saturating_duration_since(t0).as_micros() / tick + 1;
    t0 + Duration::from_micros(u64::try_from(ticks * tick).unwrap_or(u64::MAX))
}

/// The parent of an absolute path; `None` for `/`.
fn parent(path: &str) -> Option<&str> {
    match path.rfind('/')? {
        0 if path.len() > 1 => Some("/"),
        0 => None,
        i => Some(&path[..i]),
    }
}

fn stat(zxid: i64, now_ms: i64, owner: Option<i64>) -> Stat {
    Stat {
        czxid: zxid,
        mzxid: zxid,
        pzxid: zxid,
        ctime: now_ms,
        mtime: now_ms,
        version: 0,
        cversion: 0,
        aversion: 0,
        ephemeral_owner: owner.unwrap_or(0),
        data_length: 0,
        num_children: 0,
    }
}
