//! xid, as [rs/xid](https://github.com/rs/xid) defines it: 12 bytes of 4-byte seconds since
//! 1970, a 3-byte machine ID, a 2-byte process ID and a 3-byte counter that starts at a
//! random value, written as 20 characters of lowercase base32hex (`0-9a-v`), so the text
//! sorts as the bytes do.
//!
//! The machine ID follows rs/xid's rule ([`machine_id`], [`read_host_machine_id`]): the
//! first 3 bytes of the SHA-256 of the host's ID (`/etc/machine-id` on Linux, else the
//! host name), unless `XID_MACHINE_ID` sets it. The process ID is the PID, XORed with the
//! CRC-32 of `/proc/self/cpuset` where that file has more than one byte ([`process_id`]).
//!
//! ```
//! use snowdrift_core::kinds::xid::Xid;
//! let id: Xid = "9m4e2mr0ui3e8a215n4g".parse()?;
//! assert_eq!(id.timestamp_secs(), 1_300_816_219);
//! assert_eq!((id.machine(), id.pid(), id.counter()), ([0x60, 0xf4, 0x86], 0xe428, 4_271_561));
//! assert_eq!(id.to_string(), "9m4e2mr0ui3e8a215n4g");
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::clock::Clock;
use crate::codec::{describe_char, invalid};
use crate::error::{Error, Result};

/// Length of the text form.
pub const TEXT_LEN: usize = 20;

/// base32hex in lowercase, rs/xid's `encoding`.
const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

const COUNTER_MASK: u32 = 0x00ff_ffff;

/// The largest machine ID, 3 bytes.
pub const MAX_MACHINE_ID: u32 = 0x00ff_ffff;

/// A 12-byte xid. Ordering compares the bytes, so xids sort by their second first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Xid([u8; 12]);

impl Xid {
    /// The xid with these bytes.
    pub const fn from_bytes(bytes: [u8; 12]) -> Self {
        Self(bytes)
    }

    /// Puts an xid together: seconds since 1970, the machine ID, the process ID and a
    /// counter (its low 24 bits).
    ///
    /// ```
    /// use snowdrift_core::kinds::xid::Xid;
    /// let id = Xid::from_parts(0, [0xaa, 0xbb, 0xcc], 0xddee, 1);
    /// assert_eq!(id.bytes(), [0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, 1]);
    /// ```
    pub const fn from_parts(secs: u32, machine: [u8; 3], pid: u16, counter: u32) -> Self {
        let t = secs.to_be_bytes();
        let p = pid.to_be_bytes();
        let c = counter.to_be_bytes();
        let m = machine;
        Self([
            t[0], t[1], t[2], t[3], m[0], m[1], m[2], p[0], p[1], c[1], c[2], c[3],
        ])
    }

    /// The bytes.
    pub const fn bytes(&self) -> [u8; 12] {
        self.0
    }

    /// Seconds since 1970 when the xid was made (big-endian bytes 0 to 3).
    pub const fn timestamp_secs(&self) -> u32 {
        let b = self.0;
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The machine ID (bytes 4 to 6).
    pub const fn machine(&self) -> [u8; 3] {
        let b = self.0;
        [b[4], b[5], b[6]]
    }

    /// The process ID (big-endian bytes 7 and 8).
    pub const fn pid(&self) -> u16 {
        let b = self.0;
        u16::from_be_bytes([b[7], b[8]])
    }

    /// The counter (big-endian bytes 9 to 11).
    pub const fn counter(&self) -> u32 {
        let b = self.0;
        u32::from_be_bytes([0, b[9], b[10], b[11]])
    }

    /// Writes the 20 characters into `buf` and returns them, allocating nothing.
    pub fn encode_to<'b>(&self, buf: &'b mut [u8; TEXT_LEN]) -> &'b str {
        // 96 bits then 4 zero bits: 20 groups of 5, the first group the highest.
        let mut n = 0u128;
        for b in self.0 {
            n = (n << 8) | u128::from(b);
        }
        n <<= 4;
        for (i, out) in buf.iter_mut().enumerate() {
            *out = ALPHABET[((n >> (5 * (TEXT_LEN - 1 - i))) & 31) as usize];
        }
        // Every byte written comes from ALPHABET, which is ASCII.
        std::str::from_utf8(buf).unwrap_or_default()
    }
}

