//! The steps of `install`, `uninstall` and `status` that are the same on every database,
//! over a [`Database`] that does what differs: PostgreSQL makes a generator's objects and
//! reservation in one transaction, MariaDB (whose DDL commits by itself) undoes by hand
//! what a failed install made; each has its own counters, marks and sessions to read.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::{AnyConnection, Row};

use super::{GeneratorStatus, Installed, Plan, Session, Shape, Uninstalled, WorkerStatus};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::sql::{reserve_on, table_rows, unreserve_on};
use crate::worker::{Mark, WorkerRegistry};

/// The table recording each install, in the functions' schema (PostgreSQL) or database.
pub(super) const CONFIG: &str = "snowdrift_generators";

/// One generator's record in `snowdrift_generators`.
#[derive(Debug, Clone)]
pub(super) struct Record {
    pub name: String,
    pub slug: String,
    pub layout: String,
    pub workers: Vec<u64>,
    /// Where the reservation lives: the servers' table (qualified and quoted), or
    /// `backend:namespace` ([`super::external::recorded`]).
    pub registry_table: String,
    pub holder: String,
    pub ext: u64,
}

impl Record {
    /// A row of `SELECT name, slug, layout, workers, registry_table, holder, ext`.
    pub fn from_row(row: &sqlx::any::AnyRow) -> Result<Self> {
        let workers: String = row.try_get("workers")?;
        let workers = workers
            .split(',')
            .map(|w| {
                w.trim().parse::<u64>().map_err(|_| {
                    Error::InvalidInput(format!(
                        "{CONFIG} lists worker {w:?}, not a number: it was edited by hand"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let ext: i64 = row.try_get("ext")?;
        Ok(Self {
            name: row.try_get("name")?,
            slug: row.try_get("slug")?,
            layout: row.try_get("layout")?,
            workers,
            registry_table: row.try_get("registry_table")?,
            holder: row.try_get("holder")?,
            ext: ext as u64,
        })
    }

    /// The layout's shape, from the record.
    pub fn shape(&self) -> Result<Shape> {
        let layout = snowdrift_core::layout::migrate::parse_record(&self.layout)
            .map_err(|e| Error::InvalidInput(format!("{CONFIG}: {e}")))?;
        Shape::of(&layout)
    }
}

/// A worker ID's counter (the compact state of the last ID issued under it) and mark (ms),
/// as the database holds them; either may be missing (MariaDB after a restart: no counter).
pub(super) type State = (Option<i64>, Option<i64>);

/// The sessions of one generator, as the database shows them.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    /// The counters were moved above their marks in this life of the database.
    pub fenced: bool,
    /// The session that prefers each worker ID.
    pub claimed: HashMap<u64, Session>,
    /// The session issuing under each worker ID now.
    pub in_use: HashMap<u64, Session>,
}

/// What differs between the databases. Each method runs on the install's connection.
pub(super) trait Database {
    /// The statements' dialect.
    const DIALECT: Dialect;
    /// What calls the functions and would fail once they are gone, as uninstall names it
    /// (`column defaults`, `triggers`), and how to stop one.
    const CALLERS: (&'static str, &'static str);

    /// Refuses a server the functions cannot run on.
    async fn check_server(&self, conn: &mut AnyConnection) -> Result<()>;
    /// The schema (PostgreSQL) or database (MariaDB) the functions are in: `given`, or the
    /// connection's.
    async fn schema(&self, conn: &mut AnyConnection, given: Option<&str>) -> Result<String>;
    /// The reservation's holder for functions in `schema`.
    async fn holder(&self, conn: &mut AnyConnection, schema: &str) -> Result<String>;
    /// The servers' worker table `table`, qualified and quoted as the functions name it.
    async fn table_place(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        table: &str,
    ) -> Result<String>;
    /// Every generator installed in `schema`.
    async fn records(&self, conn: &mut AnyConnection, schema: &str) -> Result<Vec<Record>>;
    /// Starts what [`commit`](Self::commit) makes durable at once, where the database can.
    async fn begin(&self, conn: &mut AnyConnection) -> Result<()>;
    async fn commit(&self, conn: &mut AnyConnection) -> Result<()>;
    /// Ends what [`begin`](Self::begin) started without making it durable, where the
    /// database can.
    async fn rollback(&self, conn: &mut AnyConnection);
    /// Undoes what a failed install wrote since [`begin`](Self::begin): `reserved` is the
    /// rows of the servers' table it reserved for `holder`.
    async fn abort_install(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        reserved: &[u64],
        holder: &str,
    );
    /// Creates the counters above `marks`, the functions and the install's record.
    #[allow(clippy::too_many_arguments)]
    async fn create(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        schema: &str,
        block: &[u64],
        marks: &[Mark],
        now: u64,
        registry_table: &str,
        holder: &str,
    ) -> Result<()>;
    /// Writes an installed generator's functions again, keeping everything else.
    async fn replace(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        schema: &str,
        r: &Record,
    ) -> Result<()>;
    /// The objects that still call generator `generator`.
    async fn callers(&self, conn: &mut AnyConnection, generator: &str) -> Result<Vec<String>>;
    /// Waits up to `wait` for every call issuing under `r`'s worker IDs, and keeps new ones
    /// from starting until [`forget`](Self::forget) has removed the functions.
    async fn quiesce(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        r: &Record,
        wait: Duration,
    ) -> Result<()>;
    /// Each worker ID's state.
    async fn states(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        r: &Record,
    ) -> Result<HashMap<u64, State>>;
    /// Removes `r`'s functions, counters and record.
    async fn forget(&self, conn: &mut AnyConnection, schema: &str, r: &Record) -> Result<()>;
    /// The sessions using `r`'s worker IDs.
    async fn sessions(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        r: &Record,
    ) -> Result<Sessions>;
}

pub(super) async fn install<D: Database>(
    db: &D,
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    external: Option<&WorkerRegistry>,
) -> Result<Installed> {
    let o = plan.options;
    db.check_server(conn).await?;
    let schema = db.schema(conn, o.schema.as_deref()).await?;
    let registry_table = match external {
        Some(r) => super::external::place(r, &o.registry_table),
        None => db.table_place(conn, &schema, &o.registry_table).await?,
    };
    let holder = db.holder(conn, &schema).await?;
    let existing = db.records(conn, &schema).await?;
    if let Some(r) = existing
        .iter()
        .find(|r| r.slug == plan.slug && r.name != o.generator)
    {
        return Err(Error::InvalidInput(format!(
            "generator {:?} would use the same object names as {:?}, installed already in {schema}: rename one",
            o.generator, r.name
        )));
    }
    if let Some(r) = existing.iter().find(|r| r.name == o.generator) {
        let installed_as = |what: &str, was: &str, asked: &str| {
            Error::InvalidInput(format!(
                "generator {:?} is installed in {schema} with {what} {was}, not {asked}: uninstall it first (snowdrift sql uninstall) to change it",
                r.name
            ))
        };
        if r.registry_table != registry_table {
            return Err(installed_as(
                "its worker IDs reserved in",
                &r.registry_table,
                &registry_table,
            ));
        }
        if r.layout != plan.record {
            return Err(installed_as("layout", &r.layout, &plan.record));
        }
        if r.workers.len() as u64 != o.workers {
            return Err(installed_as(
                "the number of worker IDs",
                &r.workers.len().to_string(),
                &o.workers.to_string(),
            ));
        }
        db.replace(conn, plan, &schema, r).await?;
        return Ok(Installed {
            schema,
            workers: r.workers.clone(),
            holder: r.holder.clone(),
            replaced: true,
        });
    }

    let (block, marks) = match external {
        Some(registry) => {
            super::external::reserve(conn, D::DIALECT, registry, plan, &holder).await?
        }
        None => (
            super::block::choose_and_wait(conn, D::DIALECT, plan).await?,
            Vec::new(),
        ),
    };
    db.begin(conn).await?;
    let mut reserved = Vec::new();
    let made = async {
        let (marks, now) = match external {
            Some(_) => (marks, super::block::db_now(conn, D::DIALECT).await?),
            None => reserve_in_table::<D>(conn, plan, &block, &holder, &mut reserved).await?,
        };
        db.create(
            conn,
            plan,
            &schema,
            &block,
            &marks,
            now,
            &registry_table,
            &holder,
        )
        .await?;
        db.commit(conn).await
    }
    .await;
    if let Err(e) = made {
        db.abort_install(conn, plan, &reserved, &holder).await;
        if let Some(registry) = external {
            super::external::give_back(registry, &block, &holder).await;
        }
        return Err(e);
    }
    Ok(Installed {
        schema,
        workers: block,
        holder,
        replaced: false,
    })
}

/// Reserves `block`'s rows of the servers' table for `holder` (recording each in
/// `reserved`), then reads their marks again under the reservation: a server may have
/// raised one meanwhile. Returns the marks and the database clock.
async fn reserve_in_table<D: Database>(
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    block: &[u64],
    holder: &str,
    reserved: &mut Vec<u64>,
) -> Result<(Vec<Mark>, u64)> {
    let table = &plan.options.registry_table;
    for w in block {
        if !reserve_on(conn, D::DIALECT, table, *w, holder, &plan.record).await? {
            return Err(Error::Unavailable(
                format!(
                    "worker ID {w} was claimed by a server while the install ran; run it again"
                )
                .into(),
            ));
        }
        reserved.push(*w);
    }
    let rows = table_rows(conn, D::DIALECT, table, plan.shape.space).await?;
    let marks = super::block::marks(plan, &rows, block)?;
    let now = super::block::db_now(conn, D::DIALECT).await?;
    if let Some(m) = marks.iter().find(|m| m.ms > now) {
        return Err(Error::Unavailable(
            format!(
                "a server raised a worker ID's high-water mark to {} ms, ahead of the database clock, while the install ran; run it again",
                m.ms
            )
            .into(),
        ));
    }
    Ok((marks, now))
}

pub(super) async fn uninstall<D: Database>(
    db: &D,
    conn: &mut AnyConnection,
    generator: &str,
    schema: Option<&str>,
    wait: Duration,
    registry: Option<&str>,
) -> Result<Uninstalled> {
    let schema = db.schema(conn, schema).await?;
    let Some(r) = db
        .records(conn, &schema)
        .await?
        .into_iter()
        .find(|r| r.name == generator)
    else {
        return Err(Error::InvalidInput(format!(
            "generator {generator:?} is not installed in {schema} of this database"
        )));
    };
    // Where the marks go, checked before anything is removed.
    let external = super::external::open_recorded(&r.registry_table, registry, generator).await?;
    let shape = r.shape()?;
    // What still calls the generator would fail from now on: refuse.
    let users = db.callers(conn, generator).await?;
    if !users.is_empty() {
        let (what, stop) = D::CALLERS;
        return Err(Error::InvalidInput(format!(
            "{what} still call snowdrift_id({generator:?}): {}; drop them first ({stop}). Nothing was removed",
            users.join(", ")
        )));
    }
    let mut done = Uninstalled {
        released: Vec::new(),
        not_reserved: Vec::new(),
    };
    let mut to_write = Vec::new();
    let removed = async {
        db.quiesce(conn, &schema, &r, wait).await?;
        let states = db.states(conn, &schema, &r).await?;
        for w in &r.workers {
            let (counter, mark) = states.get(w).copied().unwrap_or_default();
            let last = counter.map_or(0, |c| shape.tick_end_ms(shape.tick(c as u64)));
            let mark_ms = last.max(mark.unwrap_or(0) as u64);
            let stored = Mark {
                extension: r.ext,
                ms: mark_ms,
            }
            .stored();
            if external.is_some() {
                to_write.push((*w, stored, mark_ms));
            } else if unreserve_on(conn, D::DIALECT, &r.registry_table, *w, &r.holder, stored)
                .await?
            {
                done.released.push((*w, mark_ms));
            } else {
                done.not_reserved.push(*w);
            }
        }
        db.forget(conn, &schema, &r).await?;
        db.commit(conn).await
    }
    .await;
    if let Err(e) = removed {
        db.rollback(conn).await;
        return Err(e);
    }
    // Only now that no function can issue under them: the marks cover every ID issued.
    if let Some(reg) = &external {
        super::external::write_back(reg, &r.holder, to_write, &mut done).await?;
    }
    Ok(done)
}

pub(super) async fn status<D: Database>(
    db: &D,
    conn: &mut AnyConnection,
    schema: Option<&str>,
    registry: Option<&str>,
) -> Result<Vec<GeneratorStatus>> {
    let schema = db.schema(conn, schema).await?;
    let mut out = Vec::new();
    for r in db.records(conn, &schema).await? {
        let shape = r.shape()?;
        let mut sessions = db.sessions(conn, &schema, &r).await?;
        let states = db.states(conn, &schema, &r).await?;
        let (rows, checked) =
            super::external::reservations(conn, &r.registry_table, registry, &r.name, shape.space)
                .await?;
        let workers = r
            .workers
            .iter()
            .map(|w| {
                let (counter, mark) = states.get(w).copied().unwrap_or_default();
                WorkerStatus {
                    worker_id: *w,
                    last_ms: counter.map(|c| shape.epoch_ms + shape.tick(c as u64) * shape.unit_ms),
                    mark_ms: mark.map(|m| m as u64),
                    reserved: rows.get(w).is_some_and(|(h, until)| {
                        *h == r.holder && *until == super::RESERVED_UNTIL_MS
                    }),
                    claimed_by: sessions.claimed.remove(w),
                    in_use_by: sessions.in_use.remove(w),
                }
            })
            .collect();
        out.push(GeneratorStatus {
            name: r.name,
            schema: schema.clone(),
            layout: r.layout,
            registry_table: r.registry_table,
            reservation_checked: checked,
            holder: r.holder,
            fenced: sessions.fenced,
            workers,
        });
    }
    Ok(out)
}

/// Records the install of `plan` in the config table `config` (qualified as the database
/// names it), with `dispatch`, MariaDB's branch of `snowdrift_id`, where there is one.
#[allow(clippy::too_many_arguments)]
pub(super) async fn record(
    conn: &mut AnyConnection,
    dialect: Dialect,
    config: &str,
    plan: &Plan<'_>,
    block: &[u64],
    registry_table: &str,
    holder: &str,
    ext: u64,
    dispatch: Option<&str>,
) -> Result<()> {
    let (column, value) = if dispatch.is_some() {
        (", dispatch", ", ?")
    } else {
        ("", "")
    };
    let insert = crate::worker::sql::statement(
        dialect,
        config,
        &format!(
            "INSERT INTO {{t}} (name, slug, layout, workers, registry_table, holder, ext, version{column}) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?{value})"
        ),
    );
    let mut query = sqlx::query(insert)
        .bind(&plan.options.generator)
        .bind(&plan.slug)
        .bind(&plan.record)
        .bind(super::block::list(block))
        .bind(registry_table)
        .bind(holder)
        .bind(ext as i64)
        .bind(env!("CARGO_PKG_VERSION"));
    if let Some(d) = dispatch {
        query = query.bind(d);
    }
    query.execute(&mut *conn).await?;
    Ok(())
}
