//! UUID version 2, DCE Security (DCE 1.1, "Authentication and Security Services", chapter
//! 5, as RFC 9562 section 5.2 refers to it): a version 1 UUID whose low 32 bits of time
//! hold a local ID (a POSIX UID or GID, or an organisation's number), and whose low clock
//! sequence byte holds the local domain. The `uuid` crate makes no v2; this is that part.
//!
//! | bytes | field | v2 holds |
//! | --- | --- | --- |
//! | 0-3 | time_low | the local ID, big-endian |
//! | 4-5 | time_mid | time bits 32-47 |
//! | 6-7 | time_hi_and_version | version 2, time bits 48-59 |
//! | 8 | clock_seq_hi_and_reserved | variant `10`, 6 bits of clock sequence |
//! | 9 | clock_seq_low | the domain: 0 person, 1 group, 2 org |
//! | 10-15 | node | the node ID |
//!
//! With the low 32 bits of time gone, the time moves in steps of 2^32 × 100 ns (7 min
//! 9.5 s), and only the 6 clock sequence bits tell apart the UUIDs of one domain, local ID
//! and node within such a window: 64 of them. [`DceSecurityGenerator`] counts them and
//! refuses the 65th until the next window rather than repeat one.
//!
//! ```
//! use snowdrift_core::clock::ManualClock;
//! use snowdrift_core::kinds::uuid::v2::{DceFields, DceSecurityGenerator, Domain};
//! let g = DceSecurityGenerator::new(ManualClock::new(1_700_000_000_000), [0x42; 6], 5, Domain::Person, 1000);
//! let id = g.next()?;
//! assert_eq!(id.get_version_num(), 2);
//! let fields = DceFields::of(&id).expect("a v2 UUID");
//! assert_eq!((fields.domain, fields.local_id), (0, 1000));
//! assert_eq!(Domain::from_byte(fields.domain), Some(Domain::Person));
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Uuid, gregorian_ticks, gregorian_to_unix_ms};
use crate::clock::Clock;
use crate::error::{Error, Result};

/// UUIDs one domain, local ID and node get per time window: the 6 clock sequence bits.
pub const PER_WINDOW: u64 = 64;

/// The low time bits the local ID replaces.
const WINDOW_BITS: u32 = 32;

/// A DCE local domain: whose ID the local ID is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Domain {
    /// A POSIX user ID (UID): domain 0.
    Person,
    /// A POSIX group ID (GID): domain 1.
    Group,
    /// An organisation's number, site-defined: domain 2.
    Org,
}

impl Domain {
    /// The byte the domain is written as in the UUID.
    pub const fn byte(self) -> u8 {
        match self {
            Domain::Person => 0,
            Domain::Group => 1,
            Domain::Org => 2,
        }
    }

    /// The domain written as `byte`, when it is one DCE 1.1 defines.
    pub const fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Domain::Person),
            1 => Some(Domain::Group),
            2 => Some(Domain::Org),
            _ => None,
        }
    }

    /// `person`, `group` or `org`.
    pub const fn name(self) -> &'static str {
        match self {
            Domain::Person => "person",
            Domain::Group => "group",
            Domain::Org => "org",
        }
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Domain {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "person" => Ok(Domain::Person),
            "group" => Ok(Domain::Group),
            "org" => Ok(Domain::Org),
            _ => Err(Error::InvalidConfig(format!(
                "domain {text:?} is not person, group or org (the DCE 1.1 local domains: a \
                 user's UID, a group's GID, an organisation's number)"
            ))),
        }
    }
}

/// A version 2 UUID from its parts: `ticks` (100 ns since 1582-10-15; its low 32 bits are
/// dropped), the low 6 bits of `clock_seq`, the domain, the local ID and the node.
///
/// ```
/// use snowdrift_core::kinds::uuid::v2::{from_parts, Domain};
/// let id = from_parts(0x0123_4567_89ab_cdef, 0x3f, Domain::Group, 0xdead_beef, [1, 2, 3, 4, 5, 6]);
/// assert_eq!(id.to_string(), "deadbeef-4567-2123-bf01-010203040506");
/// ```
pub const fn from_parts(
    ticks: u64,
    clock_seq: u8,
    domain: Domain,
    local_id: u32,
    node: [u8; 6],
) -> Uuid {
    let id = local_id.to_be_bytes();
    let mid = ((ticks >> 32) & 0xffff) as u16;
    let hi = ((ticks >> 48) & 0x0fff) as u16 | 0x2000;
    let [m0, m1] = mid.to_be_bytes();
    let [h0, h1] = hi.to_be_bytes();
    let n = node;
    Uuid::from_bytes([
        id[0],
        id[1],
        id[2],
        id[3],
        m0,
        m1,
        h0,
        h1,
        0x80 | (clock_seq & 0x3f),
        domain.byte(),
        n[0],
        n[1],
        n[2],
        n[3],
        n[4],
        n[5],
    ])
}