impl fmt::Display for Xid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; TEXT_LEN];
        f.pad(self.encode_to(&mut buf))
    }
}

impl fmt::Debug for Xid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Xid({self})")
    }
}

impl FromStr for Xid {
    type Err = Error;

    /// Parses the 20 characters as rs/xid does: lowercase `0-9a-v` only, and the last
    /// character `0` or `g` (it holds one bit of the ID and four zero bits).
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| {
            invalid(
                "xid",
                s,
                format!("{why}; an xid is exactly 20 characters of 0-9 and a-v (lowercase)"),
            )
        };
        if s.len() != TEXT_LEN {
            return Err(bad(format!("it has {} bytes", s.len())));
        }
        let mut n = 0u128;
        for (i, &b) in s.as_bytes().iter().enumerate() {
            let digit = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'v' => b - b'a' + 10,
                _ => return Err(bad(format!("{} is not allowed", describe_char(s, i)))),
            };
            n = (n << 5) | u128::from(digit);
        }
        if n & 0xf != 0 {
            return Err(bad(format!(
                "its last character must be 0 or g, not {:?} (20 characters hold 100 bits, \
                 the last 4 of them zero)",
                char::from(s.as_bytes()[TEXT_LEN - 1])
            )));
        }
        n >>= 4;
        let mut bytes = [0u8; 12];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = (n >> (8 * (11 - i))) as u8;
        }
        Ok(Self(bytes))
    }
}

/// rs/xid's machine ID of a host whose platform ID (or host name) is `host_id`: the first
/// 3 bytes of its SHA-256. The bytes are hashed as read, so `/etc/machine-id`'s trailing
/// newline is part of them, as in rs/xid.
///
/// ```
/// use snowdrift_core::kinds::xid::machine_id;
/// assert_eq!(machine_id(b"vm"), [0x5b, 0xce, 0x98]);
/// ```
pub fn machine_id(host_id: &[u8]) -> [u8; 3] {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(host_id);
    [hash[0], hash[1], hash[2]]
}

/// A machine ID given as a number, 0 to 16,777,215 (rs/xid's `XID_MACHINE_ID`), as its 3
/// big-endian bytes.
pub fn machine_id_from_number(n: u64) -> Result<[u8; 3]> {
    let n = u32::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_MACHINE_ID)
        .ok_or_else(|| {
            Error::InvalidConfig(format!(
                "xid machine ID {n} does not fit 3 bytes; allowed: 0 to {MAX_MACHINE_ID}"
            ))
        })?;
    let b = n.to_be_bytes();
    Ok([b[1], b[2], b[3]])
}

/// The machine ID as the number `XID_MACHINE_ID` would give it.
pub fn machine_id_number(machine: [u8; 3]) -> u32 {
    u32::from_be_bytes([0, machine[0], machine[1], machine[2]])
}

/// rs/xid's process ID: `pid`, XORed with the CRC-32 (IEEE) of `cpuset` (the contents of
/// `/proc/self/cpuset`) when it has more than one byte, so processes in different
/// containers with the same PID differ; its low 16 bits.
///
/// ```
/// use snowdrift_core::kinds::xid::process_id;
/// assert_eq!(process_id(70_000, None), 4_464); // 70,000 - 65,536
/// assert_eq!(process_id(7, Some(b"/")), 7); // one byte: not mixed in
/// ```
pub fn process_id(pid: u32, cpuset: Option<&[u8]>) -> u16 {
    let mixed = match cpuset {
        Some(b) if b.len() > 1 => pid ^ crc32fast::hash(b),
        _ => pid,
    };
    mixed as u16
}

/// Where a machine ID came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineSource {
    /// `XID_MACHINE_ID` (or a configured value).
    Set,
    /// The hash of the platform's machine ID (`/etc/machine-id`, or the DMI product UUID).
    Platform,
    /// The hash of the host name.
    Hostname,
    /// Random: no host ID could be read.
    Random,
}

