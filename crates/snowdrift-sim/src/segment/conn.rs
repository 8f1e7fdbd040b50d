//! A node's connections to the simulated database, and the SQL store's claim over them:
//! [`SimSql`] is what a node's real [`SegmentBuffer`](snowdrift_store::segment::SegmentBuffer)
//! claims from, and each claim runs the SQL store's own statements
//! ([`snowdrift_store::segment::sim::claim`]) on a [`Transaction`] of its own connection.
//!
//! A connection is a TCP stream: messages arrive in the order sent, each after the
//! network's latency (and spikes), after a cut between the node and the database heals (TCP
//! retransmits); a reset loses the message and closes the connection, which both ends see
//! one trip later (the client's statement fails, the server ends the session, rolling back
//! what it had not committed). While the node's process is paused it sends nothing and
//! reads no answer. A transaction dropped before its commit (the buffer's claim timeout, a
//! killed process) closes its connection: the server rolls it back when that arrives. The
//! client itself never gives up on an answer; the buffer's claim timeout does.

use std::sync::{Arc, Mutex};

use snowdrift_store::segment::sim::{ClaimTransaction, SegmentClaims, claim};
use snowdrift_store::segment::{Claim, Tag};
use snowdrift_store::{Error, Result};
use tokio::time::Instant;

use super::db::{Owner, Update, connection_lost};
use super::world::World;
use crate::world::lock;

/// What the buffers of one process claim from: the simulated database.
#[derive(Debug, Clone)]
pub struct SimSql {
    world: Arc<World>,
    owner: Owner,
}

impl SimSql {
    /// The store of process `owner` (node, incarnation).
    pub fn new(world: Arc<World>, owner: Owner) -> Self {
        Self { world, owner }
    }
}

impl SegmentClaims for SimSql {
    fn claim(&self, tag: &str, step: Option<i64>) -> impl Future<Output = Result<Claim>> + Send {
        claim(
            Transaction::begin(self.world.clone(), self.owner),
            tag,
            step,
        )
    }
}

/// A statement, as the server receives it.
#[derive(Debug)]
enum Statement {
    Begin,
    AddStep(String, Option<i64>),
    Read(String),
    Commit,
    /// The connection closed (the transaction dropped before its commit).
    Close,
}

/// A statement's answer.
#[derive(Debug)]
enum Answer {
    Session,
    Rows(u64),
    Row(Option<Tag>),
    Committed,
}

/// One TCP connection's state.
#[derive(Debug)]
struct Wire {
    /// When the latest message to the database arrives (none overtakes it).
    to_db: Instant,
    /// When the latest answer to the client arrives.
    to_client: Instant,
    /// The connection was reset: nothing more goes through.
    reset: bool,
    /// The server's session, once `BEGIN` arrived.
    session: Option<u64>,
}

/// One claim's transaction, on a connection of its own.
#[derive(Debug)]
pub struct Transaction {
    world: Arc<World>,
    owner: Owner,
    wire: Arc<Mutex<Wire>>,
    /// `COMMIT` was sent: dropping it closes nothing more.
    finished: bool,
}

impl Transaction {
    /// Opens a connection and sends `BEGIN`.
    async fn begin(world: Arc<World>, owner: Owner) -> Result<Self> {
        let now = Instant::now();
        let mut tx = Self {
            world,
            owner,
            wire: Arc::new(Mutex::new(Wire {
                to_db: now,
                to_client: now,
                reset: false,
                session: None,
            })),
            finished: false,
        };
        match tx.send(Statement::Begin).await? {
            Answer::Session => Ok(tx),
            other => Err(unexpected(&other)),
        }
    }

    /// Sends `statement` and waits for its answer.
    async fn send(&mut self, statement: Statement) -> Result<Answer> {
        let (world, n) = (self.world.clone(), self.owner.0);
        world.awake(n).await;
        let (tx, rx) = tokio::sync::oneshot::channel();
        dispatch(
            world.clone(),
            self.owner,
            self.wire.clone(),
            statement,
            Some(tx),
        );
        let answer = rx
            .await
            .unwrap_or_else(|_| Err(connection_lost("the run ended")));
        world.awake(n).await;
        answer
    }
}

impl ClaimTransaction for Transaction {
    async fn add_step(&mut self, tag: &str, step: Option<i64>) -> Result<u64> {
        match self.send(Statement::AddStep(tag.to_string(), step)).await? {
            Answer::Rows(n) => Ok(n),
            other => Err(unexpected(&other)),
        }
    }

    async fn read_tag(&mut self, tag: &str) -> Result<Option<Tag>> {
        match self.send(Statement::Read(tag.to_string())).await? {
            Answer::Row(row) => Ok(row),
            other => Err(unexpected(&other)),
        }
    }

