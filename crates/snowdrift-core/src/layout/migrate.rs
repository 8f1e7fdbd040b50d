//! Moving a running generator from one layout to another: can the new layout ever issue an
//! ID the old one issued, or one below it?
//!
//! A fleet moves by a rolling restart: from the switch at `S` on, nodes already on the new
//! layout issue while the others still issue under the old one, until the last has moved.
//! Every new ID must be above every old ID issued in that time, from any node: node and
//! sequence bits sit in different places in the two layouts, so two different worker IDs
//! can make the same 64 bits, and only the extremes over every node and sequence value can
//! be compared. Two numbers decide it:
//!
//! - `new(S)`, the smallest ID the new layout issues at `S` (it only grows after `S`);
//! - `old(T)`, the largest ID the old layout can have issued up to `T`, which keeps growing
//!   while old nodes issue.
//!
//! The switch is [`Verdict::Safe`] when `new(S)` is above every ID the old layout can ever
//! issue, so old nodes may keep issuing for as long as the move takes. It is
//! [`Verdict::SafeIfOldStopsBy`] when `new(S) > old(S)` but `old` reaches `new(S)` at a later
//! instant: every node must have moved (or stopped) before then. Otherwise it is
//! [`Verdict::Unsafe`], and [`Migration::safe_from_ms`] says from when a switch with these
//! layouts is safe however long the move takes, if ever.
//!
//! Comparing `new(T)` with `old(T)` at each instant `T` alone (as this module did before 0.2)
//! is not enough: a node still on the old layout 10 ms after the switch issues IDs that a
//! new node issued 10 ms before.

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
    /// The first instant from which a switch is safe however long nodes keep issuing under
    /// the old layout: the new layout's smallest ID then is above every ID the old one can
    /// ever issue. `None` if there is none within the new layout's lifetime.
    pub safe_from_ms: Option<u64>,
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
    /// Every ID the new layout issues from the switch on is above every ID the old one can
    /// ever issue: nodes may move one by one, at any pace.
    Safe,
    /// The new layout's first IDs are above every ID the old one issued so far, but a node
    /// still issuing under the old layout at this instant (ms since 1970) or later reaches
    /// them: every node must have moved before it.
    SafeIfOldStopsBy(u64),
    /// The new layout may issue IDs at or below IDs the old one issued.
    Unsafe,
}

/// How long a rolling restart of a fleet may take, unless told otherwise: a switch whose old
/// nodes must have stopped sooner than this after it is unsafe for a rolling restart
/// (`snowdrift layout migrate --rollout`, and the server's check of its live peers).
pub const DEFAULT_ROLLOUT_MS: u64 = 7 * 86_400_000;

