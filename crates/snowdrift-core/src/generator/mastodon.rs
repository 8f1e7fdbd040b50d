//! Mastodon's snowflake tail: the sequence field of an ID plus a keyed hash of its
//! millisecond, so the low bits do not say how many IDs were issued.
//!
//! Mastodon (`lib/mastodon/snowflake.rb`) makes each ID in PostgreSQL as 48 bits of
//! milliseconds since 1970 above a 16-bit tail: the first 16 bits of
//! `MD5(table || secret || time_part)` (`time_part` the ID's time bits, written in
//! decimal), plus the table's sequence number, modulo 2^16. Without the secret the hash is
//! unknown, so a tail gives away neither how many rows the table has nor how many IDs a
//! millisecond held.
//!
//! Mastodon has one database sequence per table; snowdrift has many nodes, each under its
//! own leased worker ID. [`MastodonTail`] keeps the worker ID in reserved bits outside the
//! hashed sum and hashes only the sequence field: a node's tails are its sequence numbers
//! shifted by a keyed offset modulo `2^sequence bits`, a bijection of each millisecond's
//! sequence, and every bit outside the sequence field (time, worker, extension) is kept as
//! it is. So the hashed IDs of a generator are exactly as unique as its plain IDs, across
//! nodes too, whatever secret each node is given. The hashed input is the ID with its
//! sequence bits cleared, as Mastodon's `time_part` is: with no node bits it is Mastodon's
//! input to the byte, and with them each worker's offset differs from the others'.

use std::sync::atomic::{AtomicU64, Ordering};

use md5::{Digest, Md5};

use super::IdBlock;
use crate::error::{Error, Result};
use crate::layout::{Layout, Role, mask};

/// The layout preset whose IDs carry a Mastodon tail.
pub const PRESET: &str = "mastodon";

/// The shortest secret taken: 16 bytes. Mastodon's is 32 hex digits
/// (`SecureRandom.hex(16)`); `openssl rand -hex 16` makes one.
pub const MIN_SECRET_LEN: usize = 16;

/// The longest table name taken, in bytes.
pub const MAX_TABLE_LEN: usize = 128;

/// The widest sequence field the hash covers: Mastodon takes 16 bits of the MD5.
pub const MAX_SEQUENCE_BITS: u8 = 16;

/// Adds a keyed hash of each ID's millisecond and node to its sequence field (and takes it
/// off again), as Mastodon's `timestamp_id` does to its table sequence.
///
/// The offset of a millisecond is computed once (one MD5) and kept in a single atomic word,
/// so each ID costs a load, a compare and an add while its millisecond lasts.
///
/// ```
/// use snowdrift_core::generator::MastodonTail;
/// use snowdrift_core::layout::Layout;
/// let layout = Layout::preset("mastodon")?;
/// let tail = MastodonTail::new(&layout, "statuses", "0123456789abcdef0123456789abcdef")?;
/// let plain = (1_700_000_000_000u64 << 16) | (5 << 10) | 3; // worker 5, sequence 3
/// let hashed = tail.apply(plain);
/// assert_eq!(hashed >> 10, plain >> 10, "time and worker bits are kept");
/// assert_eq!(tail.remove(hashed), plain);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub struct MastodonTail {
    /// MD5 with the table name and the secret already absorbed.
    keyed: Md5,
    table: String,
    seq_bits: u32,
    seq_shift: u32,
    /// `2^seq_bits - 1`.
    seq_mask: u64,
    /// The latest ID's bits outside its sequence field (packed below the field's place)
    /// above its offset: one word, so a reader never pairs a key with another's offset.
    cache: AtomicU64,
}

impl std::fmt::Debug for MastodonTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.debug_struct("MastodonTail")
            .field("table", &self.table)
            .field("secret", &"***")
            .field("seq_bits", &self.seq_bits)
            .finish()
    }
}

impl MastodonTail {
    /// The tail for IDs of `layout`, keyed by `table` and `secret`.
    ///
    /// Refused: a layout whose sequence field is wider than 16 bits (Mastodon's hash gives
    /// 16), a secret shorter than [`MIN_SECRET_LEN`] bytes and a table name longer than
    /// [`MAX_TABLE_LEN`] bytes or holding a control character.
    pub fn new(layout: &Layout, table: &str, secret: &str) -> Result<Self> {
        let seq_bits = layout.sequence_bits();
        if seq_bits > MAX_SEQUENCE_BITS {
            return Err(Error::InvalidLayout(format!(
                "a Mastodon tail hashes a sequence field of at most {MAX_SEQUENCE_BITS} bits \
                 (Mastodon takes 16 bits of an MD5); this layout's is {seq_bits}"
            )));
        }
        if secret.len() < MIN_SECRET_LEN {
            return Err(Error::InvalidConfig(format!(
                "the Mastodon secret is {} bytes; give at least {MIN_SECRET_LEN} bytes that \
                 cannot be guessed (Mastodon's is 32 hex digits: `openssl rand -hex 16`)",
                secret.len()
            )));
        }
        if table.len() > MAX_TABLE_LEN || table.chars().any(char::is_control) {
            return Err(Error::InvalidConfig(format!(
                "the Mastodon table name {:?} must be at most {MAX_TABLE_LEN} bytes with no \
                 control characters (Mastodon hashes the table's name, e.g. \"statuses\")",
                table.chars().take(40).collect::<String>()
            )));
        }
        let seq = layout.index_of(Role::Sequence).unwrap_or(0);
        let mut keyed = Md5::new();
        keyed.update(table.as_bytes());
        keyed.update(secret.as_bytes());
        let tail = Self {
            keyed,
            table: table.to_string(),
            seq_bits: u32::from(seq_bits),
            seq_shift: layout.shift_of(seq),
            seq_mask: mask(seq_bits),
            cache: AtomicU64::new(0),
        };
        // The cache always holds a true pair: key 0 with its own offset.
        tail.cache.store(tail.hash(0), Ordering::Relaxed);
        Ok(tail)
    }

