//! What the SQL worker registry sends to its database, as a trait: one statement at a time,
//! with its binds, answered by a count of rows changed or by rows. The sqlx pool implements
//! it for a real database ([`SqlxDb`]: SQLite, PostgreSQL, MySQL/MariaDB), the deterministic
//! simulator (`crates/snowdrift-sim`) with an in-process SQLite behind a simulated network,
//! so both drive the one registry. Every statement is a transaction of its own
//! (autocommit): the registry's guarantees rest on single conditional statements.

use std::future::Future;
use std::pin::Pin;

use sqlx::{AnyPool, Column, Row, ValueRef};

use crate::error::{Error, Result};

/// A boxed future, so [`SqlDb`] can be a trait object.
pub type SqlFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// A bound parameter or a column's value.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// `NULL`.
    Null,
    /// An integer (`BIGINT` and the like).
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl SqlValue {
    /// What kind of value it is, for messages.
    fn kind(&self) -> &'static str {
        match self {
            SqlValue::Null => "NULL",
            SqlValue::Int(_) => "an integer",
            SqlValue::Real(_) => "a real number",
            SqlValue::Text(_) => "text",
            SqlValue::Blob(_) => "bytes",
        }
    }
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        SqlValue::Int(v)
    }
}

impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        SqlValue::Text(v.to_string())
    }
}

/// One row of an answer: its columns by name, in the statement's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SqlRow {
    columns: Vec<(String, SqlValue)>,
}

impl SqlRow {
    /// The row of `columns` (name and value, in order).
    pub fn new(columns: Vec<(String, SqlValue)>) -> Self {
        Self { columns }
    }

    /// The value of column `name`.
    pub fn get(&self, name: &str) -> Result<&SqlValue> {
        self.columns
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .ok_or_else(|| Error::Unavailable(format!("the answer has no column {name}").into()))
    }

    fn wrong(name: &str, v: &SqlValue, wanted: &str) -> Error {
        Error::Unavailable(format!("column {name} holds {}, not {wanted}", v.kind()).into())
    }

    /// Column `name` as an integer, `None` when `NULL`.
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name)? {
            SqlValue::Null => Ok(None),
            SqlValue::Int(v) => Ok(Some(*v)),
            v => Err(Self::wrong(name, v, "an integer")),
        }
    }

    /// Column `name` as an integer.
    pub fn int(&self, name: &str) -> Result<i64> {
        self.opt_int(name)?
            .ok_or_else(|| Self::wrong(name, &SqlValue::Null, "an integer"))
    }

    /// Column `name` as text, `None` when `NULL`.
    pub fn opt_text(&self, name: &str) -> Result<Option<String>> {
        match self.get(name)? {
            SqlValue::Null => Ok(None),
            SqlValue::Text(v) => Ok(Some(v.clone())),
            v => Err(Self::wrong(name, v, "text")),
        }
    }

    /// Column `name` as text.
    pub fn text(&self, name: &str) -> Result<String> {
        self.opt_text(name)?
            .ok_or_else(|| Self::wrong(name, &SqlValue::Null, "text"))
    }
}

/// A SQL database as the registry's connection pool sees it: every call may fail with
/// [`Error::Unavailable`] (no connection, a lost one, a server error), and a write may or
/// may not have taken effect then. Each statement commits on its own.
pub trait SqlDb: Send + Sync + std::fmt::Debug {
    /// Runs `ddl` (a `CREATE TABLE IF NOT EXISTS`), once more if a racing creator made the
    /// table at the same instant.
    fn create_table(&self, ddl: String) -> SqlFuture<'_, ()>;
    /// Runs `sql` with `binds` for its `?`s (or `$n`s); the number of rows it changed (on
    /// MySQL: matched).
    fn execute(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, u64>;
    /// Runs the `INSERT` `sql` with `binds`: `false` when the row's key is taken (a unique
    /// violation), which changes nothing.
    fn insert(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, bool>;
    /// Runs the query `sql` with `binds`; its rows.
    fn fetch(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, Vec<SqlRow>>;
    /// Closes its connections.
    fn close(&self) -> SqlFuture<'_, ()>;
}

/// [`SqlDb`] over a sqlx pool: the product's.
#[derive(Debug, Clone)]
pub(crate) struct SqlxDb {
    pool: AnyPool,
}

impl SqlxDb {
    pub(crate) fn new(pool: AnyPool) -> Self {
        Self { pool }
    }
}

pub(crate) fn bound(
    sql: String,
    binds: Vec<SqlValue>,
) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for b in binds {
        q = match b {
            SqlValue::Null => q.bind(None::<i64>),
            SqlValue::Int(v) => q.bind(v),
            SqlValue::Real(v) => q.bind(v),
            SqlValue::Text(v) => q.bind(v),
            SqlValue::Blob(v) => q.bind(v),
        };
    }
    q
}

/// Column `i` of `row` as a [`SqlValue`], by the first type sqlx decodes it as.
fn value_of(row: &sqlx::any::AnyRow, i: usize) -> Result<SqlValue> {
    if row.try_get_raw(i)?.is_null() {
        return Ok(SqlValue::Null);
    }
    if let Ok(v) = row.try_get::<i64, _>(i) {
        return Ok(SqlValue::Int(v));
    }
    if let Ok(v) = row.try_get::<String, _>(i) {
        return Ok(SqlValue::Text(v));
    }
    if let Ok(v) = row.try_get::<f64, _>(i) {
        return Ok(SqlValue::Real(v));
    }
    if let Ok(v) = row.try_get::<f32, _>(i) {
        return Ok(SqlValue::Real(f64::from(v)));
    }
    if let Ok(v) = row.try_get::<bool, _>(i) {
        return Ok(SqlValue::Int(i64::from(v)));
    }
    Ok(SqlValue::Blob(row.try_get::<Vec<u8>, _>(i)?))
}

impl SqlDb for SqlxDb {
    fn create_table(&self, ddl: String) -> SqlFuture<'_, ()> {
        Box::pin(crate::sql_connection::create_table(
            &self.pool,
            sqlx::AssertSqlSafe(ddl),
        ))
    }

    fn execute(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, u64> {
        Box::pin(async move { Ok(bound(sql, binds).execute(&self.pool).await?.rows_affected()) })
    }

    fn insert(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, bool> {
        Box::pin(async move {
            match bound(sql, binds).execute(&self.pool).await {
                Ok(_) => Ok(true),
                Err(e)
                    if e.as_database_error()
                        .is_some_and(|d| d.is_unique_violation()) =>
                {
                    Ok(false)
                }
                Err(e) => Err(e.into()),
            }
        })
    }

    fn fetch(&self, sql: String, binds: Vec<SqlValue>) -> SqlFuture<'_, Vec<SqlRow>> {
        Box::pin(async move {
            let rows = bound(sql, binds).fetch_all(&self.pool).await?;
            rows.iter()
                .map(|row| {
                    let columns = row
                        .columns()
                        .iter()
                        .map(|c| Ok((c.name().to_string(), value_of(row, c.ordinal())?)))
                        .collect::<Result<_>>()?;
                    Ok(SqlRow::new(columns))
                })
                .collect()
        })
    }

    fn close(&self) -> SqlFuture<'_, ()> {
        Box::pin(async move {
            self.pool.close().await;
            Ok(())
        })
    }
}
