//! Worker leases in a SQL table (`worker_node`: holder, lease expiry, high-water mark), claimed by a conditional update.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{AssertSqlSafe, Row};

use super::claim;
use super::{PeerClocks, PeerTime};
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;

pub(crate) mod db;

use db::{SqlDb, SqlRow, SqlValue, SqlxDb};

/// How many times a claim of one ID starts over after another node changed its row between
/// the conditional update and the insert.
const MAX_RACES: usize = 8;

impl Dialect {
    /// The database's clock in whole milliseconds since the Unix epoch, rounded down, taken
    /// when the statement arrived (never before the node sent it).
    pub(crate) fn now_ms(self) -> &'static str {
        match self {
            // statement_timestamp() is the receipt of the statement, fixed for its run.
            Dialect::Postgres => "FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT",
            // UTC_TIMESTAMP is fixed for the statement; no time zone rules apply to it.
            Dialect::MySql => {
                "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"
            }
            // SQLite's 'now' is whole milliseconds, fixed for the statement.
            Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        }
    }
}

/// `template` for `dialect` on `table`: `{t}` is the table, `{now}` the database's clock in
/// milliseconds, and each `?` becomes `$1`, `$2`, ... on PostgreSQL.
pub(crate) fn statement(dialect: Dialect, table: &str, template: &str) -> AssertSqlSafe<String> {
    let s = template
        .replace("{t}", table)
        .replace("{now}", dialect.now_ms());
    if dialect != Dialect::Postgres {
        return AssertSqlSafe(s);
    }
    let mut numbered = String::with_capacity(s.len() + 8);
    let mut n = 0;
    for c in s.chars() {
        if c == '?' {
            n += 1;
            numbered.push_str(&format!("${n}"));
        } else {
            numbered.push(c);
        }
    }
    AssertSqlSafe(numbered)
}

/// Worker leases in one SQL table, through sqlx (SQLite, PostgreSQL, MySQL/MariaDB).
///
/// The table (named by the namespace, created on [`connect`](Self::connect) if missing) has
/// one row per worker ID ever claimed:
///
/// | column | meaning |
/// |---|---|
/// | `worker_id BIGINT PRIMARY KEY` | the worker ID |
/// | `holder VARCHAR(255)` | who holds or last held it; `NULL` once released |
/// | `lease_expires_ms BIGINT` | end of the lease, on the database's clock (ms since the Unix epoch) |
/// | `high_water_ms BIGINT` | the high-water mark; kept across leases |
/// | `reported_ms BIGINT` | the holder's clock as it last published it |
/// | `claimed_ms BIGINT` | when the holder claimed it (database clock) |
/// | `lease_ttl_ms BIGINT` | the lease's length, as claimed |
/// | `layout VARCHAR(255)` | the layout issued under up to the mark (`FIELDS/UNIT_MS/EPOCH_MS`) |
///
/// The last three columns are added to a table of an older version at connect
/// (`ALTER TABLE ... ADD COLUMN`, nullable): older nodes keep working beside newer ones,
/// and leave them empty.
///
/// Every expiry is judged by the database's clock, never the node's, so nodes with skewed
/// clocks still agree on who holds what. A claim is one conditional `UPDATE` (the row is
/// free, expired or already ours), or an `INSERT` when the row does not exist yet; the
/// primary key turns a racing second insert into a refusal, so two nodes never both win one
/// ID. A lease is set to end one millisecond after `now + ttl` on the database's clock, and
/// `now` is when the statement arrived, so it never ends before `ttl` after the node sent
/// the request. An expired ID is reused by the next claim (unlike Baidu's UidGenerator,
/// where every start takes a new ID until the space runs out); its high-water mark stays.
///
/// The database's clock must not jump forward: a step of `s` seconds ends every lease `s`
/// seconds early. Keep NTP slewing on the database server (the default on most systems).
///
/// It reaches its database only through [`SqlDb`](db::SqlDb) (one statement, its binds,
/// its rows), which the sqlx pool implements; the simulator puts the registry on a
/// database of its own with `over` (feature `sim`).
#[derive(Debug, Clone)]
pub struct SqlRegistry {
    db: Arc<dyn SqlDb>,
    dialect: Dialect,
    table: String,
}

impl SqlRegistry {
    /// Connects to `url` (`sqlite://file.db`, `postgres://...`, `mysql://...`,
    /// `mariadb://...`) and creates the table `namespace` if it does not exist. A SQLite file
    /// is created if missing and put in WAL mode.
    pub async fn connect(url: &str, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let (pool, dialect) = crate::sql_connection::connect(url).await?;
        let registry = Self {
            db: Arc::new(SqlxDb::new(pool)),
            dialect,
            table: namespace.to_string(),
        };
        registry.migrate().await?;
        Ok(registry)
    }

    /// The registry on the table `namespace` of `db`, a database that speaks SQLite's
    /// dialect (the simulator's), creating the table as [`connect`](Self::connect) does.
    #[cfg(feature = "sim")]
    pub async fn over(db: Arc<dyn SqlDb>, namespace: &str) -> Result<Self> {
        validate_namespace(namespace)?;
        let registry = Self {
            db,
            dialect: Dialect::Sqlite,
            table: namespace.to_string(),
        };
        registry.migrate().await?;
        Ok(registry)
    }

