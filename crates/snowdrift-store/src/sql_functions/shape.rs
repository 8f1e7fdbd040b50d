//! The numbers a database function needs to make IDs of a layout: the compact counter
//! (`ext | tick | seq`, as the generator's own state) and how a counter value and a worker
//! ID become an ID.

use snowdrift_core::layout::{Layout, Role, mask};

use crate::error::{Error, Result};

/// A layout reduced to shifts and masks, for SQL.
///
/// A worker's counter is the generator's compact state, `ext | tick | seq` with nothing in
/// between, so `+ 1` moves to the next sequence number or, when the sequence is full, to
/// the next tick; an ID is the counter with the worker's node bits put in their place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape {
    /// Width of the sequence field.
    pub seq_bits: u32,
    /// Width of the time field.
    pub time_bits: u32,
    /// Width of the node fields between the time field and the sequence.
    pub mid_bits: u32,
    /// Bits below the sequence field (node fields placed after it, as in Sonyflake).
    pub seq_shift: u32,
    /// Milliseconds per tick.
    pub unit_ms: u64,
    /// The epoch, ms since 1970.
    pub epoch_ms: u64,
    /// The last tick whose IDs stay below 2^63.
    pub max_tick: u64,
    /// The largest extension value (0 without an extension field).
    pub ext_max: u64,
    /// How many worker IDs the layout has (2^node bits).
    pub space: u64,
}

impl Shape {
    /// The shape of `layout`; refuses a layout without node bits (there is no worker ID
    /// to lease).
    pub fn of(layout: &Layout) -> Result<Self> {
        if layout.node_bits() == 0 {
            return Err(Error::InvalidInput(
                "the layout has no node field, so there is no worker ID for the database to lease: use a layout with a worker field".into(),
            ));
        }
        let fields = layout.fields();
        let index = |role| fields.iter().position(|f| f.role() == role);
        let (Some(seq), Some(time)) = (index(Role::Sequence), index(Role::Time)) else {
            return Err(Error::InvalidInput(
                "the layout has no time or sequence field".into(),
            ));
        };
        let seq_bits = u32::from(layout.sequence_bits());
        let seq_shift = layout.shift_of(seq);
        let high_shift = layout.shift_of(time);
        Ok(Self {
            seq_bits,
            time_bits: u32::from(layout.time_bits()),
            mid_bits: high_shift - seq_shift - seq_bits,
            seq_shift,
            unit_ms: layout.unit_ms(),
            epoch_ms: layout.epoch_ms(),
            max_tick: layout.max_tick(),
            ext_max: mask(layout.extension_bits()),
            space: layout.max_nodes(),
        })
    }

    /// `2^seq_bits - 1`.
    pub fn seq_mask(&self) -> u64 {
        mask(self.seq_bits as u8)
    }

    /// `2^time_bits - 1`.
    pub fn time_mask(&self) -> u64 {
        mask(self.time_bits as u8)
    }

    /// Where the extension value starts in a counter.
    pub fn ext_shift(&self) -> u32 {
        self.seq_bits + self.time_bits
    }

    /// The counter of extension `ext`, tick `tick`, sequence `seq`.
    pub fn counter(&self, ext: u64, tick: u64, seq: u64) -> u64 {
        (((ext << self.time_bits) | tick) << self.seq_bits) | seq
    }

    /// The tick of a counter.
    pub fn tick(&self, counter: u64) -> u64 {
        (counter >> self.seq_bits) & self.time_mask()
    }

    /// The first tick that starts after `ms` (ms since 1970); 0 before the epoch.
    pub fn tick_after(&self, ms: u64) -> u64 {
        if ms < self.epoch_ms {
            return 0;
        }
        (ms - self.epoch_ms) / self.unit_ms + 1
    }

    /// The last millisecond of tick `tick`: a high-water mark at it covers every ID of the
    /// tick.
    pub fn tick_end_ms(&self, tick: u64) -> u64 {
        self.epoch_ms
            .saturating_add(tick.saturating_add(1).saturating_mul(self.unit_ms))
            .saturating_sub(1)
    }

    /// The node bits of worker ID `worker` in place: the node fields' bits concatenated,
    /// high field first, as [`Builder::node_id`] splits them.
    ///
    /// [`Builder::node_id`]: snowdrift_core::generator::Builder::node_id
    pub fn node_part(layout: &Layout, worker: u64) -> u64 {
        let mut rest = layout.node_bits();
        let mut part = 0;
        for (i, f) in layout.fields().iter().enumerate() {
            if f.role() == Role::Node {
                rest -= u32::from(f.bits());
                part |= ((worker >> rest) & f.max()) << layout.shift_of(i);
            }
        }
        part
    }

    /// The ID of counter `counter` under node bits `node_part`: what the SQL functions
    /// compute.
    pub fn id(&self, counter: u64, node_part: u64) -> u64 {
        let high = counter >> self.seq_bits;
        let seq = counter & self.seq_mask();
        (((high << (self.seq_bits + self.mid_bits)) | seq) << self.seq_shift) | node_part
    }
}

#[cfg(test)]
mod tests {
    use snowdrift_core::clock::ManualClock;
    use snowdrift_core::generator::SnowflakeGenerator;

    use super::*;

    /// The SQL arithmetic makes the IDs the generator makes, for every preset and a
    /// layout with its node field below the sequence (Sonyflake) and one with an
    /// extension field.
    #[test]
    fn ids_match_the_generators() {
        let layouts = [
            Layout::preset("twitter").unwrap(),
            Layout::preset("sonyflake").unwrap(),
            Layout::preset("baidu").unwrap(),
            Layout::preset("discord").unwrap(),
            Layout::preset("instagram").unwrap(),
            Layout::preset("js53").unwrap(),
            Layout::from_spec(
                "ext:2,time:40,dc:3,worker:4,seq:10,shard:2",
                1,
                1_600_000_000_000,
            )
            .unwrap(),
        ];
        for layout in layouts {
            let shape = Shape::of(&layout).unwrap();
            let now = layout.epoch_ms() + 123_456_789 * layout.unit_ms();
            for worker in [0, 1, shape.space / 3, shape.space - 1] {
                let g = SnowflakeGenerator::builder(layout.clone())
                    .node_id(worker)
                    .unwrap()
                    .build(ManualClock::new(now))
                    .unwrap();
                let id = g.next().unwrap();
                let tick = (now - layout.epoch_ms()) / layout.unit_ms();
                let counter = shape.counter(0, tick, 0);
                assert_eq!(
                    shape.id(counter, Shape::node_part(&layout, worker)),
                    id,
                    "{layout:?} worker {worker}"
                );
                let next = g.next().unwrap();
                assert_eq!(
                    shape.id(counter + 1, Shape::node_part(&layout, worker)),
                    next
                );
                assert_eq!(shape.tick(counter), tick);
            }
        }
    }

    #[test]
    fn tick_ends_cover_the_tick() {
        let layout = Layout::from_spec("time:41,worker:10,seq:12", 10, 1_000).unwrap();
        let shape = Shape::of(&layout).unwrap();
        assert_eq!(shape.tick_end_ms(0), 1_009);
        assert_eq!(shape.tick_after(1_009), 1);
        assert_eq!(shape.tick_after(1_010), 2);
        assert_eq!(shape.tick_after(5), 0);
    }

    #[test]
    fn a_layout_without_node_bits_is_refused() {
        let layout = Layout::from_spec("time:41,seq:12", 1, 0).unwrap();
        let e = Shape::of(&layout).unwrap_err().to_string();
        assert!(e.contains("no node field"), "{e}");
    }
}
