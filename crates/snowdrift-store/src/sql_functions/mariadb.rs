//! The functions on MariaDB (10.6 or later): the reservation in the servers' table, a
//! MEMORY table of leases and counters, an Aria table of marks, the stored functions of
//! `mariadb.sql`, and the record of each install in `snowdrift_generators`.
//!
//! MariaDB runs DDL outside transactions, so an install reserves the block first and, if
//! anything after fails, drops what it made and gives the block back.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::{AnyConnection, AssertSqlSafe, Row};

use super::names::{self, RESERVED_UNTIL_MS, literal, prefix};
use super::{
    GeneratorStatus, Installed, Plan, Session, Shape, Uninstalled, WorkerStatus, block_text,
};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::sql::{reserve_on, table_rows, unreserve_on};
use crate::worker::{Mark, WorkerRegistry};

/// The functions of one generator, with `{{...}}` to fill in, statements apart.
const TEMPLATE: &str = include_str!("mariadb.sql");

/// A generator's branch of `snowdrift_id`: its fast path, inlined.
const FAST_PATH: &str = include_str!("mariadb_fast.sql");

/// The table recording each install.
const CONFIG: &str = "snowdrift_generators";

/// The lease row's columns the functions keep instead of the session's user variables
/// (which a caller can set): the mark as last written, and when the reservation is next
/// checked.
const LEASE_COLUMNS: &str = "mark_ms BIGINT NOT NULL DEFAULT 0, check_ms BIGINT NOT NULL DEFAULT 0";

/// How often a session checks that its worker ID is still reserved.
const RECHECK_MS: u64 = 1000;

/// The most IDs one call of `snowdrift_ids` returns: its JSON array is built with
/// `GROUP_CONCAT` over the sequence engine's `seq_0_to_9999`.
const MAX_COUNT: u64 = 10_000;

fn q(sql: String) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql)
}

async fn exec(conn: &mut AnyConnection, sql: String) -> Result<()> {
    sqlx::raw_sql(q(sql)).execute(&mut *conn).await?;
    Ok(())
}

/// A MariaDB string literal: backslashes and quotes escaped.
fn lit(text: &str) -> Result<String> {
    literal(&text.replace('\\', "\\\\"))
}

async fn check_server(conn: &mut AnyConnection) -> Result<()> {
    let version: String = sqlx::query_scalar("SELECT VERSION()")
        .fetch_one(&mut *conn)
        .await?;
    if !version.contains("MariaDB") {
        return Err(Error::InvalidInput(format!(
            "the server is {version}, not MariaDB: the functions need MariaDB's MEMORY and Aria tables and its sequence engine (MySQL is not supported)"
        )));
    }
    let seq: Result<Option<i64>> = sqlx::query_scalar("SELECT seq FROM seq_0_to_1 LIMIT 1")
        .fetch_optional(&mut *conn)
        .await
        .map_err(Error::from);
    if seq.is_err() {
        return Err(Error::InvalidInput(
            "MariaDB's SEQUENCE engine is not loaded (seq_0_to_1 is unknown): INSTALL SONAME 'ha_sequence'".into(),
        ));
    }
    Ok(())
}

async fn database(conn: &mut AnyConnection, schema: Option<&str>) -> Result<String> {
    let db: Option<String> = sqlx::query_scalar("SELECT DATABASE()")
        .fetch_one(&mut *conn)
        .await?;
    let Some(db) = db else {
        return Err(Error::InvalidInput(
            "the URL names no database: the functions go into the URL's database (mysql://USER@HOST/DB)".into(),
        ));
    };
    if let Some(s) = schema
        && s != db
    {
        return Err(Error::InvalidInput(format!(
            "on MariaDB the functions go into the URL's database ({db}); --schema {s} names another"
        )));
    }
    names::check_schema(&db)?;
    Ok(db)
}

async fn config_exists(conn: &mut AnyConnection) -> Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'snowdrift_generators'",
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(n > 0)
}

