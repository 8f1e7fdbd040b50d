//! The functions on MariaDB (10.6 or later): the reservation in the servers' table, a
//! MEMORY table of leases and counters, an Aria table of marks, the stored functions of
//! `mariadb.sql`, and the record of each install in `snowdrift_generators`.
//!
//! MariaDB runs DDL outside transactions, so an install that fails drops what it made and
//! gives the block back.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::{AnyConnection, AssertSqlSafe, Row};

use super::flow::{CONFIG, Database, Record, Sessions, State};
use super::names::{self, RESERVED_UNTIL_MS, literal, prefix};
use super::{Plan, Session, block_text};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::Mark;
use crate::worker::sql::unreserve_on;

/// The functions of one generator, with `{{...}}` to fill in, statements apart.
const TEMPLATE: &str = include_str!("mariadb.sql");

/// A generator's branch of `snowdrift_id`: its fast path, inlined.
const FAST_PATH: &str = include_str!("mariadb_fast.sql");

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

/// Every generator's record, with its branch of `snowdrift_id`.
async fn records_with_dispatch(conn: &mut AnyConnection) -> Result<Vec<(Record, String)>> {
    if !config_exists(conn).await? {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(q(format!(
        "SELECT name, slug, layout, workers, registry_table, holder, ext, dispatch FROM {CONFIG} ORDER BY name"
    )))
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|row| Ok((Record::from_row(row)?, row.try_get("dispatch")?)))
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
    let all = records_with_dispatch(conn).await?;
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
        .map(|(r, _)| r.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let unknown = lit(&format!(
        "snowdrift_id: no generator of that name is installed in this database (installed: {names})"
    ))?;
    let mut one = String::new();
    let mut many = String::new();
    for (r, dispatch) in &all {
        let (name, p) = (lit(&r.name)?, prefix(&r.slug));
        one.push_str(dispatch);
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

/// `(worker ID, BIGINT)` rows of `sql`, by worker ID.
async fn pairs(conn: &mut AnyConnection, sql: String) -> Result<HashMap<u64, i64>> {
    let rows = sqlx::query(q(sql)).fetch_all(&mut *conn).await?;
    rows.iter()
        .map(|row| Ok((row.try_get::<i32, _>(0)? as u64, row.try_get::<i64, _>(1)?)))
        .collect()
}

/// MariaDB, for [`flow`](super::flow): its DDL commits by itself, so a failed install
/// drops what it made and gives the rows back.
pub(super) struct MariaDb;

impl Database for MariaDb {
    const DIALECT: Dialect = Dialect::MySql;
    const CALLERS: (&'static str, &'static str) = ("triggers", "DROP TRIGGER ...");

    async fn check_server(&self, conn: &mut AnyConnection) -> Result<()> {
        check_server(conn).await
    }

    async fn schema(&self, conn: &mut AnyConnection, given: Option<&str>) -> Result<String> {
        database(conn, given).await
    }

    async fn holder(&self, _conn: &mut AnyConnection, schema: &str) -> Result<String> {
        Ok(format!("{}mariadb:{schema}", names::RESERVATION_PREFIX))
    }

    async fn table_place(
        &self,
        _conn: &mut AnyConnection,
        schema: &str,
        table: &str,
    ) -> Result<String> {
        Ok(format!("`{schema}`.`{table}`"))
    }

    async fn records(&self, conn: &mut AnyConnection, _schema: &str) -> Result<Vec<Record>> {
        Ok(records_with_dispatch(conn)
            .await?
            .into_iter()
            .map(|(r, _)| r)
            .collect())
    }

    async fn begin(&self, _conn: &mut AnyConnection) -> Result<()> {
        Ok(())
    }

    async fn commit(&self, _conn: &mut AnyConnection) -> Result<()> {
        Ok(())
    }

    async fn rollback(&self, _conn: &mut AnyConnection) {}

    async fn abort_install(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        reserved: &[u64],
        holder: &str,
    ) {
        let _ = drop_objects(conn, &plan.slug).await;
        // Rows it reserved before it failed: it issued nothing under them.
        for w in reserved {
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

    async fn create(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        _schema: &str,
        block: &[u64],
        marks: &[Mark],
        now: u64,
        registry_table: &str,
        holder: &str,
    ) -> Result<()> {
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
            .zip(super::block::starts(marks, ext, now))
            .map(|(w, from)| format!("({w}, {from})"))
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
        super::flow::record(
            conn,
            Dialect::MySql,
            CONFIG,
            plan,
            block,
            registry_table,
            holder,
            ext,
            Some(&fast),
        )
        .await?;
        write_dispatchers(conn).await
    }

    async fn replace(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        _schema: &str,
        r: &Record,
    ) -> Result<()> {
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
        write_dispatchers(conn).await
    }

    async fn callers(&self, conn: &mut AnyConnection, generator: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT CONCAT(EVENT_OBJECT_TABLE, '.', TRIGGER_NAME) FROM information_schema.TRIGGERS \
             WHERE TRIGGER_SCHEMA = DATABASE() AND ACTION_STATEMENT LIKE CONCAT('%snowdrift_id(''', ?, '''%') ORDER BY 1",
        )
        .bind(generator)
        .fetch_all(&mut *conn)
        .await?)
    }

    async fn quiesce(
        &self,
        conn: &mut AnyConnection,
        _schema: &str,
        r: &Record,
        wait: Duration,
    ) -> Result<()> {
        // Dropping the function that moves the counters waits for the statements using
        // it; after it, the counters are final.
        exec(
            conn,
            format!("SET SESSION lock_wait_timeout = {}", wait.as_secs().max(1)),
        )
        .await?;
        exec(
            conn,
            format!("DROP FUNCTION IF EXISTS {}_next", prefix(&r.slug)),
        )
        .await
    }

    async fn states(
        &self,
        conn: &mut AnyConnection,
        _schema: &str,
        r: &Record,
    ) -> Result<HashMap<u64, State>> {
        let p = prefix(&r.slug);
        let counters = pairs(conn, format!("SELECT worker_id, counter FROM {p}_lease")).await?;
        let marks = pairs(conn, format!("SELECT worker_id, mark_ms FROM {p}_mark")).await?;
        Ok(r.workers
            .iter()
            .map(|w| (*w, (counters.get(w).copied(), marks.get(w).copied())))
            .collect())
    }

    async fn forget(&self, conn: &mut AnyConnection, _schema: &str, r: &Record) -> Result<()> {
        drop_objects(conn, &r.slug).await?;
        sqlx::query(q(format!("DELETE FROM {CONFIG} WHERE name = ?")))
            .bind(&r.name)
            .execute(&mut *conn)
            .await?;
        write_dispatchers(conn).await
    }

    async fn sessions(
        &self,
        conn: &mut AnyConnection,
        _schema: &str,
        r: &Record,
    ) -> Result<Sessions> {
        let p = prefix(&r.slug);
        let now = super::block::db_now(conn, Dialect::MySql).await?;
        let leases = sqlx::query(q(format!(
            "SELECT l.worker_id, l.holder, l.expires_ms, p.USER AS user, p.HOST AS host, \
             p.COMMAND AS command FROM {p}_lease l LEFT JOIN information_schema.PROCESSLIST p ON p.ID = l.holder"
        )))
        .fetch_all(&mut *conn)
        .await?;
        let mut out = Sessions {
            // The lease rows come back with the first call after a restart.
            fenced: !leases.is_empty(),
            ..Sessions::default()
        };
        for l in &leases {
            let w: i32 = l.try_get("worker_id")?;
            let holder: Option<i64> = l.try_get("holder")?;
            let expires: i64 = l.try_get("expires_ms")?;
            if let Some(pid) = holder.filter(|_| expires > now as i64) {
                let session = Session {
                    pid,
                    user: l.try_get("user")?,
                    application: None,
                    client: l.try_get("host")?,
                    state: l.try_get("command")?,
                };
                // A session's lease is both its claim and its use.
                out.claimed.insert(w as u64, session.clone());
                out.in_use.insert(w as u64, session);
            }
        }
        Ok(out)
    }
}
