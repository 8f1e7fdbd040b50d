//! Reading the state other ID systems leave behind, where they keep it, so it can be
//! carried over to snowdrift (`snowdrift import`): Didi Tinyid's tables ([`tinyid`]), Baidu
//! UidGenerator's `WORKER_NODE` table ([`uidgenerator`]) and Meituan Leaf's snowflake
//! workers in ZooKeeper ([`leaf`]). Leaf's segment table is snowdrift's own
//! ([`crate::segment::inspect`] checks one). Everything here only reads.
//!
//! A database that cannot be reached is [`Error::Unavailable`](crate::Error::Unavailable);
//! one that does not hold the peer's tables, or holds a row the peer itself could not have
//! written, is [`Error::InvalidInput`](crate::Error::InvalidInput) naming the table, column
//! or row.

#[cfg(feature = "zookeeper")]
pub mod leaf;
pub mod tinyid;
pub mod uidgenerator;

use crate::error::Error;
use crate::sql_connection::Dialect;

/// A SQL expression's cast to a 64-bit integer in `dialect`.
pub(crate) fn as_bigint(dialect: Dialect, expr: &str) -> String {
    match dialect {
        Dialect::MySql => format!("CAST({expr} AS SIGNED)"),
        Dialect::Postgres => format!("CAST({expr} AS BIGINT)"),
        Dialect::Sqlite => format!("CAST({expr} AS INTEGER)"),
    }
}

/// A SQL expression's cast to text in `dialect`.
pub(crate) fn as_text(dialect: Dialect, expr: &str) -> String {
    match dialect {
        Dialect::MySql => format!("CAST({expr} AS CHAR)"),
        Dialect::Postgres | Dialect::Sqlite => format!("CAST({expr} AS TEXT)"),
    }
}

/// A failed read of a peer's table: an error the database answered (no such table, no such
/// column) means the database is not the peer's, said with what was expected; anything
/// else (a lost connection) is the database being unavailable.
pub(crate) fn read_failed(e: sqlx::Error, shown: &str, expected: &str) -> Error {
    match e {
        sqlx::Error::Database(db) => Error::InvalidInput(format!(
            "{shown} does not hold {expected}: the database answered {:?}; give the peer's own database",
            db.message()
        )),
        e => e.into(),
    }
}
