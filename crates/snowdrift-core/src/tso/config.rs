//! The options of a timestamp oracle and the bit form of its IDs.

use crate::error::{Error, Result};
use crate::layout::format_ms;

/// Most logical bits allowed. More would leave the physical part too few bits to reach
/// the present from any sensible epoch; fewer than 1 leaves no room for a batch.
const MAX_LOGICAL_BITS: u8 = 32;

/// How a [`TimestampOracle`](super::TimestampOracle) builds its IDs and how far ahead its
/// leader saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsoConfig {
    /// Where the physical part counts from, in ms since 1970. Default 0 (the Unix epoch,
    /// as PD). It must never change for a generator: IDs would jump back.
    pub epoch_ms: u64,
    /// Width of the logical part (IDs per millisecond: `2^logical_bits`). Default 18, as
    /// PD; the physical part gets the other `63 - logical_bits` bits.
    pub logical_bits: u8,
    /// How far past the current physical time a leader saves its window, in ms. Default
    /// 3000, as PD. Larger means fewer saves and a larger jump forward at each failover.
    pub window_ms: u64,
}

impl Default for TsoConfig {
    fn default() -> Self {
        Self {
            epoch_ms: 0,
            logical_bits: 18,
            window_ms: 3_000,
        }
    }
}

/// An ID split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsoParts {
    /// The physical part as ms since 1970.
    pub physical_ms: u64,
    /// The logical part.
    pub logical: u64,
}

impl TsoConfig {
    /// Checks the options: 1 to 32 logical bits, a window of at least 1 ms.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_LOGICAL_BITS).contains(&self.logical_bits) {
            return Err(Error::InvalidConfig(format!(
                "tso logical_bits = {} is out of range; allowed: 1..={MAX_LOGICAL_BITS} (PD uses 18)",
                self.logical_bits
            )));
        }
        if self.window_ms == 0 {
            return Err(Error::InvalidConfig(
                "tso window must be at least 1 ms (PD uses 3 s)".to_string(),
            ));
        }
        Ok(())
    }

    /// IDs per millisecond: `2^logical_bits`, the largest count one allocation can take.
    pub const fn logical_capacity(&self) -> u64 {
        1 << self.logical_bits
    }

    /// The last millisecond (since 1970) the physical part can hold; IDs stay below 2^63.
    pub fn max_physical_ms(&self) -> u64 {
        let physical_values = 1u64 << (63 - u32::from(self.logical_bits));
        self.epoch_ms.saturating_add(physical_values - 1)
    }

    /// The ID of `logical` in millisecond `physical_ms` (since 1970), or an error when
    /// either part does not fit.
    pub fn compose(&self, physical_ms: u64, logical: u64) -> Result<u64> {
        if physical_ms < self.epoch_ms {
            return Err(Error::ClockBeforeEpoch {
                now_ms: physical_ms,
                epoch_ms: self.epoch_ms,
            });
        }
        if physical_ms > self.max_physical_ms() {
            return Err(self.time_exhausted());
        }
        if logical >= self.logical_capacity() {
            return Err(Error::FieldOutOfRange {
                field: "logical".to_string(),
                value: logical,
                bits: self.logical_bits,
                max: self.logical_capacity() - 1,
            });
        }
        Ok(((physical_ms - self.epoch_ms) << self.logical_bits) | logical)
    }

    /// Splits an ID into its physical time and logical counter.
    pub fn decode(&self, id: u64) -> Result<TsoParts> {
        if id > i64::MAX as u64 {
            return Err(Error::InvalidId {
                id: id.to_string(),
                reason: "timestamp-oracle IDs are below 2^63".to_string(),
            });
        }
        Ok(TsoParts {
            physical_ms: self.epoch_ms.saturating_add(id >> self.logical_bits),
            logical: id & (self.logical_capacity() - 1),
        })
    }

    /// The error for a physical time past [`max_physical_ms`](Self::max_physical_ms).
    pub(super) fn time_exhausted(&self) -> Error {
        Error::TimeExhausted {
            ended: format_ms(self.max_physical_ms().saturating_add(1)),
        }
    }
}
