//! A claimed segment as Tinyid's five fields, so that what Tinyid's client issues from them is
//! exactly the claim's IDs: no ID outside it, none of it left out.
//!
//! Tinyid's client issues every `id` with `currentId < id <= maxId` and `id % delta ==
//! remainder` ([`snowdrift_proto::tinyid::Segment::client_ids`]). A claim is the IDs
//! `start, start + stride, ...` below `end` (`stride` the number of striped stores, `start`
//! already in the claiming store's residue class). So `currentId = start - 1` (nothing of
//! the class lies between it and `start`), `maxId` = the claim's last ID, `delta = stride`
//! and `remainder = start % stride`: for store `k` of `n`, `delta = n` and `remainder = k`,
//! what Tinyid's own multi-database setup gave its clients.
//!
//! `loadingId` is snowdrift's own prefetch point (`[store] prefetch_at`, which Tinyid fixed at
//! 20%): the client fetches its next segment once it issues an ID that far into this one.

use snowdrift_core::segment::IdRange;
use snowdrift_proto::tinyid::Segment;

use crate::error::Error;

/// The five fields for the claimed `ids`, prefetching once `prefetch_percent` of the
/// segment is issued. Refused when the claim holds no ID or does not fit Java's `long` and
/// `int` (which a store never hands out: its `max_id` is a signed 64-bit number).
pub(crate) fn of_claim(ids: IdRange, prefetch_percent: u8) -> Result<Segment, Error> {
    if ids.is_empty() {
        return Err(Error::unavailable(
            "the store handed out a segment with no ID; ask again",
        ));
    }
    let too_big = || {
        Error::exhausted(format!(
            "the segment {}..{} (every {}) does not fit Tinyid's Java types (long IDs, an int \
             delta)",
            ids.start, ids.end, ids.stride
        ))
    };
    let stride = ids.stride.max(1);
    let start = i64::try_from(ids.start).map_err(|_| too_big())?;
    let last = i64::try_from(ids.nth(ids.len() - 1)).map_err(|_| too_big())?;
    let delta = i32::try_from(stride).map_err(|_| too_big())?;
    // `start % stride` is below `stride`, which fits an int.
    let remainder = i32::try_from(ids.start % stride).map_err(|_| too_big())?;
    let current = start - 1;
    // `last >= start > current`: the span is positive, and a share of it stays below it.
    let span = u128::from(last.abs_diff(current));
    let ahead = span * u128::from(prefetch_percent.min(100)) / 100;
    let loading = current + i64::try_from(ahead).map_err(|_| too_big())?;
    Ok(Segment {
        max_id: last,
        loading_id: loading,
        current_id: current,
        delta,
        remainder,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What Tinyid's client issues from the answer to `ids`.
    fn issued(ids: IdRange, percent: u8) -> Vec<u64> {
        let segment = of_claim(ids, percent).unwrap();
        segment
            .client_ids()
            .expect("a segment Tinyid's client issues cleanly")
            .map(|id| u64::try_from(id).unwrap())
            .collect()
    }

    proptest! {
        /// Striped or not, at any offset: the client issues the claim's IDs, all of them
        /// and only them, in order.
        #[test]
        fn the_client_issues_exactly_the_claim(
            start in 1u64..1_000_000,
            len in 1u64..3_000,
            stores in 1u64..6,
            k in 0u64..6,
            percent in 0u8..=100,
        ) {
            let k = k % stores;
            let ids = IdRange::residues(start, start + len, stores, k);
            prop_assume!(!ids.is_empty());
            let claimed: Vec<u64> = ids.iter().collect();
            prop_assert_eq!(issued(ids, percent), claimed);
            let s = of_claim(ids, percent).unwrap();
            prop_assert_eq!((s.delta, s.remainder), (stores as i32, k as i32));
            prop_assert!(s.current_id <= s.loading_id && s.loading_id <= s.max_id);
        }
    }

    #[test]
    fn fields_of_a_plain_and_a_striped_claim() {
        // A tag's first segment of 1000: IDs 1..=1000, prefetched at 10%.
        let s = of_claim(IdRange::new(1, 1001), 10).unwrap();
        assert_eq!(
            (s.current_id, s.loading_id, s.max_id, s.delta, s.remainder),
            (0, 100, 1000, 1, 0)
        );
        // Store 1 of 3 claimed 1001..2001: its IDs are 1003, 1006, ..., 1999.
        let ids = IdRange::residues(1001, 2001, 3, 1);
        let s = of_claim(ids, 20).unwrap();
        assert_eq!(
            (s.current_id, s.max_id, s.delta, s.remainder),
            (1002, 1999, 3, 1)
        );
        assert_eq!(s.loading_id, 1002 + 997 / 5);
        assert_eq!(issued(ids, 20).first(), Some(&1003));
        assert!(of_claim(IdRange::new(5, 5), 10).is_err());
        assert!(of_claim(IdRange::new(u64::MAX - 1, u64::MAX), 10).is_err());
    }
}
