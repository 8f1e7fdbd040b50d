//! "Claim the lowest free worker ID", written once for every backend whose claim is a
//! conditional write per ID (SQL, etcd, ZooKeeper).
//!
//! The race: read which IDs are held, then try the free ones from the lowest, each with the
//! backend's own conditional write (an update guarded by the lease's expiry, a
//! `create_revision == 0` transaction, an ephemeral create). An ID another node took
//! between the read and the write is skipped, so nodes starting at the same instant all
//! end up with distinct IDs. When every ID looked held, the answer is
//! [`Error::WorkersExhausted`] listing the holders; when others keep winning every free
//! ID, the loop reads again, a bounded number of rounds, then gives up with the backend's
//! own [`Error::Unavailable`].
//!
//! Redis does not run this loop: its claim is one Lua script, find and take in one atomic
//! step, so it has no race to lose. The file registry claims under its own guard (see
//! [`super::file`]).

use std::future::Future;

use crate::error::{Error, Result};

/// What one conditional claim of one ID found.
#[derive(Debug)]
pub(super) enum Claim {
    /// The ID is now leased to the claiming holder.
    Claimed,
    /// Another live holder has it.
    Taken,
}

/// One claim in progress on one backend: the holder, its lease or session, and the
/// backend's conditional write. Built per call of `claim_lowest`, so what a backend binds
/// once per claim (an etcd lease, a ZooKeeper session) is shared by every try.
pub(super) trait Backend: Sync {
    /// How many read-then-claim rounds before giving up.
    const ROUNDS: usize;
    /// How many IDs may turn out taken in one round before reading again.
    const TRIES_PER_ROUND: usize;

    /// The worker IDs below `space` that live leases hold (any order).
    fn held_ids(&self, space: u64) -> impl Future<Output = Result<Vec<u64>>> + Send;

    /// Claims exactly `id` for this claim's holder.
    fn try_claim(&self, id: u64) -> impl Future<Output = Result<Claim>> + Send;

    /// Every live lease, worker ID and holder, for [`Error::WorkersExhausted`].
    fn live_holders(&self) -> impl Future<Output = Result<Vec<(u64, String)>>> + Send;

    /// The error when others took every free ID first, [`Self::ROUNDS`] rounds in a row.
    fn lost_every_round(&self) -> Error {
        Error::Unavailable(
            format!(
                "could not claim a worker ID {}: other nodes took every free one first, {} rounds in a row; retry",
                self.place(),
                Self::ROUNDS
            )
            .into(),
        )
    }

    /// Where the IDs are claimed, for messages: `in table T`, `under /root`.
    fn place(&self) -> String;
}

/// Leases the lowest worker ID in `0..space` that no live lease holds; see the module docs.
pub(super) async fn claim_lowest<B: Backend>(backend: &B, space: u64) -> Result<u64> {
    for _ in 0..B::ROUNDS {
        let mut held = backend.held_ids(space).await?;
        held.retain(|id| *id < space);
        held.sort_unstable();
        held.dedup();
        let mut held = held.into_iter().peekable();
        let mut tried = 0usize;
        for id in 0..space {
            if held.next_if_eq(&id).is_some() {
                continue;
            }
            match backend.try_claim(id).await? {
                Claim::Claimed => return Ok(id),
                Claim::Taken => tried += 1,
            }
            if tried > B::TRIES_PER_ROUND {
                break;
            }
        }
        if tried == 0 {
            let holders = backend
                .live_holders()
                .await?
                .into_iter()
                .filter(|(id, _)| *id < space)
                .collect();
            return Err(Error::WorkersExhausted { space, holders });
        }
        // Every ID that looked free was taken by others meanwhile: look again.
    }
    Err(backend.lost_every_round())
}
