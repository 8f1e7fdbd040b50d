//! The functions on PostgreSQL (15 or later, for unlogged sequences): the reservation in
//! the servers' table, a counter and a mark sequence per worker ID, the PL/pgSQL of
//! `postgres.sql`, and the record of each install in `snowdrift_generators`.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::{AnyConnection, AssertSqlSafe, Connection, Row};

use super::flow::{CONFIG, Database, Record, Sessions, State};
use super::names::{self, RESERVED_UNTIL_MS, literal, lock_classes, prefix};
use super::{MAX_COUNT, Plan, Session, Shape, block_text};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::Mark;

/// The functions of one generator, with `{{...}}` to fill in.
const TEMPLATE: &str = include_str!("postgres.sql");

/// How often a session checks that its worker ID is still reserved.
const RECHECK_MS: u64 = 1000;

/// The oldest server the functions run on: unlogged sequences came in 15.
const MIN_VERSION: i32 = 150_000;

fn q(sql: String) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql)
}

async fn exec(conn: &mut AnyConnection, sql: String) -> Result<()> {
    sqlx::raw_sql(q(sql)).execute(&mut *conn).await?;
    Ok(())
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
    rows.iter().map(Record::from_row).collect()
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
                "ARRAY[{}]::pg_catalog.regclass[]",
                list(&|w| format!("'{s}.{p}_{kind}{w}'::pg_catalog.regclass"))
            )
        };
        // Every function and operator schema-qualified: `_id` runs with the caller's
        // search_path (see postgres.sql).
        let real = "pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) \
                    OPERATOR(pg_catalog.*) 1000)::bigint";
        let clock = if o.test_clock {
            format!(
                "({real} OPERATOR(pg_catalog.+) coalesce((CASE WHEN pg_catalog.current_setting('snowdrift.test_clock_offset_ms', true) \
                 OPERATOR(pg_catalog.<>) '' THEN pg_catalog.current_setting('snowdrift.test_clock_offset_ms', true) END)::bigint, 0))"
            )
        } else {
            real.to_string()
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
            ("CLOCK", clock),
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

/// PostgreSQL, for [`flow`](super::flow): an install or uninstall is one transaction.
pub(super) struct Postgres;

impl Database for Postgres {
    const DIALECT: Dialect = Dialect::Postgres;
    const CALLERS: (&'static str, &'static str) = (
        "column defaults",
        "ALTER TABLE ... ALTER COLUMN ... DROP DEFAULT",
    );

    async fn check_server(&self, conn: &mut AnyConnection) -> Result<()> {
        check_version(conn).await
    }

    async fn schema(&self, conn: &mut AnyConnection, given: Option<&str>) -> Result<String> {
        schema_of(conn, given).await
    }

    async fn holder(&self, conn: &mut AnyConnection, schema: &str) -> Result<String> {
        let database: String = sqlx::query_scalar("SELECT current_database()::text")
            .fetch_one(&mut *conn)
            .await?;
        Ok(format!(
            "{}postgres:{database}/{schema}",
            names::RESERVATION_PREFIX
        ))
    }

    async fn table_place(
        &self,
        conn: &mut AnyConnection,
        _schema: &str,
        table: &str,
    ) -> Result<String> {
        qualified_table(conn, table).await
    }

    async fn records(&self, conn: &mut AnyConnection, schema: &str) -> Result<Vec<Record>> {
        records(conn, schema).await
    }

    async fn begin(&self, conn: &mut AnyConnection) -> Result<()> {
        exec(conn, "BEGIN".into()).await
    }

    async fn commit(&self, conn: &mut AnyConnection) -> Result<()> {
        exec(conn, "COMMIT".into()).await
    }

    async fn rollback(&self, conn: &mut AnyConnection) {
        let _ = exec(conn, "ROLLBACK".into()).await;
    }

    async fn abort_install(
        &self,
        conn: &mut AnyConnection,
        _plan: &Plan<'_>,
        _reserved: &[u64],
        _holder: &str,
    ) {
        // The reservation and the objects were made in the transaction.
        self.rollback(conn).await;
    }

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
    ) -> Result<()> {
        // Issue under the highest extension value any of them used: above all of them.
        let ext = super::block::extension(plan, marks)?;
        let s = quoted(schema);
        let p = prefix(&plan.slug);
        exec(
            conn,
            format!(
                "CREATE TABLE IF NOT EXISTS {s}.{CONFIG} (
  name text PRIMARY KEY, slug text NOT NULL UNIQUE, layout text NOT NULL,
  workers text NOT NULL, registry_table text NOT NULL, holder text NOT NULL,
  ext bigint NOT NULL, installed_at timestamptz NOT NULL DEFAULT now(), version text NOT NULL)"
            ),
        )
        .await?;
        let mut ddl =
            format!("CREATE UNLOGGED SEQUENCE {s}.{p}_life MINVALUE 0 START 0 CACHE 1;\n");
        for (w, from) in block.iter().zip(super::block::starts(marks, ext, now)) {
            let counter = plan.shape.counter(ext, plan.shape.tick_after(from), 0);
            ddl.push_str(&format!(
                "CREATE SEQUENCE {s}.{p}_w{w} MINVALUE 0 START {counter} CACHE 1; \
                 SELECT setval('{s}.{p}_w{w}', {counter}); \
                 CREATE SEQUENCE {s}.{p}_m{w} MINVALUE 0 START {from} CACHE 1; \
                 SELECT setval('{s}.{p}_m{w}', {from});\n"
            ));
        }
        exec(conn, ddl).await?;
        let fill = Fill {
            schema,
            plan,
            workers: block,
            ext,
            registry_table,
            holder,
        };
        exec(conn, fill.sql()?).await?;
        let config = format!("{s}.{CONFIG}");
        super::flow::record(
            conn,
            Dialect::Postgres,
            &config,
            plan,
            block,
            registry_table,
            holder,
            ext,
            None,
        )
        .await?;
        write_dispatchers(conn, schema).await
    }

    async fn replace(
        &self,
        conn: &mut AnyConnection,
        plan: &Plan<'_>,
        schema: &str,
        r: &Record,
    ) -> Result<()> {
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
        Ok(())
    }

    async fn callers(&self, conn: &mut AnyConnection, generator: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT format('%s.%I', d.adrelid::regclass, a.attname) FROM pg_attrdef d \
             JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
             WHERE pg_get_expr(d.adbin, d.adrelid) LIKE '%snowdrift_id(' || quote_literal($1) || '%' \
             ORDER BY 1",
        )
        .bind(generator)
        .fetch_all(&mut *conn)
        .await?)
    }

    async fn quiesce(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        r: &Record,
        wait: Duration,
    ) -> Result<()> {
        let [_, use_, _] = lock_classes(schema, &r.slug);
        self.begin(conn).await?;
        exec(
            conn,
            format!("SET LOCAL lock_timeout = '{}ms'", wait.as_millis().max(1)),
        )
        .await?;
        // Wait for every transaction issuing under the worker IDs; none starts again, since
        // this one holds their locks until the functions are gone.
        for w in &r.workers {
            sqlx::query("SELECT pg_advisory_xact_lock($1, $2)")
                .bind(use_)
                .bind(*w as i32)
                .execute(&mut *conn)
                .await
                .map_err(|e| match e.as_database_error().and_then(|d| d.code()) {
                    Some(code) if code == "55P03" => Error::Unavailable(
                        format!("a transaction kept issuing under worker ID {w} for longer than {wait:?}; end it or wait longer (--wait)").into(),
                    ),
                    _ => e.into(),
                })?;
        }
        Ok(())
    }

    async fn states(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        r: &Record,
    ) -> Result<HashMap<u64, State>> {
        let (s, p) = (quoted(schema), prefix(&r.slug));
        let mut out = HashMap::new();
        for w in &r.workers {
            let row = sqlx::query(q(format!(
                "SELECT pg_sequence_last_value('{s}.{p}_w{w}') AS c, pg_sequence_last_value('{s}.{p}_m{w}') AS m"
            )))
            .fetch_one(&mut *conn)
            .await?;
            out.insert(*w, (row.try_get("c")?, row.try_get("m")?));
        }
        Ok(out)
    }

    async fn forget(&self, conn: &mut AnyConnection, schema: &str, r: &Record) -> Result<()> {
        let (s, p) = (quoted(schema), prefix(&r.slug));
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
        exec(conn, ddl).await?;
        sqlx::query(q(format!("DELETE FROM {s}.{CONFIG} WHERE name = $1")))
            .bind(&r.name)
            .execute(&mut *conn)
            .await?;
        write_dispatchers(conn, schema).await
    }

    async fn sessions(
        &self,
        conn: &mut AnyConnection,
        schema: &str,
        r: &Record,
    ) -> Result<Sessions> {
        let (s, p) = (quoted(schema), prefix(&r.slug));
        let [claim, use_, _] = lock_classes(schema, &r.slug);
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
        let mut out = Sessions {
            fenced: fenced.is_some(),
            ..Sessions::default()
        };
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
                out.claimed.insert(w as u64, session);
            } else {
                out.in_use.insert(w as u64, session);
            }
        }
        Ok(out)
    }
}
