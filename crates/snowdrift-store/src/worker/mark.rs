//! A high-water mark as registries store it: one number that carries the extension value
//! beside the time, so a restart knows both what time and which extension value were used.

/// Bits of a stored mark that hold the time (ms since 1970, enough until the year 6429).
const MS_BITS: u32 = 47;

/// The largest extension value a mark can carry: the stored number stays below 2^63, so
/// SQL `BIGINT` columns hold it.
pub const MAX_EXTENSION: u64 = (1 << (63 - MS_BITS)) - 1;

/// A worker ID's durable high-water mark: no ID may be issued under an extension value
/// below `extension`, nor under `extension` itself at or before `ms`.
///
/// Stored as `extension << 47 | ms`, so registries compare marks as plain numbers and a
/// mark under a later extension value is the larger one. A mark written before extension
/// values were stored reads as extension 0, and a binary that does not know the encoding
/// reads a mark with an extension as a time far ahead, so it refuses to start rather than
/// reuse IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Mark {
    /// The extension value in use.
    pub extension: u64,
    /// The time, ms since 1970.
    pub ms: u64,
}

impl Mark {
    /// The mark a registry stores.
    pub fn stored(self) -> u64 {
        debug_assert!(self.extension <= MAX_EXTENSION);
        (self.extension.min(MAX_EXTENSION) << MS_BITS) | self.ms.min((1 << MS_BITS) - 1)
    }

    /// The mark a registry holds.
    pub fn from_stored(stored: u64) -> Self {
        Self {
            extension: stored >> MS_BITS,
            ms: stored & ((1 << MS_BITS) - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_round_trip_and_order_by_extension_first() {
        let old = Mark {
            extension: 0,
            ms: 1_764_000_000_000,
        };
        assert_eq!(
            old.stored(),
            1_764_000_000_000,
            "extension 0 is the plain time"
        );
        let bumped = Mark {
            extension: 1,
            ms: 1_700_000_000_000,
        };
        assert!(bumped.stored() > old.stored());
        for m in [
            old,
            bumped,
            Mark {
                extension: MAX_EXTENSION,
                ms: 1 << 46,
            },
        ] {
            assert_eq!(Mark::from_stored(m.stored()), m);
            assert!(m.stored() <= i64::MAX as u64);
        }
    }
}