    /// Opens the table `namespace` at `url` as [`connect`](Self::connect) does, creating
    /// and changing nothing: `None` when there is no such table (or no such SQLite file),
    /// so no node ever leased there. A table of an older version, without the columns
    /// `connect` adds, is refused (reading it would need them): any snowdrift server's
    /// start, or a `connect`, adds them. For previews that must write nothing.
    pub async fn open_existing(url: &str, namespace: &str) -> Result<Option<Self>> {
        validate_namespace(namespace)?;
        if crate::sql_connection::sqlite_file_missing(url) {
            return Ok(None);
        }
        let (pool, dialect) = crate::sql_connection::connect_existing(url).await?;
        let columns = crate::segment::inspect::columns(&pool, dialect, namespace).await?;
        if columns.is_empty() {
            pool.close().await;
            return Ok(None);
        }
        let missing: Vec<&str> = ["claimed_ms", "lease_ttl_ms", "layout"]
            .into_iter()
            .filter(|c| !columns.iter().any(|(name, _)| name == c))
            .collect();
        if !missing.is_empty() {
            pool.close().await;
            return Err(Error::InvalidInput(format!(
                "the worker table {namespace} is an older snowdrift version's: it lacks the column(s) {}, which a snowdrift server adds when it starts on it; start one (or upgrade the running ones) and run this again",
                missing.join(", ")
            )));
        }
        Ok(Some(Self {
            db: Arc::new(SqlxDb::new(pool)),
            dialect,
            table: namespace.to_string(),
        }))
    }

    /// The statement for this dialect: `{t}` is the table, `{now}` the database's clock in
    /// milliseconds, and each `?` becomes `$1`, `$2`, ... on PostgreSQL.
    fn sql(&self, template: &str) -> String {
        statement(self.dialect, &self.table, template).0
    }

    async fn migrate(&self) -> Result<()> {
        let engine = crate::sql_connection::engine(self.dialect);
        let ddl = format!(
            "CREATE TABLE IF NOT EXISTS {{t}} (\
             worker_id BIGINT NOT NULL PRIMARY KEY, \
             holder VARCHAR(255) DEFAULT NULL, \
             lease_expires_ms BIGINT NOT NULL DEFAULT 0, \
             high_water_ms BIGINT DEFAULT NULL, \
             reported_ms BIGINT DEFAULT NULL, \
             claimed_ms BIGINT DEFAULT NULL, \
             lease_ttl_ms BIGINT DEFAULT NULL, \
             layout VARCHAR(255) DEFAULT NULL){engine}"
        );
        self.db.create_table(self.sql(&ddl)).await?;
        // A table of an older version lacks the later columns: add each that is missing.
        // Two nodes may add one at the same instant; the loser finds it there.
        for (column, kind) in [
            ("claimed_ms", "BIGINT"),
            ("lease_ttl_ms", "BIGINT"),
            ("layout", "VARCHAR(255)"),
        ] {
            if self.has_column(column).await {
                continue;
            }
            let alter = self.sql(&format!(
                "ALTER TABLE {{t}} ADD COLUMN {column} {kind} DEFAULT NULL"
            ));
            if let Err(e) = self.db.execute(alter, Vec::new()).await
                && !self.has_column(column).await
            {
                return Err(e);
            }
        }
        Ok(())
    }

    async fn has_column(&self, column: &str) -> bool {
        let probe = self.sql(&format!("SELECT {column} FROM {{t}} WHERE 1 = 0"));
        self.db.fetch(probe, Vec::new()).await.is_ok()
    }

    /// Leases the lowest worker ID in `0..space` that no live lease holds to `holder` for
    /// `ttl`; [`Error::WorkersExhausted`] when every one is held.
    ///
    /// The free IDs are read first, then claimed one by one from the lowest with the same
    /// conditional update as [`claim`](Self::claim): an ID another node took in between is
    /// skipped, so nodes starting at the same instant all end up with distinct IDs.
    ///
    /// With `now_ms` (the claiming node's clock) it prefers a free ID whose high-water
    /// mark is at or before `now_ms`: the lowest such, else the one whose mark passes
    /// soonest. The free IDs and their marks are read in one query.
    pub async fn claim_free(
        &self,
        space: u64,
        holder: &str,
        ttl: Duration,
        now_ms: Option<u64>,
    ) -> Result<u64> {
        validate_space(space)?;
        validate_holder(holder)?;
        let ttl_ms = ttl_millis(ttl)?;
        claim::claim_free(
            &SqlClaim {
                registry: self,
                holder,
                ttl_ms,
            },
            space,
            now_ms,
        )
        .await
    }

    /// Leases exactly `worker_id` to `holder` for `ttl`: free, expired, released, or already
    /// held by `holder` (then the lease is extended). [`Error::WorkerTaken`] when another
    /// live holder has it.
    pub async fn claim(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        validate_holder(holder)?;
        let id = id_of(worker_id)?;
        let ttl_ms = ttl_millis(ttl)?;
        self.try_claim(id, holder, ttl_ms)
            .await?
            .map_err(|other| Error::WorkerTaken {
                worker_id,
                holder: other,
            })
    }