impl Migration {
    /// Whether a rolling restart that has moved every node within `rollout_ms` of the switch
    /// is safe: always for [`Verdict::Safe`], never for [`Verdict::Unsafe`], and for
    /// [`Verdict::SafeIfOldStopsBy`] when the deadline comes after the rollout.
    pub fn safe_for_rollout(&self, rollout_ms: u64) -> bool {
        match self.verdict {
            Verdict::Safe => true,
            Verdict::SafeIfOldStopsBy(by) => by > self.at_ms.saturating_add(rollout_ms),
            Verdict::Unsafe => false,
        }
    }
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

/// The first instant at which `new`'s smallest ID is above every ID `old` can ever issue;
/// `None` if none is within `new`'s lifetime.
fn safe_from(old: &Side, new: &Side) -> Option<u128> {
    let old_final = old.id(old.max_tick);
    let k = match old_final.checked_sub(new.ext_part) {
        None => 0,
        Some(d) => (d >> new.low_bits) + 1,
    };
    (k <= new.max_tick).then(|| new.start(k))
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
    let reaches = new_first.and_then(|v| old_reaches(&o, v));
    let verdict = match (new_first, old_last) {
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
        safe_from_ms: safe_from(&o, &n).map(to_u64),
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
    use proptest::prelude::*;

    fn layout(
        preset: Option<&str>,
        bits: Option<&str>,
        unit: Option<&str>,
        epoch: Option<&str>,
    ) -> Layout {
        resolve(preset, bits, unit, epoch).unwrap().0
    }

    /// The model the check is held to, built from the layouts' fields alone: every ID a
    /// layout issues in tick `k`, one per value of every node field and the sequence.
    fn ids_of_tick(layout: &Layout, extension: u64, k: u64) -> Vec<u64> {
        let mut ids = vec![0u64];
        for f in layout.fields() {
            let values: Vec<u64> = match f.role() {
                Role::Time => vec![k],
                Role::Extension => vec![extension],
                Role::Node | Role::Sequence => (0..=f.max()).collect(),
            };
            ids = ids
                .iter()
                .flat_map(|id| values.iter().map(move |v| (id << f.bits()) | v))
                .collect();
        }
        ids
    }

    /// The tick holding `t`, clamped to the layout's last (a full time field issues no
    /// more); `None` before the epoch.
    fn tick(layout: &Layout, t: u64) -> Option<u64> {
        t.checked_sub(layout.epoch_ms())
            .map(|d| (d / layout.unit_ms()).min(layout.max_tick()))
    }

    /// Whether, by brute force, a rolling restart that switches at `s` and whose last node
    /// still on `old` stops issuing before `stop` never lets a new ID equal or fall below an
    /// old one: the smallest new ID issued from `s` on against the largest old ID issued
    /// before `stop`, from any node.
    fn rollout_is_safe(old: &Layout, new: &Layout, s: u64, stop: u64) -> bool {
        let Some(first) = tick(new, s).filter(|_| {
            s.checked_sub(new.epoch_ms())
                .is_some_and(|d| d / new.unit_ms() <= new.max_tick())
        }) else {
            return false; // the new layout cannot issue at s
        };
        let new_min = (first..=new.max_tick())
            .flat_map(|k| ids_of_tick(new, 0, k))
            .min();
        let old_max = stop
            .checked_sub(1)
            .and_then(|last| tick(old, last))
            .and_then(|last| (0..=last).flat_map(|k| ids_of_tick(old, 0, k)).max());
        match (new_min, old_max) {
            (Some(n), Some(o)) => n > o,
            (Some(_), None) => true,
            (None, _) => false,
        }
    }

    /// A small layout: 3-8 time bits, 0-2 node bits above or below a 1-3 bit sequence,
    /// units of 1-9 ms, epochs of 0-299 ms.
    fn small_layout() -> impl Strategy<Value = Layout> {
        (
            3u8..=8,
            0u8..=2,
            1u8..=3,
            any::<bool>(),
            1u64..=9,
            0u64..300,
        )
            .prop_map(|(time, node, seq, node_below, unit, epoch)| {
                let spec = match (node, node_below) {
                    (0, _) => format!("time:{time},seq:{seq}"),
                    (n, false) => format!("time:{time},worker:{n},seq:{seq}"),
                    (n, true) => format!("time:{time},seq:{seq},machine:{n}"),
                };
                Layout::from_spec(&spec, unit, epoch).unwrap()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// Every verdict, and the instant from which a switch is safe, against the brute
        /// force model: a SAFE switch survives old nodes issuing to the end of their
        /// layout, a stop-by deadline is exact (an old node still issuing at it breaks
        /// the switch), an UNSAFE one breaks with old nodes issuing at the switch alone.
        #[test]
        fn verdicts_agree_with_every_id_of_small_layouts(
            old in small_layout(),
            new in small_layout(),
            s in 0u64..3000,
        ) {
            let m = check(&old, 0, &new, s);
            let forever = u64::MAX / 2;
            match m.verdict {
                Verdict::Safe => prop_assert!(rollout_is_safe(&old, &new, s, forever), "{m:?}"),
                Verdict::SafeIfOldStopsBy(by) => {
                    prop_assert!(by > s, "{m:?}");
                    prop_assert!(rollout_is_safe(&old, &new, s, by), "{m:?}");
                    prop_assert!(!rollout_is_safe(&old, &new, s, by + 1), "{m:?}");
                }
                Verdict::Unsafe => prop_assert!(!rollout_is_safe(&old, &new, s, s + 1), "{m:?}"),
            }
            match m.safe_from_ms {
                Some(from) => {
                    prop_assert!(rollout_is_safe(&old, &new, from, forever), "{m:?}");
                    if from > new.epoch_ms() {
                        prop_assert!(!rollout_is_safe(&old, &new, from - 1, forever), "{m:?}");
                    }
                    if m.new_first_id.is_some() {
                        prop_assert_eq!(m.verdict == Verdict::Safe, s >= from, "{:?}", m);
                    }
                }
                None => prop_assert!(m.verdict != Verdict::Safe, "{m:?}"),
            }
        }
    }

    #[test]
    fn sonyflake_to_a_layout_with_the_node_below_issues_the_same_ids_10_ms_later() {
        // The attack of issue 40: a switch at 2026-11-28 from Sonyflake to the same widths
        // with worker and sequence swapped and the epoch 10 ms earlier. At each instant the
        // new IDs are above the old ones, yet an old node 10 ms after the switch issues
        // what a new one issued at it: 648223999968673795 is Sonyflake's machine 3, sequence
        // 4 and the new layout's worker 4, sequence 3.
        let old = Layout::preset("sonyflake").unwrap();
        let new = layout(
            None,
            Some("time:39,worker:8,seq:16"),
            Some("10ms"),
            Some("2014-08-31T23:59:59.990Z"),
        );
        let at = 1_795_900_000_000;
        let m = check(&old, 0, &new, at);
        assert_eq!(
            m.verdict,
            Verdict::SafeIfOldStopsBy(at / 10 * 10 + 10),
            "{m:?}"
        );
        assert!(!m.safe_for_rollout(10));
        assert!(!m.safe_for_rollout(DEFAULT_ROLLOUT_MS));
        assert_eq!(m.safe_from_ms, None, "Sonyflake's last IDs are near 2^63");
    }

    #[test]
    fn presets_moving_to_wider_and_narrower_layouts() {
        let now = 1_795_000_000_000; // 2026-11-19
        let js53 = Layout::preset("js53").unwrap();
        let twitter = Layout::preset("twitter").unwrap();
        let m = check(&js53, 0, &twitter, now);
        assert_eq!(m.verdict, Verdict::Safe);
        assert!(m.safe_from_ms.unwrap() < 1_300_000_000_000);
        assert_eq!(check(&twitter, 0, &js53, now).verdict, Verdict::Unsafe);
        // Same layout, later epoch: every new ID repeats old time.
        let later = layout(Some("twitter"), None, None, Some("2020-01-01"));
        let m = check(&twitter, 0, &later, now);
        assert_eq!((m.verdict, m.safe_from_ms), (Verdict::Unsafe, None));
        // Same layout, earlier epoch: above by the epochs' difference at every instant, so
        // old nodes reach the first new IDs that long (about 10 months) after the switch.
        let earlier = layout(Some("twitter"), None, None, Some("2010-01-01"));
        let m = check(&twitter, 0, &earlier, now);
        let shift = twitter.epoch_ms() - earlier.epoch_ms();
        assert_eq!(m.verdict, Verdict::SafeIfOldStopsBy(now + shift));
        assert!(m.safe_for_rollout(DEFAULT_ROLLOUT_MS));
        assert!(!m.safe_for_rollout(shift));
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
        let m = check(&ext, 0, &wide, now);
        assert!(matches!(m.verdict, Verdict::SafeIfOldStopsBy(_)), "{m:?}");
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
            assert_eq!(m.safe_from_ms, None);
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
