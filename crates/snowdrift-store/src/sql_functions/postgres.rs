//! The functions on PostgreSQL (15 or later, for unlogged sequences): the reservation in
//! the servers' table, a counter and a mark sequence per worker ID, the PL/pgSQL of
//! `postgres.sql`, and the record of each install in `snowdrift_generators`.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::{AnyConnection, AssertSqlSafe, Connection, Row};

use super::names::{self, RESERVED_UNTIL_MS, literal, lock_classes, prefix};
use super::{
    GeneratorStatus, Installed, MAX_COUNT, Plan, Session, Shape, Uninstalled, WorkerStatus,
    block_text,
};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::sql::{reserve_on, table_rows, unreserve_on};
use crate::worker::{Mark, WorkerRegistry};

/// The functions of one generator, with `{{...}}` to fill in.
const TEMPLATE: &str = include_str!("postgres.sql");

/// The table recording each install, in the functions' schema.
const CONFIG: &str = "snowdrift_generators";

/// How often a session checks that its worker ID is still reserved.
const RECHECK_MS: u64 = 1000;

/// The oldest server the functions run on: unlogged sequences came in 15.
const MIN_VERSION: i32 = 150_000;

/// `SELECT`s of the database clock, in ms since 1970.
const NOW_MS: &str = "SELECT floor(date_part('epoch', clock_timestamp()) * 1000)::bigint";

fn q(sql: String) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql)
}

async fn exec(conn: &mut AnyConnection, sql: String) -> Result<()> {
    sqlx::raw_sql(q(sql)).execute(&mut *conn).await?;
    Ok(())
}

async fn db_now(conn: &mut AnyConnection) -> Result<u64> {
    let now: i64 = sqlx::query_scalar(NOW_MS).fetch_one(&mut *conn).await?;
    Ok(u64::try_from(now).unwrap_or(0))
}

/// The schema to use: the one given, which must exist, or the connection's current one.
async fn schema_of(conn: &mut AnyConnection, schema: Option<&str>) -> Result<String> {
    match schema {
        Some(s) => {
            let found: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM pg_namespace WHERE nspname = $1")
                    .bind(s)
                    .fetch_optional(&mut *conn)
                    .await?;
            if found.is_none() {
                return Err(Error::InvalidInput(format!(
                    "schema {s:?} does not exist in this database: create it (CREATE SCHEMA {s}) or leave --schema out"
                )));
            }
            Ok(s.to_string())
        }
        None => {
            let s: Option<String> = sqlx::query_scalar("SELECT current_schema()::text")
                .fetch_one(&mut *conn)
                .await?;
            let s = s.ok_or_else(|| {
                Error::InvalidInput(
                    "the connection has no current schema (its search_path names none that exists): pass --schema".into(),
                )
            })?;
            names::check_schema(&s)?;
            Ok(s)
        }
    }
}

/// `"schema"`, quoted.
fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}

async fn check_version(conn: &mut AnyConnection) -> Result<()> {
    let v: String = sqlx::query_scalar("SELECT current_setting('server_version_num')")
        .fetch_one(&mut *conn)
        .await?;
    let v: i32 = v.parse().unwrap_or(0);
    if v < MIN_VERSION {
        return Err(Error::InvalidInput(format!(
            "PostgreSQL {} is too old for snowdrift's ID functions: they need 15 or later (unlogged sequences tell them a crash happened)",
            v / 10_000
        )));
    }
    Ok(())
}

/// The registry table's name, qualified and quoted (`"public"."snowdrift_workers_x"`), as
/// this connection's search path finds it.
async fn qualified_table(conn: &mut AnyConnection, table: &str) -> Result<String> {
    let row = sqlx::query(
        "SELECT n.nspname::text AS s, c.relname::text AS t FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)",
    )
    .bind(table)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| {
        Error::InvalidInput(format!(
            "the servers' worker table {table:?} is not on this connection's search_path"
        ))
    })?;
    let (s, t): (String, String) = (row.try_get("s")?, row.try_get("t")?);
    Ok(format!(
        "\"{}\".\"{}\"",
        s.replace('"', "\"\""),
        t.replace('"', "\"\"")
    ))
}

async fn config_exists(conn: &mut AnyConnection, schema: &str) -> Result<bool> {
    let found: Option<String> = sqlx::query_scalar("SELECT to_regclass($1)::text")
        .bind(format!("{}.{CONFIG}", quoted(schema)))
        .fetch_one(&mut *conn)
        .await?;
    Ok(found.is_some())
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
}