/// One generator's record in `snowdrift_generators`.
#[derive(Debug, Clone)]
struct Record {
    name: String,
    slug: String,
    layout: String,
    workers: Vec<u64>,
    registry_table: String,
    holder: String,
    ext: u64,
    /// Its branch of `snowdrift_id`.
    dispatch: String,
}

async fn records(conn: &mut AnyConnection) -> Result<Vec<Record>> {
    if !config_exists(conn).await? {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(q(format!(
        "SELECT name, slug, layout, workers, registry_table, holder, ext, dispatch FROM {CONFIG} ORDER BY name"
    )))
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|row| {
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
            Ok(Record {
                name: row.try_get("name")?,
                slug: row.try_get("slug")?,
                layout: row.try_get("layout")?,
                workers,
                registry_table: row.try_get("registry_table")?,
                holder: row.try_get("holder")?,
                ext: ext as u64,
                dispatch: row.try_get("dispatch")?,
            })
        })
        .collect()
}

/// The node bits of worker `w` in place, as SQL: each node field's share of the worker
/// ID, high field first, shifted to where the layout puts it.
fn node_expr(layout: &snowdrift_core::layout::Layout) -> String {
    let mut rest = layout.node_bits();
    let mut parts = Vec::new();
    for (i, f) in layout.fields().iter().enumerate() {
        if f.role() == snowdrift_core::layout::Role::Node {
            rest -= u32::from(f.bits());
            parts.push(format!(
                "(((w >> {rest}) & {}) << {})",
                f.max(),
                layout.shift_of(i)
            ));
        }
    }
    parts.join(" | ")
}

/// The statements of the generator's functions, and its branch of `snowdrift_id`.
fn fill(
    plan: &Plan<'_>,
    workers: &[u64],
    ext: u64,
    registry_table: &str,
    holder: &str,
) -> Result<(Vec<String>, String)> {
    let shape = &plan.shape;
    let o = plan.options;
    let p = prefix(&plan.slug);
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let name = &o.generator;
    let clock = if o.test_clock {
        "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6)) DIV 1000 \
         - TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW()) * 1000 + COALESCE(@snowdrift_test_clock_offset_ms, 0))"
    } else {
        "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6)) DIV 1000 \
         - TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW()) * 1000)"
    };
    let check_body = if let Some((backend, namespace)) = super::external::recorded(registry_table) {
        // Not a check that passes by itself: there is nothing the database can read.
        format!(
            "-- The reservation lives in the servers' {backend} registry (namespace {namespace}), which the database cannot reach: it is not checked here."
        )
    } else {
        format!(
            "DECLARE h VARCHAR(255);
  DECLARE until_ms BIGINT;
  SELECT holder, lease_expires_ms INTO h, until_ms FROM {registry_table} WHERE worker_id = w;
  IF h IS NULL OR h <> {holder} OR until_ms <> {RESERVED_UNTIL_MS} THEN
    SIGNAL SQLSTATE '45005' SET MESSAGE_TEXT = {msg};
  END IF;",
            holder = lit(holder)?,
            msg = lit(&format!(
                "snowdrift_id('{name}'): a worker ID of this database is no longer reserved for it in table {registry_table}: no ID is issued under it; install the functions again"
            ))?,
        )
    };
    let values: Vec<(&str, String)> = vec![
        ("CHECK_BODY", check_body),
        ("NAME", lit(name)?),
        ("PREFIX", p.clone()),
        ("SLUG", plan.slug.clone()),
        ("N", workers.len().to_string()),
        (
            "EXHAUSTED",
            lit(&format!(
                "snowdrift_id('{name}'): all {} worker IDs reserved for this database ({}, of the generator's {}) are leased by other sessions",
                workers.len(),
                block_text(workers),
                shape.space
            ))?,
        ),
        (
            "MARK_AHEAD",
            lit(&format!(
                "snowdrift_id('{name}'): the worker ID's last ID is more than {} ms ahead of the database clock (it stepped back): fix the clock (NTP)",
                ms(o.max_mark_wait)
            ))?,
        ),
        (
            "CLOCK_BEHIND",
            lit(&format!(
                "snowdrift_id('{name}'): the database clock is behind the last ID issued under the worker ID; a call waits at most {} ms (backward_wait)",
                ms(o.backward_wait)
            ))?,
        ),
        (
            "TIME_FULL",
            lit(&format!(
                "snowdrift_id('{name}'): the layout's time field is full: move the generator to a layout with a later end"
            ))?,
        ),
        (
            "BAD_COUNT",
            lit(&format!(
                "snowdrift_ids('{name}', n): n must be 0 to {MAX_COUNT}"
            ))?,
        ),
        ("NODE_EXPR", node_expr(&o.layout)),
        ("EXT", ext.to_string()),
        ("TIME_BITS", shape.time_bits.to_string()),
        ("SEQ_BITS", shape.seq_bits.to_string()),
        ("EPOCH", shape.epoch_ms.to_string()),
        ("UNIT", shape.unit_ms.to_string()),
        ("TIME_MASK", shape.time_mask().to_string()),
        ("MAX_TICK", shape.max_tick.to_string()),
        ("EXT_SHIFT", shape.ext_shift().to_string()),
        ("HIGH_SHIFT", (shape.seq_bits + shape.mid_bits).to_string()),
        ("SEQ_MASK", shape.seq_mask().to_string()),
        ("SEQ_SHIFT", shape.seq_shift.to_string()),
        ("LEAD_TICKS", (ms(o.max_lead) / shape.unit_ms).to_string()),
        ("BACKWARD_MS", ms(o.backward_wait).to_string()),
        ("MARK_WAIT_MS", ms(o.max_mark_wait).to_string()),
        ("WINDOW_MS", ms(o.window).to_string()),
        ("HALF_WINDOW_MS", (ms(o.window) / 2).to_string()),
        ("TTL_MS", ms(o.lease_ttl).to_string()),
        ("RECHECK_MS", RECHECK_MS.to_string()),
        ("MAX_COUNT", MAX_COUNT.to_string()),
        ("MAX_INDEX", (MAX_COUNT - 1).to_string()),
        ("CLOCK", clock.to_string()),
    ];
    let filled = |template: &str| {
        let mut sql = template.to_string();
        for (key, value) in &values {
            sql = sql.replace(&format!("{{{{{key}}}}}"), value);
        }
        debug_assert!(!sql.contains("{{"), "a placeholder is left unfilled");
        sql
    };
    let statements = filled(TEMPLATE)
        .split("\n-- ;;\n")
        .map(str::trim)
        // The header comment is no statement.
        .filter(|s| s.lines().any(|l| !l.trim_start().starts_with("--")))
        .map(str::to_string)
        .collect();
    let fast = filled(FAST_PATH)
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    Ok((statements, fast))
}

