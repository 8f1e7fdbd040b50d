//! Which worker IDs an install reserves, read from the servers' table: the highest ones no
//! live lease holds (servers claim from the lowest), with the marks and layouts their
//! rows recorded checked against the generator's.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::AnyConnection;

use super::Plan;
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::Mark;
use crate::worker::sql::{TableRow, table_rows};

/// The worker IDs chosen.
pub(super) fn choose(plan: &Plan<'_>, rows: &[TableRow]) -> Result<Vec<u64>> {
    let o = plan.options;
    let space = plan.shape.space;
    for r in rows.iter().filter(|r| r.live()) {
        if let Some(l) = &r.layout
            && *l != plan.record
        {
            return Err(Error::InvalidInput(format!(
                "worker ID {} is held by {:?}, which issues under layout {l}, not {}: install the functions with the servers' layout (--layout/--bits)",
                r.worker_id,
                r.holder.as_deref().unwrap_or("?"),
                plan.record
            )));
        }
    }
    let by_id: HashMap<u64, &TableRow> = rows.iter().map(|r| (r.worker_id, r)).collect();
    let block: Vec<u64> = (0..space)
        .rev()
        .filter(|w| by_id.get(w).is_none_or(|r| !r.live()))
        .take(o.workers as usize)
        .collect();
    if (block.len() as u64) < o.workers {
        return Err(Error::InvalidInput(format!(
            "only {} of the layout's {space} worker IDs are free in table {}, {} asked: stop servers or ask for fewer (--workers)",
            block.len(),
            o.registry_table,
            o.workers
        )));
    }
    Ok(block)
}

/// The marks the rows of `block` hold (none: the mark of no ID), refusing a row last
/// used under another layout.
pub(super) fn marks(plan: &Plan<'_>, rows: &[TableRow], block: &[u64]) -> Result<Vec<Mark>> {
    let by_id: HashMap<u64, &TableRow> = rows.iter().map(|r| (r.worker_id, r)).collect();
    block
        .iter()
        .map(|w| {
            let row = by_id.get(w);
            if let Some(l) = row.and_then(|r| r.layout.as_ref())
                && *l != plan.record
            {
                return Err(Error::InvalidInput(format!(
                    "worker ID {w} was last used under layout {l}, not {}: install with that layout, or check the move with snowdrift layout migrate",
                    plan.record
                )));
            }
            Ok(row
                .and_then(|r| r.mark)
                .map(Mark::from_stored)
                .unwrap_or_default())
        })
        .collect()
}

/// The database clock, in ms since 1970.
pub(super) async fn db_now(conn: &mut AnyConnection, dialect: Dialect) -> Result<u64> {
    let sql = format!("SELECT {}", dialect.now_ms());
    let now: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
        .fetch_one(&mut *conn)
        .await?;
    Ok(u64::try_from(now).unwrap_or(0))
}

/// Chooses the block and waits for the database clock to pass the highest mark its rows
/// hold, as a server waits for a mark it takes over.
pub(super) async fn choose_and_wait(
    conn: &mut AnyConnection,
    dialect: Dialect,
    plan: &Plan<'_>,
) -> Result<Vec<u64>> {
    let o = plan.options;
    let rows = table_rows(conn, dialect, &o.registry_table, plan.shape.space).await?;
    let block = choose(plan, &rows)?;
    let marks = marks(plan, &rows, &block)?;
    wait_past(conn, dialect, plan, &block, &marks).await?;
    Ok(block)
}

/// Waits for the database clock to pass the highest of `marks` (those of `block`), as a
/// server waits for a mark it takes over; refuses one further ahead than `max_mark_wait`.
pub(super) async fn wait_past(
    conn: &mut AnyConnection,
    dialect: Dialect,
    plan: &Plan<'_>,
    block: &[u64],
    marks: &[Mark],
) -> Result<()> {
    let o = plan.options;
    let top = marks.iter().map(|m| m.ms).max().unwrap_or(0);
    let now = db_now(conn, dialect).await?;
    if top > now {
        let wait = top - now;
        if wait > u64::try_from(o.max_mark_wait.as_millis()).unwrap_or(u64::MAX) {
            return Err(Error::MarkAhead {
                worker_id: block[0],
                mark_ms: top,
                now_ms: now,
                gap: Duration::from_millis(wait),
                bound: o.max_mark_wait,
                advice: "the database clock is behind the servers' high-water marks: fix it (NTP), or wait and install again".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(wait + 1)).await;
    }
    Ok(())
}

/// Where each worker ID's counter starts (ms): above its mark when the mark carries the
/// extension value `ext` the database issues under, else at the clock `now` (any ID under
/// a higher extension value is above every one under a lower).
pub(super) fn starts(marks: &[Mark], ext: u64, now: u64) -> impl Iterator<Item = u64> + '_ {
    marks.iter().map(move |m| {
        if m.extension == ext {
            m.ms.max(now)
        } else {
            now
        }
    })
}

/// The block as the install's record lists it: `1020,1021,1022,1023`.
pub(super) fn list(block: &[u64]) -> String {
    block
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The extension value the database issues under: the highest its rows' marks carry, so
/// its IDs are above all of theirs.
pub(super) fn extension(plan: &Plan<'_>, marks: &[Mark]) -> Result<u64> {
    let ext = marks.iter().map(|m| m.extension).max().unwrap_or(0);
    if ext > plan.shape.ext_max {
        return Err(Error::InvalidInput(format!(
            "a worker ID's mark carries extension value {ext}, beyond the layout's extension field: install with the servers' layout"
        )));
    }
    Ok(ext)
}