async fn records(conn: &mut AnyConnection, schema: &str) -> Result<Vec<Record>> {
    if !config_exists(conn, schema).await? {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(q(format!(
        "SELECT name, slug, layout, workers, registry_table, holder, ext FROM {}.{CONFIG} ORDER BY name",
        quoted(schema)
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
                            "{schema}.{CONFIG} lists worker {w:?}, not a number: it was edited by hand"
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
            })
        })
        .collect()
}

/// The values the template's `{{...}}` take for one generator.
struct Fill<'a> {
    schema: &'a str,
    plan: &'a Plan<'a>,
    workers: &'a [u64],
    ext: u64,
    registry_table: &'a str,
    holder: &'a str,
}

impl Fill<'_> {
    fn sql(&self) -> Result<String> {
        let s = quoted(self.schema);
        let p = prefix(&self.plan.slug);
        let shape = &self.plan.shape;
        let o = self.plan.options;
        let [claim, use_, fence] = lock_classes(self.schema, &self.plan.slug);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let list = |f: &dyn Fn(u64) -> String| {
            self.workers
                .iter()
                .map(|w| f(*w))
                .collect::<Vec<_>>()
                .join(",")
        };
        let regclasses = |kind: char| {
            format!(
                "ARRAY[{}]::regclass[]",
                list(&|w| format!("'{s}.{p}_{kind}{w}'::regclass"))
            )
        };
        let clock = if o.test_clock {
            "(floor(date_part('epoch', clock_timestamp()) * 1000)::bigint \
             + coalesce(nullif(current_setting('snowdrift.test_clock_offset_ms', true), '')::bigint, 0))"
        } else {
            "floor(date_part('epoch', clock_timestamp()) * 1000)::bigint"
        };
        let name = literal(&o.generator)?;
        let check_body = if let Some((backend, namespace)) =
            super::external::recorded(self.registry_table)
        {
            // Not a check that passes by itself: there is nothing the database can read.
            format!(
                "-- The reservation lives in the servers' {backend} registry (namespace {namespace}), which the database cannot reach: it is not checked here.\n  NULL;"
            )
        } else {
            format!(
            "SELECT holder, lease_expires_ms INTO h, until_ms FROM {reg} WHERE worker_id = w;
  IF h IS DISTINCT FROM {holder} OR until_ms IS DISTINCT FROM {RESERVED_UNTIL_MS} THEN
    RAISE EXCEPTION USING ERRCODE = 'SDRSV',
      MESSAGE = format('snowdrift_id(%L): worker ID %s is no longer reserved for this database in table %s (its holder is %s): no ID is issued under it', {name}, w, {reg_text}, coalesce(h, 'nobody')),
      HINT = 'someone freed it by hand or took it; install the functions again (snowdrift sql uninstall, snowdrift sql install)';
  END IF;",
            reg = self.registry_table,
            holder = literal(self.holder)?,
            reg_text = literal(self.registry_table)?,
        )
        };
        let values: Vec<(&str, String)> = vec![
            ("CHECK_BODY", check_body),
            ("S", s.clone()),
            ("PREFIX", p.clone()),
            ("SLUG", self.plan.slug.clone()),
            ("NAME", name),
            (
                "BLOCK",
                format!("'{{{}}}'::integer[]", list(&|w| w.to_string())),
            ),
            ("SEQS", regclasses('w')),
            ("MARKS", regclasses('m')),
            (
                "NODES",
                format!(
                    "'{{{}}}'::bigint[]",
                    list(&|w| Shape::node_part(&o.layout, w).to_string())
                ),
            ),
            ("BLOCK_TEXT", literal(&block_text(self.workers))?),
            ("SPACE", shape.space.to_string()),
            ("CLAIM", claim.to_string()),
            ("USE", use_.to_string()),
            ("FENCE", fence.to_string()),
            ("EXT", self.ext.to_string()),
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
            ("RECHECK_MS", RECHECK_MS.to_string()),
            ("MAX_COUNT", MAX_COUNT.to_string()),
            ("CLOCK", clock.to_string()),
        ];
        let mut sql = TEMPLATE.to_string();
        for (key, value) in &values {
            sql = sql.replace(&format!("{{{{{key}}}}}"), value);
        }
        debug_assert!(!sql.contains("{{"), "a placeholder is left unfilled");
        Ok(sql)
    }
}

