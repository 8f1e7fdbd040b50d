//! A simulated SQL database holding Leaf's table: a row per tag (`max_id`, `step`), and
//! the semantics a segment claim relies on, as PostgreSQL and MySQL/MariaDB (InnoDB) give
//! them at READ COMMITTED:
//!
//! - a session's `UPDATE` of a row takes the row's lock, held until the transaction ends;
//!   another session's `UPDATE` of it waits for the lock (in order), up to the lock-wait
//!   timeout if there is one, then fails and ends its transaction;
//! - the `UPDATE` reads the latest committed row (it holds the lock, so no other
//!   transaction's change is pending); a `SELECT` sees the session's own change, or else
//!   the latest committed row, and takes no lock;
//! - `COMMIT` makes the session's changes durable and visible at once and releases its
//!   locks; a rollback, or the session's end for any reason (its connection closed or
//!   reset, idle in a transaction past the timeout, the server restarted) discards them;
//! - a failover ends every session: what was committed stays, nothing else does.
//!
//! Every committed claim is reported to the checker, with the process whose transaction
//! made it.

use std::collections::BTreeMap;
use std::time::Duration;

use snowdrift_store::segment::Tag;
use snowdrift_store::{Error, Result};
use tokio::time::Instant;

/// The process (node, incarnation) a session belongs to.
pub type Owner = (usize, u64);

/// One tag's committed row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    max_id: i64,
    step: i64,
}

#[derive(Debug)]
struct Session {
    owner: Owner,
    /// The row values this transaction wrote (not visible to others until it commits),
    /// with the committed value each update started from.
    pending: BTreeMap<String, (i64, i64)>,
    /// When its last statement ended (for the idle-in-transaction timeout).
    idle_since: Instant,
    /// A statement of it is running (waiting for a lock): not idle.
    busy: bool,
}

/// What the database did, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbStats {
    /// Statements served (`BEGIN`, `UPDATE`, `SELECT`, `COMMIT`).
    pub statements: u64,
    /// Transactions committed with a claim.
    pub claims: u64,
    /// Transactions rolled back or ended without a commit.
    pub rollbacks: u64,
    /// `UPDATE`s that waited for another session's row lock.
    pub lock_waits: u64,
    /// `UPDATE`s that gave up waiting (the lock-wait timeout).
    pub lock_timeouts: u64,
    /// Sessions ended for staying idle in a transaction.
    pub idle_ended: u64,
    /// Commits that took effect and answered an error all the same.
    pub commit_errors_after_commit: u64,
    /// Failovers (every session ended).
    pub failovers: u64,
}

/// A claim the database committed: `max_id` went from `from` to `to` for `owner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    /// The process whose transaction it was.
    pub owner: Owner,
    /// `max_id` before.
    pub from: i64,
    /// `max_id` after.
    pub to: i64,
}

/// What an `UPDATE` found.
#[derive(Debug)]
pub enum Update {
    /// Done: the rows it changed.
    Done(u64),
    /// Another session holds the row's lock: wait for a release and try again.
    Locked,
}

/// The database.
#[derive(Debug)]
pub struct Db {
    rows: BTreeMap<String, Row>,
    sessions: BTreeMap<u64, Session>,
    /// Row locks: tag → session.
    locks: BTreeMap<String, u64>,
    next_session: u64,
    /// Down (restarting after a failover) until then: connections are refused.
    down_until: Option<Instant>,
    idle_in_transaction: Duration,
    /// What it did.
    pub stats: DbStats,
}

/// The error a client sees when its connection is gone (reset, closed by the server, the
/// server restarting).
pub fn connection_lost(why: &str) -> Error {
    Error::Unavailable(format!("the database connection was lost: {why} (simulated)").into())
}

impl Db {
    /// A database with `tag`'s row at `max_id` 1 and `step`, as `create_tag` leaves it.
    pub fn new(tag: &str, step: i64, idle_in_transaction: Duration) -> Self {
        Self {
            rows: BTreeMap::from([(tag.to_string(), Row { max_id: 1, step })]),
            sessions: BTreeMap::new(),
            locks: BTreeMap::new(),
            next_session: 1,
            down_until: None,
            idle_in_transaction,
            stats: DbStats::default(),
        }
    }

    fn up(&self, now: Instant) -> Result<()> {
        match self.down_until {
            Some(until) if now < until => Err(connection_lost("the server is restarting")),
            _ => Ok(()),
        }
    }

    fn session(&mut self, id: u64) -> Result<&mut Session> {
        self.sessions
            .get_mut(&id)
            .ok_or_else(|| connection_lost("the server ended the session"))
    }