    /// One claim of `id`: `Ok(Err(holder))` when another live holder has it.
    async fn try_claim(
        &self,
        id: i64,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<std::result::Result<(), String>> {
        for _ in 0..MAX_RACES {
            // MySQL applies SET assignments left to right, each seeing the ones before, so
            // reported_ms is decided before holder changes.
            let update = self.sql(
                "UPDATE {t} SET \
                 reported_ms = CASE WHEN holder = ? THEN reported_ms ELSE NULL END, \
                 claimed_ms = CASE WHEN holder = ? AND claimed_ms IS NOT NULL THEN claimed_ms ELSE {now} END, \
                 holder = ?, \
                 lease_expires_ms = {now} + ? + 1, \
                 lease_ttl_ms = ? \
                 WHERE worker_id = ? AND (holder IS NULL OR holder = ? OR lease_expires_ms <= {now})",
            );
            let updated = self
                .db
                .execute(
                    update,
                    vec![
                        holder.into(),
                        holder.into(),
                        holder.into(),
                        ttl_ms.into(),
                        ttl_ms.into(),
                        id.into(),
                        holder.into(),
                    ],
                )
                .await?;
            if updated == 1 {
                return Ok(Ok(()));
            }
            let insert = self.sql(
                "INSERT INTO {t} (worker_id, holder, lease_expires_ms, claimed_ms, lease_ttl_ms) \
                 VALUES (?, ?, {now} + ? + 1, {now}, ?)",
            );
            let inserted = self
                .db
                .insert(
                    insert,
                    vec![id.into(), holder.into(), ttl_ms.into(), ttl_ms.into()],
                )
                .await?;
            if inserted {
                return Ok(Ok(()));
            }
            // The row exists: held by someone live, or changed since the update (retry).
            if let Lease::Live(other) = self.lease(id).await?
                && other != holder
            {
                return Ok(Err(other));
            }
        }
        Err(Error::Unavailable(
            format!(
                "worker ID {id} in table {}: its row changed under every claim, {MAX_RACES} times in a row; retry",
                self.table
            )
            .into(),
        ))
    }

    /// Who holds `id` now, by the database's clock.
    async fn lease(&self, id: i64) -> Result<Lease> {
        let select = self
            .sql("SELECT holder, lease_expires_ms - {now} AS left_ms FROM {t} WHERE worker_id = ?");
        let rows = self.db.fetch(select, vec![id.into()]).await?;
        let Some(row) = rows.first() else {
            return Ok(Lease::Free);
        };
        let holder = row.opt_text("holder")?;
        let left_ms = row.int("left_ms")?;
        Ok(match holder {
            None => Lease::Free,
            Some(h) if left_ms > 0 => Lease::Live(h),
            Some(h) => Lease::Expired {
                holder: h,
                ago_ms: left_ms.saturating_neg(),
            },
        })
    }

    /// Why `holder` does not hold `id` (for [`Error::LeaseLost`]).
    async fn lost(&self, worker_id: u64, holder: &str) -> Result<Error> {
        let reason = match self.lease(id_of(worker_id)?).await? {
            Lease::Free => "the worker ID is not leased (released, or never claimed)".to_string(),
            Lease::Live(other) if other != holder => format!("{other:?} holds it now"),
            Lease::Live(_) => "the lease changed while this call ran; retry".to_string(),
            Lease::Expired { holder: h, ago_ms } if h == holder => {
                format!("the lease expired {ago_ms} ms ago (database clock)")
            }
            Lease::Expired { holder: h, .. } => {
                format!("{h:?} held it last, and its lease expired too")
            }
        };
        Ok(Error::LeaseLost {
            worker_id,
            holder: holder.to_string(),
            reason,
        })
    }

    /// Extends `holder`'s live lease on `worker_id` to `ttl` from now (database clock).
    /// [`Error::LeaseLost`] when it expired (even if nobody took it since) or another holder
    /// has it.
    pub async fn renew(&self, worker_id: u64, holder: &str, ttl: Duration) -> Result<()> {
        let ttl_ms = ttl_millis(ttl)?;
        self.update_held(
            worker_id,
            holder,
            "lease_expires_ms = {now} + ? + 1, lease_ttl_ms = ?",
            &[ttl_ms, ttl_ms],
        )
        .await
    }

    /// Gives `worker_id` back at once, keeping its high-water mark. Does nothing when
    /// `holder` does not hold it.
    pub async fn release(&self, worker_id: u64, holder: &str) -> Result<()> {
        validate_holder(holder)?;
        let id = id_of(worker_id)?;
        let update = self.sql(
            "UPDATE {t} SET holder = NULL, lease_expires_ms = 0, reported_ms = NULL \
             WHERE worker_id = ? AND holder = ?",
        );
        self.db
            .execute(update, vec![id.into(), holder.into()])
            .await?;
        Ok(())
    }

    /// Reserves `worker_id` for `holder` (no server) for good, with `layout` recorded
    /// beside the mark: see [`WorkerRegistry::reserve`](super::WorkerRegistry::reserve).
    /// [`Error::WorkerTaken`] when a live holder other than `holder` has it.
    pub async fn reserve(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        let [(update, update_binds), (insert, insert_binds)] =
            reserve_statements(self.dialect, &self.table, worker_id, holder, layout)?;
        if self.db.execute(update, update_binds).await? == 1
            || self.db.execute(insert, insert_binds).await? == 1
        {
            return Ok(());
        }
        let held = self.holders().await?;
        Err(Error::WorkerTaken {
            worker_id,
            holder: held
                .into_iter()
                .find(|(w, _)| *w == worker_id)
                .map_or_else(|| "a server that has just let it go".into(), |(_, h)| h),
        })
    }

    /// Ends `holder`'s reservation of `worker_id`, raising its mark to `mark` (stored form)
    /// in the same statement; `Ok(false)` when the row no longer shows it.
    pub async fn unreserve(&self, worker_id: u64, holder: &str, mark: u64) -> Result<bool> {
        let (update, binds) =
            unreserve_statement(self.dialect, &self.table, worker_id, holder, mark)?;
        Ok(self.db.execute(update, binds).await? == 1)
    }

    /// The live leases, by worker ID.
    pub async fn holders(&self) -> Result<Vec<(u64, String)>> {
        let select = self.sql(
            "SELECT worker_id, holder FROM {t} \
             WHERE holder IS NOT NULL AND lease_expires_ms > {now} \
             ORDER BY worker_id",
        );
        let rows = self.db.fetch(select, Vec::new()).await?;
        rows.iter()
            .map(|row| {
                let id = row.int("worker_id")?;
                let holder = row.text("holder")?;
                Ok((self.id_from_row(id)?, holder))
            })
            .collect()
    }

    fn id_from_row(&self, id: i64) -> Result<u64> {
        u64::try_from(id).map_err(|_| {
            Error::InvalidInput(format!(
                "table {} holds worker ID {id}, below 0: it was edited by hand; delete that row",
                self.table
            ))
        })
    }

    /// The high-water mark of `worker_id` (ms since the Unix epoch), `None` if none was
    /// ever written. Readable by anyone, held or not.
    pub async fn read_mark(&self, worker_id: u64) -> Result<Option<u64>> {
        let id = id_of(worker_id)?;
        let select = self.sql("SELECT high_water_ms FROM {t} WHERE worker_id = ?");
        let rows = self.db.fetch(select, vec![id.into()]).await?;
        let mark = rows
            .first()
            .map(|row| row.opt_int("high_water_ms"))
            .transpose()?;
        mark.flatten()
            .map(|m| self.mark_from_column(worker_id, m))
            .transpose()
    }

    /// A stored mark as a number of ms; [`Error::InvalidInput`] below 0.
    fn mark_from_column(&self, worker_id: u64, m: i64) -> Result<u64> {
        u64::try_from(m).map_err(|_| {
            Error::InvalidInput(format!(
                "table {} holds high-water mark {m} for worker ID {worker_id}, below 0: it was edited by hand; fix it",
                self.table
            ))
        })
    }

    /// Raises the high-water mark of `worker_id` to `mark_ms` (a lower value leaves it as
    /// it is). [`Error::LeaseLost`] unless `holder` holds a live lease on it; one statement,
    /// so a node that lost its lease can never write.
    pub async fn write_mark(&self, worker_id: u64, holder: &str, mark_ms: u64) -> Result<()> {
        let mark = ms_since_epoch(mark_ms, "high-water mark")?;
        // sqlx asks MySQL for matched rows (CLIENT_FOUND_ROWS), so an unchanged mark counts.
        self.update_held(
            worker_id,
            holder,
            "high_water_ms = CASE \
             WHEN high_water_ms IS NULL OR high_water_ms < ? THEN ? ELSE high_water_ms END",
            &[mark, mark],
        )
        .await
    }

    /// Records `holder`'s clock reading `now_ms` on `worker_id`. [`Error::LeaseLost`] unless
    /// `holder` holds a live lease on it.
    pub async fn publish_time(&self, worker_id: u64, holder: &str, now_ms: u64) -> Result<()> {
        let now = ms_since_epoch(now_ms, "clock reading")?;
        self.update_held(worker_id, holder, "reported_ms = ?", &[now])
            .await
    }

    /// `UPDATE ... SET {set}` on `worker_id`'s row, binding `values` to the `?`s of `set`,
    /// only while `holder` holds a live lease on it (database clock): one statement, so a
    /// node whose lease ended can never write. [`Error::LeaseLost`] says why it did not.
    async fn update_held(
        &self,
        worker_id: u64,
        holder: &str,
        set: &str,
        values: &[i64],
    ) -> Result<()> {
        validate_holder(holder)?;
        let id = id_of(worker_id)?;
        let update = self.sql(&format!(
            "UPDATE {{t}} SET {set} WHERE worker_id = ? AND holder = ? AND lease_expires_ms > {{now}}"
        ));
        let mut binds: Vec<SqlValue> = values.iter().map(|v| SqlValue::Int(*v)).collect();
        binds.push(id.into());
        binds.push(holder.into());
        let updated = self.db.execute(update, binds).await?;
        if updated == 1 {
            Ok(())
        } else {
            Err(self.lost(worker_id, holder).await?)
        }
    }

    /// The latest clock reading of every live holder that published one, by worker ID.
    pub async fn peer_times(&self) -> Result<Vec<PeerTime>> {
        let select = self.sql(
            "SELECT worker_id, holder, reported_ms FROM {t} \
             WHERE holder IS NOT NULL AND lease_expires_ms > {now} AND reported_ms IS NOT NULL \
             ORDER BY worker_id",
        );
        let rows = self.db.fetch(select, Vec::new()).await?;
        rows.iter().map(|row| self.peer_from_row(row)).collect()
    }

    /// The highest and lowest clock reports of the live holders other than `holder`: two
    /// rows, whatever the fleet's size (the database scans, the network carries two).
    pub async fn peer_clocks(&self, holder: &str) -> Result<PeerClocks> {
        let side = |order: &str| {
            format!(
                "SELECT worker_id, holder, reported_ms FROM (SELECT worker_id, holder, reported_ms FROM {{t}} \
                 WHERE holder IS NOT NULL AND holder <> ? AND lease_expires_ms > {{now}} \
                 AND reported_ms IS NOT NULL ORDER BY reported_ms {order} LIMIT 1) AS x_{order}"
            )
        };
        let select = self.sql(&format!("{} UNION ALL {}", side("DESC"), side("ASC")));
        let rows = self
            .db
            .fetch(select, vec![holder.into(), holder.into()])
            .await?;
        let peers = rows
            .iter()
            .map(|row| self.peer_from_row(row))
            .collect::<Result<Vec<_>>>()?;
        Ok(PeerClocks::among(peers, holder))
    }

    fn peer_from_row(&self, row: &SqlRow) -> Result<PeerTime> {
        let id = row.int("worker_id")?;
        let time = row.int("reported_ms")?;
        Ok(PeerTime {
            worker_id: self.id_from_row(id)?,
            holder: row.text("holder")?,
            // A reading below the epoch was written by hand; it is as old as can be.
            time_ms: u64::try_from(time).unwrap_or(0),
        })
    }

    /// The layout recorded beside `worker_id`'s mark, if any.
    pub async fn read_layout(&self, worker_id: u64) -> Result<Option<String>> {
        let id = id_of(worker_id)?;
        let select = self.sql("SELECT layout FROM {t} WHERE worker_id = ?");
        let rows = self.db.fetch(select, vec![id.into()]).await?;
        Ok(rows
            .first()
            .map(|row| row.opt_text("layout"))
            .transpose()?
            .flatten())
    }

    /// Records the layout `holder` issues under; [`Error::LeaseLost`] unless it holds a
    /// live lease on `worker_id` (one statement).
    pub async fn write_layout(&self, worker_id: u64, holder: &str, layout: &str) -> Result<()> {
        validate_holder(holder)?;
        let id = id_of(worker_id)?;
        let update = self.sql(
            "UPDATE {t} SET layout = ? WHERE worker_id = ? AND holder = ? AND lease_expires_ms > {now}",
        );
        let updated = self
            .db
            .execute(update, vec![layout.into(), id.into(), holder.into()])
            .await?;
        if updated == 1 {
            Ok(())
        } else {
            Err(self.lost(worker_id, holder).await?)
        }
    }

    /// Every live lease with its claim time, time left (database clock), mark and layout.
    ///
    /// Each row is read column by column: a value that cannot be read (a negative mark, a
    /// value of another type in SQLite) is flagged on its entry, and a row whose
    /// `worker_id` is below 0 (or, in SQLite, not an integer) is listed as unreadable. A
    /// lease set by hand to last far longer than it was claimed for is flagged with the
    /// time it really has left.
    pub async fn list(&self) -> Result<super::WorkerList> {
        let odd_ids = match self.dialect {
            // SQLite stores what it is given, text in a BIGINT column too.
            Dialect::Sqlite => "OR worker_id < 0 OR typeof(worker_id) <> 'integer'",
            _ => "OR worker_id < 0",
        };
        // The time left is counted here, not in SQL: a lease set by hand near the ends of
        // BIGINT would overflow the subtraction there and fail the whole statement.
        let select = self.sql(&format!(
            "SELECT worker_id, holder, claimed_ms, lease_ttl_ms, lease_expires_ms, {{now}} AS now_ms, \
             high_water_ms, layout FROM {{t}} \
             WHERE (holder IS NOT NULL AND lease_expires_ms > {{now}}) {odd_ids} ORDER BY worker_id"
        ));
        let rows = self.db.fetch(select, Vec::new()).await?;
        let mut out = super::WorkerList::default();
        for row in &rows {
            let id = match row.int("worker_id") {
                Ok(id) => u64::try_from(id).map_err(|_| (id.to_string(), true)),
                Err(_) => Err((
                    row.text("worker_id")
                        .map_or_else(|_| "?".to_string(), |s| format!("{s:?}")),
                    false,
                )),
            };
            let id = match id {
                Ok(id) => id,
                Err((raw, read_by_claims)) => {
                    let effect = if read_by_claims {
                        "a server's claim of a free worker ID fails while it is there (the claim reads every row below the ID space)"
                    } else {
                        "servers ignore it"
                    };
                    out.unreadable.push(super::UnreadableEntry::new(
                        format!("worker_id = {raw}"),
                        format!(
                            "a row of table {} whose worker_id is no worker ID (edited by hand): {effect}; delete the row",
                            self.table
                        ),
                    ));
                    continue;
                }
            };
            out.entries.push(self.list_row(id, row)?);
        }
        Ok(out)
    }

    /// The entry of the live row of worker ID `id`.
    fn list_row(&self, id: u64, row: &SqlRow) -> Result<super::WorkerEntry> {
        let now = row.int("now_ms")?;
        let mut problems = Vec::new();
        let mut column = |name: &str| -> Option<i64> {
            match row.opt_int(name) {
                Ok(Some(v)) if v >= 0 => Some(v),
                Ok(Some(v)) => {
                    problems.push(format!(
                        "its {name} is {v}, below 0: it was edited by hand; fix it"
                    ));
                    None
                }
                Ok(None) => None,
                Err(e) => {
                    problems.push(format!(
                        "its {name} cannot be read ({e}): it was edited by hand; fix it"
                    ));
                    None
                }
            }
        };
        let since = column("claimed_ms");
        let ttl = column("lease_ttl_ms");
        let expires = column("lease_expires_ms");
        let mut entry = super::WorkerEntry::new(id, "?".into());
        match row.opt_text("holder") {
            Ok(Some(holder)) => entry.holder = holder,
            Ok(None) => {}
            Err(e) => entry.flag(format!(
                "its holder cannot be read ({e}): it was edited by hand; a server's claim of this worker ID fails while it is so"
            )),
        }
        for p in problems {
            entry.flag(p);
        }
        entry.since_ms = since.map(|v| v as u64);
        entry.lease_ttl_ms = ttl.map(|v| v as u64);
        entry.lease_left_ms = expires.map(|e| e.saturating_sub(now).max(0) as u64);
        // A holder renews every third of its ttl: below half, it has missed renewals.
        entry.expiring = matches!(
            (entry.lease_left_ms, entry.lease_ttl_ms),
            (Some(l), Some(t)) if l < t / 2
        );
        match row.opt_int("high_water_ms") {
            Ok(mark) => match mark.map(|m| self.mark_from_column(id, m)).transpose() {
                Ok(mark) => entry.mark = mark,
                Err(e) => entry.flag(e.to_string()),
            },
            Err(e) => entry.flag(format!(
                "its high_water_ms cannot be read ({e}): it was edited by hand; set it to the last time used (ms)"
            )),
        }
        match row.opt_text("layout") {
            Ok(layout) => entry.layout = layout,
            Err(e) => entry.flag(format!(
                "its layout cannot be read ({e}): it was edited by hand; put back the layout record its holder issues under"
            )),
        }
        if entry
            .holder
            .starts_with(crate::sql_functions::RESERVATION_PREFIX)
            && expires == Some(crate::sql_functions::RESERVED_UNTIL_MS)
        {
            // Not a lease set by hand: the block a database's ID functions issue under.
            entry.stuck(format!(
                "reserved for the ID functions of database {} (snowdrift sql install): no server takes it; free it only with snowdrift sql uninstall, which writes the database's last high-water mark first (freeing it by hand lets a server repeat the database's IDs)",
                &entry.holder[crate::sql_functions::RESERVATION_PREFIX.len()..]
            ));
            return Ok(entry);
        }
        entry.flag_long_lease(&format!(
            "once no server uses it, set lease_expires_ms to 0 in its row of table {} to free it",
            self.table
        ));
        Ok(entry)
    }

    /// `sqlite`, `postgres` or `mysql`.
    pub fn backend(&self) -> &'static str {
        match self.dialect {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mysql",
        }
    }

