//! Moving a running generator from one layout to another: can the new layout ever issue an
//! ID the old one issued, or one below the old one's last?
//!
//! Every instant `T` has two numbers: the largest ID the old layout can have issued up to
//! `T` (every worker, every sequence value, under its extension value), `old(T)`, and the
//! smallest ID the new layout can issue at `T`, `new(T)`. Both only grow. A switch at `S`
//! is safe when `new(S) > old(S)`: every ID the new layout issues from then on is above
//! every ID the old one issued. It stays safe while nodes still on the old layout keep
//! issuing only until `old` reaches `new(S)`; from [`Migration::above_from_ms`] on, `new(T)
//! > old(T)` at every later instant, so nodes may move one by one at any pace.
//!
//! The search is exact, not sampled: IDs have a power-of-two number of values below their
//! time field, so counted in the ticks of the layout with fewer low bits, whether a tick
//! holds an instant where `new <= old` is a linear inequality, and the last such tick is
//! found by bisection.

use super::{Layout, Role, mask};

/// What [`check`] found about a switch at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The instant of the switch (ms since 1970).
    pub at_ms: u64,
    /// The largest ID the old layout can have issued up to `at_ms`; `None` before its epoch.
    pub old_last_id: Option<u64>,
    /// The smallest ID the new layout issues at `at_ms`; `None` when it cannot issue then
    /// (before its epoch, or its time field is full).
    pub new_first_id: Option<u64>,
    /// The first instant from which the new layout's IDs stay above the old one's at every
    /// later instant, within the new layout's lifetime; `None` if there is none.
    pub above_from_ms: Option<u64>,
    /// If nodes kept issuing under the old layout after `at_ms`: the first instant their IDs
    /// could reach `new_first_id` (`None`: never, the old layout ends first).
    pub old_reaches_new_ms: Option<u64>,
    /// The verdict.
    pub verdict: Verdict,
    /// An epoch (whole UTC day) for the new layout's fields and unit under which a switch at
    /// `at_ms` is safe however long the old layout keeps issuing; `None` when the verdict is
    /// [`Verdict::Safe`] or no epoch fits (the old layout's last ID is beyond what the new
    /// fields can pass).
    pub safe_epoch_ms: Option<u64>,
}

/// Whether a switch at the checked instant is safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The new layout's IDs stay above every ID the old one can issue from the switch on:
    /// nodes may move one by one.
    Safe,
    /// The new layout's first IDs are above every ID the old one issued so far, but nodes
    /// still on the old layout must stop issuing before this instant (ms since 1970).
    SafeIfOldStopsBy(u64),
    /// The new layout may issue IDs at or below IDs the old one issued.
    Unsafe,
}

/// A layout as a registry stores it beside a worker ID's high-water mark, so a later start
/// knows which layout issued up to the mark: `FIELDS/UNIT_MS/EPOCH_MS`, e.g.
/// `time:41,datacenter:5,worker:5,seq:12/1/1288834974657`. Field names keep their roles.
///
/// ```
/// use snowdrift_core::layout::{Layout, migrate::{parse_record, record}};
/// let baidu = Layout::preset("baidu")?;
/// assert_eq!(record(&baidu), "time:28,worker:22,seq:13/1000/1463702400000");
/// assert_eq!(parse_record(&record(&baidu))?, baidu);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn record(layout: &Layout) -> String {
    format!(
        "{}/{}/{}",
        spec(layout),
        layout.unit_ms(),
        layout.epoch_ms()
    )
}

