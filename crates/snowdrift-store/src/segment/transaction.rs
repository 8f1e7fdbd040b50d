//! A SQL segment claim, statement by statement: what [`SqlSegmentStore::claim`] does in its
//! transaction, over a [`ClaimTransaction`] that sqlx implements for the real databases
//! and the simulator (`crates/snowdrift-sim`, feature `sim`) for its simulated one, so both
//! run this code.
//!
//! [`SqlSegmentStore::claim`]: super::SqlSegmentStore::claim

use std::future::Future;

use snowdrift_core::segment::IdRange;

use super::tag::{Claim, Tag, validate_claim};
use crate::error::{Error, Result};
use crate::worker::mistakes::{Mistake, planted};

/// The statements of a claim, in one open transaction; dropping it without
/// [`commit`](Self::commit) rolls it back.
pub trait ClaimTransaction: Send {
    /// `UPDATE {t} SET max_id = max_id + step, update_time = CURRENT_TIMESTAMP WHERE
    /// biz_tag = ? AND max_id <= 9223372036854775807 - step`, with `step` the one given or
    /// the row's own; the rows it changed (0 or 1). The row stays locked until the
    /// transaction ends.
    fn add_step(
        &mut self,
        tag: &str,
        step: Option<i64>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// `SELECT ... FROM {t} WHERE biz_tag = ?` in the transaction: the row as this
    /// transaction sees it (its own update included).
    fn read_tag(&mut self, tag: &str) -> impl Future<Output = Result<Option<Tag>>> + Send;

    /// `COMMIT`. An error leaves it unknown whether the transaction committed.
    fn commit(self) -> impl Future<Output = Result<()>> + Send;
}

/// Claims the next segment of `tag` (`step` IDs, or the row's step) in the transaction
/// `begin` opens: the update, then the read of the new `max_id` under the row's lock, then
/// the commit. The range is returned only once the commit answered: a claim whose commit
/// failed may or may not have taken the range, which is then skipped, never handed out.
pub async fn claim<T: ClaimTransaction>(
    begin: impl Future<Output = Result<T>>,
    tag: &str,
    step: Option<i64>,
) -> Result<Claim> {
    validate_claim(tag, step)?;
    let mut tx = begin.await?;
    // Planted (simulator only): the range taken from a read before the update, outside
    // the row's lock, so two claims racing read the same max_id.
    let read_first = if planted(Mistake::ClaimReadsBeforeUpdate) {
        tx.read_tag(tag).await?
    } else {
        None
    };
    let updated = tx.add_step(tag, step).await?;
    let Some(row) = tx.read_tag(tag).await? else {
        return Err(Error::TagNotFound(tag.to_string()));
    };
    if let Some(template) = row.template {
        // Dropping the transaction rolls the claim back: this tag counts per period.
        return Err(Error::TagTemplated {
            tag: tag.to_string(),
            template: Box::new(template),
        });
    }
    let used = step.unwrap_or(row.step);
    if updated == 0 {
        return Err(Error::Overflow {
            tag: tag.to_string(),
            max_id: row.max_id,
            step: used,
        });
    }
    let end = read_first.map_or(row.max_id, |r| r.max_id.saturating_add(used));
    let Some(start) = end.checked_sub(used).filter(|s| *s >= 0) else {
        // Dropping the transaction rolls the claim back.
        return Err(Error::InvalidInput(format!(
            "tag {tag:?} has max_id {end}, below its step {used}: the table was edited by hand; fix max_id"
        )));
    };
    let committed = tx.commit().await;
    // Planted (simulator only): a failed commit taken for one that went through.
    if !planted(Mistake::ClaimIgnoresFailedCommit) {
        committed?;
    }
    Ok(Claim {
        ids: IdRange::new(start as u64, end as u64),
        step: used,
        stored_step: row.step,
    })
}
