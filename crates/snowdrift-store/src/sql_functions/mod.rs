//! IDs made inside the database: `snowdrift_id(generator)` written into PostgreSQL
//! (PL/pgSQL) or MariaDB (stored functions) by [`install`], for column defaults, triggers, bulk loads and applications
//! that speak only SQL, under worker IDs reserved in the same registry the servers lease
//! theirs from, so the database's IDs and the servers' never collide.
//!
//! The database holds a block of worker IDs of the generator's space: the servers' table
//! (`registry = "sql"`) shows each as held by a holder starting with
//! [`RESERVATION_PREFIX`] whose lease ends at [`RESERVED_UNTIL_MS`], so no server's claim
//! takes it, until [`uninstall`] writes the database's last marks into the rows and frees
//! them. Inside the database, each worker ID has a counter and a high-water mark kept
//! where a rollback cannot take them back (sequences on PostgreSQL, MEMORY and Aria tables
//! on MariaDB), and is issued under by one transaction (PostgreSQL: an advisory lock) or
//! one session's lease (MariaDB) at a time; `docs/src/server/database-ids.md` gives the
//! whole argument.

mod block;
mod external;
mod flow;
mod mariadb;
mod names;
mod postgres;
mod shape;

use std::time::Duration;

use snowdrift_core::layout::{Layout, migrate};

use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::WorkerRegistry;

pub use external::recorded as external_registry;
pub use names::{MAX_SLUG, RESERVATION_PREFIX, RESERVED_UNTIL_MS, slug};
pub use shape::Shape;

/// The most worker IDs one install reserves.
pub const MAX_WORKERS: u64 = 1024;

/// The most IDs one call of `snowdrift_ids` returns.
pub const MAX_COUNT: u64 = 10_000_000;

/// What [`install`] writes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InstallOptions {
    /// The generator's name, as the servers' config names it.
    pub generator: String,
    /// Its layout (the servers' `layout`/`bits`).
    pub layout: Layout,
    /// The servers' worker table in this database (`{worker.namespace}_{generator}`),
    /// where the block is reserved.
    pub registry_table: String,
    /// The servers' worker registry when it is not this database's table (`etcd://`,
    /// `zookeeper://`, `redis://`, `file://`, or another SQL database's URL): the block is
    /// reserved there, in namespace `registry_table`, through
    /// [`WorkerRegistry::reserve`](crate::worker::WorkerRegistry::reserve). The database
    /// cannot reach such a registry, so its sessions do not check that the reservation is
    /// still there. `None`: the database's own table.
    pub registry_url: Option<String>,
    /// The schema the functions go into (PostgreSQL); `None`: the connection's current
    /// schema.
    pub schema: Option<String>,
    /// How many worker IDs to reserve: the most transactions that make IDs at once.
    pub workers: u64,
    /// How far ahead of the clock a worker's high-water mark is written.
    pub window: Duration,
    /// How far ahead of the clock an ID's time may be (a full sequence borrows it).
    pub max_lead: Duration,
    /// How long a call waits for a clock that stepped back before it refuses.
    pub backward_wait: Duration,
    /// How long the first call after a crash (and the install) waits for the clock to pass
    /// the worker IDs' marks before it refuses.
    pub max_mark_wait: Duration,
    /// MariaDB: how long a session's lease on its worker ID lasts without a call (every
    /// call renews it); another session may take the worker ID after it.
    pub lease_ttl: Duration,
    /// The functions add the session's setting `snowdrift.test_clock_offset_ms`
    /// (PostgreSQL) or the variable `@snowdrift_test_clock_offset_ms` (MariaDB) to the
    /// clock: for tests of clock steps only.
    pub test_clock: bool,
}

impl InstallOptions {
    /// The defaults for generator `generator` of layout `layout`, whose servers lease in
    /// `registry_table`: 16 worker IDs, the servers' window (3 s), no lead, a 5 ms wait
    /// for a clock step and 10 s for the marks.
    pub fn new(
        generator: impl Into<String>,
        layout: Layout,
        registry_table: impl Into<String>,
    ) -> Self {
        Self {
            generator: generator.into(),
            layout,
            registry_table: registry_table.into(),
            registry_url: None,
            schema: None,
            workers: 16,
            window: crate::worker::DEFAULT_WINDOW,
            max_lead: Duration::ZERO,
            backward_wait: Duration::from_millis(5),
            max_mark_wait: crate::worker::DEFAULT_MAX_MARK_WAIT,
            lease_ttl: crate::worker::DEFAULT_TTL,
            test_clock: false,
        }
    }

