//! Leaf's `leaf_alloc` table on SQLite, PostgreSQL and MySQL/MariaDB.

use snowdrift_core::counter::CounterTemplate;
use snowdrift_core::segment::IdRange;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, AssertSqlSafe, Row};

use super::floor::{TagChange, TagFloor};
use super::tag::{
    Claim, DatedClaim, NewTag, Tag, TagUpdate, validate_claim, validate_table, validate_tag,
};
use super::transaction::ClaimTransaction;
use crate::error::{Error, Result};
use crate::sql_connection::Dialect;

/// Segments and tags in Leaf's table, through sqlx.
///
/// The table (default `leaf_alloc`) is created on [`connect`](Self::connect) if missing,
/// with Leaf's columns: `biz_tag varchar(128) primary key, max_id bigint, step int,
/// description varchar(256), update_time timestamp`. A claim is one transaction:
/// `UPDATE ... SET max_id = max_id + step WHERE biz_tag = ? AND max_id <= i64::MAX - step`,
/// then a read of the new `max_id`; the row stays locked between the two, so processes
/// racing on one tag never get overlapping ranges.
///
/// Three more columns serve tags with a template ([`claim_dated`](Self::claim_dated)):
/// `id_template varchar(256)` (NULL for Leaf's tags), `utc_offset int` (seconds east of
/// UTC its dates are in) and `period_key bigint` (the period `max_id` counts in, e.g.
/// `20261122`). A table made by Leaf or an earlier snowdrift gets them on
/// [`connect`](Self::connect) (`ALTER TABLE ... ADD COLUMN`, with defaults that leave its
/// rows as they were); if that is not allowed, Leaf's tags are served as before and only
/// tags with a template are refused, naming the statement to run.
#[derive(Debug, Clone)]
pub struct SqlSegmentStore {
    pool: AnyPool,
    dialect: Dialect,
    table: String,
    /// Whether the table has the template columns, or why not.
    dated: std::result::Result<(), String>,
}

/// The columns tags with a template need, as `ALTER TABLE ... ADD COLUMN` adds them: every
/// old row reads as a tag without a template.
const DATED_COLUMNS: [(&str, &str); 3] = [
    ("id_template", "VARCHAR(256) DEFAULT NULL"),
    ("utc_offset", "INT NOT NULL DEFAULT 0"),
    ("period_key", "BIGINT NOT NULL DEFAULT 0"),
];

impl SqlSegmentStore {
    /// Connects to `url` (`sqlite://file.db`, `postgres://...`, `mysql://...`) and creates
    /// `table` if it does not exist. A SQLite file is created if missing and put in WAL mode.
    pub async fn connect(url: &str, table: &str) -> Result<Self> {
        validate_table(table)?;
        let (pool, dialect) = crate::sql_connection::connect(url).await?;
        let mut store = Self {
            pool,
            dialect,
            table: table.to_string(),
            dated: Ok(()),
        };
        store.migrate().await?;
        store.dated = store.add_dated_columns().await;
        if let Err(why) = &store.dated {
            tracing::warn!(
                table,
                "segment tags with a template are refused on this table: {why}"
            );
        }
        Ok(store)
    }

    /// The statement for this dialect: `{t}` is the table, `$n` placeholders become `?`
    /// outside PostgreSQL (every statement here uses its placeholders once, in order).
    fn sql(&self, template: &str) -> AssertSqlSafe<String> {
        let mut s = template.replace("{t}", &self.table);
        if self.dialect != Dialect::Postgres {
            for n in (1..=9).rev() {
                s = s.replace(&format!("${n}"), "?");
            }
        }
        AssertSqlSafe(s)
    }