/// `snowdrift_id(generator)` and `snowdrift_ids(generator, n)` over the generators
/// recorded in the config table; dropped when none is left.
async fn write_dispatchers(conn: &mut AnyConnection) -> Result<()> {
    let all = records(conn).await?;
    if all.is_empty() {
        for sql in [
            "DROP FUNCTION IF EXISTS snowdrift_id",
            "DROP FUNCTION IF EXISTS snowdrift_ids",
            "DROP TABLE IF EXISTS snowdrift_generators",
        ] {
            exec(conn, sql.to_string()).await?;
        }
        return Ok(());
    }
    let names = all
        .iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let unknown = lit(&format!(
        "snowdrift_id: no generator of that name is installed in this database (installed: {names})"
    ))?;
    let mut one = String::new();
    let mut many = String::new();
    for r in &all {
        let (name, p) = (lit(&r.name)?, prefix(&r.slug));
        one.push_str(&r.dispatch);
        one.push('\n');
        many.push_str(&format!("    WHEN {name} THEN RETURN {p}_ids(n);\n"));
    }
    // DEFINER: the fast paths write the lease tables, which callers need no right to.
    exec(
        conn,
        format!(
            "CREATE OR REPLACE FUNCTION snowdrift_id(generator VARCHAR(128)) RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY DEFINER
BEGIN
  DECLARE now_ms BIGINT;
  DECLARE now_t BIGINT;
  DECLARE c BIGINT;
  DECLARE w INT;
  CASE generator
{one}    ELSE SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = {unknown};
  END CASE;
END"
        ),
    )
    .await?;
    exec(
        conn,
        format!(
            "CREATE OR REPLACE FUNCTION snowdrift_ids(generator VARCHAR(128), n INT) RETURNS LONGTEXT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
  CASE generator
{many}    ELSE SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = {unknown};
  END CASE;
END"
        ),
    )
    .await
}

