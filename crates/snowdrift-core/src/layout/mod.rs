//! Bit layouts of 64-bit snowflake IDs: which fields an ID has, how wide each is, and what
//! that means for the lifetime, rate and node count of the scheme.
//!
//! A [`Layout`] lists its fields from the high bits to the low bits. It always has one time
//! field and one sequence field; any number of named node fields (`datacenter`, `worker`,
//! `shard`...) may sit between them or below the sequence (Sonyflake puts its machine ID
//! last). An optional extension field may come first, above the time field: the generator
//! bumps it when the clock steps back too far to wait, and because it is the highest field,
//! IDs issued after the bump still sort after every earlier one.

mod codec;
pub mod migrate;
pub mod preset;
mod resolve;
mod spec;
mod time;

pub use codec::Decoded;
pub use resolve::{DEFAULT_EPOCH, DEFAULT_PRESET, DEFAULT_UNIT, resolve};
pub use spec::{parse_epoch, parse_unit};
pub use time::format_ms;

use crate::error::{Error, Result};

/// What a field of a layout holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Extension bits above the time field, bumped on a large clock step back.
    Extension,
    /// Time since the epoch, in units of the layout's unit.
    Time,
    /// Part of the node identity (datacenter, worker, shard...).
    Node,
    /// The per-tick sequence (counter).
    Sequence,
}

/// One field of a layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    name: String,
    bits: u8,
    role: Role,
}

impl Field {
    /// A field with a name, a width and a role.
    pub fn new(name: impl Into<String>, bits: u8, role: Role) -> Self {
        Self {
            name: name.into(),
            bits,
            role,
        }
    }
    /// The field's name (`time`, `worker`, `seq`...).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Width in bits.
    pub fn bits(&self) -> u8 {
        self.bits
    }
    /// What the field holds.
    pub fn role(&self) -> Role {
        self.role
    }
    /// Largest value the field can hold.
    pub fn max(&self) -> u64 {
        mask(self.bits)
    }
}

/// `2^bits - 1`, the largest value of a field `bits` wide (widths up to 64).
pub const fn mask(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// A validated bit layout.
///
/// ```
/// use snowdrift_core::layout::Layout;
/// let twitter = Layout::preset("twitter")?;
/// assert_eq!(twitter.total_bits(), 63);
/// assert_eq!(twitter.max_nodes(), 1024);
/// assert_eq!(twitter.max_ids_per_second(), 4_096_000.0);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    fields: Vec<Field>,
    unit_ms: u64,
    epoch_ms: u64,
}

/// The bits an ID may use: IDs are positive `i64`s, so databases and Java can hold them.
///
/// A layout may still add up to 64 bits when the time field is on top (Discord's and
/// Instagram's do): its highest time bit is then never used, and the layout's lifetime ends
/// when IDs would reach 2^63.
pub const MAX_BITS: u32 = 63;

