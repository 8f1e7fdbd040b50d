//! The simulated SQL database of a `--registry sql` run: a real SQLite, in this process
//! (`rusqlite`), running the SQL registry's own statements in its SQLite dialect, so what
//! a statement does (its conditions, its row changes, the primary key refusing a second
//! insert) is SQLite's own. Only the host around it is simulated: its clock, its restarts.
//!
//! The database's clock is the simulated host's: the dialect reads "now" as
//! `julianday('now')`, and this connection overrides `julianday` (SQLite lets an
//! application's function replace a built-in one) with the host's wall clock on the run's
//! simulated time, a drawn few milliseconds off true time, in SQLite's own units (whole
//! milliseconds since the Julian epoch, divided by a day), so the rounding is the real one.
//!
//! A restart (the coordinator fault that is a leader election on etcd) refuses connections
//! for its outage and closes every connection open before it; what was committed stays (every
//! statement of the registry commits on its own).

use std::time::Duration;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::Value;
use snowdrift_store::worker::sim::{SqlRow, SqlValue};
use tokio::time::Instant;

use crate::coordinator::Stats;
use crate::world::WALL_START_MS;

/// SQLite's Julian day number of the Unix epoch, in milliseconds (its `iJD` of 1970-01-01).
const UNIX_EPOCH_JD_MS: i64 = 210_866_760_000_000;

/// An error the simulated database answers, as its text.
pub type DbError = String;

/// The database and its host.
#[derive(Debug)]
pub struct SqlDatabase {
    conn: rusqlite::Connection,
    t0: Instant,
    offset_ms: i64,
    /// Connections are refused until then (a restart's outage).
    down_until: Instant,
    /// Restarts so far: a connection opened before the latest one is closed.
    restarts: u64,
    /// What it served.
    pub stats: Stats,
}

/// `v` as SQLite takes it.
fn to_sqlite(v: &SqlValue) -> Value {
    match v {
        SqlValue::Null => Value::Null,
        SqlValue::Int(i) => Value::Integer(*i),
        SqlValue::Real(r) => Value::Real(*r),
        SqlValue::Text(t) => Value::Text(t.clone()),
        SqlValue::Blob(b) => Value::Blob(b.clone()),
    }
}

fn from_sqlite(v: Value) -> SqlValue {
    match v {
        Value::Null => SqlValue::Null,
        Value::Integer(i) => SqlValue::Int(i),
        Value::Real(r) => SqlValue::Real(r),
        Value::Text(t) => SqlValue::Text(t),
        Value::Blob(b) => SqlValue::Blob(b),
    }
}

fn failed(e: rusqlite::Error) -> DbError {
    format!("the database answered an error: {e}")
}

impl SqlDatabase {
    /// A fresh, empty database whose host's wall clock is `offset_ms` off true time, in a
    /// run that began at `t0`.
    ///
    /// # Panics
    /// When SQLite cannot open an in-memory database or register the clock.
    pub fn new(t0: Instant, offset_ms: i64) -> Self {
        let conn = rusqlite::Connection::open_in_memory()
            .unwrap_or_else(|e| panic!("an in-memory SQLite: {e}"));
        conn.create_scalar_function("julianday", 1, FunctionFlags::SQLITE_UTF8, move |ctx| {
            let arg: String = ctx.get(0)?;
            if arg != "now" {
                return Err(rusqlite::Error::UserFunctionError(
                    format!("the simulated julianday knows only 'now', not {arg:?}").into(),
                ));
            }
            Ok((host_ms(t0, offset_ms) + UNIX_EPOCH_JD_MS) as f64 / 86_400_000.0)
        })
        .unwrap_or_else(|e| panic!("registering the simulated clock: {e}"));
        Self {
            conn,
            t0,
            offset_ms,
            down_until: t0,
            restarts: 0,
            stats: Stats::default(),
        }
    }

    /// The host's wall clock now, ms since 1970 (what its SQL "now" reads).
    pub fn now_ms(&self) -> i64 {
        host_ms(self.t0, self.offset_ms)
    }