/// The fields of a layout as a spec, high bits first (`time:41,worker:10,seq:12`).
pub fn spec(layout: &Layout) -> String {
    layout
        .fields()
        .iter()
        .map(|f| format!("{}:{}", f.name(), f.bits()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Reads what [`record`] wrote.
pub fn parse_record(text: &str) -> crate::Result<Layout> {
    let bad = |why: &str| {
        crate::Error::InvalidConfig(format!(
            "layout record {text:?} is not FIELDS/UNIT_MS/EPOCH_MS ({why}); it was edited by hand: delete it and the next start records its layout"
        ))
    };
    let mut parts = text.trim().split('/');
    let (Some(fields), Some(unit), Some(epoch), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("three parts expected"));
    };
    let unit = unit.parse().map_err(|_| bad("unit"))?;
    let epoch = epoch.parse().map_err(|_| bad("epoch"))?;
    Layout::from_spec(fields, unit, epoch).map_err(|e| bad(&e.to_string()))
}

/// The extremes of one layout's IDs, as exact integers.
struct Side {
    epoch: u128,
    unit: u128,
    /// Bits below the time field.
    low_bits: u32,
    /// The extension value's part of every ID.
    ext_part: u128,
    /// The highest tick (IDs stay below 2^63).
    max_tick: u128,
    /// The part below the time field: 0 for the smallest ID, all ones for the largest.
    low: u128,
}

impl Side {
    fn new(layout: &Layout, extension: u64, largest: bool) -> Self {
        let time = layout.index_of(Role::Time).unwrap_or(0);
        let low_bits = layout.shift_of(time);
        let ext = extension.min(mask(layout.extension_bits()));
        Self {
            epoch: u128::from(layout.epoch_ms()),
            unit: u128::from(layout.unit_ms()),
            low_bits,
            ext_part: u128::from(ext) << (low_bits + u32::from(layout.time_bits())),
            max_tick: u128::from(layout.max_tick()),
            low: if largest {
                u128::from(mask(low_bits as u8))
            } else {
                0
            },
        }
    }
    /// The ID of tick `k` (its extreme in this side's direction).
    fn id(&self, k: u128) -> u128 {
        self.ext_part + (k << self.low_bits) + self.low
    }
    /// The start of tick `k`, ms since 1970.
    fn start(&self, k: u128) -> u128 {
        self.epoch + k * self.unit
    }
    /// The tick holding `t`; `None` before the epoch.
    fn tick(&self, t: u128) -> Option<u128> {
        t.checked_sub(self.epoch).map(|d| d / self.unit)
    }
    /// The end of the time field: the first instant past its last tick.
    fn end(&self) -> u128 {
        self.start(self.max_tick + 1)
    }
}

/// The last `k` in `lo..=hi` where `pred` holds, for a `pred` that holds on a prefix or on
/// a suffix of the range.
fn last_true(lo: u128, hi: u128, pred: impl Fn(u128) -> bool) -> Option<u128> {
    if lo > hi {
        return None;
    }
    if pred(hi) {
        return Some(hi);
    }
    if !pred(lo) {
        return None;
    }
    let (mut good, mut bad) = (lo, hi);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if pred(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The first index where `pred` holds, for a `pred` that holds on a suffix of `lo..=hi`.
fn first_true(lo: u128, hi: u128, pred: impl Fn(u128) -> bool) -> Option<u128> {
    if lo > hi || !pred(hi) {
        return None;
    }
    if pred(lo) {
        return Some(lo);
    }
    let (mut bad, mut good) = (lo, hi);
    while good - bad > 1 {
        let mid = bad + (good - bad) / 2;
        if pred(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The largest ID `old` can have issued up to `t` (its last tick's once its time is full).
fn old_at(old: &Side, t: u128) -> Option<u128> {
    old.tick(t).map(|k| old.id(k.min(old.max_tick)))
}

/// The smallest ID `new` issues at `t`.
fn new_at(new: &Side, t: u128) -> Option<u128> {
    new.tick(t)
        .filter(|k| *k <= new.max_tick)
        .map(|k| new.id(k))
}

/// The first instant at which the old layout's largest ID reaches `v`; `None` if it never
/// does.
fn old_reaches(old: &Side, v: u128) -> Option<u128> {
    let first = old.id(0);
    if v <= first {
        return Some(old.epoch);
    }
    let j = (v - first).div_ceil(1 << old.low_bits);
    (j <= old.max_tick).then(|| old.start(j))
}

/// The first instant from which `new(T) > old(T)` at every later `T` within the new
/// layout's lifetime (see the module docs); `None` if there is none.
fn above_from(old: &Side, new: &Side) -> Option<u128> {
    // The end of the last stretch where new(T) <= old(T), if any.
    let last_bad_end = if new.low_bits >= old.low_bits {
        // Counted in the new layout's ticks: tick k holds a bad instant when the old
        // layout reaches new's tick-k ID before tick k ends.
        let bad = |k: u128| old_reaches(old, new.id(k)).is_some_and(|t| t < new.start(k + 1));
        let old_first = old.id(0);
        let old_last = old.id(old.max_tick);
        // Ticks whose ID is at most old's first (old reaches it at its epoch: bad from the
        // first new tick ending after that), then those old reaches later (a linear
        // inequality in k, since new's IDs grow by a multiple of old's tick step), then
        // those old never reaches.
        let head_end = if new.id(0) <= old_first {
            Some(((old_first - new.ext_part) >> new.low_bits).min(new.max_tick))
        } else {
            None
        };
        let reach_end = if new.id(0) <= old_last {
            Some(((old_last - new.ext_part) >> new.low_bits).min(new.max_tick))
        } else {
            None
        };
        let middle = reach_end.and_then(|end| {
            let lo = head_end.map_or(0, |h| h + 1);
            last_true(lo, end, bad)
        });
        let k = middle.or_else(|| head_end.and_then(|h| last_true(0, h, bad)));
        k.map(|k| new.start(k + 1))
    } else {
        // Counted in the old layout's ticks: in old tick j (the last one lasting for ever),
        // new's ticks up to kmax(j) issue IDs at or below old's largest. kmax is linear in
        // j (old's IDs grow by a multiple of new's tick step), until it passes new's last
        // tick.
        let kmax = |j: u128| {
            old.id(j)
                .checked_sub(new.ext_part)
                .map(|d| d >> new.low_bits)
        };
        let old_next = |j: u128| {
            if j >= old.max_tick {
                u128::MAX
            } else {
                old.start(j + 1)
            }
        };
        // The end of new's ticks up to k (its time field's end past its last tick).
        let new_until = |k: u128| {
            if k >= new.max_tick {
                new.end()
            } else {
                new.start(k + 1)
            }
        };
        let bad = |j: u128| {
            kmax(j).is_some_and(|k| old.start(j) < new_until(k) && new.epoch < old_next(j))
        };
        // Old ticks whose largest ID is below new's smallest hold no bad instant, nor do
        // those that end before new's epoch.
        let lo_ids = first_true(0, old.max_tick, |j| kmax(j).is_some());
        let lo_epoch = new
            .epoch
            .checked_sub(old.epoch)
            .map_or(0, |d| d / old.unit)
            .min(old.max_tick);
        let found = lo_ids.map(|l| l.max(lo_epoch)).and_then(|lo| {
            let clamp = first_true(lo, old.max_tick, |j| {
                kmax(j).is_some_and(|k| k >= new.max_tick)
            });
            let clamped = clamp.and_then(|c| last_true(c, old.max_tick, bad));
            clamped.or_else(|| {
                let hi = clamp.map_or(Some(old.max_tick), |c| c.checked_sub(1))?;
                last_true(lo, hi, bad)
            })
        });
        found.map(|j| new_until(kmax(j).unwrap_or(0)).min(old_next(j)))
    };
    match last_bad_end {
        None => Some(new.epoch),
        Some(t) if t >= new.end() => None,
        Some(t) => Some(t.max(new.epoch)),
    }
}

/// The largest ID `layout` can have issued up to `t_ms` (every node, every sequence value,
/// under `extension`); `None` before its epoch.
pub fn largest_until(layout: &Layout, extension: u64, t_ms: u64) -> Option<u64> {
    old_at(&Side::new(layout, extension, true), t_ms.into()).map(|v| v as u64)
}

/// The smallest ID `layout` issues at `t_ms` under `extension`; `None` when it cannot issue
/// then (before its epoch, or its time field is full).
pub fn smallest_at(layout: &Layout, extension: u64, t_ms: u64) -> Option<u64> {
    new_at(&Side::new(layout, extension, false), t_ms.into()).map(|v| v as u64)
}

/// Checks a switch from `old` (issuing under extension value `old_extension`) to `new` at
/// `at_ms`. The new layout issues under the same extension value when it has an
/// extension field (as a server does, carrying it in the mark), else under none.
///
/// ```
/// use snowdrift_core::layout::{Layout, migrate::{check, Verdict}};
/// // js53's IDs stay below 2^53; Twitter's passed it in 2010.
/// let m = check(&Layout::preset("js53")?, 0, &Layout::preset("twitter")?, 1_764_000_000_000);
/// assert_eq!(m.verdict, Verdict::Safe);
/// // The other way, every js53 ID is below IDs Twitter's layout issued.
/// let back = check(&Layout::preset("twitter")?, 0, &Layout::preset("js53")?, 1_764_000_000_000);
/// assert_eq!(back.verdict, Verdict::Unsafe);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn check(old: &Layout, old_extension: u64, new: &Layout, at_ms: u64) -> Migration {
    let new_extension = if new.extension_bits() > 0 {
        old_extension
    } else {
        0
    };
    let o = Side::new(old, old_extension, true);
    let n = Side::new(new, new_extension, false);
    let at = u128::from(at_ms);
    let to_u64 = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
    let old_last = old_at(&o, at);
    let new_first = new_at(&n, at);
    let above = above_from(&o, &n);
    let reaches = new_first.and_then(|v| old_reaches(&o, v));
    let verdict = match (new_first, old_last) {
        (None, _) => Verdict::Unsafe,
        _ if above.is_some_and(|c| at >= c) => Verdict::Safe,
        (Some(first), last) if last.is_none_or(|l| first > l) => match reaches {
            Some(by) => Verdict::SafeIfOldStopsBy(to_u64(by)),
            None => Verdict::Safe,
        },
        _ => Verdict::Unsafe,
    };
    let safe_epoch_ms = (verdict != Verdict::Safe)
        .then(|| safe_epoch(&o, &n, at))
        .flatten()
        .map(to_u64);
    Migration {
        at_ms,
        old_last_id: old_last.map(to_u64),
        new_first_id: new_first.map(to_u64),
        above_from_ms: above.map(to_u64),
        old_reaches_new_ms: reaches.map(to_u64),
        verdict,
        safe_epoch_ms,
    }
}

/// A whole UTC day as epoch for `new`'s fields and unit whose first ID at `at` is above
/// every ID `old` can ever issue, with the new time field not yet full at `at`.
fn safe_epoch(old: &Side, new: &Side, at: u128) -> Option<u128> {
    const DAY: u128 = 86_400_000;
    let old_final = old.id(old.max_tick);
    let ticks = match old_final.checked_sub(new.ext_part) {
        None => 0,
        Some(d) => (d >> new.low_bits) + 1,
    };
    if ticks > new.max_tick {
        return None;
    }
    let latest = at.checked_sub(ticks * new.unit)?;
    let epoch = latest / DAY * DAY;
    // The day's rounding moves the epoch back: the time field must still hold `at`.
    let used = (at - epoch) / new.unit;
    (used <= new.max_tick).then_some(epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::resolve;

    fn layout(
        preset: Option<&str>,
        bits: Option<&str>,
        unit: Option<&str>,
        epoch: Option<&str>,
    ) -> Layout {
        resolve(preset, bits, unit, epoch).unwrap().0
    }

    /// Every instant of the new layout's lifetime agrees with the check: the new IDs stay
    /// above the old ones exactly from `above_from`.
    fn brute_force(old: &Layout, new: &Layout) -> Option<u64> {
        let o = Side::new(old, 0, true);
        let n = Side::new(new, 0, false);
        let good = |t: u64| match (new_at(&n, t.into()), old_at(&o, t.into())) {
            (None, _) => false,
            (Some(x), y) => y.is_none_or(|y| x > y),
        };
        let end = new.lifetime().end_ms;
        let expected = match (0..end).rev().find(|t| !good(*t)) {
            None => Some(new.epoch_ms()),
            Some(b) if b + 1 >= end => None,
            Some(b) => Some((b + 1).max(new.epoch_ms())),
        };
        let got = above_from(&o, &n).map(|c| u64::try_from(c).unwrap());
        assert_eq!(got, expected, "{old:?} -> {new:?}");
        got
    }

    #[test]
    fn small_layouts_agree_with_every_instant() {
        // Tiny layouts, so every instant of their lifetimes can be tried: a fixed list, then
        // pseudo-random ones (time 3-9 bits, 0-2 node bits above or below a 1-4 bit
        // sequence, units 1-9 ms, epochs 0-299).
        let mut specs: Vec<(String, u64, u64)> = [
            ("time:6,worker:2,seq:3", 3, 100),
            ("time:5,worker:3,seq:4", 2, 130),
            ("time:8,seq:2", 1, 90),
            ("time:7,node:1,seq:2", 5, 0),
            ("time:6,seq:3,machine:2", 7, 117),
            ("time:9,worker:1,seq:1", 1, 300),
        ]
        .iter()
        .map(|(s, u, e)| (s.to_string(), *u, *e))
        .collect();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..40 {
            let (time, node, seq) = (3 + next(7), next(3), 1 + next(4));
            let spec = match (node, next(2)) {
                (0, _) => format!("time:{time},seq:{seq}"),
                (n, 0) => format!("time:{time},worker:{n},seq:{seq}"),
                (n, _) => format!("time:{time},seq:{seq},machine:{n}"),
            };
            specs.push((spec, 1 + next(9), next(300)));
        }
        let (mut above, mut never, mut fewer_low_bits) = (0, 0, 0);
        for (a, ua, ea) in &specs {
            for (b, ub, eb) in &specs {
                let old = Layout::from_spec(a, *ua, *ea).unwrap();
                let new = Layout::from_spec(b, *ub, *eb).unwrap();
                match brute_force(&old, &new) {
                    Some(_) => above += 1,
                    None => never += 1,
                }
                fewer_low_bits += usize::from(
                    new.total_bits() - u32::from(new.time_bits())
                        < old.total_bits() - u32::from(old.time_bits()),
                );
            }
        }
        // Both answers and both ways of counting were exercised.
        assert!(
            above > 100 && never > 100 && fewer_low_bits > 100,
            "{above} {never} {fewer_low_bits}"
        );
    }

    #[test]
    fn presets_moving_to_wider_and_narrower_layouts() {
        let now = 1_795_000_000_000; // 2026-11-19
        let js53 = Layout::preset("js53").unwrap();
        let twitter = Layout::preset("twitter").unwrap();
        let m = check(&js53, 0, &twitter, now);
        assert_eq!(m.verdict, Verdict::Safe);
        assert!(m.above_from_ms.unwrap() < 1_300_000_000_000);
        assert_eq!(check(&twitter, 0, &js53, now).verdict, Verdict::Unsafe);
        // Same layout, later epoch: every new ID repeats old time.
        let later = layout(Some("twitter"), None, None, Some("2020-01-01"));
        let m = check(&twitter, 0, &later, now);
        assert_eq!((m.verdict, m.above_from_ms), (Verdict::Unsafe, None));
        // Same layout, earlier epoch: above by the epochs' difference, at every instant.
        let earlier = layout(Some("twitter"), None, None, Some("2010-01-01"));
        let m = check(&twitter, 0, &earlier, now);
        assert_eq!(m.verdict, Verdict::Safe);
        // An extension value in use puts the old IDs above every new one without it.
        let ext = layout(
            None,
            Some("ext:1,time:40,worker:10,seq:12"),
            Some("1ms"),
            None,
        );
        let wide = layout(
            None,
            Some("time:41,worker:10,seq:12"),
            Some("1ms"),
            Some("2010-01-01"),
        );
        assert_eq!(check(&ext, 0, &wide, now).verdict, Verdict::Safe);
        assert_eq!(check(&ext, 1, &wide, now).verdict, Verdict::Unsafe);
    }

    #[test]
    fn baidus_expired_layout_has_no_layout_above_it() {
        let now = 1_795_000_000_000;
        let baidu = Layout::preset("baidu").unwrap();
        // Its time field ran to the top of the 63 bits: its last IDs are within 2^35 of
        // 2^63, and no 63-bit layout's IDs get above them.
        for new in [
            layout(
                None,
                Some("time:31,worker:19,seq:13"),
                Some("1s"),
                Some("2016-05-20"),
            ),
            layout(Some("baidu"), None, None, Some("2025-01-01")),
            Layout::preset("twitter").unwrap(),
        ] {
            let m = check(&baidu, 0, &new, now);
            assert_eq!(m.verdict, Verdict::Unsafe, "{new:?}");
            assert_eq!(m.above_from_ms, None);
            assert_eq!(m.safe_epoch_ms, None);
            assert!(m.old_last_id.unwrap() > (1 << 63) - (1 << 35));
        }
        // Switched in time (a year after its epoch), a wider time field from the same
        // epoch is above everything it issued, and nodes have until mid-2019 to move.
        let early = 1_495_000_000_000; // 2017-05-17
        let wider = layout(
            None,
            Some("time:31,worker:19,seq:13"),
            Some("1s"),
            Some("2009-01-01"),
        );
        let m = check(&baidu, 0, &wider, early);
        assert!(matches!(m.verdict, Verdict::SafeIfOldStopsBy(_)), "{m:?}");
    }
}
