//! Growing a ticket pool from N servers to M > N without new tables or sequences.
//!
//! With N servers, server k hands out IDs ≡ k (mod N). Adding servers changes the modulus,
//! and the old classes and the new ones overlap: 7 is class 1 of 2 and class 1 of 3, 5 is
//! class 1 of 2 and class 2 of 3. So every server moves to a fresh start above every ID any
//! server may have handed out (plus a gap), in its class of M, and from there on the classes
//! of M keep the servers apart while everything below the base keeps the old IDs apart.
//!
//! [`Grow::plan`] reads each server and computes the plan without changing anything;
//! [`GrowPlan::apply`] reads them again, refuses if anything moved past the base or (MySQL)
//! if other sessions are still connected, then moves every server and checks each one the
//! way a [`TicketServer`] of the new pool will.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::AnyConnectOptions;
use sqlx::{AnyConnection, AssertSqlSafe, ConnectOptions, Connection, Executor, Row};
use tokio::task::JoinSet;
use tokio::time::timeout;

use super::config::{
    DEFAULT_NAME, Dialect, MAX_INCREMENT, TicketConfig, dialect_of, no_sqlite_ticket_server,
    validate_name,
};
use super::server::{COMMENT_PREFIX, TicketServer, mysql_class_comment, mysql_create_table};
use crate::error::{Error, Result};
use crate::mask_url;

/// Default room above the highest current value: a million tickets that processes still
/// running may take between the last reading and the change (a gap of that size in the
/// ID space, nothing more).
pub const DEFAULT_GAP: u64 = 1_000_000;
/// Default bound on each step with one server (connecting, each statement).
pub const DEFAULT_GROW_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a server's table or sequence stood when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerState {
    /// No table or sequence yet (a new server): it is created at its new start.
    Missing,
    /// It counts in class `offset` of `increment`: a PostgreSQL sequence's own increment,
    /// or the class a MySQL table snowdrift created keeps in its comment.
    Class {
        /// Its modulus.
        increment: u32,
        /// Its class.
        offset: u32,
    },
    /// A MySQL table snowdrift did not create (Flickr's own): its class lives only in the
    /// sessions that used it.
    Unmarked,
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Missing => f.write_str("none yet"),
            ServerState::Class { increment, offset } => write!(f, "class {offset} of {increment}"),
            ServerState::Unmarked => f.write_str("table without class (Flickr's)"),
        }
    }
}

/// One server in a [`GrowPlan`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GrowServer {
    /// The URL without its password.
    pub url: String,
    /// Its class k in the grown pool (its position in the list, from 1).
    pub offset: u32,
    /// Where it stood.
    pub state: ServerState,
    /// The highest ticket it may have handed out (0 if none).
    pub current: u64,
    /// Its first value in the grown pool: the smallest value above the base that is
    /// ≡ `offset` (mod M). On MySQL/MariaDB the migration takes this value itself, to check
    /// the table hands out the new class and to make the move survive a restart on servers
    /// that rebuild `AUTO_INCREMENT` from `max(id)`; the pool's first ticket there is
    /// `start + M`.
    pub start: u64,
    /// MySQL/MariaDB: other sessions connected to its database (`id user@host command
    /// seconds`). They may be snowdrift servers still counting in class k of N.
    pub sessions: Vec<String>,
}

/// Reads N ticket servers plus the new ones and plans the move to M servers.
///
/// ```rust,ignore
/// use snowdrift_store::ticket::Grow;
/// let plan = Grow::new(["mysql://root@db1/t", "mysql://root@db2/t", "mysql://root@db3/t"], 2)
///     .plan()
///     .await?;                 // reads all three, changes nothing
/// println!("base {}", plan.base());
/// plan.apply(false).await?;    // after stopping every process that takes tickets
/// ```
#[derive(Clone)]
pub struct Grow {
    servers: Vec<String>,
    from: u32,
    name: String,
    gap: u64,
    timeout: Duration,
}

impl fmt::Debug for Grow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers: Vec<String> = self.servers.iter().map(|u| mask_url(u)).collect();
        f.debug_struct("Grow")
            .field("servers", &servers)
            .field("from", &self.from)
            .field("name", &self.name)
            .field("gap", &self.gap)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What [`Grow::plan`] found and will do; [`apply`](Self::apply) does it.
