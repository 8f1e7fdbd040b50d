//! One node's connection pool to the simulated SQL database: [`SqlDb`] over the simulated
//! network, each statement a request on a TCP connection and its answer.
//!
//! - Latency and spikes as drawn for the run; a slow database answers late.
//! - A partition between the node and the database holds its messages until it ends (TCP
//!   retransmits): a statement sent before or during one runs when it gets through, even if
//!   the caller gave up on it by then (the keeper's call timeout drops only its wait).
//! - A lost message is a connection reset: a request lost on the way never runs; an answer
//!   lost on the way back leaves the statement's effect in place. Either way the caller
//!   hears nothing and waits out its own timeout (sqlx sets no statement timeout).
//! - A statement that changed rows may also answer an error after it committed (a drawn 0,
//!   1 or 5 % of them in a seed): "the connection was closed", as when the server's answer
//!   is cut off.
//! - A database restart closes every connection open before it: an answer that had not
//!   arrived when it happened is an error, its statement's effect kept; while the database
//!   is down, a statement waits for a connection as the pool does, up to its 5 s acquire
//!   timeout, then fails.
//!
//! Each kind of lost or failed answer after a statement took effect is counted as a fault.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use snowdrift_store::worker::sim::{SqlDb, SqlFuture, SqlRow, SqlValue};
use snowdrift_store::{Error, Result};
use tokio::time::Instant;

use crate::sql::{DbError, SqlDatabase};
use crate::world::{World, lock};

/// How long the pool waits for a connection while the database refuses them (the
/// registry's pool sets a 5 s acquire timeout).
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// The fault counted when an answer is lost after its statement changed rows.
pub const LOST_AFTER_EFFECT: &str = "answer lost after the statement took effect";
/// The fault counted when a statement that changed rows answers an error.
pub const ERROR_AFTER_EFFECT: &str = "error after the statement took effect";

/// Node `node`'s connection pool.
#[derive(Debug, Clone)]
pub struct SqlLink {
    world: Arc<World>,
    node: usize,
}

/// What a statement did on the database: its answer, and whether it changed anything.
type Ran<T> = (std::result::Result<T, DbError>, bool);

impl SqlLink {
    /// The pool of node `node`.
    pub fn new(world: Arc<World>, node: usize) -> Self {
        Self { world, node }
    }

    /// Sends `apply` to the database and waits for its answer.
    async fn call<T: Send + 'static>(
        &self,
        apply: impl FnOnce(&mut SqlDatabase) -> Ran<T> + Send + 'static,
    ) -> Result<T> {
        let (world, node) = (self.world.clone(), self.node);
        world.awake(node).await;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let there = world.trip();
        let back = world.trip();
        let flight = world.clone();
        tokio::spawn(async move {
            let sent = Instant::now();
            let Some(there) = there else { return };
            tokio::time::sleep(there).await;
            through(&flight, node).await;
            // The pool waits for a connection while the database is down.
            loop {
                let down_until = lock(&flight.coordinator).sql().down_until();
                if Instant::now() >= down_until {
                    break;
                }
                if down_until > sent + ACQUIRE_TIMEOUT {
                    tokio::time::sleep_until(sent + ACQUIRE_TIMEOUT).await;
                    let _ = tx.send(Err(format!(
                        "no connection to the database within {ACQUIRE_TIMEOUT:?}: it refuses connections (restarting)"
                    )));
                    return;
                }
                tokio::time::sleep_until(down_until).await;
                tokio::time::sleep(flight.trip().unwrap_or(there)).await;
            }
            let (answer, changed, opened) = {
                let mut coordinator = lock(&flight.coordinator);
                let db = coordinator.sql();
                let opened = db.restarts();
                let (answer, changed) = apply(db);
                (answer, changed, opened)
            };
            let late = flight.answer_delay();
            let Some(back) = back else {
                if changed {
                    flight.count(|c| *c.faults.entry(LOST_AFTER_EFFECT).or_default() += 1);
                }
                return;
            };
            tokio::time::sleep(late + back).await;
            through(&flight, node).await;
            let restarted = lock(&flight.coordinator).sql().restarts() != opened;
            let cut_off = changed && {
                let rate = flight.scenario.sql_error_after_commit;
                rate > 0.0 && flight.rng().random_bool(rate)
            };
            let answer = if restarted || cut_off {
                if changed {
                    flight.count(|c| *c.faults.entry(ERROR_AFTER_EFFECT).or_default() += 1);
                }
                Err(
                    "the connection was closed before the answer arrived (the statement may have taken effect)"
                        .to_string(),
                )
            } else {
                answer
            };
            let _ = tx.send(answer);
        });
        // A lost request or answer drops the sender: the caller hears nothing, and waits
        // out its own timeout as over a real network.
        let answer = match rx.await {
            Ok(answer) => answer,
            Err(_) => std::future::pending().await,
        };
        world.awake(node).await;
        answer.map_err(|e| Error::Unavailable(format!("{e} (simulated)").into()))
    }
}

/// Waits while the network between node `node` and the database is cut.
async fn through(world: &World, node: usize) {
    loop {
        let until = world.node(node).cut_until;
        if Instant::now() >= until {
            return;
        }
        tokio::time::sleep_until(until).await;
    }
}

impl SqlDb for SqlLink {
    fn create_table(&self, ddl: String) -> SqlFuture<'_, ()> {
        Box::pin(self.call(move |db| (db.execute(&ddl, &[]).map(|_| ()), false)))
    }

    fn execute(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, u64> {
        Box::pin(self.call(move |db| {
            let answer = db.execute(&sql, &binds);
            let changed = matches!(answer, Ok(n) if n > 0);
            (answer, changed)
        }))
    }

    fn insert(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, bool> {
        Box::pin(self.call(move |db| {
            let answer = db.insert(&sql, &binds);
            let changed = matches!(answer, Ok(true));
            (answer, changed)
        }))
    }

    fn fetch(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, Vec<SqlRow>> {
        Box::pin(self.call(move |db| (db.fetch(&sql, &binds), false)))
    }

    fn close(&self) -> SqlFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}
