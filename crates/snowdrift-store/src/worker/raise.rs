//! Carrying another system's worker IDs over: each ID's high-water mark raised above the
//! last time that system issued under it, written the way a node writes it (under the
//! ID's lease, through the registry's own mark and layout writes), never lowered.

use std::time::Duration;

use super::mark::Mark;
use super::registry::WorkerRegistry;
use crate::error::{Error, Result};

/// The least a worker ID's high-water mark must be: no ID may be issued under it at or
/// before `at_least_ms` (ms since 1970).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkFloor {
    /// The worker ID.
    pub worker_id: u64,
    /// The time the mark must reach.
    pub at_least_ms: u64,
    /// The floor is a clock reading taken after the other system stopped (it kept no time
    /// of its own), not a time from its data: a mark already recorded under the same layout
    /// satisfies it. That mark was written after the other system stopped (by an earlier
    /// raise, or by a node, which cannot have issued beside it under the same ID), so it is
    /// above every time that system issued; raising it to a later reading would only make
    /// a second run change what the first wrote.
    pub from_clock: bool,
}

/// What raising one worker ID's mark to its floor changes (or, for a preview, would).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkChange {
    /// The worker ID.
    pub worker_id: u64,
    /// Its mark before; `None` when it had none.
    pub before: Option<Mark>,
    /// The layout recorded beside it before.
    pub layout_before: Option<String>,
    /// Its mark after: the higher of the one before and the floor.
    pub after: Mark,
    /// The layout recorded beside it after ([`record`] form).
    ///
    /// [`record`]: snowdrift_core::layout::migrate::record
    pub layout_after: String,
}

impl MarkChange {
    /// Whether the raise writes anything.
    pub fn changes(&self) -> bool {
        self.before != Some(self.after) || self.layout_before.as_deref() != Some(&self.layout_after)
    }
}

impl MarkFloor {
    /// The change raising a worker ID whose stored mark is `before` (and recorded layout
    /// `layout_before`) to this floor makes, recording `layout`: the extension value stays,
    /// the time becomes the later of the two. Refused when the ID already has a mark under
    /// another layout: a snowdrift node issued under it, and one record cannot hold both.
    pub fn against(
        &self,
        before: Option<u64>,
        layout_before: Option<&str>,
        layout: &str,
    ) -> Result<MarkChange> {
        let before = before.map(Mark::from_stored);
        if let (Some(mark), Some(recorded)) = (before, layout_before)
            && recorded != layout
        {
            return Err(Error::InvalidInput(format!(
                "worker ID {}: its high-water mark ({}) was written under layout {recorded}, not \
                 {layout}: snowdrift nodes issued under it with another layout, and its record \
                 cannot hold both; carry these worker IDs to a generator of its own (another \
                 name, so another namespace), or configure that layout",
                self.worker_id,
                snowdrift_core::layout::format_ms(mark.ms)
            )));
        }
        let after = match before {
            Some(mark) if self.from_clock && layout_before == Some(layout) => mark,
            Some(mark) => Mark {
                extension: mark.extension,
                ms: mark.ms.max(self.at_least_ms),
            },
            None => Mark {
                extension: 0,
                ms: self.at_least_ms,
            },
        };
        Ok(MarkChange {
            worker_id: self.worker_id,
            before,
            layout_before: layout_before.map(str::to_string),
            after,
            layout_after: layout.to_string(),
        })
    }
}

/// A worker ID held by a live node: its mark is that node's to write.
fn held(worker_id: u64, holder: &str) -> Error {
    Error::InvalidInput(format!(
        "worker ID {worker_id} is held by {holder:?}, a live node: its high-water mark is that \
         node's to write, and a mark raised under it would not stop IDs it issues now; stop it \
         (or wait until its lease ends) and run this again"
    ))
}

impl WorkerRegistry {
    /// What [`raise_marks`](Self::raise_marks) would change, read without writing: each
    /// worker ID's mark and layout now, and the mark and layout after. Refused for a worker
    /// ID whose mark must change while a live node holds it, or whose mark was written
    /// under another layout.
    pub async fn preview_marks(
        &self,
        floors: &[MarkFloor],
        layout: &str,
    ) -> Result<Vec<MarkChange>> {
        let holders = self.holders().await?;
        let mut changes = Vec::with_capacity(floors.len());
        for floor in floors {
            let before = self.read_mark(floor.worker_id).await?;
            let recorded = self.read_layout(floor.worker_id).await?;
            let change = floor.against(before, recorded.as_deref(), layout)?;
            if change.changes()
                && let Some((_, holder)) = holders.iter().find(|(id, _)| *id == floor.worker_id)
            {
                return Err(held(floor.worker_id, holder));
            }
            changes.push(change);
        }
        Ok(changes)
    }

