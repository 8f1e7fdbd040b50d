//! MongoDB's ObjectId: 12 bytes of 4-byte seconds, 5 random bytes per process and a 3-byte
//! counter, as [MongoDB's specification](https://github.com/mongodb/specifications/blob/master/source/bson-objectid/objectid.md)
//! lays them out, written as 24 lowercase hex digits.
//!
//! ```
//! use snowdrift_core::kinds::objectid::ObjectId;
//! let id: ObjectId = "507f1f77bcf86cd799439011".parse()?;
//! assert_eq!(id.timestamp_secs(), 1_350_508_407); // 2012-10-17T21:13:27Z
//! assert_eq!(id.to_string(), "507f1f77bcf86cd799439011");
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::clock::Clock;
use crate::codec::{describe_char, invalid};
use crate::error::{Error, Result};

/// Length of the hex form.
pub const HEX_LEN: usize = 24;

const COUNTER_MASK: u32 = 0x00ff_ffff;

/// A 12-byte ObjectId.
///
/// Ordering compares the bytes, so ObjectIds sort by their second first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ObjectId([u8; 12]);

impl ObjectId {
    /// The ObjectId with these bytes.
    pub const fn from_bytes(bytes: [u8; 12]) -> Self {
        Self(bytes)
    }

    /// Puts an ObjectId together: seconds since 1970, the 5-byte process value and a counter
    /// (its low 24 bits).
    ///
    /// ```
    /// use snowdrift_core::kinds::objectid::ObjectId;
    /// let id = ObjectId::from_parts(1, [2, 3, 4, 5, 6], 0x0102_0304);
    /// assert_eq!(id.to_string(), "000000010203040506020304");
    /// assert_eq!(id.counter(), 0x02_0304);
    /// ```
    pub const fn from_parts(secs: u32, process: [u8; 5], counter: u32) -> Self {
        let t = secs.to_be_bytes();
        let c = counter.to_be_bytes();
        let p = process;
        Self([
            t[0], t[1], t[2], t[3], p[0], p[1], p[2], p[3], p[4], c[1], c[2], c[3],
        ])
    }

    /// The bytes.
    pub const fn bytes(&self) -> [u8; 12] {
        self.0
    }

    /// The bytes, borrowed.
    pub const fn as_bytes(&self) -> &[u8; 12] {
        &self.0
    }

    /// Seconds since 1970 when the ObjectId was made (big-endian bytes 0 to 3).
    pub const fn timestamp_secs(&self) -> u32 {
        let b = self.0;
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The per-process random value (bytes 4 to 8).
    pub const fn process(&self) -> [u8; 5] {
        let b = self.0;
        [b[4], b[5], b[6], b[7], b[8]]
    }

    /// Bytes 4 to 6, the machine hash of an ObjectId made with the legacy layout
    /// ([`legacy_process`]).
    pub const fn legacy_machine(&self) -> [u8; 3] {
        let b = self.0;
        [b[4], b[5], b[6]]
    }

    /// Bytes 7 and 8 (big-endian), the process ID of an ObjectId made with the legacy
    /// layout ([`legacy_process`]).
    pub const fn legacy_pid(&self) -> u16 {
        let b = self.0;
        u16::from_be_bytes([b[7], b[8]])
    }

    /// The counter (big-endian bytes 9 to 11).
    pub const fn counter(&self) -> u32 {
        let b = self.0;
        u32::from_be_bytes([0, b[9], b[10], b[11]])
    }

    /// Writes the 24 lowercase hex digits into `buf` and returns them, allocating nothing.
    pub fn encode_to<'b>(&self, buf: &'b mut [u8; HEX_LEN]) -> &'b str {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for (i, byte) in self.0.iter().enumerate() {
            buf[2 * i] = HEX[usize::from(byte >> 4)];
            buf[2 * i + 1] = HEX[usize::from(byte & 0xf)];
        }
        // Every byte written comes from HEX, which is ASCII.
        std::str::from_utf8(buf).unwrap_or_default()
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; HEX_LEN];
        f.pad(self.encode_to(&mut buf))
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

impl FromStr for ObjectId {
    type Err = Error;

