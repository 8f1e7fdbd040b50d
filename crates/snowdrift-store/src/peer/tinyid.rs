//! Didi Tinyid's tables (tinyid-server's `db.sql`): `tiny_id_info`, a row per `biz_type`
//! whose IDs are `(max_id - step, max_id]` of its last segment, each database of a striped
//! setup serving those `≡ remainder (mod delta)`; and `tiny_id_token`, a row per token and
//! biz type it may fetch.

use sqlx::{AssertSqlSafe, Row};

use super::{as_bigint, read_failed};
use crate::error::Result;

/// One `tiny_id_info` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyIdInfo {
    /// `id`, the row's key.
    pub id: i64,
    /// `biz_type`: the name clients fetch IDs by.
    pub biz_type: String,
    /// `begin_id`: where the first segment started (Tinyid gives it no other meaning).
    pub begin_id: i64,
    /// `max_id`: the highest ID of the last segment claimed; every ID Tinyid issued from
    /// this row is at most this.
    pub max_id: i64,
    /// `step`: IDs per segment (`NULL` reads as 0, as Tinyid's DAO reads it).
    pub step: i64,
    /// `delta`: the stride between IDs (the number of databases of a striped setup).
    pub delta: i64,
    /// `remainder`: the IDs' residue modulo `delta`.
    pub remainder: i64,
    /// `version`: the optimistic lock of Tinyid's claims.
    pub version: i64,
}

/// One `tiny_id_token` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyIdToken {
    /// `id`, the row's key.
    pub id: i64,
    /// `token`: the secret clients send as `token=`.
    pub token: String,
    /// `biz_type`: a biz type the token may fetch.
    pub biz_type: String,
    /// `remark`: free text.
    pub remark: String,
}

/// What one Tinyid database holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyIdDatabase {
    /// The database's URL, password masked.
    pub shown: String,
    /// Its `tiny_id_info` rows, by `biz_type`.
    pub infos: Vec<TinyIdInfo>,
    /// Its `tiny_id_token` rows, by `id`.
    pub tokens: Vec<TinyIdToken>,
}

/// Reads both of Tinyid's tables from the database at `url` (`mysql://`, `mariadb://`,
/// `postgres://`), the columns Tinyid's own DAOs read. Writes nothing.
pub async fn read(url: &str) -> Result<TinyIdDatabase> {
    let shown = crate::mask_url(url);
    let (pool, dialect) = crate::sql_connection::connect_existing(url).await?;
    let big = |e: &str| as_bigint(dialect, e);
    let infos = format!(
        "SELECT {}, biz_type, {}, {}, {}, {}, {}, {} FROM tiny_id_info ORDER BY biz_type",
        big("id"),
        big("begin_id"),
        big("max_id"),
        big("COALESCE(step, 0)"),
        big("delta"),
        big("remainder"),
        big("version"),
    );
    let tokens = format!(
        "SELECT {}, token, biz_type, remark FROM tiny_id_token ORDER BY id",
        big("id")
    );
    let result: Result<_> = async {
        let rows = sqlx::query(AssertSqlSafe(infos))
            .fetch_all(&pool)
            .await
            .map_err(|e| {
                read_failed(
                    e,
                    &shown,
                    "Tinyid's table tiny_id_info (id, biz_type, begin_id, max_id, step, delta, remainder, version: tinyid-server's db.sql)",
                )
            })?;
        let infos = rows
            .iter()
            .map(|r| {
                Ok(TinyIdInfo {
                    id: r.try_get(0)?,
                    biz_type: r.try_get(1)?,
                    begin_id: r.try_get(2)?,
                    max_id: r.try_get(3)?,
                    step: r.try_get(4)?,
                    delta: r.try_get(5)?,
                    remainder: r.try_get(6)?,
                    version: r.try_get(7)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = sqlx::query(AssertSqlSafe(tokens))
            .fetch_all(&pool)
            .await
            .map_err(|e| {
                read_failed(
                    e,
                    &shown,
                    "Tinyid's table tiny_id_token (id, token, biz_type, remark: tinyid-server's db.sql)",
                )
            })?;
        let tokens = rows
            .iter()
            .map(|r| {
                Ok(TinyIdToken {
                    id: r.try_get(0)?,
                    token: r.try_get(1)?,
                    biz_type: r.try_get(2)?,
                    remark: r.try_get(3)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(TinyIdDatabase {
            shown: shown.clone(),
            infos,
            tokens,
        })
    }
    .await;
    pool.close().await;
    result
}
