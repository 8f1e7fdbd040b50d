//! A clock reading in the layout's unit, as a multiply and a shift instead of a division.
//!
//! Layouts whose unit is not 1 ms (Sonyflake's 10 ms, seconds-based layouts) turn every
//! clock reading into ticks. A 64-bit `div` takes 10-40 cycles on x86-64 and sits on the
//! chain from the clock's load to the compare-and-swap; a multiplication takes 3.
//!
//! **Why it is exact.** For a unit `d` and a shift `s`, let `m = ceil(2^s / d)` and
//! `e = m·d - 2^s`, so `0 <= e < d`. For `x = q·d + r` with `0 <= r < d`:
//!
//! ```text
//! x·m / 2^s = x/d + x·e/(d·2^s) = q + (r + x·e/2^s) / d
//! ```
//!
//! The fraction stays below 1 as long as `r + x·e/2^s < d`, which holds for every `r <= d-1`
//! exactly when `x·e < 2^s`. So `floor(x·m / 2^s) = floor(x / d)` for every
//! `x <= (2^s - 1) / e` (every `x` at all when `e = 0`, a power of two). [`UnitDivider::new`]
//! picks, among the shifts whose `m` fits 64 bits, the one that makes that bound largest,
//! and readings beyond it (none a real clock gives: the bound is at least 2^63 ms for every
//! unit) take a plain division.

/// Divides readings (ms since the epoch) by a fixed unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UnitDivider {
    unit: u64,
    /// `ceil(2^(64 + post) / unit)`.
    magic: u64,
    /// The shift beyond 64: the high word of the product is shifted by this much.
    post: u32,
    /// The largest reading for which [`fast`](Self::fast) is exact.
    exact_max: u64,
}

impl UnitDivider {
    /// The divider for `unit` (at least 1, as layouts require).
    pub fn new(unit: u64) -> Self {
        assert!(unit > 0, "a layout's unit is at least 1 ms");
        if unit == 1 {
            // `fast` does not multiply for a unit of 1.
            return Self {
                unit,
                magic: 0,
                post: 0,
                exact_max: u64::MAX,
            };
        }
        let d = u128::from(unit);
        let mut best: Option<Self> = None;
        for post in 0..64u32 {
            let two_s = 1u128 << (64 + post);
            let m = two_s.div_ceil(d);
            let Ok(magic) = u64::try_from(m) else {
                // Larger shifts only make `m` larger.
                break;
            };
            let e = m * d - two_s;
            // `e = 0` (a power of two): exact for every reading.
            let exact_max = (two_s - 1)
                .checked_div(e)
                .map_or(u64::MAX, |x| u64::try_from(x).unwrap_or(u64::MAX));
            if best.is_none_or(|b| exact_max > b.exact_max) {
                best = Some(Self {
                    unit,
                    magic,
                    post,
                    exact_max,
                });
            }
        }
        // `post = 0` always fits: `ceil(2^64 / d) < 2^64` for `d >= 2`.
        best.expect("a shift of 64 fits every unit of 2 or more")
    }

    /// The unit.
    #[cfg(all(test, not(loom)))]
    pub fn unit(&self) -> u64 {
        self.unit
    }

    /// The largest reading [`fast`](Self::fast) divides exactly.
    #[inline]
    pub fn exact_max(&self) -> u64 {
        self.exact_max
    }

    /// `x / unit` for `x <= exact_max()`; beyond it the result is wrong.
    #[inline(always)]
    pub fn fast(&self, x: u64) -> u64 {
        if self.unit == 1 {
            x
        } else {
            let high = ((u128::from(x) * u128::from(self.magic)) >> 64) as u64;
            high >> self.post
        }
    }