#[derive(Clone)]
pub struct GrowPlan {
    grow: Grow,
    base: u64,
    servers: Vec<GrowServer>,
    identities: Vec<String>,
}

impl fmt::Debug for GrowPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowPlan")
            .field("grow", &self.grow)
            .field("base", &self.base)
            .field("servers", &self.servers)
            .finish_non_exhaustive()
    }
}

impl Grow {
    /// The grown pool's servers, in the order of their classes (the first `from` are the
    /// pool's current servers, in their order), and N, the pool's current size.
    pub fn new<I, S>(servers: I, from: u32) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            servers: servers.into_iter().map(Into::into).collect(),
            from,
            name: DEFAULT_NAME.to_string(),
            gap: DEFAULT_GAP,
            timeout: DEFAULT_GROW_TIMEOUT,
        }
    }

    /// The table (MySQL/MariaDB) or sequence (PostgreSQL) on every server.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Room above the highest current value (default [`DEFAULT_GAP`]).
    pub fn gap(mut self, gap: u64) -> Self {
        self.gap = gap;
        self
    }

    /// Bound on each step with one server (default [`DEFAULT_GROW_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// M, the grown pool's size.
    pub fn to(&self) -> u32 {
        u32::try_from(self.servers.len()).unwrap_or(u32::MAX)
    }

    /// Reads every server (all at once, each step bounded by the timeout) and computes the
    /// plan. Changes nothing. Fails if any server cannot be reached, if a current server's
    /// table or sequence is missing or counts in another class, or if two URLs are the same
    /// database.
    pub async fn plan(&self) -> Result<GrowPlan> {
        let targets = self.targets()?;
        let read = read_all(&targets, self).await?;
        let mut identities = Vec::with_capacity(read.len());
        let mut readings = Vec::with_capacity(read.len());
        for (conn, reading) in read {
            close(conn, self.timeout).await;
            identities.push(reading.identity.clone());
            readings.push(reading);
        }
        let highest = readings.iter().map(|r| r.current).max().unwrap_or(0);
        let base = highest.checked_add(self.gap).ok_or_else(|| {
            Error::InvalidInput(format!(
                "gap {} above the highest current value {highest} passes the largest ticket: use a smaller gap",
                self.gap
            ))
        })?;
        let to = u64::from(self.to());
        let mut servers = Vec::with_capacity(targets.len());
        for (target, reading) in targets.iter().zip(readings) {
            let start = start_above(base, target.offset, to).filter(|s| *s <= reading.max_value);
            let Some(start) = start else {
                return Err(refused(
                    &target.shown,
                    format!(
                        "its first value above {base} in class {} of {to} passes its largest value {}: the pool has no room left to grow",
                        target.offset, reading.max_value
                    ),
                ));
            };
            servers.push(GrowServer {
                url: target.shown.clone(),
                offset: target.offset,
                state: reading.state,
                current: reading.current,
                start,
                sessions: reading.sessions,
            });
        }
        Ok(GrowPlan {
            grow: self.clone(),
            base,
            servers,
            identities,
        })
    }

    /// Validates the input before any connection is made.
    fn targets(&self) -> Result<Vec<Target>> {
        validate_name(&self.name)?;
        let to = self.to();
        if self.from == 0 {
            return Err(Error::InvalidInput(
                "the pool has at least 1 server now: --from 0 is not valid".into(),
            ));
        }
        if to <= self.from {
            return Err(Error::InvalidInput(format!(
                "growing from {} servers needs more than {} in the new list (it has {to}): list the current servers in their order, then the new ones",
                self.from, self.from
            )));
        }
        if to > MAX_INCREMENT {
            return Err(Error::InvalidInput(format!(
                "{to} ticket servers is more than {MAX_INCREMENT}, the most MySQL's auto_increment_increment allows"
            )));
        }
        if self.timeout.is_zero() {
            return Err(Error::InvalidInput(
                "timeout is zero: give each server time to answer (e.g. 10s)".into(),
            ));
        }
        let mut targets: Vec<Target> = Vec::with_capacity(self.servers.len());
        for (i, url) in self.servers.iter().enumerate() {
            let (dialect, sqlx_url) = dialect_of(url)?;
            let shown = mask_url(url);
            let connect =
                AnyConnectOptions::from_str(&sqlx_url).map_err(|e| Error::InvalidUrl {
                    url: shown.clone(),
                    reason: e.to_string(),
                })?;
            if let Some(other) = targets.iter().find(|t| t.url == *url) {
                return Err(Error::InvalidInput(format!(
                    "servers {} and {} are both {shown}: each ticket server needs its own database",
                    other.offset,
                    i + 1
                )));
            }
            targets.push(Target {
                url: url.clone(),
                shown,
                dialect,
                connect,
                offset: u32::try_from(i + 1).unwrap_or(u32::MAX),
                existing: u32::try_from(i).is_ok_and(|i| i < self.from),
            });
        }
        sqlx::any::install_default_drivers();
        Ok(targets)
    }
}