/// What a version 2 UUID holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DceFields {
    /// The domain byte (0 person, 1 group, 2 org; others are not DCE's).
    pub domain: u8,
    /// The local ID.
    pub local_id: u32,
    /// The time, 100 ns since 1582-10-15, with its low 32 bits zero: the start of the
    /// window the UUID was made in.
    pub window_ticks: u64,
    /// The 6 bits of clock sequence.
    pub clock_seq: u8,
    /// The node ID.
    pub node: [u8; 6],
}

impl DceFields {
    /// The fields of `uuid`, when it is a version 2 UUID of the RFC variant.
    pub fn of(uuid: &Uuid) -> Option<Self> {
        let b = uuid.as_bytes();
        if b[6] >> 4 != 2 || b[8] & 0xc0 != 0x80 {
            return None;
        }
        let mid = u64::from(u16::from_be_bytes([b[4], b[5]]));
        let hi = u64::from(u16::from_be_bytes([b[6], b[7]]) & 0x0fff);
        Some(Self {
            domain: b[9],
            local_id: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            window_ticks: (hi << 48) | (mid << 32),
            clock_seq: b[8] & 0x3f,
            node: [b[10], b[11], b[12], b[13], b[14], b[15]],
        })
    }

    /// The start of the window, in milliseconds since 1970.
    pub fn window_unix_ms(&self) -> u64 {
        gregorian_to_unix_ms(self.window_ticks)
    }
}

/// Makes version 2 UUIDs for one domain, local ID and node, never the same one twice.
///
/// Within a time window (2^32 × 100 ns) the 6-bit clock sequence counts up from a random
/// start, once per UUID; after 64 UUIDs in one window, [`next`](Self::next) fails with
/// [`Error::DceWindowFull`] until the clock reaches the next window. A clock that steps
/// back stays in the window already used, so the count holds. Across processes the node
/// ID keeps them apart: give each process its own (the random multicast default does).
#[derive(Debug)]
pub struct DceSecurityGenerator<C> {
    clock: C,
    node: [u8; 6],
    domain: Domain,
    local_id: u32,
    seq_start: u8,
    /// The window in use (time >> 32) above 8 bits of how many UUIDs it gave.
    state: AtomicU64,
}

impl<C: Clock> DceSecurityGenerator<C> {
    /// A generator with this node ID as given (set the multicast bit of a random one, as
    /// RFC 9562 section 6.10 asks), a random clock sequence start (low 6 bits used), and
    /// the domain and local ID in every UUID.
    pub fn new(clock: C, node: [u8; 6], clock_seq: u8, domain: Domain, local_id: u32) -> Self {
        Self {
            clock,
            node,
            domain,
            local_id,
            seq_start: clock_seq & 0x3f,
            state: AtomicU64::new(0),
        }
    }

    /// The node ID used.
    pub fn node_id(&self) -> [u8; 6] {
        self.node
    }

    /// The domain in every UUID.
    pub fn domain(&self) -> Domain {
        self.domain
    }

    /// The local ID in every UUID.
    pub fn local_id(&self) -> u32 {
        self.local_id
    }

    /// The next UUID, or [`Error::DceWindowFull`] when this window's 64 are used.
    pub fn next(&self) -> Result<Uuid> {
        let (window, used) = self.reserve(1)?;
        Ok(self.uuid(window, used))
    }

    /// `n` UUIDs at once, all or none: when fewer than `n` are left in this window, none
    /// is taken and the error says when the next window opens (or, for `n` above 64, that
    /// no window holds that many).
    pub fn next_n(&self, n: u64) -> Result<Vec<Uuid>> {
        if n > PER_WINDOW {
            return Err(Error::InvalidCount {
                count: n,
                allowed: "1 to 64 UUID v2 per window (DCE 1.1 keeps 6 bits of clock sequence)"
                    .into(),
            });
        }
        let (window, used) = self.reserve(n)?;
        Ok((used..used + n).map(|k| self.uuid(window, k)).collect())
    }

