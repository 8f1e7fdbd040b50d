//! Leaf's `leaf_alloc` table on SQLite, PostgreSQL and MySQL/MariaDB.

use snowdrift_core::segment::IdRange;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, AssertSqlSafe, Row};

use super::tag::{Claim, NewTag, Tag, TagUpdate, validate_claim, validate_table, validate_tag};
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
#[derive(Debug, Clone)]
pub struct SqlSegmentStore {
    pool: AnyPool,
    dialect: Dialect,
    table: String,
}

impl SqlSegmentStore {
    /// Connects to `url` (`sqlite://file.db`, `postgres://...`, `mysql://...`) and creates
    /// `table` if it does not exist. A SQLite file is created if missing and put in WAL mode.
    pub async fn connect(url: &str, table: &str) -> Result<Self> {
        validate_table(table)?;
        let (pool, dialect) = crate::sql_connection::connect(url).await?;
        let store = Self {
            pool,
            dialect,
            table: table.to_string(),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The statement for this dialect: `{t}` is the table, `$n` placeholders become `?`
    /// outside PostgreSQL (every statement here uses its placeholders once, in order).
    fn sql(&self, template: &str) -> AssertSqlSafe<String> {
        let mut s = template.replace("{t}", &self.table);
        if self.dialect != Dialect::Postgres {
            for n in (1..=4).rev() {
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
             update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP){engine}"
        );
        crate::sql_connection::create_table(&self.pool, self.sql(&ddl)).await
    }

    /// Creates a tag whose first segment starts at 1 (as Leaf's do).
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        new.validate()?;
        let insert = self.sql(
            "INSERT INTO {t} (biz_tag, max_id, step, description, update_time) \
             VALUES ($1, 1, $2, $3, CURRENT_TIMESTAMP)",
        );
        let result = sqlx::query(insert)
            .bind(&new.tag)
            .bind(new.step)
            .bind(new.description.clone())
            .execute(&self.pool)
            .await;
        match result {
            Ok(_) => Ok(Tag {
                tag: new.tag.clone(),
                max_id: 1,
                step: new.step,
                description: new.description.clone(),
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
        let select =
            self.sql("SELECT biz_tag, max_id, step, description FROM {t} ORDER BY biz_tag");
        let rows = sqlx::query(select).fetch_all(&self.pool).await?;
        rows.iter().map(tag_of).collect()
    }

    /// One tag.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        validate_tag(tag)?;
        let select =
            self.sql("SELECT biz_tag, max_id, step, description FROM {t} WHERE biz_tag = $1");
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
    /// returns, so the range is never handed out again, even after a crash.
    pub async fn claim(&self, tag: &str, step: Option<i64>) -> Result<Claim> {
        validate_claim(tag, step)?;
        let mut tx = self.pool.begin().await?;
        let updated = match step {
            None => {
                let update = self.sql(
                    "UPDATE {t} SET max_id = max_id + step, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $1 AND max_id <= 9223372036854775807 - step",
                );
                sqlx::query(update).bind(tag).execute(&mut *tx).await?
            }
            Some(step) => {
                let update = self.sql(
                    "UPDATE {t} SET max_id = max_id + $1, update_time = CURRENT_TIMESTAMP \
                     WHERE biz_tag = $2 AND max_id <= 9223372036854775807 - $3",
                );
                sqlx::query(update)
                    .bind(step)
                    .bind(tag)
                    .bind(step)
                    .execute(&mut *tx)
                    .await?
            }
        };
        let select =
            self.sql("SELECT biz_tag, max_id, step, description FROM {t} WHERE biz_tag = $1");
        let row = sqlx::query(select)
            .bind(tag)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Err(Error::TagNotFound(tag.to_string()));
        };
        let stored = tag_of(&row)?;
        let used = step.unwrap_or(stored.step);
        if updated.rows_affected() == 0 {
            return Err(Error::Overflow {
                tag: tag.to_string(),
                max_id: stored.max_id,
                step: used,
            });
        }
        let end = stored.max_id;
        let Some(start) = end.checked_sub(used).filter(|s| *s >= 0) else {
            // Dropping the transaction rolls the claim back.
            return Err(Error::InvalidInput(format!(
                "tag {tag:?} has max_id {end}, below its step {used}: the table was edited by hand; fix max_id"
            )));
        };
        tx.commit().await?;
        Ok(Claim {
            ids: IdRange::new(start as u64, end as u64),
            step: used,
            stored_step: stored.step,
        })
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

fn tag_of(row: &AnyRow) -> Result<Tag> {
    Ok(Tag {
        tag: row.try_get("biz_tag")?,
        max_id: row.try_get("max_id")?,
        step: row.try_get("step")?,
        description: row.try_get("description")?,
    })
}