    async fn migrate(&self) -> Result<()> {
        let engine = crate::sql_connection::engine(self.dialect);
        let ddl = format!(
            "CREATE TABLE IF NOT EXISTS {{t}} (\
             biz_tag VARCHAR(128) NOT NULL PRIMARY KEY, \
             max_id BIGINT NOT NULL DEFAULT 1, \
             step INT NOT NULL, \
             description VARCHAR(256) DEFAULT NULL, \
             update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
             id_template VARCHAR(256) DEFAULT NULL, \
             utc_offset INT NOT NULL DEFAULT 0, \
             period_key BIGINT NOT NULL DEFAULT 0){engine}"
        );
        crate::sql_connection::create_table(&self.pool, self.sql(&ddl)).await
    }

    /// Adds the template columns a table made before them lacks. Several nodes may start at
    /// once: a node whose `ALTER` fails looks again, and the column another node added is
    /// enough. Any other failure (no right to alter the table) leaves the table as it is and
    /// says why, for the refusal of tags with a template.
    async fn add_dated_columns(&self) -> std::result::Result<(), String> {
        for (column, ty) in DATED_COLUMNS {
            if self.has_column(column).await {
                continue;
            }
            let alter = self.sql(&format!("ALTER TABLE {{t}} ADD COLUMN {column} {ty}"));
            let shown = alter.0.clone();
            if let Err(e) = sqlx::query(alter).execute(&self.pool).await
                && !self.has_column(column).await
            {
                return Err(format!(
                    "the table has no {column} column and adding it failed ({e}); run `{shown}` \
                     (and the same for {}) as a user allowed to",
                    DATED_COLUMNS
                        .iter()
                        .map(|(c, _)| *c)
                        .filter(|c| *c != column)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        Ok(())
    }

    async fn has_column(&self, column: &str) -> bool {
        let probe = self.sql(&format!("SELECT {column} FROM {{t}} WHERE 1 = 0"));
        sqlx::query(probe).fetch_optional(&self.pool).await.is_ok()
    }

    /// The columns a tag is read from: Leaf's, and the template's when the table has them.
    fn tag_columns(&self) -> &'static str {
        if self.dated.is_ok() {
            "biz_tag, max_id, step, description, id_template, utc_offset, period_key"
        } else {
            "biz_tag, max_id, step, description"
        }
    }

    /// Refuses a template when the table could not get its columns.
    fn templates_allowed(&self) -> Result<()> {
        self.dated.clone().map_err(|why| {
            Error::InvalidInput(format!(
                "segment tags with a template need three more columns in table {:?}: {why}",
                self.table
            ))
        })
    }

    /// Creates a tag whose first segment starts at 1 (as Leaf's do). A tag with a template
    /// counts from 1 in every period; its row starts in period 0, before any.
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        new.validate()?;
        let result = match &new.template {
            None => {
                let insert = self.sql(
                    "INSERT INTO {t} (biz_tag, max_id, step, description, update_time) \
                     VALUES ($1, 1, $2, $3, CURRENT_TIMESTAMP)",
                );
                sqlx::query(insert)
                    .bind(&new.tag)
                    .bind(new.step)
                    .bind(new.description.clone())
                    .execute(&self.pool)
                    .await
            }
            Some(template) => {
                self.templates_allowed()?;
                let insert = self.sql(
                    "INSERT INTO {t} (biz_tag, max_id, step, description, update_time, \
                     id_template, utc_offset, period_key) \
                     VALUES ($1, 1, $2, $3, CURRENT_TIMESTAMP, $4, $5, 0)",
                );
                sqlx::query(insert)
                    .bind(&new.tag)
                    .bind(new.step)
                    .bind(new.description.clone())
                    .bind(template.as_str().to_string())
                    .bind(template.utc_offset_seconds())
                    .execute(&self.pool)
                    .await
            }
        };
        match result {
            Ok(_) => Ok(Tag {
                tag: new.tag.clone(),
                max_id: 1,
                step: new.step,
                description: new.description.clone(),
                template: new.template.clone(),
                period: 0,
            }),
            Err(e)
                if e.as_database_error()
                    .is_some_and(|d| d.is_unique_violation()) =>
            {
                Err(Error::TagExists(new.tag.clone()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// All tags, by name.
    pub async fn list_tags(&self) -> Result<Vec<Tag>> {
        let select = self.sql(&format!(
            "SELECT {} FROM {{t}} ORDER BY biz_tag",
            self.tag_columns()
        ));
        let rows = sqlx::query(select).fetch_all(&self.pool).await?;
        rows.iter().map(tag_of).collect()
    }

    /// One tag.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        validate_tag(tag)?;
        let select = self.sql(&format!(
            "SELECT {} FROM {{t}} WHERE biz_tag = $1",
            self.tag_columns()
        ));
        let row = sqlx::query(select)
            .bind(tag)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref()
            .map(tag_of)
            .unwrap_or_else(|| Err(Error::TagNotFound(tag.to_string())))
    }

    /// Changes a tag's step and/or description.
    pub async fn update_tag(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        validate_tag(tag)?;
        update.validate()?;
        // `validate` refused an update with neither field.
        let statement = match (update.step, &update.description) {
            (Some(_), None) => {
                "UPDATE {t} SET step = $1, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $2"
            }
            (None, Some(_)) => {
                "UPDATE {t} SET description = $1, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $2"
            }
            _ => {
                "UPDATE {t} SET step = $1, description = $2, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $3"
            }
        };
        let mut query = sqlx::query(self.sql(statement));
        if let Some(step) = update.step {
            query = query.bind(step);
        }
        if let Some(d) = &update.description {
            query = query.bind(d.clone());
        }
        let done = query.bind(tag).execute(&self.pool).await?;
        if done.rows_affected() == 0 {
            return Err(Error::TagNotFound(tag.to_string()));
        }
        self.get_tag(tag).await
    }

    /// Claims the next segment of `tag`: `step` IDs, or the tag's stored step when `None`
    /// (Leaf's dynamic step passes its own). The new `max_id` is committed before this
    /// returns, so the range is never handed out again, even after a crash. The statements
    /// are [`transaction::claim`](super::transaction::claim)'s, over a sqlx transaction.
    pub async fn claim(&self, tag: &str, step: Option<i64>) -> Result<Claim> {
        let begin = async {
            Ok(SqlxClaim {
                store: self,
                tx: self.pool.begin().await?,
            })
        };
        super::transaction::claim(begin, tag, step).await
    }

    /// Claims the next segment of `tag`, a tag with a template, for period `period` (the
    /// key of [`snowdrift_core::counter::CounterTemplate::period_span`] at the caller's
    /// clock): `step` numbers, or the tag's stored step when `None`.
    ///
    /// One statement moves the row and claims, in the transaction that reads the result:
    /// in the row's period, `max_id` goes up by the step; for a later period, the row moves
    /// to it and `max_id` starts again at `1 + step`, so the period's numbers start at 1;
    /// for an earlier period nothing changes and the claim fails with
    /// [`Error::PeriodAhead`] (another node's clock moved the tag on: a node whose clock is
    /// behind never claims in a period that is over). A segment reaching past the largest
    /// number the template's `{seq}` shows is cut there; a claim with none left fails with
    /// [`Error::PeriodFull`] and changes nothing.
    pub async fn claim_dated(
        &self,
        tag: &str,
        step: Option<i64>,
        period: i64,
    ) -> Result<DatedClaim> {
        validate_claim(tag, step)?;
        self.templates_allowed()?;
        let mut tx = self.pool.begin().await?;
        // MySQL assigns left to right, each seeing the ones before: max_id is set first, so
        // it reads the row's old period_key on every dialect.
        let updated = match step {
            None => {
                let update = self.sql(
                    "UPDATE {t} SET \
                     max_id = CASE WHEN period_key = $1 THEN max_id + step ELSE 1 + step END, \
                     period_key = $2, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $3 AND id_template IS NOT NULL AND period_key <= $4 \
                     AND (period_key < $5 OR max_id <= 9223372036854775807 - step)",
                );
                sqlx::query(update)
                    .bind(period)
                    .bind(period)
                    .bind(tag)
                    .bind(period)
                    .bind(period)
                    .execute(&mut *tx)
                    .await?
            }
            Some(step) => {
                let update = self.sql(
                    "UPDATE {t} SET \
                     max_id = CASE WHEN period_key = $1 THEN max_id + $2 ELSE 1 + $3 END, \
                     period_key = $4, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $5 AND id_template IS NOT NULL AND period_key <= $6 \
                     AND (period_key < $7 OR max_id <= 9223372036854775807 - $8)",
                );
                sqlx::query(update)
                    .bind(period)
                    .bind(step)
                    .bind(step)
                    .bind(period)
                    .bind(tag)
                    .bind(period)
                    .bind(period)
                    .bind(step)
                    .execute(&mut *tx)
                    .await?
            }
        };
        let select = self.sql(&format!(
            "SELECT {} FROM {{t}} WHERE biz_tag = $1",
            self.tag_columns()
        ));
        let row = sqlx::query(select)
            .bind(tag)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Err(Error::TagNotFound(tag.to_string()));
        };
        let stored = tag_of(&row)?;
        let Some(template) = &stored.template else {
            return Err(Error::InvalidInput(format!(
                "tag {tag:?} has no template: its IDs are numbers, claimed without a period"
            )));
        };
        let used = step.unwrap_or(stored.step);
        if updated.rows_affected() == 0 {
            if stored.period > period {
                return Err(Error::PeriodAhead {
                    tag: tag.to_string(),
                    period,
                    stored: stored.period,
                });
            }
            return Err(Error::Overflow {
                tag: tag.to_string(),
                max_id: stored.max_id,
                step: used,
            });
        }
        let end = stored.max_id;
        let Some(start) = end.checked_sub(used).filter(|s| *s >= 1) else {
            return Err(Error::InvalidInput(format!(
                "tag {tag:?} has max_id {end}, below its step {used} + 1: the table was edited by hand; fix max_id"
            )));
        };
        let max = template.max_seq();
        if start as u64 > max {
            // Rolled back: a full period stays as it is.
            return Err(Error::PeriodFull {
                tag: tag.to_string(),
                period,
                max,
            });
        }
        let end = (end as u64).min(max + 1);
        tx.commit().await?;
        Ok(DatedClaim {
            claim: Claim {
                ids: IdRange::new(start as u64, end),
                step: used,
                stored_step: stored.step,
            },
            period,
        })
    }

    /// Raises every tag of `floors` to its floor (see [`TagFloor`]) in one transaction:
    /// the tags' rows are locked and read, every change is checked, then written; a refusal
    /// (a tag with a template, a bad floor) rolls back all of them, so either every tag is
    /// at its floor or none changed. Never lowers a `max_id`.
    pub async fn raise_to(&self, floors: &[TagFloor]) -> Result<Vec<TagChange>> {
        for floor in floors {
            floor.validate()?;
        }
        let lock = if self.dialect == Dialect::Sqlite {
            ""
        } else {
            " FOR UPDATE"
        };
        let select = self.sql(&format!(
            "SELECT {} FROM {{t}} WHERE biz_tag = $1{lock}",
            self.tag_columns()
        ));
        let mut tx = self.pool.begin().await?;
        let mut changes = Vec::with_capacity(floors.len());
        for floor in floors {
            let row = sqlx::query(AssertSqlSafe(select.0.clone()))
                .bind(&floor.tag)
                .fetch_optional(&mut *tx)
                .await?;
            let before = row.as_ref().map(tag_of).transpose()?;
            // Dropping the transaction on a refusal rolls back the tags already raised.
            changes.push((floor, floor.against(before.as_ref())?));
        }
        for (floor, change) in &changes {
            let (max_id, step) = change.after;
            if change.before.is_none() {
                let insert = self.sql(
                    "INSERT INTO {t} (biz_tag, max_id, step, description, update_time) \
                     VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
                );
                sqlx::query(insert)
                    .bind(&floor.tag)
                    .bind(max_id)
                    .bind(step)
                    .bind(floor.description.clone())
                    .execute(&mut *tx)
                    .await?;
            } else if change.changes() {
                let update = self.sql(
                    "UPDATE {t} SET max_id = $1, step = $2, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $3 AND max_id <= $4",
                );
                sqlx::query(update)
                    .bind(max_id)
                    .bind(step)
                    .bind(&floor.tag)
                    .bind(max_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(changes.into_iter().map(|(_, c)| c).collect())
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
        self.pool.close().await;
    }
}

/// A claim's transaction on a real database.
struct SqlxClaim<'a> {
    store: &'a SqlSegmentStore,
    tx: sqlx::Transaction<'static, sqlx::Any>,
}

impl ClaimTransaction for SqlxClaim<'_> {
    async fn add_step(&mut self, tag: &str, step: Option<i64>) -> Result<u64> {
        let done = match step {
            None => {
                let update = self.store.sql(
                    "UPDATE {t} SET max_id = max_id + step, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $1 AND max_id <= 9223372036854775807 - step",
                );
                sqlx::query(update).bind(tag).execute(&mut *self.tx).await?
            }
            Some(step) => {
                let update = self.store.sql(
                    "UPDATE {t} SET max_id = max_id + $1, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $2 AND max_id <= 9223372036854775807 - $3",
                );
                sqlx::query(update)
                    .bind(step)
                    .bind(tag)
                    .bind(step)
                    .execute(&mut *self.tx)
                    .await?
            }
        };
        Ok(done.rows_affected())
    }

    async fn read_tag(&mut self, tag: &str) -> Result<Option<Tag>> {
        let select = self.store.sql(&format!(
            "SELECT {} FROM {{t}} WHERE biz_tag = $1",
            self.store.tag_columns()
        ));
        let row = sqlx::query(select)
            .bind(tag)
            .fetch_optional(&mut *self.tx)
            .await?;
        row.as_ref().map(tag_of).transpose()
    }

    async fn commit(self) -> Result<()> {
        Ok(self.tx.commit().await?)
    }
}

/// A tag from a row of [`SqlSegmentStore::tag_columns`]: a row without the template
/// columns, or with a NULL template, is a tag without one.
pub(super) fn tag_of(row: &AnyRow) -> Result<Tag> {
    let tag: String = row.try_get("biz_tag")?;
    let text: Option<String> = match row.try_column("id_template") {
        Ok(_) => row.try_get("id_template")?,
        Err(_) => None,
    };
    let (template, period) = match text {
        None => (None, 0),
        Some(text) => {
            // Read as Leaf's `step` is: every dialect's INT decodes as an i64.
            let offset: i64 = row.try_get("utc_offset")?;
            let template = CounterTemplate::parse(&text)
                .and_then(|t| {
                    let seconds = i32::try_from(offset).unwrap_or(i32::MAX);
                    t.with_utc_offset(seconds)
                })
                .map_err(|e| {
                    Error::InvalidInput(format!(
                        "tag {tag:?} has template {text:?} (utc_offset {offset}), which the \
                         table holds but snowdrift cannot read: {e}; it was edited by hand"
                    ))
                })?;
            (Some(template), row.try_get("period_key")?)
        }
    };
    Ok(Tag {
        tag,
        max_id: row.try_get("max_id")?,
        step: row.try_get("step")?,
        description: row.try_get("description")?,
        template,
        period,
    })
}
