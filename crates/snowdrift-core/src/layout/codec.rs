//! Splitting an ID into its fields under a layout, and putting fields back together.

use super::{Layout, MAX_BITS, Role};
use crate::error::{Error, Result};

/// An ID taken apart under a layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The ID.
    pub id: u64,
    /// One value per field of the layout, high bits first.
    pub values: Vec<u64>,
    /// Start of the ID's tick, in milliseconds since 1970.
    pub time_ms: u64,
}

impl Decoded {
    /// The value of the field with the given role, if the layout has one.
    pub fn value_of(&self, layout: &Layout, role: Role) -> Option<u64> {
        layout.index_of(role).map(|i| self.values[i])
    }
}

impl Layout {
    /// Takes an ID apart into its fields.
    ///
    /// ```
    /// use snowdrift_core::layout::Layout;
    /// // A tweet ID from Twitter's API documentation, created 2018-10-10T20:19:24Z.
    /// let d = Layout::preset("twitter")?.decode(1050118621198921728)?;
    /// assert_eq!(d.time_ms, 1539202764211);
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn decode(&self, id: u64) -> Result<Decoded> {
        let total = self.total_bits();
        if id > self.max_id() {
            return Err(Error::InvalidId {
                id: id.to_string(),
                reason: format!(
                    "the layout has {} usable bits, so IDs are at most {}",
                    total.min(MAX_BITS),
                    self.max_id()
                ),
            });
        }
        let mut shift = total;
        let values: Vec<u64> = self
            .fields
            .iter()
            .map(|f| {
                shift -= u32::from(f.bits);
                (id >> shift) & f.max()
            })
            .collect();
        let tick = self.index_of(Role::Time).map_or(0, |i| values[i]);
        let time_ms = self.tick_to_ms(tick);
        Ok(Decoded {
            id,
            values,
            time_ms,
        })
    }

    /// Puts an ID together from one value per field (high bits first).
    pub fn compose(&self, values: &[u64]) -> Result<u64> {
        if values.len() != self.fields.len() {
            return Err(Error::InvalidId {
                id: format!("{values:?}"),
                reason: format!(
                    "expected {} field values ({}), got {}",
                    self.fields.len(),
                    self.field_names().join(", "),
                    values.len()
                ),
            });
        }
        let mut id = 0u64;
        for (f, &v) in self.fields.iter().zip(values) {
            // In a 64-bit layout the top time bit must stay clear, so IDs stay below 2^63.
            let max = if f.role == Role::Time {
                self.max_tick()
            } else {
                f.max()
            };
            if v > max {
                return Err(Error::FieldOutOfRange {
                    field: f.name.clone(),
                    value: v,
                    bits: f.bits,
                    max,
                });
            }
            id = (id << f.bits) | v;
        }
        Ok(id)
    }

    /// Start of a tick, in milliseconds since 1970 (saturating).
    pub fn tick_to_ms(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.unit_ms)
            .saturating_add(self.epoch_ms)
    }

    /// The tick that holds `ms` (milliseconds since 1970); `None` before the epoch.
    pub fn ms_to_tick(&self, ms: u64) -> Option<u64> {
        ms.checked_sub(self.epoch_ms).map(|d| d / self.unit_ms)
    }
}
