//! One ticket server: a MySQL/MariaDB table or a PostgreSQL sequence on one connection.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::str::FromStr;

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, AssertSqlSafe, ConnectOptions, Connection, Executor, Row};
use tokio::sync::Mutex;
use tokio::time::timeout;

use super::config::{Dialect, TicketConfig, dialect_of, no_sqlite_ticket_server, validate_count};
use crate::error::{Error, Result};
use crate::mask_url;

/// Tickets per MySQL round trip. Each one is a commit on the server, so a round trip must
/// stay well inside the timeout (about 0.1 s for 100 on a slow disk), while still sending
/// a hundredth of the round trips.
const MYSQL_CHUNK: usize = 100;

/// The comment a table snowdrift creates carries, so a later connect with another class
/// is refused instead of silently sharing the table.
pub(crate) const COMMENT_PREFIX: &str = "snowdrift tickets:";

/// The table comment that marks a table snowdrift created for class `offset` of `increment`.
pub(crate) fn mysql_class_comment(increment: u32, offset: u32) -> String {
    format!("{COMMENT_PREFIX} increment={increment} offset={offset}")
}

/// Flickr's ticket table, created if missing, marked with its class; with `start`, its
/// counter begins there.
pub(crate) fn mysql_create_table(
    name: &str,
    increment: u32,
    offset: u32,
    start: Option<u64>,
) -> String {
    let start = start.map_or(String::new(), |s| format!(" AUTO_INCREMENT={s}"));
    format!(
        "CREATE TABLE IF NOT EXISTS {name} (\
         id BIGINT NOT NULL AUTO_INCREMENT, \
         stub CHAR(1) NOT NULL DEFAULT '', \
         PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=InnoDB{start} \
         COMMENT='{}'",
        mysql_class_comment(increment, offset)
    )
}

/// One ticket server (Flickr's design), on exactly one database connection.
///
/// - **MySQL/MariaDB**: Flickr's table `tickets64 (id BIGINT AUTO_INCREMENT PRIMARY KEY,
///   stub CHAR(1) UNIQUE)`. Every new connection runs `SET SESSION
///   auto_increment_increment = N, auto_increment_offset = k` before its first use, so a
///   reconnect re-applies them; the session values are read back then and on every
///   [`check`](Self::check). A ticket is `REPLACE INTO
///   tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID()`: the server still runs (and,
///   with InnoDB's defaults, commits) one `REPLACE` per ticket, but up to 100 such pairs
///   travel in one multi-statement round trip. `LAST_INSERT_ID()` belongs to the connection,
///   so each pair reads its own ticket.
/// - **PostgreSQL**: a sequence `INCREMENT BY N START WITH k` (no cycle); `next(n)` is one
///   `SELECT nextval(..) FROM generate_series(1, n)` round trip.
///
/// The table or sequence is created if missing. An existing sequence whose increment, start
/// or last value is not in this class, or that cycles, is refused
/// ([`Error::TicketServerRefused`]); so is a table snowdrift created for another class (the
/// class is kept in the table's comment). A table snowdrift did not create (Flickr's own) is
/// adopted: MySQL gives the next ticket the smallest value above the table's counter that is
/// ≡ k (mod N), so from then on its tickets are in this class, but the IDs it issued before
/// are not checked against the other servers' classes.
///
/// Every returned ID is checked to be ≡ k (mod N) and positive before it is handed out; an
/// ID outside the class is refused, never returned.
///
/// Calls are serialized on the one connection. The configured timeout bounds each step of a
/// call: waiting for the connection, (re)connecting, and each round trip (a large MySQL call
/// makes several, so it may take longer in all while the server keeps answering). After an
/// error or a timeout the connection is dropped and the next call opens a new one.
#[derive(Clone)]
pub struct TicketServer {
    inner: Arc<Inner>,
}

struct Inner {
    label: String,
    dialect: Dialect,
    config: TicketConfig,
    /// Opened directly rather than through a sqlx pool: the pool retries a refused
    /// connection silently until its timeout and then reports only that it timed out, while
    /// a pool of these servers needs the real cause at once to move on.
    connect: AnyConnectOptions,
    /// The one connection, taken out while in use so that a call abandoned mid-statement
    /// never leaves a half-read answer for the next one (the dropped connection is closed).
    conn: Mutex<Option<AnyConnection>>,
    /// False from a failed call until the next call that works, so that pool calls queued
    /// behind a failure move on instead of each paying its own timeout on a dead server.
    healthy: AtomicBool,
}

