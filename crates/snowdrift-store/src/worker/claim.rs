//! "Claim a free worker ID", written once for every backend whose claim is a conditional
//! write per ID (SQL, etcd, ZooKeeper), and the order in which every backend tries the
//! free IDs.
//!
//! The race: read which IDs are held (and, for [`claim_free`] with a time, the stored
//! marks), then try the free ones in [`preference`] order, each with the backend's own
//! conditional write (an update guarded by the lease's expiry, a `create_revision == 0`
//! transaction, an ephemeral create). An ID another node took between the read and the
//! write is skipped, so nodes starting at the same instant all end up with distinct IDs.
//! When every ID looked held, the answer is [`Error::WorkersExhausted`] listing the
//! holders; when others keep winning every free ID, the loop reads again, a bounded number
//! of rounds, then gives up with the backend's own [`Error::Unavailable`].
//!
//! The marks read here only choose the order: they may be stale by the time the claim
//! lands (another node may have held the ID and raised its mark in between), so the
//! keeper reads the mark again after the claim and waits it out as always. Preferring an
//! ID whose mark passed saves the wait; it never decides what is safe to issue.
//!
//! Redis does not run this loop: its claim is one Lua script, find and take in one atomic
//! step (with the same order), so it has no race to lose. The file registry claims under
//! its own guard (see [`super::file`]), also in [`preference`] order.

use std::collections::HashMap;
use std::future::Future;

use super::mark::Mark;
use crate::error::{Error, Result};

/// What one conditional claim of one ID found.
#[derive(Debug)]
pub(super) enum Claim {
    /// The ID is now leased to the claiming holder.
    Claimed,
    /// Another live holder has it.
    Taken,
}

/// What a claim reads before it tries: the held IDs and, when asked, the stored marks.
#[derive(Debug, Default)]
pub(super) struct Survey {
    /// The worker IDs below the space that live leases hold (any order, maybe repeated).
    pub held: Vec<u64>,
    /// Stored marks ([`Mark::stored`]) by worker ID; an ID without one has none. `None`
    /// for a mark that does not parse (edited by hand): tried last, and its claim then
    /// fails with the read's own error.
    pub marks: HashMap<u64, Option<u64>>,
}

/// One claim in progress on one backend: the holder, its lease or session, and the
/// backend's conditional write. Built per call of `claim_free`, so what a backend binds
/// once per claim (an etcd lease, a ZooKeeper session) is shared by every try.
pub(super) trait Backend: Sync {
    /// How many read-then-claim rounds before giving up.
    const ROUNDS: usize;
    /// How many IDs may turn out taken in one round before reading again.
    const TRIES_PER_ROUND: usize;