/// `snowdrift_id(generator)`, `snowdrift_ids(generator, n)` and the refusal of an unknown
/// name, over the generators recorded in the schema's config table; dropped when none is
/// left. `snowdrift_id` is SQL, so the planner inlines its `CASE` into the caller's query.
async fn write_dispatchers(conn: &mut AnyConnection, schema: &str) -> Result<()> {
    let s = quoted(schema);
    let all = records(conn, schema).await?;
    if all.is_empty() {
        exec(
            conn,
            format!(
                "DROP FUNCTION IF EXISTS {s}.snowdrift_id(text); \
                 DROP FUNCTION IF EXISTS {s}.snowdrift_ids(text, integer); \
                 DROP FUNCTION IF EXISTS {s}.snowdrift_unknown(text); \
                 DROP TABLE IF EXISTS {s}.{CONFIG};"
            ),
        )
        .await?;
        return Ok(());
    }
    let names = literal(
        &all.iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    )?;
    let mut one = String::new();
    let mut many = String::new();
    for r in &all {
        let (name, p) = (literal(&r.name)?, prefix(&r.slug));
        one.push_str(&format!(" WHEN {name} THEN {s}.{p}_id()"));
        many.push_str(&format!(
            " WHEN {name} THEN RETURN QUERY SELECT * FROM {s}.{p}_ids(n);"
        ));
    }
    exec(
        conn,
        format!(
            "CREATE OR REPLACE FUNCTION {s}.snowdrift_unknown(generator text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RAISE EXCEPTION USING ERRCODE = '22023',
    MESSAGE = format('snowdrift_id(%L): no generator of that name is installed in this database (installed: %s)', generator, {names}),
    HINT = 'snowdrift sql install --generator NAME installs one';
END
$fn$;
CREATE OR REPLACE FUNCTION {s}.snowdrift_id(generator text) RETURNS bigint
LANGUAGE sql VOLATILE AS $fn$
  SELECT CASE generator{one} ELSE {s}.snowdrift_unknown(generator) END
$fn$;
CREATE OR REPLACE FUNCTION {s}.snowdrift_ids(generator text, n integer) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  CASE generator{many}
  ELSE PERFORM {s}.snowdrift_unknown(generator);
  END CASE;
END
$fn$;"
        ),
    )
    .await
}

pub(super) async fn install(
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    external: Option<&WorkerRegistry>,
) -> Result<Installed> {
    let o = plan.options;
    check_version(conn).await?;
    let schema = schema_of(conn, o.schema.as_deref()).await?;
    let registry_table = match external {
        Some(r) => super::external::place(r, &o.registry_table),
        None => qualified_table(conn, &o.registry_table).await?,
    };
    let database: String = sqlx::query_scalar("SELECT current_database()::text")
        .fetch_one(&mut *conn)
        .await?;
    let holder = format!("{}postgres:{database}/{schema}", names::RESERVATION_PREFIX);

    let existing = records(conn, &schema).await?;
    if let Some(r) = existing
        .iter()
        .find(|r| r.slug == plan.slug && r.name != o.generator)
    {
        return Err(Error::InvalidInput(format!(
            "generator {:?} would use the same object names as {:?}, installed already in schema {schema}: rename one",
            o.generator, r.name
        )));
    }
    if let Some(r) = existing.iter().find(|r| r.name == o.generator) {
        if r.registry_table != registry_table {
            return Err(Error::InvalidInput(format!(
                "generator {:?} is installed in schema {schema} with its worker IDs reserved in {}, not {registry_table}: uninstall it first (snowdrift sql uninstall) to move the reservation",
                r.name, r.registry_table
            )));
        }
        return replace(conn, plan, &schema, r).await;
    }
    if let Some(registry) = external {
        let (block, marks) =
            super::external::reserve(conn, Dialect::Postgres, registry, plan, &holder).await?;
        let mut tx = conn.begin().await?;
        let made = async {
            let now = db_now(&mut tx).await?;
            create(
                &mut tx,
                plan,
                &schema,
                &block,
                &marks,
                now,
                &registry_table,
                &holder,
            )
            .await?;
            tx.commit().await?;
            Ok(())
        }
        .await;
        if let Err(e) = made {
            super::external::give_back(registry, &block, &holder).await;
            return Err(e);
        }
        return Ok(Installed {
            schema,
            workers: block,
            holder,
            replaced: false,
        });
    }

    let block = super::block::choose_and_wait(conn, Dialect::Postgres, plan).await?;

    let mut tx = conn.begin().await?;
    for w in &block {
        if !reserve_on(
            &mut tx,
            Dialect::Postgres,
            &o.registry_table,
            *w,
            &holder,
            &plan.record,
        )
        .await?
        {
            return Err(Error::Unavailable(
                format!(
                    "worker ID {w} was claimed by a server while the install ran; run it again"
                )
                .into(),
            ));
        }
    }
    // Read again under the reservation: a server may have raised a mark meanwhile.
    let rows = table_rows(
        &mut tx,
        Dialect::Postgres,
        &o.registry_table,
        plan.shape.space,
    )
    .await?;
    let marks = super::block::marks(plan, &rows, &block)?;
    let now = db_now(&mut tx).await?;
    if let Some(m) = marks.iter().find(|m| m.ms > now) {
        return Err(Error::Unavailable(
            format!(
                "a server raised a worker ID's high-water mark to {} ms, ahead of the database clock, while the install ran; run it again",
                m.ms
            )
            .into(),
        ));
    }
    create(
        &mut tx,
        plan,
        &schema,
        &block,
        &marks,
        now,
        &registry_table,
        &holder,
    )
    .await?;
    tx.commit().await?;
    Ok(Installed {
        schema,
        workers: block,
        holder,
        replaced: false,
    })
}

