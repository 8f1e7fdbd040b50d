//! A look at a SQL segment table without changing anything: whether it exists, whether its
//! columns are the ones snowdrift's segment SQL reads and writes (Leaf's), and its tags.
//! [`SqlSegmentStore::connect`](super::SqlSegmentStore::connect) creates and extends the
//! table; this is for reading another system's table, and for previews that must write
//! nothing.

use sqlx::{AnyPool, AssertSqlSafe, Row};

use super::tag::{Tag, validate_table};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;

/// The columns snowdrift's segment SQL uses, as Leaf's `leaf_alloc` has them, and what each
/// must be: the SQL types that hold them (as `information_schema` or SQLite name them).
const COLUMNS: [(&str, &[&str], &str); 5] = [
    (
        "biz_tag",
        &["varchar", "character varying", "char", "character", "text"],
        "VARCHAR(128)",
    ),
    ("max_id", &["bigint", "int8"], "BIGINT"),
    (
        "step",
        &["int", "integer", "int4", "bigint", "int8", "mediumint"],
        "INT",
    ),
    (
        "description",
        &["varchar", "character varying", "char", "character", "text"],
        "VARCHAR(256)",
    ),
    (
        "update_time",
        &[
            "timestamp",
            "timestamp without time zone",
            "timestamp with time zone",
            "datetime",
        ],
        "TIMESTAMP",
    ),
];

/// What [`inspect`] found in a SQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableInspection {
    /// The table (as asked for).
    pub table: String,
    /// Whether the table exists. A missing table has no columns and no tags.
    pub exists: bool,
    /// Each column the table has, with its SQL type in lower case (`bigint`,
    /// `character varying`).
    pub columns: Vec<(String, String)>,
    /// The tags in it, by name (read only when its columns are right).
    pub tags: Vec<Tag>,
}

impl TableInspection {
    /// The columns snowdrift needs that the table lacks or holds with a type that does not
    /// fit, each said with what to do; empty when it is a segment table snowdrift serves.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for (column, types, wanted) in COLUMNS {
            match self.columns.iter().find(|(name, _)| name == column) {
                None => problems.push(format!(
                    "it has no column {column} ({wanted}, as in Leaf's leaf_alloc)"
                )),
                Some((_, ty)) => {
                    let base = ty.split('(').next().unwrap_or(ty).trim();
                    if !types.contains(&base) {
                        problems.push(format!(
                            "its column {column} is {ty}, not {wanted}{}",
                            if column == "max_id" {
                                ": IDs past its range could not be claimed; change it to BIGINT first"
                            } else {
                                ""
                            }
                        ));
                    }
                }
            }
        }
        problems
    }

    /// Refuses a table that is missing or not a segment table, naming what is wrong.
    pub fn check(&self, what: &str) -> Result<()> {
        if !self.exists {
            return Err(Error::InvalidInput(format!(
                "{what} has no table {}: give the database that holds it (and --table if it is named otherwise)",
                self.table
            )));
        }
        let problems = self.problems();
        if problems.is_empty() {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "table {} of {what} is not a segment table snowdrift can serve: {}",
            self.table,
            problems.join("; ")
        )))
    }
}

/// Reads table `table` of the SQL database `url` (`sqlite://`, `postgres://`, `mysql://`,
/// `mariadb://`): its columns, and its tags when the columns are right. Writes nothing: a
/// missing table is reported as missing, not created (a SQLite file must exist).
pub async fn inspect(url: &str, table: &str) -> Result<TableInspection> {
    validate_table(table)?;
    let (pool, dialect) = crate::sql_connection::connect_existing(url).await?;
    let result = read(&pool, dialect, table).await;
    pool.close().await;
    result
}