    /// The worker IDs below `space` that live leases hold and, with `marks`, the stored
    /// marks below `space` (best read in one step with the leases, but any recent read
    /// will do: they only order the tries).
    fn survey(&self, space: u64, marks: bool) -> impl Future<Output = Result<Survey>> + Send;

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

/// Leases a worker ID in `0..space` that no live lease holds; see the module docs. With
/// `now_ms` (the claiming node's clock), the free IDs are tried in [`preference`] order,
/// so one whose mark passed is taken before one whose mark the node would wait for;
/// without, from the lowest.
pub(super) async fn claim_free<B: Backend>(
    backend: &B,
    space: u64,
    now_ms: Option<u64>,
) -> Result<u64> {
    for _ in 0..B::ROUNDS {
        let Survey { mut held, marks } = backend.survey(space, now_ms.is_some()).await?;
        held.retain(|id| *id < space);
        held.sort_unstable();
        held.dedup();
        let ready = ready_times(&marks, space);
        let mut tried = 0usize;
        for id in preference(space, now_ms.unwrap_or(0), &ready, 0) {
            if held.binary_search(&id).is_ok() {
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

/// When each ID with a stored mark can issue: the mark's time, or never (`u64::MAX`) for
/// a mark that does not parse.
pub(super) fn ready_times(marks: &HashMap<u64, Option<u64>>, space: u64) -> HashMap<u64, u64> {
    marks
        .iter()
        .filter(|(id, _)| **id < space)
        .map(|(id, m)| (*id, m.map_or(u64::MAX, |m| Mark::from_stored(m).ms)))
        .collect()
}

/// The order in which a claim tries the IDs of `0..space` (held ones included: the
/// caller skips them). An ID can issue from `ready[id]` on (its mark's time), or from
/// `unknown_ready` when `ready` does not name it. IDs that can issue by `now_ms` come
/// first, lowest first; then the others by the time they can, soonest first, ties by ID.
/// Deterministic, so nodes racing for IDs see the same order and the losers move on to
/// the next; lazy, so a large space costs only the IDs actually tried.
pub(super) fn preference(
    space: u64,
    now_ms: u64,
    ready: &HashMap<u64, u64>,
    unknown_ready: u64,
) -> impl Iterator<Item = u64> + '_ {
    // Every ID is sorted by (when it can issue, counting "already" as now, ID).
    let mut known: Vec<(u64, u64)> = ready
        .iter()
        .filter(|(id, _)| **id < space)
        .map(|(id, at)| ((*at).max(now_ms), *id))
        .collect();
    known.sort_unstable();
    let unknown_key = unknown_ready.max(now_ms);
    let mut known = known.into_iter().peekable();
    let mut unknown = (0..space).filter(|id| !ready.contains_key(id)).peekable();
    std::iter::from_fn(move || match (known.peek(), unknown.peek()) {
        (Some(&k), Some(&u)) if k <= (unknown_key, u) => known.next().map(|(_, id)| id),
        (_, Some(_)) => unknown.next(),
        (Some(_), None) => known.next().map(|(_, id)| id),
        (None, None) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(space: u64, now: u64, ready: &[(u64, u64)], unknown: u64) -> Vec<u64> {
        let ready = ready.iter().copied().collect();
        preference(space, now, &ready, unknown).collect()
    }

    #[test]
    fn passed_marks_first_lowest_first_then_soonest() {
        // 0 waits 3 s, 1 has no mark (passed), 2 passed, 3 waits 1 s, 4 waits 1 s.
        let now = 10_000;
        let ready = [(0, 13_000), (2, 9_000), (3, 11_000), (4, 11_000)];
        assert_eq!(order(6, now, &ready, 0), vec![1, 2, 5, 3, 4, 0]);
        // A mark exactly at now has passed (the keeper issues from now on).
        assert_eq!(order(2, now, &[(0, now), (1, 0)], 0), vec![0, 1]);
        // Only future marks: soonest first.
        assert_eq!(
            order(3, now, &[(0, 12_000), (1, 11_000), (2, 13_000)], 0),
            vec![1, 0, 2]
        );
        // An unparsable mark (never ready) goes last.
        assert_eq!(order(3, now, &[(0, u64::MAX)], 0), vec![1, 2, 0]);
    }

    #[test]
    fn unknown_ids_sort_at_their_own_time() {
        // A file registry: an ID without files waits a guard; one with a passed mark
        // beats it, one that waits longer than the guard comes after it.
        let now = 10_000;
        let ready = [(0, 12_000), (1, 5_000), (2, 10_100)];
        assert_eq!(order(5, now, &ready, now + 350), vec![1, 2, 3, 4, 0]);
    }

    #[test]
    fn large_spaces_are_lazy_and_ids_out_of_space_are_ignored() {
        let ready = [(7, 1), (1 << 40, 1)].into_iter().collect();
        let first: Vec<u64> = preference(u64::MAX, 100, &ready, 0).take(3).collect();
        assert_eq!(first, vec![0, 1, 2]);
        assert_eq!(order(3, 100, &[(5, 1)], 0), vec![0, 1, 2]);
    }
}