impl Layout {
    /// Validates fields (high bits first), the time unit and the epoch.
    ///
    /// Rules: exactly one time field and one sequence field, every field at least one bit
    /// wide, at most one extension field and only directly above the time field, unique
    /// names, a unit of at least 1 ms, and no more than 63 bits in total (64 when the time
    /// field is on top; see [`MAX_BITS`]).
    pub fn new(fields: Vec<Field>, unit_ms: u64, epoch_ms: u64) -> Result<Self> {
        let invalid = |m: String| Err(Error::InvalidLayout(m));
        if unit_ms == 0 {
            return invalid("the time unit must be at least 1 ms".into());
        }
        let count = |role| fields.iter().filter(|f| f.role == role).count();
        if count(Role::Time) != 1 {
            return invalid(format!(
                "a layout needs exactly one time field, found {}",
                count(Role::Time)
            ));
        }
        if count(Role::Sequence) != 1 {
            return invalid(format!(
                "a layout needs exactly one sequence field, found {}",
                count(Role::Sequence)
            ));
        }
        if count(Role::Extension) > 1 {
            return invalid("a layout may have at most one extension field".into());
        }
        let time_at = fields.iter().position(|f| f.role == Role::Time);
        let expected_time_at = usize::from(count(Role::Extension) == 1);
        if time_at != Some(expected_time_at) {
            return invalid(
                "the time field must be the highest field, with only an extension field above it \
                 (so IDs sort by time, and IDs issued after a clock step back still sort last)"
                    .into(),
            );
        }
        for (i, f) in fields.iter().enumerate() {
            if f.bits == 0 {
                let what = if f.role == Role::Sequence {
                    "the sequence field has zero width: a node could issue no ID at all; give it at least 1 bit".to_string()
                } else {
                    format!(
                        "field {:?} has zero width; give it at least 1 bit or remove it",
                        f.name
                    )
                };
                return invalid(what);
            }
            if f.name.is_empty()
                || !f
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                return invalid(format!(
                    "field name {:?} must be non-empty lowercase letters, digits or '_'",
                    f.name
                ));
            }
            if fields[..i].iter().any(|g| g.name == f.name) {
                return invalid(format!("field name {:?} is used twice", f.name));
            }
        }
        let total: u32 = fields.iter().map(|f| u32::from(f.bits)).sum();
        let top_is_time = fields.first().is_some_and(|f| f.role == Role::Time);
        if total > MAX_BITS + u32::from(top_is_time) {
            let breakdown = fields
                .iter()
                .map(|f| format!("{} {}", f.name, f.bits))
                .collect::<Vec<_>>()
                .join(" + ");
            return Err(Error::LayoutTooWide {
                total,
                breakdown: format!("{breakdown} = {total} bits"),
                over: total - MAX_BITS,
            });
        }
        Ok(Self {
            fields,
            unit_ms,
            epoch_ms,
        })
    }

    /// A preset by name; see [`preset`].
    pub fn preset(name: &str) -> Result<Self> {
        preset::get(name)
    }

    /// Parses a spec such as `time:41,datacenter:5,worker:5,seq:12` with a unit and epoch;
    /// see [`spec`](self) for the syntax.
    pub fn from_spec(spec: &str, unit_ms: u64, epoch_ms: u64) -> Result<Self> {
        spec::parse_fields(spec).and_then(|fields| Self::new(fields, unit_ms, epoch_ms))
    }

    /// Checks the layout against the current time: the epoch must be in the past and the
    /// time field must not be full yet.
    pub fn check_at(&self, now_ms: u64) -> Result<()> {
        if self.epoch_ms > now_ms {
            return Err(Error::EpochInFuture {
                epoch: format_ms(self.epoch_ms),
                now: format_ms(now_ms),
            });
        }
        if self.is_expired_at(now_ms) {
            return Err(Error::TimeExhausted {
                ended: self.lifetime().to_string(),
            });
        }
        Ok(())
    }

    /// Fields from the high bits to the low bits.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }
    /// Milliseconds per tick of the time field.
    pub fn unit_ms(&self) -> u64 {
        self.unit_ms
    }
    /// The epoch, in milliseconds since 1970-01-01T00:00:00Z.
    pub fn epoch_ms(&self) -> u64 {
        self.epoch_ms
    }
    /// Bits used by all fields (at most 63).
    pub fn total_bits(&self) -> u32 {
        self.fields.iter().map(|f| u32::from(f.bits)).sum()
    }
    /// Index of a field by name.
    pub fn field_index(&self, name: &str) -> Result<usize> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| Error::UnknownField {
                name: name.to_string(),
                fields: self.field_names().join(", "),
            })
    }
    /// Names of all fields, high bits first.
    pub fn field_names(&self) -> Vec<&str> {
        self.fields.iter().map(|f| f.name.as_str()).collect()
    }
    /// Bits below field `index`: the shift that places a value of that field in an ID.
    pub fn shift_of(&self, index: usize) -> u32 {
        self.fields[index + 1..]
            .iter()
            .map(|f| u32::from(f.bits))
            .sum()
    }
    pub(crate) fn index_of(&self, role: Role) -> Option<usize> {
        self.fields.iter().position(|f| f.role == role)
    }
    pub(crate) fn bits_of(&self, role: Role) -> u8 {
        self.index_of(role).map_or(0, |i| self.fields[i].bits)
    }
    /// Width of the time field.
    pub fn time_bits(&self) -> u8 {
        self.bits_of(Role::Time)
    }
    /// Width of the sequence field.
    pub fn sequence_bits(&self) -> u8 {
        self.bits_of(Role::Sequence)
    }
    /// Width of the extension field (0 if there is none).
    pub fn extension_bits(&self) -> u8 {
        self.bits_of(Role::Extension)
    }
    /// Total width of all node fields.
    pub fn node_bits(&self) -> u32 {
        self.fields
            .iter()
            .filter(|f| f.role == Role::Node)
            .map(|f| u32::from(f.bits))
            .sum()
    }
    /// The last tick whose IDs stay below 2^63.
    pub fn max_tick(&self) -> u64 {
        let spare_top_bit = u8::from(self.total_bits() > MAX_BITS);
        mask(self.time_bits() - spare_top_bit)
    }
    /// Largest ID the layout can produce (below 2^63).
    pub fn max_id(&self) -> u64 {
        mask(self.total_bits().min(MAX_BITS) as u8)
    }

    /// `id` with the order of its bits reversed within the layout's width (at most 63, so
    /// the result stays positive as a signed 64-bit number): Spanner's bit-reversed
    /// sequences, which spread consecutive IDs over a range-sharded key space. Its own
    /// inverse, so decoding reverses again; unique IDs stay unique, but are no longer in
    /// time order.
    ///
    /// ```
    /// use snowdrift_core::layout::Layout;
    /// let twitter = Layout::preset("twitter")?;
    /// assert_eq!(twitter.reverse_bits(1), 1 << 62);
    /// assert_eq!(twitter.reverse_bits(twitter.reverse_bits(12345)), 12345);
    /// # Ok::<(), snowdrift_core::Error>(())
    /// ```
    pub fn reverse_bits(&self, id: u64) -> u64 {
        let width = self.total_bits().min(MAX_BITS);
        (id & mask(width as u8)).reverse_bits() >> (64 - width)
    }

    /// When the time field runs out.
    pub fn lifetime(&self) -> Lifetime {
        let span = u128::from(self.max_tick()) + 1;
        let end = u128::from(self.epoch_ms) + span * u128::from(self.unit_ms);
        Lifetime {
            end_ms: u64::try_from(end).unwrap_or(u64::MAX),
        }
    }
    /// Whether the time field is already full at `now_ms`.
    pub fn is_expired_at(&self, now_ms: u64) -> bool {
        now_ms >= self.lifetime().end_ms
    }
    /// IDs one node can issue per second without borrowing future time.
    pub fn max_ids_per_second(&self) -> f64 {
        (mask(self.sequence_bits()) as f64 + 1.0) * 1000.0 / self.unit_ms as f64
    }
    /// How many distinct nodes (combinations of all node fields) the layout allows.
    pub fn max_nodes(&self) -> u64 {
        1u64 << self.node_bits()
    }

    /// The first millisecond (since 1970) at which an ID of this layout may reach 2^53, the
    /// limit of integers a JavaScript `number` holds exactly; `None` if that never happens
    /// within the layout's lifetime. Counts every node, sequence and extension value.
    pub fn js_unsafe_from_ms(&self) -> Option<u64> {
        let time = self.index_of(Role::Time)?;
        let shift = self.shift_of(time);
        let ext_part =
            u128::from(mask(self.extension_bits())) << (shift + u32::from(self.time_bits()));
        let limit = 1u128 << 53;
        if ext_part >= limit {
            return Some(self.epoch_ms);
        }
        // Ticks T with ((T + 1) << shift) <= limit - ext_part are safe.
        let safe_ticks = (limit - ext_part) >> shift;
        if safe_ticks > u128::from(self.max_tick()) {
            return None;
        }
        let from = u128::from(self.epoch_ms) + safe_ticks * u128::from(self.unit_ms);
        Some(u64::try_from(from).unwrap_or(u64::MAX))
    }
    /// Whether every ID issued before `until_ms` stays below 2^53 (safe as a JavaScript number).
    pub fn is_js_safe(&self, until_ms: u64) -> bool {
        self.js_unsafe_from_ms().is_none_or(|t| t > until_ms)
    }
}

/// The end of a layout's time field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lifetime {
    /// First millisecond (since 1970) the time field cannot represent; `u64::MAX` when it is
    /// further away than that.
    pub end_ms: u64,
}

impl std::fmt::Display for Lifetime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_ms(self.end_ms))
    }
}

#[cfg(test)]
mod tests;