impl MachineSource {
    /// A word for it: `set`, `platform`, `hostname` or `random`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MachineSource::Set => "set",
            MachineSource::Platform => "platform",
            MachineSource::Hostname => "hostname",
            MachineSource::Random => "random",
        }
    }
}

/// This host's machine ID by rs/xid's rule, the one place in this crate that reads the
/// host: `env` (the value of `XID_MACHINE_ID`, when set and not empty: a number 0 to
/// 16,777,215, refused otherwise, where rs/xid panics); else the SHA-256 of
/// `/etc/machine-id` (or `/sys/class/dmi/id/product_uuid`); else of the host name; else
/// `random`.
pub fn read_host_machine_id(
    env: Option<&str>,
    random: [u8; 3],
) -> Result<([u8; 3], MachineSource)> {
    if let Some(text) = env.filter(|t| !t.is_empty()) {
        let n: u64 = text.trim().parse().map_err(|_| {
            Error::InvalidConfig(format!(
                "XID_MACHINE_ID is {text:?}, not a number; allowed: 0 to {MAX_MACHINE_ID}"
            ))
        })?;
        return Ok((machine_id_from_number(n)?, MachineSource::Set));
    }
    let platform = std::fs::read("/etc/machine-id")
        .ok()
        .filter(|b| !b.is_empty())
        .or_else(|| std::fs::read("/sys/class/dmi/id/product_uuid").ok())
        .filter(|b| !b.is_empty());
    if let Some(id) = platform {
        return Ok((machine_id(&id), MachineSource::Platform));
    }
    let host = gethostname::gethostname();
    let host = host.as_encoded_bytes();
    if !host.is_empty() {
        return Ok((machine_id(host), MachineSource::Hostname));
    }
    Ok((random, MachineSource::Random))
}

/// This process's ID by rs/xid's rule ([`process_id`] of the PID and `/proc/self/cpuset`).
pub fn read_process_id() -> u16 {
    let cpuset = std::fs::read("/proc/self/cpuset").ok();
    process_id(std::process::id(), cpuset.as_deref())
}

/// Makes xids for one process: the time from a [`Clock`], a machine and process ID fixed
/// at construction, and a counter that starts at a random value. Like rs/xid, the first
/// xid carries the start plus one.
///
/// **The counter wraps** after 16,777,216 xids, as rs/xid's does: two xids of one process
/// in one second repeat only past that many. Share one generator per process; two with the
/// same machine and process ID and overlapping counters would repeat each other's IDs.
///
/// ```
/// use snowdrift_core::{clock::ManualClock, kinds::xid::XidGenerator};
/// let g = XidGenerator::new(ManualClock::new(1_300_816_219_000), [0x60, 0xf4, 0x86], 0xe428, 4_271_560);
/// assert_eq!(g.next()?.to_string(), "9m4e2mr0ui3e8a215n4g");
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct XidGenerator<C> {
    clock: C,
    machine: [u8; 3],
    pid: u16,
    counter: AtomicU32,
}

impl<C: Clock> XidGenerator<C> {
    /// A generator with this machine and process ID and a random counter start (its low 24
    /// bits are used).
    pub fn new(clock: C, machine: [u8; 3], pid: u16, counter_start: u32) -> Self {
        Self {
            clock,
            machine,
            pid,
            counter: AtomicU32::new(counter_start & COUNTER_MASK),
        }
    }

    /// A generator for this process by rs/xid's rules: `machine`, or this host's machine
    /// ID ([`read_host_machine_id`], `XID_MACHINE_ID` first); this process's ID
    /// ([`read_process_id`]); a counter start from the OS CSPRNG.
    pub fn for_this_process(clock: C, machine: Option<[u8; 3]>) -> Result<Self> {
        let mut seed = [0u8; 7];
        super::os_random::fill(&mut seed)?;
        let machine = match machine {
            Some(m) => m,
            None => {
                let env = std::env::var("XID_MACHINE_ID").ok();
                read_host_machine_id(env.as_deref(), [seed[4], seed[5], seed[6]])?.0
            }
        };
        let start = u32::from_le_bytes([seed[0], seed[1], seed[2], seed[3]]);
        Ok(Self::new(clock, machine, read_process_id(), start))
    }