    /// [`preview_marks`](Self::preview_marks) on the registry at `url` and `namespace`,
    /// opened with [`open_existing`](Self::open_existing): nothing is created or changed
    /// there, and a registry that holds nothing yet previews every floor against no mark.
    pub async fn preview_marks_at(
        url: &str,
        namespace: &str,
        floors: &[MarkFloor],
        layout: &str,
    ) -> Result<Vec<MarkChange>> {
        match Self::open_existing(url, namespace).await? {
            Some(registry) => registry.preview_marks(floors, layout).await,
            None => floors
                .iter()
                .map(|floor| floor.against(None, None, layout))
                .collect(),
        }
    }

    /// Raises the mark of every worker ID in `floors` to its floor and records `layout`
    /// beside it ([`record`] form), as a node does before its first ID: every ID is leased
    /// to `holder` first (for `ttl`), so a live node on any of them refuses the whole
    /// batch before anything is written; then each mark and layout is read again, every
    /// change checked, and only then written (the layout first, then the mark, as a node
    /// writes them); every lease is given back at the end, whatever happened. Never lowers a
    /// mark. Registries have no transactions across worker IDs: a write that fails midway
    /// leaves the marks before it raised, which is safe, and running it again completes it.
    ///
    /// [`record`]: snowdrift_core::layout::migrate::record
    pub async fn raise_marks(
        &self,
        floors: &[MarkFloor],
        layout: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Vec<MarkChange>> {
        let mut leased = Vec::with_capacity(floors.len());
        let mut result = Ok(());
        for floor in floors {
            match self.claim(floor.worker_id, holder, ttl).await {
                Ok(()) => leased.push(floor.worker_id),
                Err(Error::WorkerTaken { worker_id, holder }) => {
                    result = Err(held(worker_id, &holder));
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let outcome = match result {
            Ok(()) => self.raise_leased(floors, layout, holder).await,
            Err(e) => Err(e),
        };
        for worker_id in leased {
            let released = self.release(worker_id, holder).await;
            if outcome.is_ok() {
                released?;
            }
        }
        outcome
    }

    async fn raise_leased(
        &self,
        floors: &[MarkFloor],
        layout: &str,
        holder: &str,
    ) -> Result<Vec<MarkChange>> {
        let mut changes = Vec::with_capacity(floors.len());
        for floor in floors {
            let before = self.read_mark(floor.worker_id).await?;
            let recorded = self.read_layout(floor.worker_id).await?;
            changes.push(floor.against(before, recorded.as_deref(), layout)?);
        }
        for change in &changes {
            if change.layout_before.as_deref() != Some(&change.layout_after) {
                self.write_layout(change.worker_id, holder, &change.layout_after)
                    .await?;
            }
            if change.before != Some(change.after) {
                self.write_mark(change.worker_id, holder, change.after.stored())
                    .await?;
            }
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: &str = "time:41,worker:10,seq:12/1/1288834974657";

    #[test]
    fn a_mark_floor_raises_keeps_and_refuses_another_layout() {
        let floor = MarkFloor {
            worker_id: 3,
            at_least_ms: 2_000,
            from_clock: false,
        };
        let fresh = floor.against(None, None, L).unwrap();
        assert_eq!(
            fresh.after,
            Mark {
                extension: 0,
                ms: 2_000
            }
        );
        assert!(fresh.changes());
        let raised = floor.against(Some(1_000), Some(L), L).unwrap();
        assert_eq!(raised.after.ms, 2_000);
        let kept = floor.against(Some(5_000), Some(L), L).unwrap();
        assert_eq!(kept.after.ms, 5_000, "a later mark is never lowered");
        assert!(!kept.changes());
        let extended = Mark {
            extension: 2,
            ms: 1_000,
        }
        .stored();
        let ext = floor.against(Some(extended), Some(L), L).unwrap();
        assert_eq!(
            ext.after,
            Mark {
                extension: 2,
                ms: 2_000
            }
        );
        let e = floor
            .against(Some(1_000), Some("time:41,seq:22/1/0"), L)
            .unwrap_err()
            .to_string();
        assert!(e.contains("worker ID 3") && e.contains("another"), "{e}");
        // A layout recorded without a mark (nothing issued) is replaced.
        assert!(floor.against(None, Some("time:41,seq:22/1/0"), L).is_ok());
        // A clock reading is met by any mark under the same layout, and only by one.
        let clock = MarkFloor {
            from_clock: true,
            ..floor
        };
        assert!(!clock.against(Some(1_000), Some(L), L).unwrap().changes());
        assert_eq!(clock.against(Some(1_000), None, L).unwrap().after.ms, 2_000);
    }
}
