//! The map between a generator's compact state and the IDs it issues.
//!
//! The state is `ext | tick | seq` with nothing in between. Node fields are constant for a
//! generator, so leaving them out makes consecutive IDs consecutive integers of the state:
//! a block of IDs is just a range of states, reserved by one CAS, and one `+ 1` moves to the
//! next sequence number or, when the sequence is full, to the next tick.

use crate::layout::{Layout, Role, mask};

/// Precomputed shifts for one layout and node value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packing {
    /// Width of the sequence field.
    pub seq_bits: u32,
    /// Bits below the sequence in the ID (node fields placed after it, as in Sonyflake).
    pub seq_shift: u32,
    /// Where `ext | tick` starts in the ID.
    pub high_shift: u32,
    /// The node fields' bits, already in place.
    pub node_part: u64,
    /// Width of the time field.
    pub time_bits: u32,
    /// `2^seq_bits - 1`, the largest sequence value.
    pub seq_mask: u64,
    /// `2^time_bits - 1`.
    pub time_mask: u64,
}

impl Packing {
    pub fn new(layout: &Layout, node_part: u64) -> Self {
        let seq = layout.index_of(Role::Sequence).unwrap_or(0);
        let time = layout.index_of(Role::Time).unwrap_or(0);
        Self {
            seq_bits: u32::from(layout.sequence_bits()),
            seq_shift: layout.shift_of(seq),
            high_shift: layout.shift_of(time),
            node_part,
            time_bits: u32::from(layout.time_bits()),
            seq_mask: mask(layout.sequence_bits()),
            time_mask: mask(layout.time_bits()),
        }
    }

    /// The ID for a compact state.
    #[inline]
    pub fn id(&self, state: u64) -> u64 {
        ((state >> self.seq_bits) << self.high_shift)
            | self.node_part
            | ((state & self.seq_mask) << self.seq_shift)
    }

    /// The compact state of an ID.
    pub fn state_of(&self, id: u64) -> u64 {
        ((id >> self.high_shift) << self.seq_bits) | ((id >> self.seq_shift) & self.seq_mask)
    }

    #[inline]
    pub fn pack(&self, ext: u64, tick: u64, seq: u64) -> u64 {
        (((ext << self.time_bits) | tick) << self.seq_bits) | seq
    }
    #[inline]
    pub fn tick(&self, state: u64) -> u64 {
        (state >> self.seq_bits) & self.time_mask
    }
    #[inline]
    pub fn ext(&self, state: u64) -> u64 {
        state >> (self.seq_bits + self.time_bits)
    }
    #[inline]
    pub fn seq_max(&self) -> u64 {
        self.seq_mask
    }
}