    fn check(&self) -> Result<Shape> {
        let shape = Shape::of(&self.layout)?;
        slug(&self.generator)?;
        crate::worker::validate_namespace(&self.registry_table)?;
        if let Some(schema) = &self.schema {
            names::check_schema(schema)?;
        }
        if self.workers == 0 || self.workers > MAX_WORKERS.min(shape.space) {
            return Err(Error::InvalidInput(format!(
                "cannot reserve {} worker IDs: use 1 to {} (the layout has {} worker IDs, and the servers need some)",
                self.workers,
                MAX_WORKERS.min(shape.space),
                shape.space
            )));
        }
        let ms = |d: Duration| d.as_millis();
        if ms(self.window) < 20 || ms(self.window) > 600_000 {
            return Err(Error::InvalidInput(format!(
                "window {:?} is not valid: use 20 ms to 10 min (a few seconds is usual)",
                self.window
            )));
        }
        if ms(self.lease_ttl) < 100 || ms(self.lease_ttl) > 86_400_000 {
            return Err(Error::InvalidInput(format!(
                "lease_ttl {:?} is not valid: use 100 ms to a day (seconds are usual)",
                self.lease_ttl
            )));
        }
        for (what, d) in [
            ("max_lead", self.max_lead),
            ("backward_wait", self.backward_wait),
            ("max_mark_wait", self.max_mark_wait),
        ] {
            if ms(d) > 600_000 {
                return Err(Error::InvalidInput(format!(
                    "{what} {d:?} is too long: use at most 10 min"
                )));
            }
        }
        if self.max_lead >= self.window {
            return Err(Error::InvalidInput(format!(
                "max_lead {:?} must be below the window {:?}: borrowed time must be covered by the high-water mark",
                self.max_lead, self.window
            )));
        }
        Ok(shape)
    }
}

/// What [`install`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Installed {
    /// The schema (PostgreSQL) the functions are in.
    pub schema: String,
    /// The worker IDs reserved for the database.
    pub workers: Vec<u64>,
    /// Who holds them in the registry table.
    pub holder: String,
    /// The generator was installed already: only its functions were written again (an
    /// upgrade), its counters, marks and reservation kept.
    pub replaced: bool,
}

/// What [`uninstall`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Uninstalled {
    /// The worker IDs given back to the servers, each with the high-water mark (ms) written
    /// into its row.
    pub released: Vec<(u64, u64)>,
    /// Worker IDs whose row no longer showed the reservation (edited by hand): their marks
    /// could not be written.
    pub not_reserved: Vec<u64>,
}

/// One generator's functions as [`status`] finds them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GeneratorStatus {
    /// The generator's name.
    pub name: String,
    /// The schema its functions are in.
    pub schema: String,
    /// Its layout ([`migrate::record`]).
    pub layout: String,
    /// The servers' worker table, or `backend:namespace` when the reservation lives in
    /// another registry ([`external_registry`] reads it).
    pub registry_table: String,
    /// Whether [`WorkerStatus::reserved`] was read from where the reservation lives: false
    /// when it lives in another registry and none was given to [`status`].
    pub reservation_checked: bool,
    /// The reservation's holder.
    pub holder: String,
    /// Whether the counters were moved above their marks in this life of the database
    /// (false after a crash until the first call).
    pub fenced: bool,
    /// The reserved worker IDs.
    pub workers: Vec<WorkerStatus>,
}

/// One reserved worker ID as [`status`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStatus {
    /// The worker ID.
    pub worker_id: u64,
    /// The time (ms since 1970) of the last tick issued under it.
    pub last_ms: Option<u64>,
    /// Its high-water mark in the database (ms since 1970).
    pub mark_ms: Option<u64>,
    /// Its row in the registry table still shows the reservation.
    pub reserved: bool,
    /// The session that prefers it (holds its claim).
    pub claimed_by: Option<Session>,
    /// The session whose transaction issues under it now.
    pub in_use_by: Option<Session>,
}

/// A database session, as `pg_stat_activity` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Session {
    /// The backend's process ID (`pg_backend_pid()`).
    pub pid: i64,
    /// The user.
    pub user: Option<String>,
    /// Its `application_name`.
    pub application: Option<String>,
    /// The client's address.
    pub client: Option<String>,
    /// `active`, `idle`, `idle in transaction`...
    pub state: Option<String>,
}

