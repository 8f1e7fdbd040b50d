//! A reservation in the servers' worker registry when it is not the database's own table
//! (etcd, ZooKeeper, Redis, a file registry, another SQL database): the block is chosen
//! among the IDs free there, reserved through [`WorkerRegistry::reserve`], and the marks
//! the registry holds for them are the database's floor. The database cannot reach that
//! registry, so its sessions do not check the reservation (see the docs page).

use std::collections::{HashMap, HashSet};

use sqlx::{AnyConnection, Row};

use super::names::RESERVED_UNTIL_MS;
use super::{Plan, Uninstalled};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;
use crate::worker::{Mark, WorkerRegistry};

/// The backends a reservation may be recorded in, as `backend:namespace`.
const BACKENDS: &[&str] = &[
    "file",
    "etcd",
    "zookeeper",
    "redis",
    "sqlite",
    "postgres",
    "mysql",
];

/// What the install records as the reservation's place: `backend:namespace`.
pub(super) fn place(registry: &WorkerRegistry, namespace: &str) -> String {
    format!("{}:{namespace}", registry.backend())
}

/// The backend and namespace of a recorded place, when the reservation lives outside the
/// database (a table of the database is recorded quoted, and has no `:`).
pub fn recorded(place: &str) -> Option<(&str, &str)> {
    place
        .split_once(':')
        .filter(|(backend, _)| BACKENDS.contains(backend))
}

/// Refuses a registry other than the one the reservation was recorded in.
pub(super) fn check_same(registry: &WorkerRegistry, place: &str, generator: &str) -> Result<()> {
    match recorded(place) {
        Some((backend, _)) if backend == registry.backend() => Ok(()),
        Some((backend, namespace)) => Err(Error::InvalidInput(format!(
            "generator {generator:?}'s worker IDs are reserved in a {backend} registry (namespace {namespace}), not in the {} one given: pass the servers' {backend} registry URL with --registry",
            registry.backend()
        ))),
        None => Err(Error::InvalidInput(format!(
            "generator {generator:?}'s worker IDs are reserved in the database's own table {place}: leave --registry out"
        ))),
    }
}

/// Reserves `plan`'s block in `registry` for `holder`: the highest IDs free there (servers
/// claim from the lowest), with their marks, after waiting for the database clock to pass
/// the highest of them, as a server waits for a mark it takes over.
pub(super) async fn reserve(
    conn: &mut AnyConnection,
    dialect: Dialect,
    registry: &WorkerRegistry,
    plan: &Plan<'_>,
    holder: &str,
) -> Result<(Vec<u64>, Vec<Mark>)> {
    let o = plan.options;
    let space = plan.shape.space;
    let listed = registry.list().await?;
    let mut held = HashSet::new();
    for e in &listed.entries {
        if e.holder == holder {
            // Left by an install of ours that failed half-way: ours to take again.
            continue;
        }
        if let Some(l) = &e.layout
            && *l != plan.record
        {
            return Err(Error::InvalidInput(format!(
                "worker ID {} is held by {:?}, which issues under layout {l}, not {}: install the functions with the servers' layout (--layout/--bits)",
                e.worker_id, e.holder, plan.record
            )));
        }
        held.insert(e.worker_id);
    }
    let mut block = Vec::new();
    for w in (0..space).rev().filter(|w| !held.contains(w)) {
        if block.len() as u64 == o.workers {
            break;
        }
        match registry.reserve(w, holder, &plan.record).await {
            Ok(()) => block.push(w),
            // A server claimed it since the listing: the next one.
            Err(Error::WorkerTaken { .. }) => {}
            Err(e) => {
                give_back(registry, &block, holder).await;
                return Err(e);
            }
        }
    }
    if (block.len() as u64) < o.workers {
        give_back(registry, &block, holder).await;
        return Err(Error::InvalidInput(format!(
            "only {} of the layout's {space} worker IDs are free in the {} registry (namespace {}), {} asked: stop servers or ask for fewer (--workers)",
            block.len(),
            registry.backend(),
            o.registry_table,
            o.workers
        )));
    }
    match marks(conn, dialect, registry, plan, &block).await {
        Ok(marks) => Ok((block, marks)),
        Err(e) => {
            give_back(registry, &block, holder).await;
            Err(e)
        }
    }
}

/// The marks `registry` holds for `block`, refusing one last used under another layout,
/// once the database clock has passed the highest.
async fn marks(
    conn: &mut AnyConnection,
    dialect: Dialect,
    registry: &WorkerRegistry,
    plan: &Plan<'_>,
    block: &[u64],
) -> Result<Vec<Mark>> {
    let mut marks = Vec::with_capacity(block.len());
    for w in block {
        if let Some(l) = registry.read_layout(*w).await?
            && l != plan.record
        {
            return Err(Error::InvalidInput(format!(
                "worker ID {w} was last used under layout {l}, not {}: install with that layout, or check the move with snowdrift layout migrate",
                plan.record
            )));
        }
        marks.push(
            registry
                .read_mark(*w)
                .await?
                .map(Mark::from_stored)
                .unwrap_or_default(),
        );
    }
    super::block::wait_past(conn, dialect, plan, block, &marks).await?;
    Ok(marks)
}