impl fmt::Debug for TicketServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TicketServer")
            .field("server", &self.inner.label)
            .finish_non_exhaustive()
    }
}

/// Why one call to a server failed, as the pool needs to know it.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: Error,
    /// The server did not fail: other callers held its connection for the whole timeout.
    pub(crate) busy: bool,
    /// No answer within the timeout (not worth a retry on a new connection).
    timed_out: bool,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Self {
            error,
            busy: false,
            timed_out: false,
        }
    }
}

impl From<sqlx::Error> for Failure {
    fn from(e: sqlx::Error) -> Self {
        Error::from(e).into()
    }
}

/// What a call does on the connection.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Create the table/sequence if missing, then verify it.
    Prepare,
    /// Verify the session and the table/sequence.
    Verify,
    /// Take this many tickets.
    Next(usize),
}

impl TicketServer {
    /// Connects to `url` (`mysql://` or `mariadb://`, or `postgres://`), creates the table or
    /// sequence if missing and checks that it belongs to `config`'s class. Connecting, and
    /// then creating and checking, are each bounded by `config.timeout`.
    pub async fn connect(url: &str, config: TicketConfig) -> Result<Self> {
        let server = Self::lazy(url, config)?;
        server.call(Op::Prepare, false).await.map_err(|f| f.error)?;
        Ok(server)
    }