    /// Takes `n` of the current window's UUIDs: the window and how many it had given.
    fn reserve(&self, n: u64) -> Result<(u64, u64)> {
        let ms = self.clock.now_ms();
        let now = gregorian_ticks(ms, "UUID v2")?;
        let now_window = now >> WINDOW_BITS;
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            let (window, used) = (state >> 8, state & 0xff);
            let (window, used) = if now_window > window {
                (now_window, 0)
            } else {
                (window, used)
            };
            if used + n > PER_WINDOW {
                // Rounded up: at the millisecond it names, the clock is in the next window.
                let wait = ((window + 1) << WINDOW_BITS).saturating_sub(now);
                return Err(Error::DceWindowFull {
                    wait_ms: wait.div_ceil(10_000).max(1),
                });
            }
            let next = (window << 8) | (used + n);
            match self.state.compare_exchange_weak(
                state,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok((window, used)),
                Err(seen) => state = seen,
            }
        }
    }

    /// The `k`-th UUID of `window`.
    fn uuid(&self, window: u64, k: u64) -> Uuid {
        let seq = self.seq_start.wrapping_add(k as u8) & 0x3f;
        from_parts(
            window << WINDOW_BITS,
            seq,
            self.domain,
            self.local_id,
            self.node,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::collections::HashSet;
    use std::sync::Arc;

    const NOW: u64 = 1_700_000_000_000;

    #[test]
    fn layout_is_dce_1_1() {
        // Every field at a distinct value, read back byte by byte against the table above.
        let ticks = 0x0abc_def0_1234_5678;
        let id = from_parts(ticks, 0x2a, Domain::Org, 0x0102_0304, [9, 8, 7, 6, 5, 4]);
        let b = id.as_bytes();
        assert_eq!(&b[0..4], &[1, 2, 3, 4], "time_low holds the local ID");
        assert_eq!(&b[4..6], &[0xde, 0xf0], "time_mid: time bits 32-47");
        assert_eq!(&b[6..8], &[0x2a, 0xbc], "version 2 over time bits 48-59");
        assert_eq!(
            b[8],
            0x80 | 0x2a,
            "variant 10 over 6 bits of clock sequence"
        );
        assert_eq!(b[9], 2, "clock_seq_low holds the domain");
        assert_eq!(&b[10..], &[9, 8, 7, 6, 5, 4]);
        assert_eq!(id.get_version_num(), 2);
        assert_eq!(id.get_variant(), ::uuid::Variant::RFC4122);
        let f = DceFields::of(&id).expect("v2");
        assert_eq!(
            f,
            DceFields {
                domain: 2,
                local_id: 0x0102_0304,
                window_ticks: 0x0abc_def0_0000_0000,
                clock_seq: 0x2a,
                node: [9, 8, 7, 6, 5, 4],
            }
        );
        assert!(DceFields::of(&Uuid::NAMESPACE_DNS).is_none(), "a v1 UUID");
    }

    #[test]
    fn domains_read_and_write() {
        for d in [Domain::Person, Domain::Group, Domain::Org] {
            assert_eq!(d.name().parse::<Domain>(), Ok(d));
            assert_eq!(Domain::from_byte(d.byte()), Some(d));
        }
        assert_eq!("GROUP".parse::<Domain>(), Ok(Domain::Group));
        let err = "user"
            .parse::<Domain>()
            .expect_err("not a domain")
            .to_string();
        assert!(err.contains("person, group or org"), "{err}");
        assert_eq!(Domain::from_byte(3), None);
    }

    #[test]
    fn sixty_four_per_window_then_refuses_until_the_next() {
        let clock = ManualClock::new(NOW);
        let g = DceSecurityGenerator::new(clock.clone(), [1; 6], 60, Domain::Person, 501);
        let mut seqs = HashSet::new();
        let mut ids = HashSet::new();
        for _ in 0..PER_WINDOW {
            let id = g.next().expect("within the window");
            let f = DceFields::of(&id).expect("v2");
            assert_eq!((f.domain, f.local_id, f.node), (0, 501, [1; 6]));
            assert!(f.window_unix_ms() <= NOW && NOW - f.window_unix_ms() < 429_497);
            seqs.insert(f.clock_seq);
            ids.insert(id);
        }
        assert_eq!((seqs.len(), ids.len()), (64, 64));
        let Err(Error::DceWindowFull { wait_ms }) = g.next() else {
            panic!("the 65th in one window must be refused");
        };
        assert!((1..=429_497).contains(&wait_ms), "{wait_ms}");
        // A step back does not reopen the window.
        clock.step_back(3_600_000);
        assert!(g.next().is_err());
        clock.advance(3_600_000 + wait_ms);
        let next = g.next().expect("the next window");
        assert!(ids.insert(next));
        assert!(DceFields::of(&next).expect("v2").window_unix_ms() > NOW);
    }

    #[test]
    fn a_batch_is_all_or_nothing() {
        let g = DceSecurityGenerator::new(ManualClock::new(NOW), [3; 6], 0, Domain::Org, 9);
        assert_eq!(g.next_n(60).expect("room").len(), 60);
        assert!(matches!(g.next_n(5), Err(Error::DceWindowFull { .. })));
        let last = g
            .next_n(4)
            .expect("the 4 left were not taken by the refused batch");
        assert_eq!(last.len(), 4);
        assert!(g.next().is_err());
        let err = g.next_n(65).expect_err("no window holds 65").to_string();
        assert!(err.contains("1 to 64"), "{err}");
    }

    #[test]
    fn threads_never_share_a_uuid() {
        let clock = ManualClock::new(NOW);
        let g = Arc::new(DceSecurityGenerator::new(
            clock,
            [2; 6],
            0,
            Domain::Group,
            7,
        ));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || {
                    (0..40).filter_map(|_| g.next().ok()).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            for id in h.join().expect("no panic") {
                assert!(all.insert(id));
            }
        }
        assert_eq!(all.len(), 64, "exactly one window's worth, none twice");
    }

    #[test]
    fn rejects_clocks_past_its_field() {
        let g =
            DceSecurityGenerator::new(ManualClock::new(u64::MAX / 2), [0; 6], 0, Domain::Org, 1);
        let err = g.next().expect_err("out of range").to_string();
        assert!(err.contains("5236"), "{err}");
    }
}