    /// The table name hashed in.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Width of the sequence field the offset is added to.
    pub fn sequence_bits(&self) -> u8 {
        self.seq_bits as u8
    }

    /// The keyed offset of `id`'s millisecond and node: the first 16 bits of
    /// `MD5(table || secret || decimal(id with its sequence bits cleared))`, modulo
    /// `2^sequence bits`.
    #[inline]
    pub fn offset(&self, id: u64) -> u64 {
        let key = self.key(id);
        let cached = self.cache.load(Ordering::Relaxed);
        if cached >> self.seq_bits == key {
            return cached & self.seq_mask;
        }
        self.refresh(id, key)
    }

    /// `id` with the offset of its millisecond added to its sequence field, modulo the
    /// field's size; every other bit is kept.
    #[inline]
    pub fn apply(&self, id: u64) -> u64 {
        let seq = (id >> self.seq_shift) & self.seq_mask;
        let tail = seq.wrapping_add(self.offset(id)) & self.seq_mask;
        (id & !(self.seq_mask << self.seq_shift)) | (tail << self.seq_shift)
    }

    /// The inverse of [`apply`](Self::apply): the plain ID, sequence number included. Only a
    /// holder of the secret can compute it.
    pub fn remove(&self, id: u64) -> u64 {
        let tail = (id >> self.seq_shift) & self.seq_mask;
        let seq = tail.wrapping_sub(self.offset(id)) & self.seq_mask;
        (id & !(self.seq_mask << self.seq_shift)) | (seq << self.seq_shift)
    }

    /// The runs of `block`'s IDs with their tails applied, as `(first, count, stride)`.
    /// Each of the block's runs (one per tick) stays one run unless its tails wrap past the
    /// top of the sequence field, where it splits in two: within a millisecond the hashed
    /// IDs are not in order, as Mastodon's are not.
    pub fn runs(&self, block: &IdBlock) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        block
            .runs()
            .flat_map(move |(first, count, stride)| self.split(first, count, stride))
    }

    /// The IDs of `block` with their tails applied, in the block's order.
    pub fn ids(&self, block: &IdBlock) -> impl Iterator<Item = u64> + '_ {
        self.runs(block)
            .flat_map(|(first, count, stride)| (0..count).map(move |i| first + i * stride))
    }

    /// One run of a tick (its sequence numbers consecutive, none past the field's top) with
    /// its tails applied: one run, or two where the tails wrap.
    fn split(&self, first: u64, count: u64, stride: u64) -> impl Iterator<Item = (u64, u64, u64)> {
        let hashed = self.apply(first);
        let tail = (hashed >> self.seq_shift) & self.seq_mask;
        let room = self.seq_mask - tail + 1;
        let (head, rest) = if count <= room {
            ((hashed, count, stride), None)
        } else {
            let wrapped = hashed & !(self.seq_mask << self.seq_shift);
            (
                (hashed, room, stride),
                Some((wrapped, count - room, stride)),
            )
        };
        std::iter::once(head).chain(rest)
    }

    /// `id`'s bits outside its sequence field, packed together: below `2^(64 - seq_bits)`.
    #[inline]
    fn key(&self, id: u64) -> u64 {
        let below = id & mask(self.seq_shift as u8);
        ((id >> (self.seq_shift + self.seq_bits)) << self.seq_shift) | below
    }

    #[cold]
    fn refresh(&self, id: u64, key: u64) -> u64 {
        let entry = self.hash(id);
        // Threads crossing into a new millisecond together may each hash it; they store
        // the same word.
        self.cache.store(entry, Ordering::Relaxed);
        debug_assert_eq!(entry >> self.seq_bits, key);
        entry & self.seq_mask
    }

    /// The cache entry of `id`: its key above its offset.
    fn hash(&self, id: u64) -> u64 {
        let time_part = id & !(self.seq_mask << self.seq_shift);
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = time_part;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut md5 = self.keyed.clone();
        md5.update(&digits[at..]);
        let digest = md5.finalize();
        let offset = u64::from(u16::from_be_bytes([digest[0], digest[1]])) & self.seq_mask;
        (self.key(id) << self.seq_bits) | offset
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