    /// `x / unit` for every `x`.
    #[inline]
    pub fn div(&self, x: u64) -> u64 {
        if x <= self.exact_max {
            self.fast(x)
        } else {
            x / self.unit
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::layout::Layout;

    /// Units a layout may have: the presets', round numbers of seconds and minutes, powers
    /// of two and their neighbours, and the largest.
    fn units() -> Vec<u64> {
        let mut u = vec![1, 2, 3, 7, 10, 100, 1_000, 60_000, 3_600_000, 86_400_000];
        for k in 1..64 {
            u.extend([(1u64 << k) - 1, 1 << k, (1 << k) + 1]);
        }
        u.extend([u64::MAX - 1, u64::MAX]);
        u
    }

    /// The readings where a wrong multiplier shows first: around multiples of the unit, at
    /// the ends of the exact range, and at the top of every power of two below it.
    fn edges(d: &UnitDivider) -> Vec<u64> {
        let max = d.exact_max();
        let mut xs = vec![0, 1, max, max - 1, max / 2];
        for k in 0..64 {
            let p = 1u64 << k;
            xs.extend([p - 1, p, p.saturating_add(1)]);
        }
        // The last multiples of the unit in range, and either side of them.
        let top = max / d.unit();
        for q in [top, top.saturating_sub(1), top / 2, 1] {
            let m = q.saturating_mul(d.unit());
            xs.extend([m.saturating_sub(1), m, m.saturating_add(1)]);
        }
        xs.retain(|&x| x <= max);
        xs
    }

    #[test]
    fn matches_division_at_the_edges_for_every_kind_of_unit() {
        for unit in units() {
            let d = UnitDivider::new(unit);
            for x in edges(&d) {
                assert_eq!(d.fast(x), x / unit, "unit {unit}, reading {x}");
            }
            for x in [d.exact_max().saturating_add(1), u64::MAX] {
                assert_eq!(d.div(x), x / unit, "unit {unit}, reading {x} (fallback)");
            }
        }
    }

    /// Every reading a real clock gives is in the exact range: at least 2^63 ms (292
    /// million years) for every unit.
    #[test]
    fn the_exact_range_covers_every_real_reading() {
        for unit in units() {
            let d = UnitDivider::new(unit);
            assert!(d.exact_max() >= 1 << 63, "unit {unit}: {}", d.exact_max());
        }
    }

    /// A generator's readings lie between its epoch and the end of its time field; for
    /// every preset, the whole of that range is divided exactly, so `next()` never falls
    /// back to a division.
    #[test]
    fn every_preset_divides_its_whole_time_field_exactly() {
        for name in crate::layout::preset::NAMES {
            let layout = Layout::preset(name).unwrap();
            let d = UnitDivider::new(layout.unit_ms());
            let span = (layout.max_tick() + 1).saturating_mul(layout.unit_ms());
            assert!(d.exact_max() >= span - 1, "{name}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4_096))]

        /// Any unit, any reading in the exact range: the same as a division.
        #[test]
        fn matches_division(unit in 1u64.., x in any::<u64>()) {
            let d = UnitDivider::new(unit);
            let x = if x > d.exact_max() { x % (d.exact_max() + 1) } else { x };
            prop_assert_eq!(d.fast(x), x / unit);
            prop_assert_eq!(d.div(x), x / unit);
        }

        /// Small units (the ones layouts use) over readings of realistic size, near a
        /// multiple of the unit where an off-by-one would show.
        #[test]
        fn matches_division_near_multiples(unit in 1u64..=86_400_000, q in any::<u64>(), r in 0u64..3) {
            let d = UnitDivider::new(unit);
            let q = q % (u64::MAX / unit);
            let x = (q * unit + r).saturating_sub(1);
            prop_assert_eq!(d.div(x), x / unit);
            if x <= d.exact_max() {
                prop_assert_eq!(d.fast(x), x / unit);
            }
        }

        /// Beyond the exact range the fallback divides.
        #[test]
        fn div_matches_division_everywhere(unit in 1u64.., x in any::<u64>()) {
            prop_assert_eq!(UnitDivider::new(unit).div(x), x / unit);
        }
    }
}