    /// The machine ID in every xid it makes.
    pub fn machine(&self) -> [u8; 3] {
        self.machine
    }

    /// The process ID in every xid it makes.
    pub fn pid(&self) -> u16 {
        self.pid
    }

    /// The next xid. Fails only when the clock reads after 2106-02-07T06:28:15Z, the last
    /// second 32 bits hold (rs/xid would wrap to 1970 there).
    pub fn next(&self) -> Result<Xid> {
        let ms = self.clock.now_ms();
        let secs = u32::try_from(ms / 1000).map_err(|_| Error::ClockOutOfRange {
            kind: "xid",
            now_ms: ms,
            range: "1970 to 2106-02-07T06:28:15Z",
        })?;
        // 2^32 is a multiple of 2^24: the atomic's own wrap keeps the low 24 bits counting.
        let counter = self.counter.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        Ok(Xid::from_parts(
            secs,
            self.machine,
            self.pid,
            counter & COUNTER_MASK,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::sync::Arc;

    /// rs/xid's own test vectors (`id_test.go`).
    #[test]
    fn reference_vectors() {
        type Parts = ([u8; 12], u32, [u8; 3], u16, u32);
        let cases: [Parts; 3] = [
            (
                [
                    0x4d, 0x88, 0xe1, 0x5b, 0x60, 0xf4, 0x86, 0xe4, 0x28, 0x41, 0x2d, 0xc9,
                ],
                1_300_816_219,
                [0x60, 0xf4, 0x86],
                0xe428,
                4_271_561,
            ),
            ([0; 12], 0, [0; 3], 0, 0),
            (
                [0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0, 0, 1],
                0,
                [0xaa, 0xbb, 0xcc],
                0xddee,
                1,
            ),
        ];
        for (bytes, secs, machine, pid, counter) in cases {
            let id = Xid::from_bytes(bytes);
            assert_eq!(id.timestamp_secs(), secs);
            assert_eq!(id.machine(), machine);
            assert_eq!(id.pid(), pid);
            assert_eq!(id.counter(), counter);
            assert_eq!(Xid::from_parts(secs, machine, pid, counter), id);
            assert_eq!(id.to_string().parse::<Xid>(), Ok(id));
        }
        let id = Xid::from_bytes(cases[0].0);
        assert_eq!(id.to_string(), "9m4e2mr0ui3e8a215n4g");
        assert_eq!(format!("{id:?}"), "Xid(9m4e2mr0ui3e8a215n4g)");
        assert_eq!(format!("{id:>22}"), "  9m4e2mr0ui3e8a215n4g");
    }

    #[test]
    fn parse_errors_say_what_is_wrong() {
        for (text, reason) in [
            ("invalid", "7 bytes"),
            ("", "0 bytes"),
            ("9m4e2mr0ui3e8a215n4g0", "21 bytes"),
            // rs/xid refuses upper case.
            ("9M4E2MR0UI3E8A215N4G", "'M' at byte 1"),
            ("9m4e2mr0ui3e8a215n4w", "'w' at byte 19"),
            ("9m4e2mr0ui3e8a215n4é", "21 bytes"),
            ("9m4e2mr0ui3e8a215né", "'é' at byte 18"),
            // rs/xid's TestFromStringInvalid: the padding bits set.
            (
                "c6e52g2mrqcjl44hf179",
                "last character must be 0 or g, not '9'",
            ),
        ] {
            let err = text.parse::<Xid>().expect_err(text).to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
            assert!(err.contains("0-9 and a-v"), "{err}");
        }
    }

    #[test]
    fn machine_and_process_rules() {
        // sha256("vm") = 5bce98...
        assert_eq!(machine_id(b"vm"), [0x5b, 0xce, 0x98]);
        assert_eq!(machine_id_from_number(123), Ok([0, 0, 123]));
        assert_eq!(machine_id_from_number(16_777_214), Ok([0xff, 0xff, 0xfe]));
        let err = machine_id_from_number(16_777_216).unwrap_err().to_string();
        assert!(err.contains("0 to 16777215"), "{err}");
        assert_eq!(machine_id_number([0xff, 0xff, 0xfe]), 16_777_214);
        // rs/xid's TestMachineFromEnv cases.
        assert_eq!(
            read_host_machine_id(Some("123"), [9; 3]),
            Ok(([0, 0, 123], MachineSource::Set))
        );
        for bad in ["abcd", "-1", "16777216"] {
            let err = read_host_machine_id(Some(bad), [9; 3]).unwrap_err();
            assert!(err.to_string().contains("16777215"), "{bad}: {err}");
        }
        // crc32("/\n") = 0xb310c38c: only its low 16 bits reach the ID.
        assert_eq!(
            process_id(1234, Some(b"/\n")),
            (1234 ^ crc32fast::hash(b"/\n")) as u16
        );
        assert_ne!(process_id(1234, Some(b"/\n")), 1234);
        assert_eq!(process_id(1234, Some(b"")), 1234);
    }

    #[test]
    fn generator_counts_from_its_start_plus_one_and_wraps() {
        let clock = ManualClock::new(1_700_000_000_999);
        let g = XidGenerator::new(clock.clone(), [1, 2, 3], 0xabcd, 0xff_fffe);
        let a = g.next().unwrap();
        assert_eq!(
            (a.timestamp_secs(), a.machine(), a.pid(), a.counter()),
            (1_700_000_000, [1, 2, 3], 0xabcd, 0xff_ffff)
        );
        assert_eq!(g.next().unwrap().counter(), 0);
        clock.advance(1);
        let b = g.next().unwrap();
        assert_eq!((b.timestamp_secs(), b.counter()), (1_700_000_001, 1));
        assert!(b > a && b.to_string() > a.to_string());
        assert_eq!((g.machine(), g.pid()), ([1, 2, 3], 0xabcd));
    }

    #[test]
    fn refuses_clocks_past_2106() {
        let g = XidGenerator::new(ManualClock::new((1 << 32) * 1000), [0; 3], 0, 0);
        let err = g.next().unwrap_err().to_string();
        assert!(err.contains("2106"), "{err}");
    }

    #[test]
    fn unique_across_threads_within_a_second() {
        let g = Arc::new(XidGenerator::new(
            ManualClock::new(1_700_000_000_000),
            [1; 3],
            7,
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
            for id in h.join().unwrap().unwrap() {
                assert!(all.insert(id));
            }
        }
        assert_eq!(all.len(), 10_000);
    }

    proptest! {
        /// Text round trip, and the text sorts as the bytes do (base32hex keeps order).
        #[test]
        fn text_round_trip_and_order(a: [u8; 12], b: [u8; 12]) {
            let (x, y) = (Xid::from_bytes(a), Xid::from_bytes(b));
            let (tx, ty) = (x.to_string(), y.to_string());
            prop_assert_eq!(tx.len(), 20);
            prop_assert_eq!(tx.parse::<Xid>(), Ok(x));
            prop_assert_eq!(tx.cmp(&ty), x.cmp(&y));
        }

        /// rs/xid's TestFromStringQuick: changing any one character gives another ID or
        /// an error, never the same ID.
        #[test]
        fn one_changed_character_never_reads_as_the_same(bytes: [u8; 12], at in 0usize..20, c: u8) {
            let id = Xid::from_bytes(bytes);
            let mut text = id.to_string().into_bytes();
            prop_assume!(text[at] != c);
            text[at] = c;
            if let Ok(s) = std::str::from_utf8(&text) {
                prop_assert_ne!(s.parse::<Xid>().ok(), Some(id));
            }
        }

        #[test]
        fn parse_never_panics(text in "\\PC{0,22}") {
            if let Ok(id) = text.parse::<Xid>() {
                prop_assert_eq!(id.to_string(), text);
            }
        }
    }
}