    /// Validates everything and builds the server without touching the network.
    pub(crate) fn lazy(url: &str, config: TicketConfig) -> Result<Self> {
        config.validate()?;
        let (dialect, sqlx_url) = dialect_of(url)?;
        let label = label(url, &config);
        sqlx::any::install_default_drivers();
        let connect = AnyConnectOptions::from_str(&sqlx_url).map_err(|e| Error::InvalidUrl {
            url: mask_url(url),
            reason: e.to_string(),
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                label,
                dialect,
                config,
                connect,
                conn: Mutex::new(None),
                healthy: AtomicBool::new(true),
            }),
        })
    }

    /// Takes `count` tickets (1 to [`MAX_TICKETS_PER_CALL`](super::MAX_TICKETS_PER_CALL)),
    /// in the order the server issued them. Each is positive and ≡ `offset` (mod
    /// `increment`). They need not be consecutive members of the class: other clients of
    /// the same table or sequence may take tickets in between.
    pub async fn next(&self, count: usize) -> Result<Vec<u64>> {
        validate_count(count)?;
        self.call(Op::Next(count), false).await.map_err(|f| f.error)
    }

    /// The pool's entry: `count` already validated. Says whether the server was only busy,
    /// and gives way (as busy) if the last call on it failed: the pool has marked it down and
    /// its probe, not a queue of callers, finds out when it is back.
    pub(crate) async fn take(&self, count: usize) -> Result<Vec<u64>, Failure> {
        self.call(Op::Next(count), true).await
    }

    /// Health check: the connection answers, the MySQL session still has this class's
    /// `auto_increment_increment`/`offset`, and the table or sequence still belongs to this
    /// class. Bounded by the timeout.
    pub async fn check(&self) -> Result<()> {
        self.call(Op::Verify, false)
            .await
            .map(drop)
            .map_err(|f| f.error)
    }

    /// The server for errors and logs: URL without password, table or sequence, class.
    pub fn label(&self) -> &str {
        &self.inner.label
    }

    /// The configuration it was connected with.
    pub fn config(&self) -> &TicketConfig {
        &self.inner.config
    }

    /// Closes the connection (a later call opens a new one).
    pub async fn close(&self) {
        let conn = self.inner.conn.lock().await.take();
        if let Some(conn) = conn {
            // A goodbye the server may never answer must not hang the caller.
            let _ = timeout(self.inner.config.timeout, conn.close()).await;
        }
    }

    /// Runs `op` on the one connection, each step within the timeout, and returns the
    /// tickets of `Op::Next` (nothing for the others). A connection that was idle in between
    /// may have been closed by the server (`wait_timeout`, a restart): if it fails, the call
    /// is tried once more on a new connection, which is safe because a lost ticket is only
    /// a gap.
    async fn call(&self, op: Op, give_way: bool) -> Result<Vec<u64>, Failure> {
        let inner = &self.inner;
        let limit = inner.config.timeout;
        let busy = |message: String| Failure {
            error: timed_out(format!("{}: {message}", inner.label)),
            busy: true,
            timed_out: true,
        };
        let mut slot = timeout(limit, inner.conn.lock()).await.map_err(|_| {
            busy(format!(
                "busy: other calls held its connection for {limit:?}"
            ))
        })?;
        if give_way && !inner.healthy.load(Ordering::Acquire) {
            return Err(busy("its last call failed; waiting for a probe".into()));
        }
        let result = self.call_locked(&mut slot, op).await;
        inner.healthy.store(result.is_ok(), Ordering::Release);
        result
    }

    async fn call_locked(
        &self,
        slot: &mut Option<AnyConnection>,
        op: Op,
    ) -> Result<Vec<u64>, Failure> {
        let mut retried = false;
        loop {
            let (mut conn, fresh) = match slot.take() {
                Some(conn) => (conn, false),
                None => {
                    let conn = self.bounded(self.fresh_connection()).await?;
                    (conn, true)
                }
            };
            match self.perform(&mut conn, op).await {
                Ok(done) => {
                    *slot = Some(conn);
                    return Ok(done);
                }
                Err(e) => {
                    // Dropped, not closed: the session may be in any state, and a graceful
                    // goodbye could hang on a dead link.
                    drop(conn);
                    let refused = matches!(e.error, Error::TicketServerRefused { .. });
                    if fresh || retried || refused || e.timed_out {
                        return Err(e);
                    }
                    retried = true;
                }
            }
        }
    }

    /// `step` within the timeout.
    async fn bounded<T, E: Into<Failure>>(
        &self,
        step: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Failure> {
        let limit = self.inner.config.timeout;
        match timeout(limit, step).await {
            Ok(done) => done.map_err(Into::into),
            Err(_) => Err(Failure {
                error: timed_out(format!("{}: no answer within {limit:?}", self.inner.label)),
                busy: false,
                timed_out: true,
            }),
        }
    }

    /// A new connection, with this class set on its MySQL session and read back.
    async fn fresh_connection(&self) -> Result<AnyConnection, Failure> {
        let mut conn = self.inner.connect.connect().await?;
        if self.inner.dialect == Dialect::MySql {
            let config = &self.inner.config;
            let set = format!(
                "SET SESSION auto_increment_increment = {}, auto_increment_offset = {}",
                config.increment, config.offset
            );
            conn.execute(AssertSqlSafe(set)).await?;
            self.verify_session(&mut conn).await?;
        }
        Ok(conn)
    }

    async fn perform(&self, conn: &mut AnyConnection, op: Op) -> Result<Vec<u64>, Failure> {
        match op {
            Op::Prepare => {
                self.bounded(async {
                    self.create(conn).await?;
                    self.verify_object(conn).await
                })
                .await?;
                Ok(Vec::new())
            }
            Op::Verify => {
                self.bounded(async {
                    self.verify_session(conn).await?;
                    self.verify_object(conn).await
                })
                .await?;
                Ok(Vec::new())
            }
            Op::Next(count) => {
                let ids = match self.inner.dialect {
                    Dialect::Postgres => self.next_postgres(conn, count).await?,
                    Dialect::MySql => self.next_mysql(conn, count).await?,
                    Dialect::Sqlite => return Err(no_sqlite_ticket_server().into()),
                };
                Ok(self.accept(ids, count)?)
            }
        }
    }

    async fn next_postgres(
        &self,
        conn: &mut AnyConnection,
        count: usize,
    ) -> Result<Vec<i64>, Failure> {
        let select = format!(
            "SELECT nextval('{}') FROM generate_series(1, $1::int8)",
            self.inner.config.name
        );
        let query = sqlx::query(AssertSqlSafe(select)).bind(count as i64);
        let rows = self.bounded(query.fetch_all(&mut *conn)).await?;
        rows.iter()
            .map(|r| r.try_get::<i64, _>(0).map_err(Failure::from))
            .collect()
    }

    async fn next_mysql(
        &self,
        conn: &mut AnyConnection,
        count: usize,
    ) -> Result<Vec<i64>, Failure> {
        let pair = format!(
            "REPLACE INTO {} (stub) VALUES ('a'); SELECT CAST(LAST_INSERT_ID() AS SIGNED)",
            self.inner.config.name
        );
        let mut ids = Vec::with_capacity(count);
        let mut left = count;
        while left > 0 {
            let n = left.min(MYSQL_CHUNK);
            let script = vec![pair.as_str(); n].join("; ");
            let rows = self
                .bounded(sqlx::raw_sql(AssertSqlSafe(script)).fetch_all(&mut *conn))
                .await?;
            for row in &rows {
                ids.push(row.try_get::<i64, _>(0)?);
            }
            left -= n;
        }
        Ok(ids)
    }

    /// Checks what the database returned before anything is handed out.
    fn accept(&self, ids: Vec<i64>, count: usize) -> Result<Vec<u64>> {
        let config = &self.inner.config;
        let refuse = |reason: String| Error::TicketServerRefused {
            server: self.inner.label.clone(),
            reason,
        };
        if ids.len() != count {
            return Err(refuse(format!(
                "asked for {count} tickets, got {}; none were used",
                ids.len()
            )));
        }
        let mut out = Vec::with_capacity(count);
        for id in ids {
            let Some(id) = u64::try_from(id).ok().filter(|id| *id > 0) else {
                return Err(refuse(format!(
                    "returned ticket {id}, which is not a positive i64 (the id column passed i64::MAX or was never auto-incremented); none were used"
                )));
            };
            if !config.owns(id) {
                return Err(refuse(format!(
                    "returned ticket {id}, which is not ≡ {} (mod {}): something changed the session's auto_increment_increment/offset or the sequence (another tool, Galera's wsrep_auto_increment_control?); none were used",
                    config.offset % config.increment,
                    config.increment
                )));
            }
            out.push(id);
        }
        Ok(out)
    }

    async fn create(&self, conn: &mut AnyConnection) -> Result<()> {
        let TicketConfig {
            name,
            increment,
            offset,
            ..
        } = &self.inner.config;
        match self.inner.dialect {
            Dialect::MySql => {
                let ddl = mysql_create_table(name, *increment, *offset, None);
                conn.execute(AssertSqlSafe(ddl)).await?;
            }
            Dialect::Postgres => {
                let ddl = format!(
                    "CREATE SEQUENCE IF NOT EXISTS {name} \
                     INCREMENT BY {increment} MINVALUE 1 START WITH {offset} NO CYCLE"
                );
                match conn.execute(AssertSqlSafe(ddl)).await {
                    Ok(_) => {}
                    // Two processes creating it at once: one wins, the other checks it below.
                    Err(e) if crate::sql_connection::lost_the_create_race(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Dialect::Sqlite => return Err(no_sqlite_ticket_server()),
        }
        Ok(())
    }

    /// MySQL: the session holds this class (the hook ran, and nothing overrode it).
    async fn verify_session(&self, conn: &mut AnyConnection) -> Result<()> {
        if self.inner.dialect != Dialect::MySql {
            return Ok(());
        }
        let row = sqlx::query(
            "SELECT CAST(@@session.auto_increment_increment AS SIGNED), \
             CAST(@@session.auto_increment_offset AS SIGNED)",
        )
        .fetch_one(&mut *conn)
        .await?;
        let (increment, offset): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        let config = &self.inner.config;
        if (increment, offset) != (i64::from(config.increment), i64::from(config.offset)) {
            return Err(self.refused(format!(
                "the session has auto_increment_increment = {increment}, auto_increment_offset = {offset} after setting {} and {}; something overrides them (Galera's wsrep_auto_increment_control?)",
                config.increment, config.offset
            )));
        }
        Ok(())
    }

    /// The table or sequence belongs to this class.
    async fn verify_object(&self, conn: &mut AnyConnection) -> Result<()> {
        match self.inner.dialect {
            Dialect::MySql => self.verify_table(conn).await,
            Dialect::Postgres => self.verify_sequence(conn).await,
            Dialect::Sqlite => Err(no_sqlite_ticket_server()),
        }
    }

    async fn verify_table(&self, conn: &mut AnyConnection) -> Result<()> {
        let config = &self.inner.config;
        let row = sqlx::query(
            "SELECT TABLE_COMMENT FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
        )
        .bind(config.name.as_str())
        .fetch_optional(&mut *conn)
        .await?;
        let Some(row) = row else {
            return Err(self.refused(format!(
                "table {} is gone; recreating it would restart its counter and repeat tickets. Restore it, or set its AUTO_INCREMENT past every ticket it issued, then reconnect",
                config.name
            )));
        };
        let comment: String = row.try_get(0)?;
        let Some(class) = comment.strip_prefix(COMMENT_PREFIX) else {
            // Not created by snowdrift (Flickr's own table): adopted, see the type's docs.
            return Ok(());
        };
        let expected = format!(" increment={} offset={}", config.increment, config.offset);
        if class != expected {
            return Err(self.refused(format!(
                "table {} was created for{class}, this server is configured for{expected}: their tickets could collide with another server's. Use another table name, or fix the configuration",
                config.name
            )));
        }
        Ok(())
    }

    async fn verify_sequence(&self, conn: &mut AnyConnection) -> Result<()> {
        let config = &self.inner.config;
        let name = &config.name;
        let row = sqlx::query(
            "SELECT c.oid IS NOT NULL, s.seqincrement, s.seqstart, s.seqcycle \
             FROM (SELECT to_regclass($1) AS oid) c \
             LEFT JOIN pg_sequence s ON s.seqrelid = c.oid",
        )
        .bind(name.as_str())
        .fetch_one(&mut *conn)
        .await?;
        let exists: bool = row.try_get(0)?;
        let increment: Option<i64> = row.try_get(1)?;
        let (Some(increment), true) = (increment, exists) else {
            let what = if exists {
                "exists but is not a sequence"
            } else {
                "is gone; recreating it would restart it and repeat tickets. Restore it (or recreate it starting past every ticket it issued), then reconnect"
            };
            return Err(self.refused(format!("{name} {what}")));
        };
        let start: i64 = row.try_get(2)?;
        let cycle: bool = row.try_get(3)?;
        let n = i64::from(config.increment);
        let k = i64::from(config.offset) % n;
        let fix = "use another sequence name, or fix the configuration; ALTER SEQUENCE only after checking no other server's class is reached";
        if increment != n {
            return Err(self.refused(format!(
                "sequence {name} has INCREMENT BY {increment}, this server is configured for increment {n}: {fix}"
            )));
        }
        if start.rem_euclid(n) != k {
            return Err(self.refused(format!(
                "sequence {name} starts at {start}, which is not ≡ {k} (mod {n}) as offset {} needs: {fix}",
                config.offset
            )));
        }
        if cycle {
            return Err(self.refused(format!(
                "sequence {name} is CYCLE: it would repeat tickets after its maximum; ALTER SEQUENCE {name} NO CYCLE"
            )));
        }
        let select = format!("SELECT last_value FROM {name}");
        let last: i64 = sqlx::query(AssertSqlSafe(select))
            .fetch_one(&mut *conn)
            .await?
            .try_get(0)?;
        if last.rem_euclid(n) != k {
            return Err(self.refused(format!(
                "sequence {name} is at {last}, which is not ≡ {k} (mod {n}): it was restarted outside its class; {fix}"
            )));
        }
        Ok(())
    }

    fn refused(&self, reason: String) -> Error {
        Error::TicketServerRefused {
            server: self.inner.label.clone(),
            reason,
        }
    }
}

fn timed_out(message: String) -> Error {
    Error::Unavailable(Box::new(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        message,
    )))
}

fn label(url: &str, config: &TicketConfig) -> String {
    format!(
        "{} ({}, offset {} of {})",
        mask_url(url),
        config.name,
        config.offset,
        config.increment
    )
}