impl GrowPlan {
    /// Every server's first value is above this: the highest current value plus the gap.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// N, the pool's size now.
    pub fn from(&self) -> u32 {
        self.grow.from
    }

    /// M, the grown pool's size.
    pub fn to(&self) -> u32 {
        self.grow.to()
    }

    /// The gap the base leaves above the highest current value.
    pub fn gap(&self) -> u64 {
        self.grow.gap
    }

    /// The table or sequence name.
    pub fn name(&self) -> &str {
        &self.grow.name
    }

    /// Each server, in class order.
    pub fn servers(&self) -> &[GrowServer] {
        &self.servers
    }

    /// Moves every server to its start in the grown pool.
    ///
    /// First reads every server again (each connection then stays open until its change)
    /// and changes nothing if one is unreachable, changed state, is now past the base, is a
    /// different database than planned, or, on MySQL/MariaDB, has other sessions connected
    /// to its database (unless `ignore_sessions`): a process still counting in class k of
    /// N would keep doing so from the moved counter, into other servers' new classes.
    /// Then, in class order:
    ///
    /// - PostgreSQL: `ALTER SEQUENCE .. INCREMENT BY M START WITH s RESTART WITH s` (or
    ///   `CREATE SEQUENCE` for a new server);
    /// - MySQL/MariaDB: `ALTER TABLE .. AUTO_INCREMENT = s` with the new class in the
    ///   comment of a table snowdrift created (or `CREATE TABLE` for a new server), then one
    ///   ticket taken with the new session class, which must be exactly `s`.
    ///
    /// Finally each server is checked as a [`TicketServer`] of the grown pool would check
    /// it. If a step fails, the servers before it are moved and the error says so; running
    /// the same plan again (a new [`Grow::plan`]) moves every server above all of them.
    pub async fn apply(&self, ignore_sessions: bool) -> Result<()> {
        let grow = &self.grow;
        let targets = grow.targets()?;
        let read = read_all(&targets, grow).await?;
        for ((target, (_, now)), planned) in targets.iter().zip(&read).zip(&self.servers) {
            let problem = if now.state != planned.state {
                Some(format!(
                    "its table or sequence changed since the plan (was {}, now {})",
                    planned.state, now.state
                ))
            } else if now.current > self.base {
                Some(format!(
                    "it is at {} now, past the base {}: something took more than the gap of tickets since the plan; stop every process taking tickets, or plan again with a larger gap",
                    now.current, self.base
                ))
            } else if !ignore_sessions
                && target.dialect == Dialect::MySql
                && !now.sessions.is_empty()
            {
                Some(format!(
                    "{} other session(s) are connected to its database ({}); a snowdrift server still counting in class {} of {} would keep doing so from the moved counter and collide with the grown pool. Stop every process taking tickets from these servers (or, if these sessions take none, ignore them)",
                    now.sessions.len(),
                    now.sessions.join(", "),
                    target.offset,
                    grow.from
                ))
            } else {
                None
            };
            if let Some(reason) = problem {
                return Err(refused(
                    &target.shown,
                    format!("{reason}; nothing was changed"),
                ));
            }
        }
        let identities: Vec<&String> = read.iter().map(|(_, r)| &r.identity).collect();
        if identities
            .iter()
            .zip(&self.identities)
            .any(|(a, b)| *a != b)
        {
            return Err(Error::InvalidInput(
                "the servers are not the databases that were planned; plan again; nothing was changed".into(),
            ));
        }
        let mut moved = Vec::new();
        for ((target, (mut conn, _)), planned) in targets.iter().zip(read).zip(&self.servers) {
            let done = grow
                .bounded(&target.shown, self.move_one(&mut conn, target, planned))
                .await;
            close(conn, grow.timeout).await;
            if let Err(e) = done {
                return Err(partial(&moved, e));
            }
            moved.push(target.offset);
        }
        for target in &targets {
            let mut config = TicketConfig::new(grow.to(), target.offset);
            config.name = grow.name.clone();
            config.timeout = grow.timeout;
            let server = TicketServer::connect(&target.url, config)
                .await
                .map_err(|e| partial(&moved, e))?;
            server.close().await;
        }
        Ok(())
    }