/// Creates the counters above `marks`, the functions and the install's record, in the
/// caller's transaction.
#[allow(clippy::too_many_arguments)]
async fn create(
    tx: &mut AnyConnection,
    plan: &Plan<'_>,
    schema: &str,
    block: &[u64],
    marks: &[Mark],
    now: u64,
    registry_table: &str,
    holder: &str,
) -> Result<()> {
    let o = plan.options;
    // Issue under the highest extension value any of them used: above all of them.
    let ext = super::block::extension(plan, marks)?;
    let s = quoted(schema);
    let p = prefix(&plan.slug);
    exec(
        tx,
        format!(
            "CREATE TABLE IF NOT EXISTS {s}.{CONFIG} (
  name text PRIMARY KEY, slug text NOT NULL UNIQUE, layout text NOT NULL,
  workers text NOT NULL, registry_table text NOT NULL, holder text NOT NULL,
  ext bigint NOT NULL, installed_at timestamptz NOT NULL DEFAULT now(), version text NOT NULL)"
        ),
    )
    .await?;
    let mut ddl = format!("CREATE UNLOGGED SEQUENCE {s}.{p}_life MINVALUE 0 START 0 CACHE 1;\n");
    for (w, m) in block.iter().zip(marks) {
        let from = if m.extension == ext {
            m.ms.max(now)
        } else {
            now
        };
        let counter = plan.shape.counter(ext, plan.shape.tick_after(from), 0);
        ddl.push_str(&format!(
            "CREATE SEQUENCE {s}.{p}_w{w} MINVALUE 0 START {counter} CACHE 1; \
             SELECT setval('{s}.{p}_w{w}', {counter}); \
             CREATE SEQUENCE {s}.{p}_m{w} MINVALUE 0 START {from} CACHE 1; \
             SELECT setval('{s}.{p}_m{w}', {from});\n"
        ));
    }
    exec(tx, ddl).await?;
    let fill = Fill {
        schema,
        plan,
        workers: block,
        ext,
        registry_table,
        holder,
    };
    exec(tx, fill.sql()?).await?;
    sqlx::query(q(format!(
        "INSERT INTO {s}.{CONFIG} (name, slug, layout, workers, registry_table, holder, ext, version) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
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
    .bind(env!("CARGO_PKG_VERSION"))
    .execute(&mut *tx)
    .await?;
    write_dispatchers(tx, schema).await
}

/// Writes an installed generator's functions again (a newer version's), keeping its
/// counters, marks and reservation.
async fn replace(
    conn: &mut AnyConnection,
    plan: &Plan<'_>,
    schema: &str,
    r: &Record,
) -> Result<Installed> {
    if r.layout != plan.record {
        return Err(Error::InvalidInput(format!(
            "generator {:?} is installed in schema {schema} with layout {}, not {}: uninstall it first (snowdrift sql uninstall) to change the layout",
            r.name, r.layout, plan.record
        )));
    }
    if r.workers.len() as u64 != plan.options.workers {
        return Err(Error::InvalidInput(format!(
            "generator {:?} is installed in schema {schema} with {} worker IDs, not {}: uninstall it first (snowdrift sql uninstall) to change how many",
            r.name,
            r.workers.len(),
            plan.options.workers
        )));
    }
    let mut tx = conn.begin().await?;
    let fill = Fill {
        schema,
        plan,
        workers: &r.workers,
        ext: r.ext,
        registry_table: &r.registry_table,
        holder: &r.holder,
    };
    exec(&mut tx, fill.sql()?).await?;
    write_dispatchers(&mut tx, schema).await?;
    tx.commit().await?;
    Ok(Installed {
        schema: schema.to_string(),
        workers: r.workers.clone(),
        holder: r.holder.clone(),
        replaced: true,
    })
}

pub(super) async fn uninstall(
    conn: &mut AnyConnection,
    generator: &str,
    slug: &str,
    schema: Option<&str>,
    wait: Duration,
    registry: Option<&str>,
) -> Result<Uninstalled> {
    let schema = schema_of(conn, schema).await?;
    let all = records(conn, &schema).await?;
    let Some(r) = all.into_iter().find(|r| r.name == generator) else {
        return Err(Error::InvalidInput(format!(
            "generator {generator:?} is not installed in schema {schema} of this database"
        )));
    };
    // Where the marks go, checked before anything is removed.
    let external = super::external::open_recorded(&r.registry_table, registry, generator).await?;
    let layout = snowdrift_core::layout::migrate::parse_record(&r.layout)
        .map_err(|e| Error::InvalidInput(format!("{schema}.{CONFIG}: {e}")))?;
    let shape = Shape::of(&layout)?;
    let [_, use_, _] = lock_classes(&schema, slug);
    let (s, p) = (quoted(&schema), prefix(slug));
    // Column defaults that still call the generator would fail from now on: refuse.
    let users: Vec<String> = sqlx::query_scalar(
        "SELECT format('%s.%I', d.adrelid::regclass, a.attname) FROM pg_attrdef d \
         JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
         WHERE pg_get_expr(d.adbin, d.adrelid) LIKE '%snowdrift_id(' || quote_literal($1) || '%' \
         ORDER BY 1",
    )
    .bind(generator)
    .fetch_all(&mut *conn)
    .await?;
    if !users.is_empty() {
        return Err(Error::InvalidInput(format!(
            "column defaults still call snowdrift_id({generator:?}): {}; drop them first (ALTER TABLE ... ALTER COLUMN ... DROP DEFAULT). Nothing was removed",
            users.join(", ")
        )));
    }
    let mut tx = conn.begin().await?;
    exec(
        &mut tx,
        format!("SET LOCAL lock_timeout = '{}ms'", wait.as_millis().max(1)),
    )
    .await?;
    // Wait for every transaction issuing under the worker IDs; none starts again, since
    // this one holds their locks until the functions are gone.
    for w in &r.workers {
        sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
            .bind(use_)
            .bind(*w as i32)
            .execute(&mut *tx)
            .await
            .map_err(|e| match e.as_database_error().and_then(|d| d.code()) {
                Some(code) if code == "55P03" => Error::Unavailable(
                    format!("a transaction kept issuing under worker ID {w} for longer than {wait:?}; end it or wait longer (--wait)").into(),
                ),
                _ => e.into(),
            })?;
    }
    let registry_table = r.registry_table.clone();
    let mut done = Uninstalled {
        released: Vec::new(),
        not_reserved: Vec::new(),
    };
    let mut to_write = Vec::new();
    for w in &r.workers {
        let row = sqlx::query(q(format!(
            "SELECT pg_sequence_last_value('{s}.{p}_w{w}') AS c, pg_sequence_last_value('{s}.{p}_m{w}') AS m"
        )))
        .fetch_one(&mut *tx)
        .await?;
        let c: Option<i64> = row.try_get("c")?;
        let m: Option<i64> = row.try_get("m")?;
        let last = c.map_or(0, |c| shape.tick_end_ms(shape.tick(c as u64)));
        let mark_ms = last.max(m.unwrap_or(0) as u64);
        let stored = Mark {
            extension: r.ext,
            ms: mark_ms,
        }
        .stored();
        if external.is_some() {
            to_write.push((*w, stored, mark_ms));
        } else if unreserve_on(
            &mut tx,
            Dialect::Postgres,
            &registry_table,
            *w,
            &r.holder,
            stored,
        )
        .await?
        {
            done.released.push((*w, mark_ms));
        } else {
            done.not_reserved.push(*w);
        }
    }
    let mut ddl = format!(
        "DROP FUNCTION IF EXISTS {s}.{p}_id(); DROP FUNCTION IF EXISTS {s}.{p}_ids(integer); \
         DROP FUNCTION IF EXISTS {s}.{p}_slow(bigint, bigint); DROP FUNCTION IF EXISTS {s}.{p}_take(); \
         DROP FUNCTION IF EXISTS {s}.{p}_check(integer); DROP SEQUENCE IF EXISTS {s}.{p}_life;\n"
    );
    for w in &r.workers {
        ddl.push_str(&format!(
            "DROP SEQUENCE IF EXISTS {s}.{p}_w{w}; DROP SEQUENCE IF EXISTS {s}.{p}_m{w};\n"
        ));
    }
    exec(&mut tx, ddl).await?;
    sqlx::query(q(format!("DELETE FROM {s}.{CONFIG} WHERE name = $1")))
        .bind(generator)
        .execute(&mut *tx)
        .await?;
    write_dispatchers(&mut tx, &schema).await?;
    tx.commit().await?;
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
    let schema = schema_of(conn, schema).await?;
    let s = quoted(&schema);
    let mut out = Vec::new();
    for r in records(conn, &schema).await? {
        let p = prefix(&r.slug);
        let layout = snowdrift_core::layout::migrate::parse_record(&r.layout)
            .map_err(|e| Error::InvalidInput(format!("{schema}.{CONFIG}: {e}")))?;
        let shape = Shape::of(&layout)?;
        let [claim, use_, _] = lock_classes(&schema, &r.slug);
        let fenced: Option<i64> =
            sqlx::query_scalar(q(format!("SELECT pg_sequence_last_value('{s}.{p}_life')")))
                .fetch_one(&mut *conn)
                .await?;
        // Who holds which lock, with what pg_stat_activity says of them.
        let locks = sqlx::query(
            "SELECT l.classid::bigint AS class, l.objid::bigint AS w, l.pid::bigint AS pid, \
             a.usename::text AS usename, a.application_name::text AS app, \
             host(a.client_addr) AS client, a.state::text AS state \
             FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted \
             AND l.classid::bigint IN ($1, $2)",
        )
        .bind(i64::from(claim))
        .bind(i64::from(use_))
        .fetch_all(&mut *conn)
        .await?;
        let mut claimed = HashMap::new();
        let mut used = HashMap::new();
        for l in &locks {
            let class: i64 = l.try_get("class")?;
            let w: i64 = l.try_get("w")?;
            let session = Session {
                pid: l.try_get("pid")?,
                user: l.try_get("usename")?,
                application: l.try_get("app")?,
                client: l.try_get("client")?,
                state: l.try_get("state")?,
            };
            if class == i64::from(claim) {
                claimed.insert(w as u64, session);
            } else {
                used.insert(w as u64, session);
            }
        }
        let (rows, checked) =
            super::external::reservations(conn, &r.registry_table, registry, &r.name, shape.space)
                .await?;
        let mut workers = Vec::new();
        for w in &r.workers {
            let row = sqlx::query(q(format!(
                "SELECT pg_sequence_last_value('{s}.{p}_w{w}') AS c, pg_sequence_last_value('{s}.{p}_m{w}') AS m"
            )))
            .fetch_one(&mut *conn)
            .await?;
            let c: Option<i64> = row.try_get("c")?;
            let m: Option<i64> = row.try_get("m")?;
            workers.push(WorkerStatus {
                worker_id: *w,
                last_ms: c.map(|c| shape.epoch_ms + shape.tick(c as u64) * shape.unit_ms),
                mark_ms: m.map(|m| m as u64),
                reserved: rows
                    .get(w)
                    .is_some_and(|(h, until)| *h == r.holder && *until == RESERVED_UNTIL_MS),
                claimed_by: claimed.remove(w),
                in_use_by: used.remove(w),
            });
        }
        out.push(GeneratorStatus {
            name: r.name,
            schema: schema.clone(),
            layout: r.layout,
            registry_table: r.registry_table,
            reservation_checked: checked,
            holder: r.holder,
            fenced: fenced.is_some(),
            workers,
        });
    }
    Ok(out)
}
