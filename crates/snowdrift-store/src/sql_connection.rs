//! Opening the SQL databases every SQL store and registry uses: the URL's scheme picks the
//! dialect, SQLite files are created in WAL mode, and a table is created if missing, safely
//! when several nodes start at once.

use std::time::Duration;

use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

use crate::error::{Error, Result};

/// Which SQL a database speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
    MySql,
}

/// The dialect a SQL URL's scheme names, and the URL as sqlx takes it (`mariadb:` becomes
/// `mysql:`): the one reading of `sqlite://`, `postgres://`, `postgresql://`, `mysql://` and
/// `mariadb://` for every SQL store, registry and ticket server. `Ok(None)` for a scheme
/// that is no SQL database, so each caller says what it takes; an error for a SQL scheme
/// this build left out.
pub(crate) fn dialect_of(url: &str) -> Result<Option<(Dialect, String)>> {
    let scheme = url.split(':').next().unwrap_or_default();
    let parsed = match scheme {
        "sqlite" if cfg!(feature = "sqlite") => (Dialect::Sqlite, url.to_string()),
        "postgres" | "postgresql" if cfg!(feature = "postgres") => {
            (Dialect::Postgres, url.to_string())
        }
        "mysql" | "mariadb" if cfg!(feature = "mysql") => {
            (Dialect::MySql, url.replacen("mariadb:", "mysql:", 1))
        }
        "sqlite" | "postgres" | "postgresql" | "mysql" | "mariadb" => {
            return Err(Error::InvalidUrl {
                url: crate::mask_url(url),
                reason: format!("this build has no {scheme} support (cargo feature)"),
            });
        }
        _ => return Ok(None),
    };
    Ok(Some(parsed))
}

/// Connects to `url` (`sqlite://file.db`, `postgres://...`, `mysql://...`, `mariadb://...`).
/// A missing SQLite file is created and put in WAL mode.
pub(crate) async fn connect(url: &str) -> Result<(AnyPool, Dialect)> {
    let (dialect, url) = match dialect_of(url)? {
        Some((Dialect::Sqlite, url)) => (Dialect::Sqlite, sqlite_create_mode(&url)),
        Some(parsed) => parsed,
        None => {
            let scheme = url.split(':').next().unwrap_or_default();
            return Err(Error::InvalidUrl {
                url: format!("{scheme}://…"),
                reason: "use sqlite://FILE, postgres://USER@HOST/DB or mysql://USER@HOST/DB".into(),
            });
        }
    };
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(if dialect == Dialect::Sqlite { 4 } else { 8 })
        .acquire_timeout(Duration::from_secs(5))
        .after_release(|conn, _| Box::pin(settled_within(conn, RELEASE_CHECK)))
        .connect(&url)
        .await?;
    if dialect == Dialect::Sqlite {
        // WAL lets readers and the writer proceed together; the setting sticks to the file.
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&pool)
            .await?;
    }
    Ok((pool, dialect))
}

/// Connects to `url` as [`connect`] does, changing nothing: a SQLite file must exist and
/// keeps its journal mode. For reading another system's tables, and previews.
pub(crate) async fn connect_existing(url: &str) -> Result<(AnyPool, Dialect)> {
    let Some((dialect, url)) = dialect_of(url)? else {
        let scheme = url.split(':').next().unwrap_or_default();
        return Err(Error::InvalidUrl {
            url: format!("{scheme}://…"),
            reason: "use sqlite://FILE, postgres://USER@HOST/DB or mysql://USER@HOST/DB".into(),
        });
    };
    sqlx::any::install_default_drivers();
    // One connection first, so a database that refuses or is not there is said as such (a
    // pool only reports that it timed out waiting).
    {
        use sqlx::Connection;
        let probe =
            tokio::time::timeout(Duration::from_secs(5), sqlx::AnyConnection::connect(&url))
                .await
                .map_err(|_| {
                    Error::Unavailable(
                        format!("{} did not answer within 5 s", crate::mask_url(&url)).into(),
                    )
                })??;
        probe.close().await.ok();
    }
    let pool = AnyPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(5))
        .after_release(|conn, _| Box::pin(settled_within(conn, RELEASE_CHECK)))
        .connect(&url)
        .await?;
    Ok((pool, dialect))
}

/// How long a connection coming back to the pool may take to answer a ping: well inside the
/// 5 s a caller waits for a connection, so one that never answers frees its place for a
/// caller already waiting.
const RELEASE_CHECK: Duration = Duration::from_secs(2);

/// Whether a connection coming back to the pool answers a ping within `limit`; an error
/// closes it instead of pooling it.
///
/// A call abandoned mid-answer (a claim past its timeout, a request whose client went
/// away) returns its connection with the rest of the answer unread. sqlx reads it off
/// with a ping that has no time limit before pooling the connection, and the MySQL driver
/// can lose its place in the stream when abandoned between a packet's header and body: it
/// then waits for bytes that never come, and the connection's place in the pool is gone
/// for good. Eight of those and the pool is empty until a restart; one, and closing the
/// pool never returns. Bounding the ping here, ahead of sqlx's own, closes such a
/// connection instead.
async fn settled_within(
    conn: &mut sqlx::AnyConnection,
    limit: Duration,
) -> std::result::Result<bool, sqlx::Error> {
    use sqlx::Connection;
    match tokio::time::timeout(limit, conn.ping()).await {
        Ok(Ok(())) => Ok(true),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("a connection returned to the pool did not answer a ping within {limit:?}"),
        ))),
    }
}

/// Whether a `CREATE ... IF NOT EXISTS` failed only because another node created the same
/// object at the same instant. PostgreSQL checks "if not exists" before it takes its catalog
/// locks, so the loser gets a unique violation on the catalog (23505), or finds the
/// object's row type (42710) or the object itself (42P07) already there, depending on where
/// the other node got to. Each means the other's object exists by then.
pub(crate) fn lost_the_create_race(e: &sqlx::Error) -> bool {
    const LOST_THE_RACE: [&str; 3] = ["23505", "42710", "42P07"];
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|c| LOST_THE_RACE.contains(&c.as_ref()))
}

/// Runs a `CREATE TABLE IF NOT EXISTS`, once more if it lost the race to create the table
/// ([`lost_the_create_race`]): the second run finds the other node's table.
pub(crate) async fn create_table(pool: &AnyPool, ddl: sqlx::AssertSqlSafe<String>) -> Result<()> {
    let again = sqlx::AssertSqlSafe(ddl.0.clone());
    match sqlx::query(ddl).execute(pool).await {
        Ok(_) => Ok(()),
        Err(e) if lost_the_create_race(&e) => {
            sqlx::query(again).execute(pool).await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// The dialect's engine clause for a table (InnoDB on MySQL/MariaDB, for row locks).
pub(crate) fn engine(dialect: Dialect) -> &'static str {
    if dialect == Dialect::MySql {
        " ENGINE=InnoDB"
    } else {
        ""
    }
}

/// Whether `url` is a `sqlite://` URL whose file does not exist (so there is nothing in it
/// to read, and [`connect_existing`] would refuse it).
pub(crate) fn sqlite_file_missing(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return false;
    };
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return false;
    }
    !std::path::Path::new(path).exists()
}

/// Adds `mode=rwc` so a missing SQLite file is created.
fn sqlite_create_mode(url: &str) -> String {
    if url.contains("mode=") {
        url.to_string()
    } else if url.contains('?') {
        format!("{url}&mode=rwc")
    } else {
        format!("{url}?mode=rwc")
    }
}