    /// Restarts the database at `now`: every connection is closed, and new ones are
    /// refused for `outage`.
    pub fn restart(&mut self, now: Instant, outage: Duration) {
        self.restarts += 1;
        self.down_until = now + outage;
    }

    /// Until when connections are refused (in the past when it is up).
    pub fn down_until(&self) -> Instant {
        self.down_until
    }

    /// Restarts so far (a connection remembers the count it was opened at).
    pub fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Runs `sql` with `binds` as SQLite answers it.
    fn run(&mut self, sql: &str, binds: &[SqlValue]) -> rusqlite::Result<u64> {
        self.stats.requests += 1;
        let mut stmt = self.conn.prepare_cached(sql)?;
        let changed = stmt.execute(rusqlite::params_from_iter(binds.iter().map(to_sqlite)))?;
        if changed > 0 {
            self.stats.writes += 1;
        }
        Ok(changed as u64)
    }

    /// Runs `sql` with `binds`; the rows it changed.
    pub fn execute(&mut self, sql: &str, binds: &[SqlValue]) -> Result<u64, DbError> {
        self.run(sql, binds).map_err(failed)
    }

    /// Runs the `INSERT` `sql` with `binds`: `false` when a unique key refused it.
    pub fn insert(&mut self, sql: &str, binds: &[SqlValue]) -> Result<bool, DbError> {
        match self.run(sql, binds) {
            Ok(_) => Ok(true),
            // SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE, as sqlx tells them.
            Err(rusqlite::Error::SqliteFailure(e, _)) if matches!(e.extended_code, 1555 | 2067) => {
                Ok(false)
            }
            Err(e) => Err(failed(e)),
        }
    }

    /// Runs the query `sql` with `binds`; its rows.
    pub fn fetch(&mut self, sql: &str, binds: &[SqlValue]) -> Result<Vec<SqlRow>, DbError> {
        self.stats.requests += 1;
        let mut stmt = self.conn.prepare_cached(sql).map_err(failed)?;
        let names: Vec<String> = stmt.column_names().iter().map(|n| n.to_string()).collect();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(binds.iter().map(to_sqlite)))
            .map_err(failed)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(failed)? {
            let mut columns = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let v: Value = row.get(i).map_err(failed)?;
                columns.push((name.clone(), from_sqlite(v)));
            }
            out.push(SqlRow::new(columns));
        }
        self.stats.keys_read += out.len() as u64;
        Ok(out)
    }

    /// Who holds worker ID `worker_id` of `table` by the database's clock now, if anyone
    /// (the checker's ground truth; `None` before the table exists).
    pub fn live_holder(&self, table: &str, worker_id: u64) -> Option<String> {
        let sql = format!(
            "SELECT holder FROM {table} WHERE worker_id = ?1 AND holder IS NOT NULL \
             AND lease_expires_ms > ?2"
        );
        let id = i64::try_from(worker_id).ok()?;
        self.conn
            .query_row(&sql, (id, self.now_ms()), |row| row.get(0))
            .ok()
    }

    /// How many worker IDs of `table` are leased now.
    pub fn held(&self, table: &str) -> usize {
        let sql = format!(
            "SELECT COUNT(*) FROM {table} WHERE holder IS NOT NULL AND lease_expires_ms > ?1"
        );
        self.conn
            .query_row(&sql, (self.now_ms(),), |row| row.get::<_, i64>(0))
            .map_or(0, |n| usize::try_from(n).unwrap_or(0))
    }
}

/// The wall clock of a host `offset_ms` off true time, on the simulated time of a run that
/// began at `t0`.
fn host_ms(t0: Instant, offset_ms: i64) -> i64 {
    let elapsed = i64::try_from(t0.elapsed().as_millis()).unwrap_or(i64::MAX);
    (WALL_START_MS as i64)
        .saturating_add(elapsed)
        .saturating_add(offset_ms)
}