/// Ends the reservations of `block`, keeping their marks (an install that failed issued
/// nothing under them); what fails stays reserved, which is safe.
pub(super) async fn give_back(registry: &WorkerRegistry, block: &[u64], holder: &str) {
    for w in block {
        let _ = registry.unreserve(*w, holder, 0).await;
    }
}

/// The servers' registry a generator's reservation, recorded as `place`, lives in, opened
/// from `url` (the command's `--registry`) before an uninstall removes anything: `None`
/// when it lives in the database's own table. A URL missing where the marks must go, or
/// given where they go into the table, is refused.
pub(super) async fn open_recorded(
    place: &str,
    url: Option<&str>,
    generator: &str,
) -> Result<Option<WorkerRegistry>> {
    match (recorded(place), url) {
        (Some((_, namespace)), Some(url)) => {
            let reg = WorkerRegistry::connect(url, namespace).await?;
            check_same(&reg, place, generator)?;
            Ok(Some(reg))
        }
        (Some((backend, namespace)), None) => Err(Error::InvalidInput(format!(
            "generator {generator:?}'s worker IDs are reserved in the servers' {backend} registry (namespace {namespace}): pass its URL with --registry, so their high-water marks are written there. Nothing was removed"
        ))),
        (None, Some(_)) => Err(Error::InvalidInput(format!(
            "generator {generator:?}'s worker IDs are reserved in the database's table {place}: leave --registry out. Nothing was removed"
        ))),
        (None, None) => Ok(None),
    }
}

/// Holder and lease end of each reservation entry of generator `generator` (recorded as
/// `place`) below worker ID `space`, and whether they could be read: from the database's
/// table (a qualified, quoted name) on `conn`, else from the registry at `url`; not read
/// (`false`) when the reservation lives in another registry and no URL was given.
pub(super) async fn reservations(
    conn: &mut AnyConnection,
    place: &str,
    url: Option<&str>,
    generator: &str,
    space: u64,
) -> Result<(HashMap<u64, (String, i64)>, bool)> {
    match (recorded(place), url) {
        (None, _) => {
            // The space as a literal: the statement is the same in both dialects.
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT worker_id, holder, lease_expires_ms FROM {place} \
                 WHERE worker_id >= 0 AND worker_id < {space} AND holder IS NOT NULL"
            )))
            .fetch_all(&mut *conn)
            .await?;
            let rows = rows
                .iter()
                .map(|row| {
                    let w: i64 = row.try_get("worker_id")?;
                    Ok((
                        w as u64,
                        (row.try_get("holder")?, row.try_get("lease_expires_ms")?),
                    ))
                })
                .collect::<Result<_>>()?;
            Ok((rows, true))
        }
        (Some((_, namespace)), Some(url)) => {
            let reg = WorkerRegistry::connect(url, namespace).await?;
            check_same(&reg, place, generator)?;
            let rows = reg
                .list()
                .await?
                .entries
                .into_iter()
                .filter(|e| e.never_expires)
                .map(|e| (e.worker_id, (e.holder, RESERVED_UNTIL_MS)))
                .collect();
            Ok((rows, true))
        }
        (Some(_), None) => Ok((HashMap::new(), false)),
    }
}

/// Writes each worker ID's stored mark into `registry` and ends `holder`'s reservation of
/// it, once the functions are gone (so the marks cover every ID issued): `marks` holds
/// `(worker ID, stored mark, mark in ms)`. What the registry refuses stays reserved, which
/// is safe, and the error says how to give it back by hand.
pub(super) async fn write_back(
    registry: &WorkerRegistry,
    holder: &str,
    marks: Vec<(u64, u64, u64)>,
    done: &mut Uninstalled,
) -> Result<()> {
    let mut failed = Vec::new();
    for (w, stored, mark_ms) in marks {
        match registry.unreserve(w, holder, stored).await {
            Ok(true) => done.released.push((w, mark_ms)),
            Ok(false) => done.not_reserved.push(w),
            Err(e) => failed.push(format!(
                "worker ID {w}: mark {mark_ms} (stored {stored}) not written ({e})"
            )),
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(Error::Unavailable(
        format!(
            "the functions are removed, but the {} registry refused: {}. Those worker IDs stay reserved (no server takes them); to give one back, write its stored mark into the registry's mark entry and then delete its reservation entry (snowdrift workers list shows both)",
            registry.backend(),
            failed.join("; ")
        )
        .into(),
    ))
}