    /// `BEGIN` on a new connection of `owner`: the session's number.
    pub fn begin(&mut self, owner: Owner, now: Instant) -> Result<u64> {
        self.up(now)?;
        self.stats.statements += 1;
        let id = self.next_session;
        self.next_session += 1;
        self.sessions.insert(
            id,
            Session {
                owner,
                pending: BTreeMap::new(),
                idle_since: now,
                busy: false,
            },
        );
        Ok(id)
    }

    /// Marks session `id`'s statement as running (waiting for a lock) or done.
    pub fn set_busy(&mut self, id: u64, busy: bool, now: Instant) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.busy = busy;
            s.idle_since = now;
        }
    }

    /// `UPDATE ... SET max_id = max_id + step WHERE biz_tag = tag AND max_id <= MAX -
    /// step` in session `id`, `step` the given one or the row's.
    pub fn add_step(
        &mut self,
        id: u64,
        tag: &str,
        step: Option<i64>,
        now: Instant,
    ) -> Result<Update> {
        self.up(now)?;
        self.session(id)?;
        match self.locks.get(tag) {
            Some(holder) if *holder != id => return Ok(Update::Locked),
            _ => {}
        }
        self.stats.statements += 1;
        let Some(row) = self.rows.get(tag).copied() else {
            return Ok(Update::Done(0));
        };
        let session = self.session(id)?;
        let (from, current) = session
            .pending
            .get(tag)
            .copied()
            .unwrap_or((row.max_id, row.max_id));
        let step = step.unwrap_or(row.step);
        if current > i64::MAX - step {
            // No row matches the WHERE: nothing changed, nothing locked.
            return Ok(Update::Done(0));
        }
        session
            .pending
            .insert(tag.to_string(), (from, current + step));
        self.locks.insert(tag.to_string(), id);
        Ok(Update::Done(1))
    }

    /// `SELECT` of `tag`'s row in session `id`: its own change, or the committed row.
    pub fn read(&mut self, id: u64, tag: &str, now: Instant) -> Result<Option<Tag>> {
        self.up(now)?;
        let session = self.session(id)?;
        let mine = session.pending.get(tag).map(|(_, to)| *to);
        session.idle_since = now;
        self.stats.statements += 1;
        Ok(self.rows.get(tag).map(|row| Tag {
            tag: tag.to_string(),
            max_id: mine.unwrap_or(row.max_id),
            step: row.step,
            description: None,
            template: None,
            period: 0,
        }))
    }

    /// `COMMIT` of session `id`: its claims, now durable.
    pub fn commit(&mut self, id: u64, now: Instant) -> Result<Vec<Committed>> {
        self.up(now)?;
        let session = self
            .sessions
            .remove(&id)
            .ok_or_else(|| connection_lost("the server ended the session"))?;
        self.stats.statements += 1;
        self.release(id);
        let mut claims = Vec::new();
        for (tag, (from, to)) in session.pending {
            if let Some(row) = self.rows.get_mut(&tag) {
                row.max_id = to;
                claims.push(Committed {
                    owner: session.owner,
                    from,
                    to,
                });
            }
        }
        self.stats.claims += claims.len() as u64;
        Ok(claims)
    }

    /// Counts a commit that took effect and answers an error.
    pub fn count_commit_error(&mut self) {
        self.stats.commit_errors_after_commit += 1;
    }

    /// Ends session `id` without a commit (a rollback, its connection closed or reset, a
    /// failed statement): its changes are discarded and its locks released. Returns
    /// whether it was open.
    pub fn end(&mut self, id: u64) -> bool {
        let open = self.sessions.remove(&id).is_some();
        if open {
            self.stats.rollbacks += 1;
            self.release(id);
        }
        open
    }

    fn release(&mut self, id: u64) {
        self.locks.retain(|_, holder| *holder != id);
    }

    /// Counts a wait for a lock, or a wait given up.
    pub fn count_lock_wait(&mut self, timed_out: bool) {
        if timed_out {
            self.stats.lock_timeouts += 1;
        } else {
            self.stats.lock_waits += 1;
        }
    }

    /// Ends the sessions idle in a transaction for longer than the timeout; returns
    /// whether any lock was released.
    pub fn end_idle(&mut self, now: Instant) -> bool {
        let limit = self.idle_in_transaction;
        let idle: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| !s.busy && now.saturating_duration_since(s.idle_since) > limit)
            .map(|(id, _)| *id)
            .collect();
        for id in &idle {
            self.end(*id);
            self.stats.idle_ended += 1;
        }
        !idle.is_empty()
    }

    /// A failover: every session ends (their changes discarded), committed rows stay, and
    /// connections are refused for `down`.
    pub fn fail_over(&mut self, now: Instant, down: Duration) {
        let ids: Vec<u64> = self.sessions.keys().copied().collect();
        for id in ids {
            self.end(id);
        }
        self.down_until = Some(now + down);
        self.stats.failovers += 1;
    }

    /// `tag`'s committed `max_id`.
    pub fn max_id(&self, tag: &str) -> Option<i64> {
        self.rows.get(tag).map(|r| r.max_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session of `owner` that has added the row's step (and holds its lock).
    fn updated(db: &mut Db, owner: Owner, now: Instant) -> u64 {
        let id = db.begin(owner, now).unwrap();
        assert!(matches!(
            db.add_step(id, "t", None, now),
            Ok(Update::Done(1))
        ));
        id
    }

    fn max_id(db: &mut Db, session: u64) -> i64 {
        let now = Instant::now();
        db.read(session, "t", now).unwrap().unwrap().max_id
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_takes_the_rows_lock_until_commit_and_others_see_only_what_committed() {
        let now = Instant::now();
        let mut db = Db::new("t", 10, Duration::from_secs(5));
        let (a, b) = (
            db.begin((0, 1), now).unwrap(),
            db.begin((1, 1), now).unwrap(),
        );
        assert!(matches!(
            db.add_step(a, "t", None, now),
            Ok(Update::Done(1))
        ));
        // b reads the committed row and waits for a's lock.
        assert_eq!((max_id(&mut db, a), max_id(&mut db, b)), (11, 1));
        assert!(matches!(
            db.add_step(b, "t", Some(5), now),
            Ok(Update::Locked)
        ));
        let claims = db.commit(a, now).unwrap();
        assert_eq!(
            claims,
            [Committed {
                owner: (0, 1),
                from: 1,
                to: 11
            }]
        );
        // Released: b's update now starts from what a committed.
        assert!(matches!(
            db.add_step(b, "t", Some(5), now),
            Ok(Update::Done(1))
        ));
        assert_eq!(max_id(&mut db, b), 16);
        assert_eq!(db.max_id("t"), Some(11));
        // A session ended without a commit leaves nothing, and its statements fail.
        assert!(db.end(b));
        assert_eq!(db.max_id("t"), Some(11));
        assert!(db.commit(b, now).is_err());
        let c = db.begin((2, 1), now).unwrap();
        assert!(matches!(
            db.add_step(c, "t", None, now),
            Ok(Update::Done(1))
        ));
        assert_eq!(db.commit(c, now).unwrap()[0].from, 11);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failover_ends_every_session_and_keeps_what_committed() {
        let now = Instant::now();
        let mut db = Db::new("t", 10, Duration::from_secs(5));
        let a = updated(&mut db, (0, 1), now);
        db.commit(a, now).unwrap();
        let b = updated(&mut db, (0, 1), now);
        db.fail_over(now, Duration::from_secs(1));
        assert!(db.begin((0, 2), now).is_err(), "refused while restarting");
        assert!(db.commit(b, now + Duration::from_secs(2)).is_err());
        assert_eq!(db.max_id("t"), Some(11));
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_idle_in_a_transaction_is_ended_and_its_lock_released() {
        let now = Instant::now();
        let mut db = Db::new("t", 10, Duration::from_secs(5));
        let a = updated(&mut db, (0, 1), now);
        let b = db.begin((1, 1), now).unwrap();
        db.set_busy(b, true, now);
        assert!(!db.end_idle(now + Duration::from_secs(4)));
        assert!(db.end_idle(now + Duration::from_secs(6)));
        // b was waiting (busy), not idle: it stays, and now gets the lock.
        assert!(matches!(
            db.add_step(b, "t", None, now + Duration::from_secs(6)),
            Ok(Update::Done(1))
        ));
        assert!(db.commit(a, now).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn an_update_that_would_pass_the_largest_id_changes_nothing() {
        let now = Instant::now();
        let mut db = Db::new("t", i64::MAX, Duration::from_secs(5));
        let a = db.begin((0, 1), now).unwrap();
        assert!(matches!(
            db.add_step(a, "t", None, now),
            Ok(Update::Done(0))
        ));
        // Nothing locked: another session's smaller step goes through.
        let b = db.begin((1, 1), now).unwrap();
        assert!(matches!(
            db.add_step(b, "t", Some(1), now),
            Ok(Update::Done(1))
        ));
    }
}