    /// Parses 24 hex digits, in either case.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| {
            invalid(
                "objectid",
                s,
                format!("{why}; an ObjectId is exactly 24 hex digits (0-9, a-f)"),
            )
        };
        if s.len() != HEX_LEN {
            return Err(bad(format!("it has {} bytes", s.len())));
        }
        let nibble = |i: usize| -> Result<u8> {
            let b = s.as_bytes()[i];
            char::from(b)
                .to_digit(16)
                .map(|d| d as u8)
                .ok_or_else(|| bad(format!("{} is not a hex digit", describe_char(s, i))))
        };
        let mut bytes = [0u8; 12];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = (nibble(2 * i)? << 4) | nibble(2 * i + 1)?;
        }
        Ok(Self(bytes))
    }
}

/// The legacy ObjectId layout's process value (the BSON specification before 2018, and the
/// drivers of its time): the first 3 bytes of the MD5 of the host name, then the process ID
/// modulo 65,535 as 2 big-endian bytes, as PyMongo's `bson` wrote it. Readers of those
/// drivers' ObjectIds find the machine and process in them; two processes on one host whose
/// IDs agree modulo 65,535 would share a value (the reason the layout was replaced by 5
/// random bytes).
///
/// ```
/// use snowdrift_core::kinds::objectid::legacy_process;
/// assert_eq!(legacy_process("localhost", 70_000), [0x42, 0x1a, 0xa9, 0x11, 0x71]);
/// ```
pub fn legacy_process(hostname: &str, pid: u32) -> [u8; 5] {
    use md5::{Digest, Md5};
    let hash = Md5::digest(hostname.as_bytes());
    let pid = u16::try_from(pid % 0xFFFF).unwrap_or(0).to_be_bytes();
    [hash[0], hash[1], hash[2], pid[0], pid[1]]
}

/// Makes ObjectIds for one process: the time from a [`Clock`], a 5-byte random value fixed
/// at construction, and a counter that starts at a random value.
///
/// **The counter wraps**, as MongoDB's specification says: it counts modulo 2^24, so after
/// 16,777,216 ObjectIds in one second the generator would repeat the first of that second.
/// That is the specification's trade-off, kept here so the IDs are real ObjectIds; at the
/// rates one process reaches in practice a second ends long before. The snowflake
/// generator, not this one, is the kind that refuses instead of wrapping.
///
/// Make one generator per process and share it; two generators with the same process value
/// and overlapping counters would repeat each other's IDs.
///
/// ```
/// use snowdrift_core::{clock::ManualClock, kinds::objectid::ObjectIdGenerator};
/// // In production: random bytes from a CSPRNG, and a random counter start.
/// let generator = ObjectIdGenerator::new(ManualClock::new(1_700_000_000_123), [1, 2, 3, 4, 5], 0xff_fffe);
/// assert_eq!(generator.next()?.to_string(), "6553f1000102030405fffffe");
/// assert_eq!(generator.next()?.to_string(), "6553f1000102030405ffffff");
/// assert_eq!(generator.next()?.to_string(), "6553f1000102030405000000"); // wrapped
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct ObjectIdGenerator<C> {
    clock: C,
    process: [u8; 5],
    counter: AtomicU32,
}

impl<C: Clock> ObjectIdGenerator<C> {
    /// A generator with a random per-process value and a random counter start (only its low
    /// 24 bits are used).
    pub fn new(clock: C, process: [u8; 5], counter_start: u32) -> Self {
        Self {
            clock,
            process,
            counter: AtomicU32::new(counter_start & COUNTER_MASK),
        }
    }

    /// The per-process value in every ObjectId this generator makes.
    pub fn process(&self) -> [u8; 5] {
        self.process
    }