    /// Closes the pool's connections.
    pub async fn close(&self) {
        // Closing waits for the connections; a failure leaves nothing to do.
        let _ = self.db.close().await;
    }
}

/// A worker ID's row as the database's clock sees it.
enum Lease {
    Free,
    Live(String),
    Expired { holder: String, ago_ms: i64 },
}

/// One [`SqlRegistry::claim_free`] in progress.
struct SqlClaim<'a> {
    registry: &'a SqlRegistry,
    holder: &'a str,
    ttl_ms: i64,
}

impl claim::Backend for SqlClaim<'_> {
    const ROUNDS: usize = MAX_RACES;
    const TRIES_PER_ROUND: usize = MAX_RACES * 8;

    async fn survey(&self, space: u64, marks: bool) -> Result<claim::Survey> {
        let space = i64::try_from(space).unwrap_or(i64::MAX);
        if !marks {
            let select = self.registry.sql(
                "SELECT worker_id FROM {t} \
                 WHERE holder IS NOT NULL AND lease_expires_ms > {now} AND worker_id < ? \
                 ORDER BY worker_id",
            );
            let held = self.registry.db.fetch(select, vec![space.into()]).await?;
            return Ok(claim::Survey {
                held: held
                    .iter()
                    .map(|row| self.registry.id_from_row(row.int("worker_id")?))
                    .collect::<Result<_>>()?,
                marks: Default::default(),
            });
        }
        // Leases and marks in one statement: one snapshot of the table.
        let select = self.registry.sql(
            "SELECT worker_id, holder, lease_expires_ms - {now} AS left_ms, high_water_ms \
             FROM {t} WHERE worker_id < ?",
        );
        let rows = self.registry.db.fetch(select, vec![space.into()]).await?;
        let mut survey = claim::Survey::default();
        for row in &rows {
            let id = self.registry.id_from_row(row.int("worker_id")?)?;
            let holder = row.opt_text("holder")?;
            let left_ms = row.int("left_ms")?;
            if holder.is_some() && left_ms > 0 {
                survey.held.push(id);
            }
            if let Some(mark) = row.opt_int("high_water_ms")? {
                survey.marks.insert(id, u64::try_from(mark).ok());
            }
        }
        Ok(survey)
    }

    async fn try_claim(&self, id: u64) -> Result<claim::Claim> {
        Ok(
            match self
                .registry
                .try_claim(id_of(id)?, self.holder, self.ttl_ms)
                .await?
            {
                Ok(()) => claim::Claim::Claimed,
                Err(_) => claim::Claim::Taken,
            },
        )
    }

    async fn live_holders(&self) -> Result<Vec<(u64, String)>> {
        self.registry.holders().await
    }

    fn place(&self) -> String {
        format!("in table {}", self.registry.table)
    }
}