/// The tags of `names` that the segment store at `url` holds (any backend, as
/// [`SegmentStore::connect`](super::SegmentStore::connect) names them), read without writing
/// anything: a SQL table through [`inspect`] (a missing table holds none; one that is not a
/// segment table is refused), Redis keys as they are, ZooKeeper's znodes under `/table`
/// (none when `/table` does not exist). Tags it does not hold are left out.
pub async fn read_tags(url: &str, table: &str, names: &[String]) -> Result<Vec<Tag>> {
    super::SegmentStore::check(url, table)?;
    let scheme = url.split(':').next().unwrap_or_default();
    let found = match scheme {
        #[cfg(feature = "redis")]
        "redis" | "rediss" => {
            let store = super::RedisSegmentStore::connect(url, table).await?;
            let mut tags = Vec::new();
            for name in names {
                match store.get_tag(name).await {
                    Ok(tag) => tags.push(tag),
                    Err(Error::TagNotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            tags
        }
        #[cfg(feature = "zookeeper")]
        "zookeeper" | "zk" => {
            let Some(store) = super::ZkSegmentStore::open_existing(url, table).await? else {
                return Ok(Vec::new());
            };
            let mut tags = Vec::new();
            for name in names {
                match store.get_tag(name).await {
                    Ok(tag) => tags.push(tag),
                    Err(Error::TagNotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            tags
        }
        _ if crate::sql_connection::sqlite_file_missing(url) => Vec::new(),
        _ => {
            let found = inspect(url, table).await?;
            if found.exists {
                found.check("the store")?;
            }
            found.tags
        }
    };
    Ok(found
        .into_iter()
        .filter(|t| names.contains(&t.tag))
        .collect())
}

async fn read(pool: &AnyPool, dialect: Dialect, table: &str) -> Result<TableInspection> {
    let columns = columns(pool, dialect, table).await?;
    let mut found = TableInspection {
        table: table.to_string(),
        exists: !columns.is_empty(),
        columns,
        tags: Vec::new(),
    };
    if !found.exists || !found.problems().is_empty() {
        return Ok(found);
    }
    let dated = ["id_template", "utc_offset", "period_key"]
        .iter()
        .all(|c| found.columns.iter().any(|(name, _)| name == c));
    let select = format!(
        "SELECT biz_tag, max_id, step, description{} FROM {table} ORDER BY biz_tag",
        if dated {
            ", id_template, utc_offset, period_key"
        } else {
            ""
        }
    );
    let rows = sqlx::query(AssertSqlSafe(select)).fetch_all(pool).await?;
    found.tags = rows.iter().map(super::sql::tag_of).collect::<Result<_>>()?;
    Ok(found)
}

/// The table's columns and their types, lower case; empty when there is no such table.
pub(crate) async fn columns(
    pool: &AnyPool,
    dialect: Dialect,
    table: &str,
) -> Result<Vec<(String, String)>> {
    let query = match dialect {
        Dialect::Sqlite => "SELECT name, LOWER(type) FROM pragma_table_info(?)",
        Dialect::Postgres => {
            "SELECT CAST(column_name AS TEXT), CAST(data_type AS TEXT) FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1"
        }
        Dialect::MySql => {
            "SELECT CAST(COLUMN_NAME AS CHAR), CAST(LOWER(DATA_TYPE) AS CHAR) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?"
        }
    };
    // PostgreSQL folds an unquoted name to lower case; snowdrift's names are unquoted.
    let name = if dialect == Dialect::Postgres {
        table.to_ascii_lowercase()
    } else {
        table.to_string()
    };
    let rows = sqlx::query(query).bind(name).fetch_all(pool).await?;
    rows.iter()
        .map(|r| {
            let name: String = r.try_get(0)?;
            let ty: String = r.try_get(1)?;
            let ty = ty.to_ascii_lowercase();
            // SQLite's INTEGER is 64 bits (PostgreSQL's is 32).
            let ty = if dialect == Dialect::Sqlite && ty == "integer" {
                "bigint".to_string()
            } else {
                ty
            };
            Ok((name.to_ascii_lowercase(), ty))
        })
        .collect()
}