/// Runs `$body` (a future of `flow`) with `$db` the database at `$url` and `$conn` a
/// connection to it: the steps are generic over the [`flow::Database`], so each database
/// gets its own instance of them.
macro_rules! on_database {
    ($url:expr, |$db:ident, $conn:ident| $body:expr) => {{
        let (pool, dialect) = crate::sql_connection::connect($url).await?;
        let result = match dialect {
            Dialect::Postgres => match pool.acquire().await {
                Ok(mut c) => {
                    let ($db, $conn) = (&postgres::Postgres, &mut *c);
                    $body.await
                }
                Err(e) => Err(e.into()),
            },
            Dialect::MySql => match pool.acquire().await {
                Ok(mut c) => {
                    let ($db, $conn) = (&mariadb::MariaDb, &mut *c);
                    $body.await
                }
                Err(e) => Err(e.into()),
            },
            other => Err(not_supported(other)),
        };
        pool.close().await;
        result
    }};
}

/// A check of the options that connects to nothing.
#[derive(Debug)]
struct Plan<'a> {
    options: &'a InstallOptions,
    shape: Shape,
    slug: String,
    record: String,
}

/// Writes generator `options.generator`'s functions into the database at `url` and
/// reserves their worker IDs in the servers' table there; on a generator installed
/// already, writes its functions again (an upgrade) and keeps everything else.
pub async fn install(url: &str, options: &InstallOptions) -> Result<Installed> {
    let shape = options.check()?;
    let plan = Plan {
        options,
        shape,
        slug: slug(&options.generator)?,
        record: migrate::record(&options.layout),
    };
    let registry = match &options.registry_url {
        Some(r) => Some(WorkerRegistry::connect(r, &options.registry_table).await?),
        None => {
            // The servers' table, made as the servers make it if none ran yet.
            let registry =
                crate::worker::sql::SqlRegistry::connect(url, &options.registry_table).await?;
            registry.close().await;
            None
        }
    };
    on_database!(url, |db, conn| flow::install(
        db,
        conn,
        &plan,
        registry.as_ref()
    ))
}

/// Removes generator `generator`'s functions from the database at `url` (schema
/// `schema`, default the current one): waits up to `wait` for the transactions issuing
/// under its worker IDs to end, writes each worker ID's last mark into its row of the
/// servers' table and frees it, in one transaction. When the worker IDs are reserved in
/// another registry, `registry` is its URL (the install's `registry_url`): each worker
/// ID's mark is written there and its reservation ended once the functions are gone.
pub async fn uninstall(
    url: &str,
    generator: &str,
    schema: Option<&str>,
    wait: Duration,
    registry: Option<&str>,
) -> Result<Uninstalled> {
    if let Some(s) = schema {
        names::check_schema(s)?;
    }
    slug(generator)?;
    on_database!(url, |db, conn| flow::uninstall(
        db, conn, generator, schema, wait, registry
    ))
}

/// The generators installed in the database at `url` (schema `schema`, default the
/// current one), with their worker IDs and the sessions using them; `registry`: the URL of
/// the registry a reservation lives in when it is not the database's table, to check it.
pub async fn status(
    url: &str,
    schema: Option<&str>,
    registry: Option<&str>,
) -> Result<Vec<GeneratorStatus>> {
    if let Some(s) = schema {
        names::check_schema(s)?;
    }
    on_database!(url, |db, conn| flow::status(db, conn, schema, registry))
}

fn not_supported(_: Dialect) -> Error {
    Error::InvalidInput(
        "SQLite cannot hold snowdrift's ID functions: use a postgres:// URL (PostgreSQL 15 or later) or a mariadb:// one (MariaDB 10.6 or later)".into(),
    )
}

/// The worker IDs of a block as people read them: `1008..1023`, or a list.
fn block_text(block: &[u64]) -> String {
    let mut sorted = block.to_vec();
    sorted.sort_unstable();
    match (sorted.first(), sorted.last()) {
        (Some(a), Some(b)) if b - a + 1 == sorted.len() as u64 && a != b => format!("{a}..{b}"),
        _ => sorted
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_read_as_ranges() {
        assert_eq!(block_text(&[1023, 1022, 1021]), "1021..1023");
        assert_eq!(block_text(&[5, 7]), "5, 7");
        assert_eq!(block_text(&[9]), "9");
    }
}