/// A row of the worker table as a reservation reads it, by the database's clock.
#[derive(Debug, Clone)]
pub(crate) struct TableRow {
    pub worker_id: u64,
    pub holder: Option<String>,
    /// `lease_expires_ms - now`: above 0 while the lease is live.
    pub left_ms: i64,
    /// The stored high-water mark ([`super::Mark::stored`]).
    pub mark: Option<u64>,
    pub layout: Option<String>,
}

impl TableRow {
    /// Whether a live lease holds the worker ID.
    pub fn live(&self) -> bool {
        self.holder.is_some() && self.left_ms > 0
    }
}

/// Every row of `table` below worker ID `space`, read on `conn` (inside the caller's
/// transaction, if it has one).
pub(crate) async fn table_rows(
    conn: &mut sqlx::AnyConnection,
    dialect: Dialect,
    table: &str,
    space: u64,
) -> Result<Vec<TableRow>> {
    let select = statement(
        dialect,
        table,
        "SELECT worker_id, holder, lease_expires_ms - {now} AS left_ms, high_water_ms, layout \
         FROM {t} WHERE worker_id >= 0 AND worker_id < ? ORDER BY worker_id",
    );
    let rows = sqlx::query(select)
        .bind(i64::try_from(space).unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await?;
    rows.iter()
        .map(|row| {
            let id: i64 = row.try_get("worker_id")?;
            let mark: Option<i64> = row.try_get("high_water_ms")?;
            Ok(TableRow {
                worker_id: id as u64,
                holder: row.try_get("holder")?,
                left_ms: row.try_get("left_ms")?,
                mark: mark.map(|m| u64::try_from(m).unwrap_or(u64::MAX)),
                layout: row.try_get("layout")?,
            })
        })
        .collect()
}

/// The two statements of a reservation of `worker_id` in `table` for `holder` (see
/// [`reserve_on`]), with their binds: the conditional update, then the insert that ignores
/// a conflict. The reservation took when either changed a row.
fn reserve_statements(
    dialect: Dialect,
    table: &str,
    worker_id: u64,
    holder: &str,
    layout: &str,
) -> Result<[(String, Vec<SqlValue>); 2]> {
    validate_holder(holder)?;
    let id = id_of(worker_id)?;
    let until = crate::sql_functions::RESERVED_UNTIL_MS;
    let update = statement(
        dialect,
        table,
        "UPDATE {t} SET reported_ms = NULL, claimed_ms = {now}, holder = ?, \
         lease_expires_ms = ?, lease_ttl_ms = NULL, layout = ? \
         WHERE worker_id = ? AND (holder IS NULL OR holder = ? OR lease_expires_ms <= {now})",
    );
    // No row yet, or a live holder: a racing insert of the same ID must not abort the
    // caller's transaction, so the insert ignores a conflict and says by its count.
    let insert = match dialect {
        Dialect::Postgres => {
            "INSERT INTO {t} (worker_id, holder, lease_expires_ms, claimed_ms, layout) \
             VALUES (?, ?, ?, {now}, ?) ON CONFLICT (worker_id) DO NOTHING"
        }
        Dialect::MySql => {
            "INSERT IGNORE INTO {t} (worker_id, holder, lease_expires_ms, claimed_ms, layout) \
             VALUES (?, ?, ?, {now}, ?)"
        }
        Dialect::Sqlite => {
            "INSERT OR IGNORE INTO {t} (worker_id, holder, lease_expires_ms, claimed_ms, layout) \
             VALUES (?, ?, ?, {now}, ?)"
        }
    };
    Ok([
        (
            update.0,
            vec![
                holder.into(),
                until.into(),
                layout.into(),
                id.into(),
                holder.into(),
            ],
        ),
        (
            statement(dialect, table, insert).0,
            vec![id.into(), holder.into(), until.into(), layout.into()],
        ),
    ])
}

/// Reserves `worker_id` in `table` for `holder`, which is no server: a lease that ends at
/// [`RESERVED_UNTIL_MS`](crate::sql_functions::RESERVED_UNTIL_MS), so no server's claim
/// (which takes only a free or ended lease) takes it, with `layout` recorded beside the
/// mark. The mark stays. `Ok(false)` when a live holder other than `holder` has it.
pub(crate) async fn reserve_on(
    conn: &mut sqlx::AnyConnection,
    dialect: Dialect,
    table: &str,
    worker_id: u64,
    holder: &str,
    layout: &str,
) -> Result<bool> {
    for (sql, binds) in reserve_statements(dialect, table, worker_id, holder, layout)? {
        if db::bound(sql, binds)
            .execute(&mut *conn)
            .await?
            .rows_affected()
            == 1
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The statement that ends `holder`'s reservation of `worker_id` (see [`unreserve_on`]),
/// with its binds.
fn unreserve_statement(
    dialect: Dialect,
    table: &str,
    worker_id: u64,
    holder: &str,
    mark: u64,
) -> Result<(String, Vec<SqlValue>)> {
    let id = id_of(worker_id)?;
    let mark = ms_since_epoch(mark, "high-water mark")?;
    let update = statement(
        dialect,
        table,
        "UPDATE {t} SET high_water_ms = CASE \
         WHEN high_water_ms IS NULL OR high_water_ms < ? THEN ? ELSE high_water_ms END, \
         holder = NULL, lease_expires_ms = 0, reported_ms = NULL \
         WHERE worker_id = ? AND holder = ?",
    );
    Ok((
        update.0,
        vec![mark.into(), mark.into(), id.into(), holder.into()],
    ))
}

/// Ends `holder`'s reservation of `worker_id` in `table`, raising its high-water mark to
/// `mark` (a stored mark) first, in one statement: the next server to claim it waits past
/// every ID the database issued. `Ok(false)` when `holder` does not hold it.
pub(crate) async fn unreserve_on(
    conn: &mut sqlx::AnyConnection,
    dialect: Dialect,
    table: &str,
    worker_id: u64,
    holder: &str,
    mark: u64,
) -> Result<bool> {
    let (sql, binds) = unreserve_statement(dialect, table, worker_id, holder, mark)?;
    Ok(db::bound(sql, binds)
        .execute(&mut *conn)
        .await?
        .rows_affected()
        == 1)
}

/// Checks a namespace (a table name, key prefix or root znode). The four backends share
/// SQL's table-name rules, the strictest of them, so a namespace valid on one is valid on
/// all. Every registry's `connect` checks it; a config check calls it to refuse what a
/// start would.
pub fn validate_namespace(namespace: &str) -> Result<()> {
    let ok = !namespace.is_empty()
        && namespace.len() <= 64
        && namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !namespace.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        return Err(Error::InvalidInput(format!(
            "worker namespace {namespace:?} is not valid: use 1 to 64 letters, digits or '_', not starting with a digit"
        )));
    }
    Ok(())
}

/// The longest holder every backend stores (the SQL column is `VARCHAR(255)`).
pub(super) const MAX_HOLDER_LEN: usize = 255;

/// Checks a holder name: 1 to 255 characters, none of them control characters.
pub(crate) fn validate_holder(holder: &str) -> Result<()> {
    let len = holder.chars().count();
    if len == 0 || len > MAX_HOLDER_LEN || holder.chars().any(char::is_control) {
        return Err(Error::InvalidInput(format!(
            "lease holder {holder:?} is not valid: use 1 to {MAX_HOLDER_LEN} characters without control characters (host, process, start nonce)"
        )));
    }
    Ok(())
}

/// Checks the size of a node space.
pub(super) fn validate_space(space: u64) -> Result<()> {
    if space == 0 {
        return Err(Error::InvalidInput(
            "the worker ID space is empty (0 IDs): the layout needs at least one node bit, or use a static worker ID".into(),
        ));
    }
    Ok(())
}

/// A lease's length in whole milliseconds, rounded up (a lease may last longer than asked,
/// never shorter). At most `i32::MAX` ms (about 24 days), the most ZooKeeper's session
/// timeout holds, so a ttl valid on one backend is valid on all.
pub(crate) fn ttl_millis(ttl: Duration) -> Result<i64> {
    let ms = ttl.as_nanos().div_ceil(1_000_000);
    if ms == 0 || ms > i32::MAX as u128 {
        return Err(Error::InvalidInput(format!(
            "lease ttl {ttl:?} is not valid: use 1 ms to {} ms (about 24 days); a few seconds is usual",
            i32::MAX
        )));
    }
    Ok(ms as i64)
}

/// `ms` (milliseconds since the Unix epoch, called `what` in the error) as a column value.
fn ms_since_epoch(ms: u64, what: &str) -> Result<i64> {
    i64::try_from(ms).map_err(|_| {
        Error::InvalidInput(format!(
            "{what} {ms} ms is past i64::MAX; pass milliseconds since the Unix epoch"
        ))
    })
}

/// A worker ID as the `BIGINT` the table stores.
fn id_of(worker_id: u64) -> Result<i64> {
    i64::try_from(worker_id).map_err(|_| {
        Error::InvalidInput(format!(
            "worker ID {worker_id} is past i64::MAX; no layout has that many node bits"
        ))
    })
}