    async fn move_one(
        &self,
        conn: &mut AnyConnection,
        target: &Target,
        planned: &GrowServer,
    ) -> Result<()> {
        let name = &self.grow.name;
        let (to, k, start) = (self.grow.to(), target.offset, planned.start);
        match (target.dialect, &planned.state) {
            (Dialect::Postgres, ServerState::Missing) => {
                let ddl = format!(
                    "CREATE SEQUENCE {name} INCREMENT BY {to} MINVALUE 1 START WITH {start} NO CYCLE"
                );
                conn.execute(AssertSqlSafe(ddl)).await?;
            }
            (Dialect::Postgres, _) => {
                let ddl = format!(
                    "ALTER SEQUENCE {name} INCREMENT BY {to} START WITH {start} RESTART WITH {start}"
                );
                conn.execute(AssertSqlSafe(ddl)).await?;
            }
            (Dialect::Sqlite, _) => return Err(no_sqlite_ticket_server()),
            (Dialect::MySql, state) => {
                let ddl = match state {
                    ServerState::Missing => mysql_create_table(name, to, k, Some(start)),
                    ServerState::Unmarked => {
                        format!("ALTER TABLE {name} AUTO_INCREMENT = {start}")
                    }
                    ServerState::Class { .. } => format!(
                        "ALTER TABLE {name} AUTO_INCREMENT = {start}, COMMENT = '{}'",
                        mysql_class_comment(to, k)
                    ),
                };
                conn.execute(AssertSqlSafe(ddl)).await?;
                // The first ticket of the new class, taken as the grown pool takes them.
                let set = format!(
                    "SET SESSION auto_increment_increment = {to}, auto_increment_offset = {k}"
                );
                conn.execute(AssertSqlSafe(set)).await?;
                let take = format!(
                    "REPLACE INTO {name} (stub) VALUES ('a'); SELECT CAST(LAST_INSERT_ID() AS SIGNED)"
                );
                let rows = sqlx::raw_sql(AssertSqlSafe(take))
                    .fetch_all(&mut *conn)
                    .await?;
                let first: Option<i64> = rows.first().map(|r| r.try_get(0)).transpose()?;
                if first != i64::try_from(start).ok() {
                    return Err(refused(
                        &target.shown,
                        format!(
                            "after moving AUTO_INCREMENT to {start}, its first ticket in class {k} of {to} was {first:?}, not {start}: something overrides the session's auto_increment_increment/offset (Galera's wsrep_auto_increment_control?)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// One server as given, validated.
struct Target {
    url: String,
    shown: String,
    dialect: Dialect,
    connect: AnyConnectOptions,
    offset: u32,
    /// One of the pool's current servers (k ≤ N).
    existing: bool,
}

/// What reading one server found.
struct Reading {
    state: ServerState,
    current: u64,
    /// The largest value its table or sequence can hold.
    max_value: u64,
    /// Which database it is, to catch two URLs for one.
    identity: String,
    sessions: Vec<String>,
}

/// Opens and reads every server at once; fails naming every server that failed.
async fn read_all(targets: &[Target], grow: &Grow) -> Result<Vec<(AnyConnection, Reading)>> {
    let mut tasks = JoinSet::new();
    for (index, target) in targets.iter().enumerate() {
        let (connect, dialect, shown) =
            (target.connect.clone(), target.dialect, target.shown.clone());
        let grow = grow.clone();
        tasks.spawn(async move {
            let read = async {
                let mut conn = grow.bounded(&shown, connect.connect()).await?;
                let reading = grow
                    .bounded(&shown, read_one(&mut conn, dialect, &grow.name))
                    .await?;
                Ok::<_, Error>((conn, reading))
            };
            (index, read.await)
        });
    }
    let mut results: Vec<Option<Result<(AnyConnection, Reading)>>> =
        targets.iter().map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        let (index, result) = joined.map_err(|e| Error::Unavailable(Box::new(e)))?;
        results[index] = Some(result);
    }
    let mut read = Vec::with_capacity(targets.len());
    let mut failures = Vec::new();
    let mut refusal = None;
    for result in results.into_iter().flatten() {
        match result {
            Ok(r) => read.push(r),
            Err(e @ (Error::TicketServerRefused { .. } | Error::InvalidInput(_))) => {
                refusal.get_or_insert(e);
            }
            Err(e) => failures.push(cause(&e)),
        }
    }
    if let Some(e) = refusal {
        return Err(e);
    }
    if !failures.is_empty() {
        return Err(unavailable(format!(
            "{}; nothing was changed",
            failures.join("; ")
        )));
    }
    let by_identity = read.iter().map(|(_, r)| &r.identity).enumerate();
    for (i, identity) in by_identity {
        if let Some(j) = read[..i].iter().position(|(_, r)| r.identity == *identity) {
            return Err(Error::InvalidInput(format!(
                "servers {} ({}) and {} ({}) are the same database: each ticket server needs its own; nothing was changed",
                j + 1,
                targets[j].shown,
                i + 1,
                targets[i].shown
            )));
        }
    }
    for (target, (_, reading)) in targets.iter().zip(&read) {
        check_fits(target, reading, grow)?;
    }
    Ok(read)
}

async fn read_one(conn: &mut AnyConnection, dialect: Dialect, name: &str) -> Result<Reading> {
    match dialect {
        Dialect::Postgres => read_postgres(conn, name).await,
        Dialect::MySql => read_mysql(conn, name).await,
        Dialect::Sqlite => Err(no_sqlite_ticket_server()),
    }
}

/// The table or sequence is where the plan expects it: class k of N for a current server
/// (or of M after an earlier, interrupted run), none or class k of M for a new one.
fn check_fits(target: &Target, reading: &Reading, grow: &Grow) -> Result<()> {
    let (shown, offset, existing) = (&target.shown, target.offset, target.existing);
    let (from, to) = (grow.from, grow.to());
    let name = &grow.name;
    let fits = match reading.state {
        // A current server lost its table or sequence: wrong URL, name or --from.
        ServerState::Missing => !existing,
        ServerState::Unmarked => true,
        // Its class of N, or of M when an earlier run moved it already.
        ServerState::Class {
            increment,
            offset: k,
        } => k == offset && (increment == to || (existing && increment == from)),
    };
    if !fits {
        let expected = if existing {
            format!("class {offset} of {from} (or of {to}, if an earlier run moved it)")
        } else {
            format!("none, or class {offset} of {to} from an earlier run")
        };
        let found = match reading.state {
            ServerState::Missing => format!("has no table or sequence {name}"),
            ref state => format!("{name} is {state}"),
        };
        return Err(refused(
            shown,
            format!(
                "{found}, this plan expects {expected}: check the order of the servers, --from and the table or sequence name; nothing was changed"
            ),
        ));
    }
    Ok(())
}

async fn read_postgres(conn: &mut AnyConnection, name: &str) -> Result<Reading> {
    let row = sqlx::query(
        // The cluster's system identifier, not the address: one server reached as
        // localhost and as 127.0.0.1 is one server.
        "SELECT current_database() || '/' || current_schema() || ' on ' \
         || COALESCE('cluster ' || (SELECT system_identifier::text FROM pg_control_system()), \
                     inet_server_addr()::text || ':' || inet_server_port()::text, 'local'), \
         c.oid IS NOT NULL, s.seqincrement, s.seqstart, s.seqcycle, s.seqmax \
         FROM (SELECT to_regclass($1) AS oid) c \
         LEFT JOIN pg_sequence s ON s.seqrelid = c.oid",
    )
    .bind(name)
    .fetch_one(&mut *conn)
    .await?;
    let identity: String = row.try_get(0)?;
    let exists: bool = row.try_get(1)?;
    let increment: Option<i64> = row.try_get(2)?;
    let mut reading = Reading {
        state: ServerState::Missing,
        current: 0,
        max_value: i64::MAX as u64,
        identity,
        sessions: Vec::new(),
    };
    if !exists {
        return Ok(reading);
    }
    let Some(increment) = increment else {
        return Err(Error::InvalidInput(format!(
            "{name} exists but is not a sequence"
        )));
    };
    let start: i64 = row.try_get(3)?;
    let cycle: bool = row.try_get(4)?;
    let max: i64 = row.try_get(5)?;
    if cycle {
        return Err(Error::InvalidInput(format!(
            "sequence {name} is CYCLE: it would repeat tickets after its maximum; ALTER SEQUENCE {name} NO CYCLE first"
        )));
    }
    let last: i64 = sqlx::query(AssertSqlSafe(format!("SELECT last_value FROM {name}")))
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    let n = u32::try_from(increment)
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "sequence {name} has INCREMENT BY {increment}: a ticket sequence counts up"
            ))
        })?;
    // Its class, when its start and its last value agree on one.
    let class = u32::try_from(start.rem_euclid(i64::from(n))).unwrap_or(0);
    let last_class = u32::try_from(last.rem_euclid(i64::from(n))).unwrap_or(0);
    reading.state = if class == last_class {
        ServerState::Class {
            increment: n,
            offset: if class == 0 { n } else { class },
        }
    } else {
        // Reported as a class no plan expects, so it is refused.
        ServerState::Class {
            increment: n,
            offset: 0,
        }
    };
    // A sequence's last value was handed out, or is about to be (is_called false).
    reading.current = u64::try_from(last).unwrap_or(0);
    reading.max_value = u64::try_from(max).unwrap_or(0);
    Ok(reading)
}

async fn read_mysql(conn: &mut AnyConnection, name: &str) -> Result<Reading> {
    let row = sqlx::query(
        "SELECT CONCAT(COALESCE(DATABASE(), ''), ' on ', @@hostname, ':', @@port), \
         CAST(DATABASE() IS NULL AS SIGNED)",
    )
    .fetch_one(&mut *conn)
    .await?;
    let identity: String = row.try_get(0)?;
    let no_database: i64 = row.try_get(1)?;
    if no_database != 0 {
        return Err(Error::InvalidInput(
            "the URL names no database: mysql://USER@HOST/DATABASE".into(),
        ));
    }
    let sessions = sqlx::query(
        "SELECT CONCAT(ID, ' ', USER, '@', HOST, ' ', COMMAND, ' ', TIME, 's') \
         FROM information_schema.PROCESSLIST \
         WHERE DB = DATABASE() AND ID <> CONNECTION_ID() ORDER BY ID",
    )
    .fetch_all(&mut *conn)
    .await?
    .iter()
    .map(|r| r.try_get::<String, _>(0))
    .collect::<Result<Vec<_>, _>>()?;
    let mut reading = Reading {
        state: ServerState::Missing,
        current: 0,
        max_value: i64::MAX as u64,
        identity,
        sessions,
    };
    let comment = sqlx::query(
        "SELECT TABLE_COMMENT FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
    )
    .bind(name)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(comment) = comment else {
        return Ok(reading);
    };
    let comment: String = comment.try_get(0)?;
    reading.state = match comment.strip_prefix(COMMENT_PREFIX) {
        None => ServerState::Unmarked,
        Some(class) => parse_class(class).unwrap_or(ServerState::Class {
            increment: 0,
            offset: 0,
        }),
    };
    // The table's counter: SHOW CREATE TABLE is current on every version, where
    // information_schema may show a cached value (MySQL 8's stats expiry).
    let create: String = sqlx::query(AssertSqlSafe(format!("SHOW CREATE TABLE {name}")))
        .fetch_one(&mut *conn)
        .await?
        .try_get(1)?;
    let counter = auto_increment_of(&create).unwrap_or(1);
    let max_id: Option<i64> = sqlx::query(AssertSqlSafe(format!(
        "SELECT CAST(MAX(id) AS SIGNED) FROM {name}"
    )))
    .fetch_one(&mut *conn)
    .await?
    .try_get(0)?;
    let max_id = max_id.and_then(|v| u64::try_from(v).ok()).unwrap_or(0);
    reading.current = max_id.max(counter.saturating_sub(1));
    Ok(reading)
}

/// ` increment=N offset=K` from a snowdrift table comment.
fn parse_class(text: &str) -> Option<ServerState> {
    let mut parts = text.split_whitespace();
    let increment = parts.next()?.strip_prefix("increment=")?.parse().ok()?;
    let offset = parts.next()?.strip_prefix("offset=")?.parse().ok()?;
    Some(ServerState::Class { increment, offset })
}

/// The `AUTO_INCREMENT=n` table option of a `SHOW CREATE TABLE` (absent before the first
/// insert).
fn auto_increment_of(create: &str) -> Option<u64> {
    let (_, rest) = create.split_once(" AUTO_INCREMENT=")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The smallest value above `base` that is ≡ `k` (mod `m`), if it fits an i64.
fn start_above(base: u64, k: u32, m: u64) -> Option<u64> {
    let next = base.checked_add(1)?;
    let k = u64::from(k) % m;
    let step = (k + m - next % m) % m;
    next.checked_add(step).filter(|s| *s <= i64::MAX as u64)
}

impl Grow {
    /// `step` within the timeout; a server that does not answer is named.
    async fn bounded<T, E: Into<Error>>(
        &self,
        shown: &str,
        step: impl Future<Output = Result<T, E>>,
    ) -> Result<T> {
        match timeout(self.timeout, step).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(e)) => Err(match e.into() {
                e @ (Error::TicketServerRefused { .. } | Error::InvalidInput(_)) => {
                    with_server(shown, e)
                }
                e => unavailable(format!("{shown}: {}", cause(&e))),
            }),
            Err(_) => Err(unavailable(format!(
                "{shown}: no answer within {:?}",
                self.timeout
            ))),
        }
    }
}

/// Names the server in a refusal that does not yet.
fn with_server(shown: &str, e: Error) -> Error {
    match e {
        Error::InvalidInput(reason) => refused(shown, reason),
        e => e,
    }
}

/// The innermost message of a store error (sqlx's own, without "store unavailable").
fn cause(e: &Error) -> String {
    match e {
        Error::Unavailable(inner) => inner.to_string(),
        e => e.to_string(),
    }
}

fn refused(shown: &str, reason: String) -> Error {
    Error::TicketServerRefused {
        server: shown.to_string(),
        reason,
    }
}

fn unavailable(message: String) -> Error {
    Error::Unavailable(Box::new(std::io::Error::other(message)))
}

/// An error after `moved` servers were moved already.
fn partial(moved: &[u32], e: Error) -> Error {
    if moved.is_empty() {
        return e;
    }
    let moved: Vec<String> = moved.iter().map(u32::to_string).collect();
    Error::InvalidInput(format!(
        "{e}; servers {} were moved already and the rest not: fix this and run the same command again (it moves every server above all of them)",
        moved.join(", ")
    ))
}

async fn close(conn: AnyConnection, limit: Duration) {
    let _ = timeout(limit, conn.close()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_are_the_next_member_of_each_class_above_the_base() {
        // base 10, M = 3: classes 1, 2, 3 start at 13, 11, 12.
        assert_eq!(start_above(10, 1, 3), Some(13));
        assert_eq!(start_above(10, 2, 3), Some(11));
        assert_eq!(start_above(10, 3, 3), Some(12));
        assert_eq!(start_above(0, 1, 1), Some(1));
        for base in 0..50 {
            for m in 1..7 {
                for k in 1..=m {
                    let s = start_above(base, k as u32, m).unwrap();
                    assert!(s > base && s <= base + m && s % m == k % m);
                }
            }
        }
        assert_eq!(start_above(i64::MAX as u64, 1, 3), None);
        assert_eq!(start_above(u64::MAX, 1, 3), None);
    }

    #[test]
    fn reads_the_counter_and_the_class() {
        let create = "CREATE TABLE `t` (\n  `id` bigint(20) NOT NULL AUTO_INCREMENT,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=1234 DEFAULT CHARSET=utf8mb4 COMMENT='x'";
        assert_eq!(auto_increment_of(create), Some(1234));
        assert_eq!(
            auto_increment_of("CREATE TABLE t (id bigint AUTO_INCREMENT)"),
            None
        );
        assert_eq!(
            parse_class(" increment=2 offset=1"),
            Some(ServerState::Class {
                increment: 2,
                offset: 1
            })
        );
        assert_eq!(parse_class(" increment=x offset=1"), None);
    }
}