/// The objects of generator `slug`: its functions and tables.
fn objects(slug: &str) -> (Vec<String>, Vec<String>) {
    let p = prefix(slug);
    let functions = [
        "now", "check", "take", "next", "mark", "compose", "id", "ids",
    ]
    .iter()
    .map(|f| format!("{p}_{f}"))
    .collect();
    let tables = vec![format!("{p}_lease"), format!("{p}_mark")];
    (functions, tables)
}

async fn drop_objects(conn: &mut AnyConnection, slug: &str) -> Result<()> {
    let (functions, tables) = objects(slug);
    for f in functions {
        exec(conn, format!("DROP FUNCTION IF EXISTS {f}")).await?;
    }
    for t in tables {
        exec(conn, format!("DROP TABLE IF EXISTS {t}")).await?;
    }
    Ok(())
}

pub(super) async fn install(
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    external: Option<&WorkerRegistry>,
) -> Result<Installed> {
    let o = plan.options;
    check_server(conn).await?;
    let db = database(conn, o.schema.as_deref()).await?;
    let registry_table = match external {
        Some(r) => super::external::place(r, &o.registry_table),
        None => format!("`{db}`.`{}`", o.registry_table),
    };
    let holder = format!("{}mariadb:{db}", names::RESERVATION_PREFIX);
    let existing = records(conn).await?;
    if let Some(r) = existing
        .iter()
        .find(|r| r.slug == plan.slug && r.name != o.generator)
    {
        return Err(Error::InvalidInput(format!(
            "generator {:?} would use the same object names as {:?}, installed already in database {db}: rename one",
            o.generator, r.name
        )));
    }
    if let Some(r) = existing.iter().find(|r| r.name == o.generator) {
        if r.registry_table != registry_table {
            return Err(Error::InvalidInput(format!(
                "generator {:?} is installed in database {db} with its worker IDs reserved in {}, not {registry_table}: uninstall it first (snowdrift sql uninstall) to move the reservation",
                r.name, r.registry_table
            )));
        }
        if r.layout != plan.record || r.workers.len() as u64 != o.workers {
            return Err(Error::InvalidInput(format!(
                "generator {:?} is installed in database {db} with layout {} and {} worker IDs, not {} and {}: uninstall it first (snowdrift sql uninstall)",
                r.name,
                r.layout,
                r.workers.len(),
                plan.record,
                o.workers
            )));
        }
        // Installs made before the lease row held its mark and check time: a row that
        // comes with a mark of 0 writes the mark before its next ID.
        exec(
            conn,
            format!(
                "ALTER TABLE {}_lease {}",
                prefix(&plan.slug),
                LEASE_COLUMNS
                    .split(", ")
                    .map(|c| format!("ADD COLUMN IF NOT EXISTS {c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .await?;
        let (statements, fast) = fill(plan, &r.workers, r.ext, &r.registry_table, &r.holder)?;
        for sql in statements {
            exec(conn, sql).await?;
        }
        sqlx::query(q(format!(
            "UPDATE {CONFIG} SET dispatch = ?, version = ? WHERE name = ?"
        )))
        .bind(&fast)
        .bind(env!("CARGO_PKG_VERSION"))
        .bind(&r.name)
        .execute(&mut *conn)
        .await?;
        write_dispatchers(conn).await?;
        return Ok(Installed {
            schema: db,
            workers: r.workers.clone(),
            holder: r.holder.clone(),
            replaced: true,
        });
    }

    if let Some(registry) = external {
        let (block, marks) =
            super::external::reserve(conn, Dialect::MySql, registry, plan, &holder).await?;
        let now = super::block::db_now(conn, Dialect::MySql).await?;
        return match create(conn, plan, &block, &marks, now, &registry_table, &holder).await {
            Ok(()) => Ok(Installed {
                schema: db,
                workers: block,
                holder,
                replaced: false,
            }),
            Err(e) => {
                let _ = drop_objects(conn, &plan.slug).await;
                super::external::give_back(registry, &block, &holder).await;
                Err(e)
            }
        };
    }
    let block = super::block::choose_and_wait(conn, Dialect::MySql, plan).await?;
    let mut reserved = Vec::new();
    for w in &block {
        if !reserve_on(
            conn,
            Dialect::MySql,
            &o.registry_table,
            *w,
            &holder,
            &plan.record,
        )
        .await?
        {
            give_back(conn, plan, &reserved, &holder).await;
            return Err(Error::Unavailable(
                format!(
                    "worker ID {w} was claimed by a server while the install ran; run it again"
                )
                .into(),
            ));
        }
        reserved.push(*w);
    }
    match create_in_table(conn, plan, &block, &registry_table, &holder).await {
        Ok(()) => Ok(Installed {
            schema: db,
            workers: block,
            holder,
            replaced: false,
        }),
        Err(e) => {
            let _ = drop_objects(conn, &plan.slug).await;
            give_back(conn, plan, &reserved, &holder).await;
            Err(e)
        }
    }
}

/// Frees rows an install reserved before it failed (it issued nothing under them).
async fn give_back(conn: &mut AnyConnection, plan: &Plan<'_>, workers: &[u64], holder: &str) {
    for w in workers {
        let _ = unreserve_on(
            conn,
            Dialect::MySql,
            &plan.options.registry_table,
            *w,
            holder,
            0,
        )
        .await;
    }
}

/// Creates the tables and functions over a block reserved in the servers' table, reading
/// its marks again under the reservation (a server may have raised one meanwhile).
async fn create_in_table(
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    block: &[u64],
    registry_table: &str,
    holder: &str,
) -> Result<()> {
    let rows = table_rows(
        conn,
        Dialect::MySql,
        &plan.options.registry_table,
        plan.shape.space,
    )
    .await?;
    let marks = super::block::marks(plan, &rows, block)?;
    let now = super::block::db_now(conn, Dialect::MySql).await?;
    if let Some(m) = marks.iter().find(|m| m.ms > now) {
        return Err(Error::Unavailable(
            format!(
                "a server raised a worker ID's high-water mark to {} ms, ahead of the database clock, while the install ran; run it again",
                m.ms
            )
            .into(),
        ));
    }
    create(conn, plan, block, &marks, now, registry_table, holder).await
}

/// Creates the counters above `marks`, the functions and the install's record.
async fn create(
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    block: &[u64],
    marks: &[Mark],
    now: u64,
    registry_table: &str,
    holder: &str,
) -> Result<()> {
    let o = plan.options;
    let p = prefix(&plan.slug);
    let ext = super::block::extension(plan, marks)?;
    exec(
        conn,
        format!(
            "CREATE TABLE IF NOT EXISTS {CONFIG} (name VARCHAR(128) PRIMARY KEY, slug VARCHAR(64) NOT NULL UNIQUE, \
             layout VARCHAR(255) NOT NULL, workers TEXT NOT NULL, registry_table VARCHAR(255) NOT NULL, \
             holder VARCHAR(255) NOT NULL, ext BIGINT NOT NULL, dispatch TEXT NOT NULL, \
             installed_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), version VARCHAR(64) NOT NULL) ENGINE=InnoDB"
        ),
    )
    .await?;
    exec(
        conn,
        format!(
            "CREATE TABLE {p}_lease (worker_id INT NOT NULL PRIMARY KEY, holder BIGINT NULL, \
             expires_ms BIGINT NOT NULL DEFAULT 0, counter BIGINT NOT NULL, {LEASE_COLUMNS}) ENGINE=MEMORY"
        ),
    )
    .await?;
    exec(
        conn,
        format!(
            "CREATE TABLE {p}_mark (worker_id INT NOT NULL PRIMARY KEY, mark_ms BIGINT NOT NULL) \
             ENGINE=Aria TRANSACTIONAL=1"
        ),
    )
    .await?;
    let values = block
        .iter()
        .zip(marks)
        .map(|(w, m)| {
            let from = if m.extension == ext {
                m.ms.max(now)
            } else {
                now
            };
            format!("({w}, {from})")
        })
        .collect::<Vec<_>>()
        .join(", ");
    exec(
        conn,
        format!("INSERT INTO {p}_mark (worker_id, mark_ms) VALUES {values}"),
    )
    .await?;
    let (statements, fast) = fill(plan, block, ext, registry_table, holder)?;
    for sql in statements {
        exec(conn, sql).await?;
    }
    sqlx::query(q(format!(
        "INSERT INTO {CONFIG} (name, slug, layout, workers, registry_table, holder, ext, dispatch, version) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )))
    .bind(&o.generator)
    .bind(&plan.slug)
    .bind(&plan.record)
    .bind(
        block
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(","),
    )
    .bind(registry_table)
    .bind(holder)
    .bind(ext as i64)
    .bind(&fast)
    .bind(env!("CARGO_PKG_VERSION"))
    .execute(&mut *conn)
    .await?;
    write_dispatchers(conn).await
}

pub(super) async fn uninstall(
    conn: &mut AnyConnection,
    generator: &str,
    slug: &str,
    schema: Option<&str>,
    wait: Duration,
    registry: Option<&str>,
) -> Result<Uninstalled> {
    let db = database(conn, schema).await?;
    let Some(r) = records(conn)
        .await?
        .into_iter()
        .find(|r| r.name == generator)
    else {
        return Err(Error::InvalidInput(format!(
            "generator {generator:?} is not installed in database {db}"
        )));
    };
    // Where the marks go, checked before anything is removed.
    let external = super::external::open_recorded(&r.registry_table, registry, generator).await?;
    let layout = snowdrift_core::layout::migrate::parse_record(&r.layout)
        .map_err(|e| Error::InvalidInput(format!("{CONFIG}: {e}")))?;
    let shape = Shape::of(&layout)?;
    let p = prefix(slug);
    // Triggers that still call the generator would fail from now on: refuse.
    let users: Vec<String> = sqlx::query_scalar(
        "SELECT CONCAT(EVENT_OBJECT_TABLE, '.', TRIGGER_NAME) FROM information_schema.TRIGGERS \
         WHERE TRIGGER_SCHEMA = DATABASE() AND ACTION_STATEMENT LIKE CONCAT('%snowdrift_id(''', ?, '''%') ORDER BY 1",
    )
    .bind(generator)
    .fetch_all(&mut *conn)
    .await?;
    if !users.is_empty() {
        return Err(Error::InvalidInput(format!(
            "triggers still call snowdrift_id({generator:?}): {}; drop them first. Nothing was removed",
            users.join(", ")
        )));
    }
    // Dropping the function that moves the counters waits for the statements using it;
    // after it, the counters are final.
    exec(
        conn,
        format!("SET SESSION lock_wait_timeout = {}", wait.as_secs().max(1)),
    )
    .await?;
    exec(conn, format!("DROP FUNCTION IF EXISTS {p}_next")).await?;
    let counters: HashMap<u64, i64> =
        sqlx::query(q(format!("SELECT worker_id, counter FROM {p}_lease")))
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<i32, _>("worker_id")? as u64,
                    row.try_get("counter")?,
                ))
            })
            .collect::<Result<_>>()?;
    let marks: HashMap<u64, i64> =
        sqlx::query(q(format!("SELECT worker_id, mark_ms FROM {p}_mark")))
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<i32, _>("worker_id")? as u64,
                    row.try_get("mark_ms")?,
                ))
            })
            .collect::<Result<_>>()?;
    let mut done = Uninstalled {
        released: Vec::new(),
        not_reserved: Vec::new(),
    };
    let mut to_write = Vec::new();
    let table = r.registry_table.clone();
    for w in &r.workers {
        let last = counters
            .get(w)
            .map_or(0, |c| shape.tick_end_ms(shape.tick(*c as u64)));
        let mark_ms = last.max(marks.get(w).copied().unwrap_or(0) as u64);
        let stored = Mark {
            extension: r.ext,
            ms: mark_ms,
        }
        .stored();
        if external.is_some() {
            to_write.push((*w, stored, mark_ms));
        } else if unreserve_on(conn, Dialect::MySql, &table, *w, &r.holder, stored).await? {
            done.released.push((*w, mark_ms));
        } else {
            done.not_reserved.push(*w);
        }
    }
    drop_objects(conn, slug).await?;
    sqlx::query(q(format!("DELETE FROM {CONFIG} WHERE name = ?")))
        .bind(generator)
        .execute(&mut *conn)
        .await?;
    write_dispatchers(conn).await?;
    // Only now that no function can issue under them: the marks cover every ID issued.
    if let Some(reg) = &external {
        super::external::write_back(reg, &r.holder, to_write, &mut done).await?;
    }
    Ok(done)
}

