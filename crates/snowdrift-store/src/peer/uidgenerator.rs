//! Baidu UidGenerator's `WORKER_NODE` table (its `WORKER_NODE.sql`): a row per start of a
//! generator, whose auto-increment `ID` was that start's worker ID (every start takes a new
//! one; none is reused).

use sqlx::{AssertSqlSafe, Row};

use super::{as_bigint, as_text, read_failed};
use crate::error::Result;

/// One `WORKER_NODE` row: a start of a UidGenerator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerNode {
    /// `ID`: the worker ID that start issued under.
    pub id: i64,
    /// `HOST_NAME`: the host's address (or a container's host).
    pub host_name: String,
    /// `PORT`: the port, or for a host its start time and a random number.
    pub port: String,
    /// `TYPE`: 1 for a container, 2 for an actual machine.
    pub node_type: i64,
    /// `LAUNCH_DATE`, as the database writes a date.
    pub launch_date: String,
}

/// Reads every `WORKER_NODE` row, by `ID`, from the database at `url` (`mysql://`,
/// `mariadb://`, `postgres://`). Writes nothing.
pub async fn read(url: &str) -> Result<Vec<WorkerNode>> {
    let shown = crate::mask_url(url);
    let (pool, dialect) = crate::sql_connection::connect_existing(url).await?;
    let select = format!(
        "SELECT {}, HOST_NAME, PORT, {}, {} FROM WORKER_NODE ORDER BY ID",
        as_bigint(dialect, "ID"),
        as_bigint(dialect, "TYPE"),
        as_text(dialect, "LAUNCH_DATE"),
    );
    let result: Result<_> = async {
        let rows = sqlx::query(AssertSqlSafe(select))
            .fetch_all(&pool)
            .await
            .map_err(|e| {
                read_failed(
                    e,
                    &shown,
                    "UidGenerator's table WORKER_NODE (ID, HOST_NAME, PORT, TYPE, LAUNCH_DATE: its WORKER_NODE.sql)",
                )
            })?;
        rows.iter()
            .map(|r| {
                Ok(WorkerNode {
                    id: r.try_get(0)?,
                    host_name: r.try_get(1)?,
                    port: r.try_get(2)?,
                    node_type: r.try_get(3)?,
                    launch_date: r.try_get(4)?,
                })
            })
            .collect::<Result<Vec<_>>>()
    }
    .await;
    pool.close().await;
    result
}