    /// The next ObjectId. Fails only when the clock reads after 2106-02-07T06:28:15Z, the
    /// last second 32 bits hold.
    pub fn next(&self) -> Result<ObjectId> {
        let ms = self.clock.now_ms();
        let secs = u32::try_from(ms / 1000).map_err(|_| Error::ClockOutOfRange {
            kind: "ObjectId",
            now_ms: ms,
            range: "1970 to 2106-02-07T06:28:15Z",
        })?;
        // 2^32 is a multiple of 2^24, so the atomic's own wrap keeps the low 24 bits counting
        // modulo 2^24 without a compare-and-swap loop.
        let counter = self.counter.fetch_add(1, Ordering::Relaxed) & COUNTER_MASK;
        Ok(ObjectId::from_parts(secs, self.process, counter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn parts_and_text() {
        let id = ObjectId::from_parts(0x507f_1f77, [0xbc, 0xf8, 0x6c, 0xd7, 0x99], 0x43_9011);
        assert_eq!(id.to_string(), "507f1f77bcf86cd799439011");
        assert_eq!(format!("{id:?}"), "ObjectId(507f1f77bcf86cd799439011)");
        assert_eq!(format!("{id:>26}"), "  507f1f77bcf86cd799439011");
        assert_eq!(id.timestamp_secs(), 0x507f_1f77);
        assert_eq!(id.process(), [0xbc, 0xf8, 0x6c, 0xd7, 0x99]);
        assert_eq!(id.counter(), 0x43_9011);
        assert_eq!("507F1F77BCF86CD799439011".parse(), Ok(id));
        assert_eq!(ObjectId::from_bytes(id.bytes()), id);
        assert_eq!(id.as_bytes(), &id.bytes());
    }

    #[test]
    fn parse_errors() {
        for (text, reason) in [
            ("", "0 bytes"),
            ("507f1f77bcf86cd79943901", "23 bytes"),
            ("507f1f77bcf86cd7994390111", "25 bytes"),
            ("507f1f77bcf86cd79943901g", "'g' at byte 23"),
            ("0x7f1f77bcf86cd799439011", "'x' at byte 1"),
            ("507f1f77bcf86cd7994390é", "'é' at byte 22"),
        ] {
            let err = text.parse::<ObjectId>().expect_err(text).to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
            assert!(err.contains("24 hex digits"), "{err}");
        }
    }

    #[test]
    fn generator_fields() {
        let clock = ManualClock::new(1_700_000_000_999);
        let g = ObjectIdGenerator::new(clock.clone(), [9, 8, 7, 6, 5], 0xab00_0010);
        let a = g.next().expect("in range");
        assert_eq!(a.timestamp_secs(), 1_700_000_000);
        assert_eq!(a.process(), [9, 8, 7, 6, 5]);
        assert_eq!(a.counter(), 0x10);
        assert_eq!(g.process(), [9, 8, 7, 6, 5]);
        clock.advance(1);
        let b = g.next().expect("in range");
        assert_eq!((b.timestamp_secs(), b.counter()), (1_700_000_001, 0x11));
        assert!(b > a);
    }

    #[test]
    fn rejects_clocks_past_2106() {
        let g = ObjectIdGenerator::new(
            ManualClock::new((u64::from(u32::MAX) + 1) * 1000),
            [0; 5],
            0,
        );
        let err = g.next().expect_err("out of range").to_string();
        assert!(err.contains("2106"), "{err}");
        let last = ObjectIdGenerator::new(
            ManualClock::new(u64::from(u32::MAX) * 1000 + 999),
            [0; 5],
            0,
        );
        assert_eq!(last.next().map(|id| id.timestamp_secs()), Ok(u32::MAX));
    }

    #[test]
    fn unique_across_threads_within_a_second() {
        let g = Arc::new(ObjectIdGenerator::new(
            ManualClock::new(1_700_000_000_000),
            [1; 5],
            u32::MAX,
        ));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || (0..5_000).map(|_| g.next()).collect::<Result<Vec<_>>>())
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            for id in h.join().expect("no panic").expect("in range") {
                assert!(all.insert(id));
            }
        }
        assert_eq!(all.len(), 10_000);
    }

    proptest! {
        #[test]
        fn text_round_trip(bytes: [u8; 12]) {
            let id = ObjectId::from_bytes(bytes);
            let text = id.to_string();
            prop_assert_eq!(text.len(), 24);
            prop_assert_eq!(text.parse::<ObjectId>(), Ok(id));
            prop_assert_eq!(text.to_ascii_uppercase().parse::<ObjectId>(), Ok(id));
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,26}") {
            if let Ok(id) = text.parse::<ObjectId>() {
                prop_assert_eq!(id.to_string(), text.to_ascii_lowercase());
            }
        }
    }
}