pub(super) async fn status(
    conn: &mut AnyConnection,
    schema: Option<&str>,
    registry: Option<&str>,
) -> Result<Vec<GeneratorStatus>> {
    let db = database(conn, schema).await?;
    let mut out = Vec::new();
    for r in records(conn).await? {
        let p = prefix(&r.slug);
        let layout = snowdrift_core::layout::migrate::parse_record(&r.layout)
            .map_err(|e| Error::InvalidInput(format!("{CONFIG}: {e}")))?;
        let shape = Shape::of(&layout)?;
        let now = super::block::db_now(conn, Dialect::MySql).await?;
        let leases = sqlx::query(q(format!(
            "SELECT l.worker_id, l.holder, l.expires_ms, l.counter, p.USER AS user, p.HOST AS host, \
             p.COMMAND AS command FROM {p}_lease l LEFT JOIN information_schema.PROCESSLIST p ON p.ID = l.holder"
        )))
        .fetch_all(&mut *conn)
        .await?;
        let mut by_worker = HashMap::new();
        for l in &leases {
            let w: i32 = l.try_get("worker_id")?;
            by_worker.insert(w as u64, l);
        }
        let marks: HashMap<u64, i64> =
            sqlx::query(q(format!("SELECT worker_id, mark_ms FROM {p}_mark")))
                .fetch_all(&mut *conn)
                .await?
                .iter()
                .map(|row| {
                    Ok((
                        row.try_get::<i32, _>("worker_id")? as u64,
                        row.try_get("mark_ms")?,
                    ))
                })
                .collect::<Result<_>>()?;
        let (reserved, checked) =
            super::external::reservations(conn, &r.registry_table, registry, &r.name, shape.space)
                .await?;
        let mut workers = Vec::new();
        for w in &r.workers {
            let lease = by_worker.get(w);
            let session = match lease {
                Some(l) => {
                    let holder: Option<i64> = l.try_get("holder")?;
                    let expires: i64 = l.try_get("expires_ms")?;
                    match holder {
                        Some(pid) if expires > now as i64 => Some(Session {
                            pid,
                            user: l.try_get("user")?,
                            application: None,
                            client: l.try_get("host")?,
                            state: l.try_get("command")?,
                        }),
                        _ => None,
                    }
                }
                None => None,
            };
            let counter: Option<i64> = lease.map(|l| l.try_get("counter")).transpose()?;
            workers.push(WorkerStatus {
                worker_id: *w,
                last_ms: counter.map(|c| shape.epoch_ms + shape.tick(c as u64) * shape.unit_ms),
                mark_ms: marks.get(w).map(|m| *m as u64),
                reserved: reserved
                    .get(w)
                    .is_some_and(|(h, until)| *h == r.holder && *until == RESERVED_UNTIL_MS),
                claimed_by: session.clone(),
                in_use_by: session,
            });
        }
        out.push(GeneratorStatus {
            name: r.name,
            schema: db.clone(),
            layout: r.layout,
            registry_table: r.registry_table,
            holder: r.holder,
            reservation_checked: checked,
            fenced: !leases.is_empty(),
            workers,
        });
    }
    Ok(out)
}