    async fn commit(mut self) -> Result<()> {
        self.finished = true;
        match self.send(Statement::Commit).await? {
            Answer::Committed => Ok(()),
            other => Err(unexpected(&other)),
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.finished {
            // The socket closes (the kernel sends it even for a killed process).
            dispatch(
                self.world.clone(),
                self.owner,
                self.wire.clone(),
                Statement::Close,
                None,
            );
        }
    }
}

fn unexpected(answer: &Answer) -> Error {
    Error::Unavailable(format!("the simulated database answered {answer:?} out of turn").into())
}

/// Sends `statement` over `wire` in a task of its own (so it arrives even if its sender
/// is gone, as bytes in flight do), serves it at the database, and sends the answer back
/// to `reply`.
fn dispatch(
    world: Arc<World>,
    owner: Owner,
    wire: Arc<Mutex<Wire>>,
    statement: Statement,
    reply: Option<tokio::sync::oneshot::Sender<Result<Answer>>>,
) {
    let n = owner.0;
    let arrival = {
        let mut w = lock(&wire);
        if w.reset {
            drop(w);
            if let Some(reply) = reply {
                let _ = reply.send(Err(connection_lost("the connection was reset")));
            }
            return;
        }
        match world.trip(n) {
            Some(at) => {
                let at = at.max(w.to_db);
                w.to_db = at;
                Some(at)
            }
            None => {
                w.reset = true;
                None
            }
        }
    };
    tokio::spawn(async move {
        let Some(arrival) = arrival else {
            // Lost on the way: both ends see the connection close a trip later.
            reset(&world, &wire, reply).await;
            return;
        };
        tokio::time::sleep_until(arrival).await;
        let answer = serve(&world, owner, &wire, statement).await;
        let Some(reply) = reply else { return };
        let late = world.answer_delay();
        let back = {
            let mut w = lock(&wire);
            match world.trip(n) {
                Some(at) if !w.reset => {
                    let at = (at + late).max(w.to_client);
                    w.to_client = at;
                    Some(at)
                }
                _ => {
                    w.reset = true;
                    None
                }
            }
        };
        let Some(back) = back else {
            reset(&world, &wire, Some(reply)).await;
            return;
        };
        tokio::time::sleep_until(back).await;
        let _ = reply.send(answer);
    });
}

/// A reset connection: after one trip the server ends the session (rolling back what it
/// had not committed) and the client's statement fails.
async fn reset(
    world: &World,
    wire: &Mutex<Wire>,
    reply: Option<tokio::sync::oneshot::Sender<Result<Answer>>>,
) {
    let (lo, hi) = world.scenario.latency_us;
    let trip = std::time::Duration::from_micros((lo + hi) / 2);
    tokio::time::sleep(trip).await;
    let session = lock(wire).session;
    if let Some(id) = session
        && lock(&world.db).end(id)
    {
        world.released.notify_waiters();
    }
    if let Some(reply) = reply {
        let _ = reply.send(Err(connection_lost("the connection was reset")));
    }
}

/// Serves one statement at the database, waiting for a row lock if it must.
async fn serve(
    world: &World,
    owner: Owner,
    wire: &Mutex<Wire>,
    statement: Statement,
) -> Result<Answer> {
    let session = lock(wire).session;
    let now = Instant::now();
    let id = match (&statement, session) {
        (Statement::Begin, _) => {
            // The session is the connection's, whether or not the client hears of it: the
            // connection's close or reset ends it.
            let id = lock(&world.db).begin(owner, now)?;
            lock(wire).session = Some(id);
            return Ok(Answer::Session);
        }
        (_, Some(id)) => id,
        (Statement::Close, None) => return Ok(Answer::Committed),
        (_, None) => return Err(connection_lost("no session")),
    };
    match statement {
        Statement::Begin => unreachable!("served above"),
        Statement::AddStep(tag, step) => add_step(world, id, &tag, step).await,
        Statement::Read(tag) => lock(&world.db).read(id, &tag, now).map(Answer::Row),
        Statement::Commit => {
            let committed = lock(&world.db).commit(id, now);
            world.released.notify_waiters();
            let claims = committed?;
            let mut checker = lock(&world.checker);
            for c in claims {
                checker.committed(c);
            }
            drop(checker);
            let error_after = world.scenario.commit_error;
            if error_after > 0.0 && rand::RngExt::random_bool(&mut *world.rng(), error_after) {
                lock(&world.db).count_commit_error();
                return Err(Error::Unavailable(
                    "canceling wait for synchronous replication due to statement timeout: the transaction has already committed locally, but might not have been replicated to the standby (simulated)".into(),
                ));
            }
            Ok(Answer::Committed)
        }
        Statement::Close => {
            if lock(&world.db).end(id) {
                world.released.notify_waiters();
            }
            Ok(Answer::Committed)
        }
    }
}

/// An `UPDATE` that waits for the row's lock, up to the lock-wait timeout; a wait given
/// up fails the statement and ends the transaction (PostgreSQL's `lock_timeout`).
async fn add_step(world: &World, id: u64, tag: &str, step: Option<i64>) -> Result<Answer> {
    let deadline = world.scenario.lock_wait.map(|w| Instant::now() + w);
    let mut waited = false;
    lock(&world.db).set_busy(id, true, Instant::now());
    let answer = loop {
        let released = world.released.notified();
        match lock(&world.db).add_step(id, tag, step, Instant::now()) {
            Ok(Update::Done(rows)) => break Ok(Answer::Rows(rows)),
            Err(e) => break Err(e),
            Ok(Update::Locked) => {}
        }
        if !waited {
            waited = true;
            lock(&world.db).count_lock_wait(false);
        }
        let timed_out = match deadline {
            Some(at) => tokio::time::timeout_at(at, released).await.is_err(),
            None => {
                released.await;
                false
            }
        };
        if timed_out {
            let mut db = lock(&world.db);
            db.count_lock_wait(true);
            if db.end(id) {
                drop(db);
                world.released.notify_waiters();
            }
            break Err(Error::Unavailable(
                "canceling statement due to lock timeout (simulated)".into(),
            ));
        }
    };
    lock(&world.db).set_busy(id, false, Instant::now());
    answer
}
