//! The map between a generator's compact state and the IDs it issues.
//!
//! The compact state is `ext | tick | seq` with nothing in between. Node fields are
//! constant for a generator, so leaving them out makes consecutive IDs consecutive integers
//! of the state: a block of IDs is just a range of states, reserved by one CAS, and one
//! `+ 1` moves to the next sequence number or, when the sequence is full, to the next tick.
//!
//! The generator stores the last state in its ID form, though: its common case, the next
//! sequence number in the same tick, is then one add to the stored value, and the ID it
//! issues is the value it stores (as ferroid's generators, whose layout is a constant).
//! Composing an ID from the compact state on every `next()` cost 0.45 ns of a 5.3 ns
//! call. Every other case converts to the compact form, where carries into the next tick
//! and blocks are plain arithmetic.

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
    /// Width of the node fields between the time field and the sequence.
    pub mid_bits: u32,
    /// The node fields' bits, already in place.
    pub node_part: u64,
    /// Width of the time field.
    pub time_bits: u32,
    /// `2^seq_bits - 1`, the largest sequence value.
    pub seq_mask: u64,
    /// `2^time_bits - 1`.
    pub time_mask: u64,
    /// The ID's time and sequence bits: an ID without its extension and node bits.
    pub id_tick_seq_mask: u64,
    /// The sequence field's bits in the ID.
    pub id_seq_mask: u64,
    /// One sequence number in the ID, `1 << seq_shift`.
    pub id_seq_one: u64,
}

impl Packing {
    pub fn new(layout: &Layout, node_part: u64) -> Self {
        let seq = layout.index_of(Role::Sequence).unwrap_or(0);
        let time = layout.index_of(Role::Time).unwrap_or(0);
        let (seq_shift, high_shift) = (layout.shift_of(seq), layout.shift_of(time));
        let (seq_mask, time_mask) = (mask(layout.sequence_bits()), mask(layout.time_bits()));
        Self {
            seq_bits: u32::from(layout.sequence_bits()),
            seq_shift,
            high_shift,
            mid_bits: high_shift - seq_shift - u32::from(layout.sequence_bits()),
            node_part,
            time_bits: u32::from(layout.time_bits()),
            seq_mask,
            time_mask,
            // The time field ends at bit 64 at most, so the shift drops nothing.
            id_tick_seq_mask: (time_mask << high_shift) | (seq_mask << seq_shift),
            id_seq_mask: seq_mask << seq_shift,
            id_seq_one: 1 << seq_shift,
        }
    }

    /// The first ID of tick `tick` with the extension, node and sequence bits 0, to compare
    /// with an ID's [`id_tick_seq_mask`](Self::id_tick_seq_mask) bits.
    #[inline]
    pub fn id_tick_base(&self, tick: u64) -> u64 {
        tick << self.high_shift
    }

    /// The ID for a compact state: the node fields between time and sequence open a gap
    /// of `mid_bits` above the sequence, those below it shift the whole state up.
    ///
    /// One formula for every layout, with two shifts rather than one per part: the high
    /// part is the state with its sequence bits cleared (no shift down and back up), and
    /// with no node bits below the sequence (every preset but Sonyflake) the second shift
    /// is by 0. Every `next()` composes an ID, and each variable shift costs x86 a move of
    /// its count into `cl` as well.
    #[inline]
    pub fn id(&self, state: u64) -> u64 {
        let seq = state & self.seq_mask;
        let high = state ^ seq;
        (((high << self.mid_bits) | seq) << self.seq_shift) | self.node_part
    }

    /// The compact state of an ID.
    #[inline]
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

#[cfg(all(test, not(loom)))]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::layout::Field;

    /// A valid layout of any shape: an optional extension, node fields between time and
    /// sequence and below the sequence (Sonyflake), widths up to the 63/64-bit limit.
    fn layout() -> impl Strategy<Value = Layout> {
        (
            0u8..3,
            prop::collection::vec(1u8..8, 0..3),
            1u8..23,
            prop::collection::vec(1u8..8, 0..2),
            any::<bool>(),
        )
            .prop_map(|(ext, mid, seq, low, full)| {
                let others: u32 = u32::from(ext)
                    + mid.iter().chain(&low).map(|&b| u32::from(b)).sum::<u32>()
                    + u32::from(seq);
                // Either as wide as the layout may be, or a narrower time field.
                let top = if ext == 0 { 64 } else { 63 };
                let time = if full {
                    top - others
                } else {
                    (top - others).min(20)
                };
                let mut fields = Vec::new();
                if ext > 0 {
                    fields.push(Field::new("ext", ext, Role::Extension));
                }
                fields.push(Field::new("time", time as u8, Role::Time));
                for (i, &b) in mid.iter().enumerate() {
                    fields.push(Field::new(format!("mid{i}"), b, Role::Node));
                }
                fields.push(Field::new("seq", seq, Role::Sequence));
                for (i, &b) in low.iter().enumerate() {
                    fields.push(Field::new(format!("low{i}"), b, Role::Node));
                }
                Layout::new(fields, 1, 0).expect("a valid layout")
            })
    }

    proptest! {
        /// `id` puts each part of the state and each node value where the layout says, and
        /// `state_of` takes the state back out.
        #[test]
        fn id_places_every_field(l in layout(), seed in any::<u64>(), state_bits in any::<u64>()) {
            let mut values = Vec::new();
            let mut node_part = 0;
            let mut x = seed;
            for (i, f) in l.fields().iter().enumerate() {
                x = x.rotate_left(17) ^ 0x9E37_79B9_7F4A_7C15;
                let v = x & f.max();
                if f.role() == Role::Node {
                    node_part |= v << l.shift_of(i);
                }
                values.push(v);
            }
            let p = Packing::new(&l, node_part);
            let ext = (state_bits >> 40) & mask(l.extension_bits());
            let tick = (state_bits >> 7) % (l.max_tick() + 1);
            let seq = state_bits & p.seq_max();
            for (f, v) in l.fields().iter().zip(values.iter_mut()) {
                match f.role() {
                    Role::Extension => *v = ext,
                    Role::Time => *v = tick,
                    Role::Sequence => *v = seq,
                    _ => {}
                }
            }
            let state = p.pack(ext, tick, seq);
            let id = p.id(state);
            prop_assert_eq!(id, l.compose(&values).unwrap());
            prop_assert_eq!(p.state_of(id), state);
            // The next state's ID is larger: within a tick and across into the next one.
            if state < p.pack(ext, l.max_tick(), p.seq_max()) {
                prop_assert!(p.id(state + 1) > id);
            }
        }
    }

    #[test]
    fn presets_compose_like_the_layout() {
        for name in [
            "twitter",
            "sonyflake",
            "baidu",
            "discord",
            "instagram",
            "js53",
        ] {
            let l = Layout::preset(name).unwrap();
            let nodes: Vec<u64> = l
                .fields()
                .iter()
                .map(|f| {
                    if f.role() == Role::Node {
                        f.max() / 3
                    } else {
                        0
                    }
                })
                .collect();
            let node_part = l.compose(&nodes).unwrap();
            let p = Packing::new(&l, node_part);
            for (tick, seq) in [(0, 0), (1, 1), (12_345, p.seq_max()), (l.max_tick(), 7)] {
                let mut values = nodes.clone();
                values[l.index_of(Role::Time).unwrap()] = tick;
                values[l.index_of(Role::Sequence).unwrap()] = seq & p.seq_max();
                let state = p.pack(0, tick, seq & p.seq_max());
                assert_eq!(p.id(state), l.compose(&values).unwrap(), "{name}");
            }
        }
    }
}
