//! UUIDs (RFC 9562) through the `uuid` crate, with the time from a [`Clock`] and the state
//! in values the caller owns.
//!
//! ```
//! use snowdrift_core::clock::ManualClock;
//! use snowdrift_core::kinds::uuid::{self, UuidV7Generator};
//! let v7 = UuidV7Generator::new(ManualClock::new(1_700_000_000_000));
//! let (a, b) = (v7.next()?, v7.next()?);
//! assert!(a < b);
//! assert_eq!(a.get_version_num(), 7);
//!
//! let random = uuid::v4_from_bytes([0x42; 16]); // bytes from your RNG
//! assert_eq!(random.get_version_num(), 4);
//!
//! let named = uuid::v5(&uuid::Uuid::NAMESPACE_DNS, b"example.com");
//! assert_eq!(named.to_string(), "cfbff0d1-9375-5685-968c-48ce8b15ae17");
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

pub mod v2;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use ::uuid::{Builder, ContextV7, Timestamp};

pub use ::uuid::{Uuid, Variant};

use crate::clock::Clock;
use crate::error::{Error, Result};

/// A random (version 4) UUID from 16 random bytes; the version and variant bits are set over
/// the bytes given, leaving 122 of them random.
///
/// Take the bytes from a cryptographically secure generator: v4 UUIDs are unique only
/// because their bits are unpredictable.
pub const fn v4_from_bytes(random: [u8; 16]) -> Uuid {
    Builder::from_random_bytes(random).into_uuid()
}

/// A random (version 4) UUID from the `uuid` crate's generator (the operating system's,
/// through `getrandom`).
///
/// ```
/// let id = snowdrift_core::kinds::uuid::v4();
/// assert_eq!(id.get_version_num(), 4);
/// ```
pub fn v4() -> Uuid {
    Uuid::new_v4()
}

/// A name-based UUID, version 5 (SHA-1): the same namespace and name always give the same
/// UUID. Prefer it to [`v3`], which RFC 9562 keeps only for compatibility.
pub fn v5(namespace: &Uuid, name: &[u8]) -> Uuid {
    Uuid::new_v5(namespace, name)
}

/// A name-based UUID, version 3 (MD5), for compatibility with systems that use it.
///
/// ```
/// use snowdrift_core::kinds::uuid::{v3, Uuid};
/// assert_eq!(v3(&Uuid::NAMESPACE_DNS, b"example.com").to_string(), "9073926b-929f-31c2-abc9-fad77ae3e8eb");
/// ```
pub fn v3(namespace: &Uuid, name: &[u8]) -> Uuid {
    Uuid::new_v3(namespace, name)
}

/// The namespace of name-based UUIDs written `text`: one of RFC 9562's four (`dns`, `url`,
/// `oid`, `x500`, in any case) or any UUID.
///
/// ```
/// use snowdrift_core::kinds::uuid::{namespace, Uuid};
/// assert_eq!(namespace("dns")?, Uuid::NAMESPACE_DNS);
/// assert_eq!(namespace("6ba7b811-9dad-11d1-80b4-00c04fd430c8")?, Uuid::NAMESPACE_URL);
/// assert!(namespace("example.com").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn namespace(text: &str) -> Result<Uuid> {
    let text = text.trim();
    let known = [
        ("dns", Uuid::NAMESPACE_DNS),
        ("url", Uuid::NAMESPACE_URL),
        ("oid", Uuid::NAMESPACE_OID),
        ("x500", Uuid::NAMESPACE_X500),
    ];
    if let Some((_, uuid)) = known.iter().find(|(n, _)| n.eq_ignore_ascii_case(text)) {
        return Ok(*uuid);
    }
    text.parse::<Uuid>().map_err(|e| {
        Error::InvalidConfig(format!(
            "namespace {text:?} is neither dns, url, oid, x500 nor a UUID ({e}); name-based \
             UUIDs hash the name under one of RFC 9562's namespaces or a UUID of your own"
        ))
    })
}

/// A node ID written as 12 hex digits, optionally with `:` or `-` between the bytes
/// (`01:23:45:67:89:ab`).
///
/// ```
/// use snowdrift_core::kinds::uuid::parse_node;
/// assert_eq!(parse_node("0123456789AB")?, [0x01, 0x23, 0x45, 0x67, 0x89, 0xab]);
/// assert_eq!(parse_node("01-23-45-67-89-ab")?, parse_node("01:23:45:67:89:ab")?);
/// assert!(parse_node("0123456789").is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn parse_node(text: &str) -> Result<[u8; 6]> {
    let bad = |why: &str| {
        Error::InvalidConfig(format!(
            "node {text:?} {why}; a node ID is 12 hex digits (6 bytes, e.g. \"0123456789ab\" \
             or \"01:23:45:67:89:ab\")"
        ))
    };
    let digits: Vec<u8> = text
        .trim()
        .bytes()
        .filter(|b| *b != b':' && *b != b'-')
        .collect();
    if digits.len() != 12 {
        return Err(bad(&format!("has {} hex digits", digits.len())));
    }
    let mut node = [0u8; 6];
    for (i, pair) in digits.chunks(2).enumerate() {
        let nibble = |b: u8| char::from(b).to_digit(16).map(|d| d as u8);
        match (nibble(pair[0]), nibble(pair[1])) {
            (Some(hi), Some(lo)) => node[i] = hi << 4 | lo,
            _ => return Err(bad("holds a character that is not a hex digit")),
        }
    }
    Ok(node)
}

/// The first millisecond (since 1970) that a 48-bit millisecond field cannot hold.
const UNIX_MS_END: u64 = 1 << 48;

/// A version 7 UUID from its parts, with no monotonic counter: `unix_ms` in the top 48 bits
/// and 74 bits of `random` below the version and variant. For callers that bring their own
/// randomness; [`UuidV7Generator`] keeps IDs in order within a millisecond.
///
/// ```
/// use snowdrift_core::kinds::uuid::v7_from_parts;
/// let id = v7_from_parts(1_700_000_000_000, [0; 10])?;
/// assert_eq!(id.to_string(), "018bcfe5-6800-7000-8000-000000000000");
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn v7_from_parts(unix_ms: u64, random: [u8; 10]) -> Result<Uuid> {
    if unix_ms >= UNIX_MS_END {
        return Err(out_of_range("UUID v7", unix_ms, "1970 to the year 10889"));
    }
    Ok(Builder::from_unix_timestamp_millis(unix_ms, &random).into_uuid())
}

fn out_of_range(kind: &'static str, now_ms: u64, range: &'static str) -> Error {
    Error::ClockOutOfRange {
        kind,
        now_ms,
        range,
    }
}

/// Makes version 7 UUIDs (Unix milliseconds, then random bits) that increase strictly within
/// this generator, even for many in one millisecond and when the clock steps back.
///
/// It wraps the `uuid` crate's [`ContextV7`] in a mutex this value owns, where
/// `Uuid::now_v7` uses one process-wide context: the generator, not the process, is the
/// unit of ordering, and a test can run one on a manual clock. The context keeps RFC 9562's
/// method 2: a 42-bit counter, reseeded at random each millisecond, follows the time; if the
/// counter runs out within a millisecond, or the clock steps back, the time field moves
/// ahead of the clock, so the order holds and no call fails or waits. Randomness comes from
/// the `uuid` crate's generator.
///
/// Two generators (or processes) share no order; across them, uniqueness rests on the
/// random bits, as for every v7 UUID.
///
/// ```
/// use snowdrift_core::{clock::ManualClock, kinds::uuid::UuidV7Generator};
/// let clock = ManualClock::new(1_700_000_000_000);
/// let generator = UuidV7Generator::new(clock.clone());
/// let first = generator.next()?;
/// clock.step_back(1_000);
/// assert!(generator.next()? > first);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct UuidV7Generator<C> {
    clock: C,
    context: Mutex<ContextV7>,
}

impl<C: Clock> UuidV7Generator<C> {
    /// A generator reading the time from `clock`.
    pub fn new(clock: C) -> Self {
        Self {
            clock,
            context: Mutex::new(ContextV7::new()),
        }
    }

    /// The next UUID. Fails only when the clock reads beyond the year 10889.
    pub fn next(&self) -> Result<Uuid> {
        let ms = self.clock.now_ms();
        if ms >= UNIX_MS_END {
            return Err(out_of_range("UUID v7", ms, "1970 to the year 10889"));
        }
        // `&Mutex<ContextV7>` is a ClockSequence in the uuid crate: it locks, and recovers
        // from poisoning (the context's state is two plain numbers, valid at every point).
        let ts = Timestamp::from_unix(&self.context, ms / 1000, (ms % 1000) as u32 * 1_000_000);
        Ok(Uuid::new_v7(ts))
    }
}

/// 100 ns intervals from the Gregorian reform (1582-10-15) to the Unix epoch.
const GREGORIAN_OFFSET: u64 = 0x01B2_1DD2_1381_4000;

/// The timestamp of v1 and v6 UUIDs has 60 bits.
const GREGORIAN_END: u64 = 1 << 60;

/// Makes version 1 and version 6 UUIDs (a 60-bit count of 100 ns since 1582, a 14-bit clock
/// sequence and a 48-bit node ID) with a random node ID, never a MAC address.
///
/// Version 6 is version 1 with the time's bytes in order, so v6 UUIDs sort by time; prefer
/// v7 for new systems, and these for systems that already read v1 or v6.
///
/// Uniqueness within the generator does not rest on the clock sequence: every UUID takes
/// its own 100 ns timestamp, the clock's time or one past the last one used, whichever is
/// later (10,000 per millisecond before the timestamps run ahead of the clock, and they
/// catch up when the rate drops). The `uuid` crate's `ContextV1` instead counts the 14-bit
/// clock sequence up for every UUID, which repeats after 16,384 UUIDs with one timestamp, as
/// a millisecond clock gives. So the UUIDs never repeat within a generator, and v6 UUIDs
/// from one generator strictly increase, even when the clock steps back. Across generators
/// and restarts the random node ID and clock sequence keep them apart, as RFC 9562 intends.
///
/// ```
/// use snowdrift_core::{clock::ManualClock, kinds::uuid::GregorianUuidGenerator};
/// // Node bytes and clock sequence from your RNG.
/// let generator = GregorianUuidGenerator::new(ManualClock::new(1_700_000_000_000), [0x42; 6], 0x1234);
/// let v6 = generator.next_v6()?;
/// assert_eq!(v6.get_version_num(), 6);
/// assert_eq!(v6.get_node_id(), Some([0x43, 0x42, 0x42, 0x42, 0x42, 0x42])); // multicast bit set
/// assert!(generator.next_v6()? > v6);
/// assert_eq!(generator.next_v1()?.get_version_num(), 1);
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
#[derive(Debug)]
pub struct GregorianUuidGenerator<C> {
    clock: C,
    node: [u8; 6],
    clock_seq: u16,
    /// The last timestamp used (100 ns since 1582); 0 before the first.
    last: AtomicU64,
}

impl<C: Clock> GregorianUuidGenerator<C> {
    /// A generator with random `node` bytes and a random clock sequence (14 bits used).
    ///
    /// The multicast bit (the lowest bit of the first byte) is set, as RFC 9562 (section
    /// 6.10) asks of random node IDs: real network cards never have it, so these cannot
    /// collide with a UUID made from a MAC address.
    pub fn new(clock: C, node: [u8; 6], clock_seq: u16) -> Self {
        let mut node = node;
        node[0] |= 0x01;
        Self::with_node(clock, node, clock_seq)
    }

    /// A generator with exactly this node ID (a configured one: a MAC address the machine
    /// owns, or a value an operator assigned per node), and a random clock sequence (14 bits
    /// used). Two generators must not share a node ID, or their UUIDs may repeat when their
    /// clock sequences meet.
    pub fn with_node(clock: C, node: [u8; 6], clock_seq: u16) -> Self {
        Self {
            clock,
            node,
            clock_seq: clock_seq & 0x3fff,
            last: AtomicU64::new(0),
        }
    }

    /// The node ID used, multicast bit set.
    pub fn node_id(&self) -> [u8; 6] {
        self.node
    }

    /// The next version 1 UUID.
    pub fn next_v1(&self) -> Result<Uuid> {
        let ticks = self.next_ticks()?;
        Ok(Builder::from_gregorian_timestamp(ticks, self.clock_seq, &self.node).into_uuid())
    }

    /// The next version 6 UUID.
    pub fn next_v6(&self) -> Result<Uuid> {
        let ticks = self.next_ticks()?;
        Ok(Builder::from_sorted_gregorian_timestamp(ticks, self.clock_seq, &self.node).into_uuid())
    }

    /// The clock sequence (14 bits) in every UUID of this generator.
    pub fn clock_seq(&self) -> u16 {
        self.clock_seq
    }

    /// Claims a timestamp no other UUID of this generator has.
    fn next_ticks(&self) -> Result<u64> {
        let ms = self.clock.now_ms();
        let now = gregorian_ticks(ms, "UUID v1/v6")?;
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = now.max(last + 1);
            if next >= GREGORIAN_END {
                return Err(out_of_range("UUID v1/v6", ms, "1582 to the year 5236"));
            }
            match self
                .last
                .compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(next),
                Err(seen) => last = seen,
            }
        }
    }
}

/// `ms` since 1970 as 100 ns intervals since 1582-10-15, the time of v1, v2 and v6 UUIDs.
fn gregorian_ticks(ms: u64, kind: &'static str) -> Result<u64> {
    ms.checked_mul(10_000)
        .and_then(|t| t.checked_add(GREGORIAN_OFFSET))
        .filter(|&t| t < GREGORIAN_END)
        .ok_or_else(|| out_of_range(kind, ms, "1582 to the year 5236"))
}

/// 100 ns intervals since 1582-10-15 as milliseconds since 1970 (before 1970: 0).
pub fn gregorian_to_unix_ms(ticks: u64) -> u64 {
    ticks.saturating_sub(GREGORIAN_OFFSET) / 10_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::collections::HashSet;
    use std::sync::Arc;

    const NOW: u64 = 1_700_000_000_000;

    #[test]
    fn v4_sets_version_and_variant_over_the_bytes() {
        let id = v4_from_bytes([0xff; 16]);
        assert_eq!(id.get_version_num(), 4);
        assert_eq!(id.get_variant(), ::uuid::Variant::RFC4122);
        assert_eq!(id.to_string(), "ffffffff-ffff-4fff-bfff-ffffffffffff");
        assert_ne!(v4(), v4());
    }

    #[test]
    fn name_based_vectors() {
        // RFC 9562 appendix A.2 (v3) and A.4 (v5): namespace DNS, name "www.example.com".
        assert_eq!(
            v3(&Uuid::NAMESPACE_DNS, b"www.example.com").to_string(),
            "5df41881-3aed-3515-88a7-2f4a814cf09e"
        );
        assert_eq!(
            v5(&Uuid::NAMESPACE_DNS, b"www.example.com").to_string(),
            "2ed6657d-e927-568b-95e1-2665a8aea6a2"
        );
    }

    #[test]
    fn v7_from_parts_matches_the_rfc_layout() {
        // RFC 9562 appendix A.6: 2022-02-22T19:22:22Z is 0x017F22E279B0 ms.
        let random = [0xc, 0xc3, 0x18, 0xc4, 0xdc, 0x0c, 0x0c, 0x07, 0x39, 0x8f];
        let id = v7_from_parts(0x017F_22E2_79B0, random).expect("in range");
        assert_eq!(id.to_string(), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
        assert_eq!(
            id.get_timestamp().map(|t| t.to_unix().0),
            Some(1_645_557_742)
        );
        assert!(v7_from_parts(1 << 48, [0; 10]).is_err());
    }

    #[test]
    fn v7_is_monotonic_within_a_millisecond_and_across_steps_back() {
        let clock = ManualClock::new(NOW);
        let generator = UuidV7Generator::new(clock.clone());
        let mut last = generator.next().expect("in range");
        assert_eq!(
            last.get_timestamp().map(|t| t.to_unix()),
            Some((NOW / 1000, 0))
        );
        for i in 0..10_000 {
            match i {
                3_000 => clock.step_back(5_000),
                6_000 => clock.advance(10_000),
                _ => {}
            }
            let next = generator.next().expect("in range");
            assert!(next > last, "{i}: {next} after {last}");
            assert_eq!(next.get_version_num(), 7);
            last = next;
        }
    }

    #[test]
    fn v7_rejects_clocks_past_its_field() {
        let generator = UuidV7Generator::new(ManualClock::new(1 << 48));
        let err = generator.next().expect_err("out of range").to_string();
        assert!(err.contains("10889"), "{err}");
    }

    #[test]
    fn v7_generators_are_independent_and_shareable() {
        let generator = Arc::new(UuidV7Generator::new(ManualClock::new(NOW)));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let g = generator.clone();
                std::thread::spawn(move || (0..2_000).map(|_| g.next()).collect::<Result<Vec<_>>>())
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            for id in h.join().expect("no panic").expect("in range") {
                assert!(all.insert(id));
            }
        }
    }

    #[test]
    fn gregorian_node_and_clock_sequence() {
        let g = GregorianUuidGenerator::new(ManualClock::new(NOW), [0xa0, 1, 2, 3, 4, 5], 0xffff);
        assert_eq!(g.node_id(), [0xa1, 1, 2, 3, 4, 5]);
        let v1 = g.next_v1().expect("in range");
        let v6 = g.next_v6().expect("in range");
        for id in [v1, v6] {
            assert_eq!(id.get_node_id(), Some([0xa1, 1, 2, 3, 4, 5]));
            assert_eq!(id.get_variant(), ::uuid::Variant::RFC4122);
            let (ticks, seq) = id.get_timestamp().expect("time-based").to_gregorian();
            assert_eq!(seq, 0x3fff);
            assert!(ticks >= NOW * 10_000 + GREGORIAN_OFFSET);
        }
        assert_eq!(v1.get_version_num(), 1);
        assert_eq!(v6.get_version_num(), 6);
        assert_eq!(
            v1.get_timestamp().map(|t| t.to_unix()),
            Some((NOW / 1000, 0)),
            "the first UUID carries the clock's time"
        );
    }

    #[test]
    fn gregorian_never_repeats_and_v6_increases() {
        let clock = ManualClock::new(NOW);
        let g = GregorianUuidGenerator::new(clock.clone(), [0; 6], 7);
        let mut seen = HashSet::new();
        let mut last = g.next_v6().expect("in range");
        // Far more than 16,384 in one millisecond, then a step back.
        for i in 0..40_000 {
            if i == 20_000 {
                clock.step_back(60_000);
            }
            let id = g.next_v6().expect("in range");
            assert!(id > last, "{i}");
            assert!(seen.insert(id));
            assert!(seen.insert(g.next_v1().expect("in range")));
            last = id;
        }
    }

    #[test]
    fn gregorian_unique_across_threads_and_v6_ordered_per_thread() {
        // 8 threads x 100,000 of each version on one generator and the real clock: far
        // more than one 100 ns tick each, so the claims race on the same timestamps.
        const PER_THREAD: usize = 100_000;
        const THREADS: usize = 8;
        let g = Arc::new(GregorianUuidGenerator::new(
            crate::clock::SystemClock,
            [0x10, 0, 0, 0, 0, 1],
            0x2222,
        ));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || -> Result<(Vec<Uuid>, Vec<Uuid>)> {
                    let mut v1 = Vec::with_capacity(PER_THREAD);
                    let mut v6 = Vec::with_capacity(PER_THREAD);
                    for _ in 0..PER_THREAD {
                        v1.push(g.next_v1()?);
                        v6.push(g.next_v6()?);
                    }
                    Ok((v1, v6))
                })
            })
            .collect();
        let mut all = HashSet::new();
        for h in handles {
            let (v1, v6) = h.join().expect("no panic").expect("in range");
            assert!(v6.windows(2).all(|w| w[0] < w[1]), "v6 in order per thread");
            for id in v1.into_iter().chain(v6) {
                assert!(all.insert(id), "{id} twice");
            }
        }
        assert_eq!(all.len(), THREADS * 2 * PER_THREAD);
    }

    #[test]
    fn a_configured_node_is_kept_as_given() {
        let g =
            GregorianUuidGenerator::with_node(ManualClock::new(NOW), [0xa0, 1, 2, 3, 4, 5], 0x4001);
        assert_eq!(
            g.node_id(),
            [0xa0, 1, 2, 3, 4, 5],
            "no multicast bit forced"
        );
        assert_eq!(g.clock_seq(), 1);
        let id = g.next_v1().expect("in range");
        assert_eq!(id.get_node_id(), Some([0xa0, 1, 2, 3, 4, 5]));
    }

    #[test]
    fn namespaces_and_nodes_parse_or_say_why() {
        assert_eq!(namespace("DNS"), Ok(Uuid::NAMESPACE_DNS));
        assert_eq!(namespace("url"), Ok(Uuid::NAMESPACE_URL));
        assert_eq!(namespace("oid"), Ok(Uuid::NAMESPACE_OID));
        assert_eq!(namespace("x500"), Ok(Uuid::NAMESPACE_X500));
        let mine = "3f1a2b3c-0000-4000-8000-000000000001";
        assert_eq!(namespace(mine).map(|u| u.to_string()), Ok(mine.to_string()));
        let err = namespace("dnss").expect_err("unknown").to_string();
        assert!(err.contains("dns, url, oid, x500"), "{err}");
        assert_eq!(
            parse_node("a1:b2:c3:d4:e5:f6"),
            Ok([0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6])
        );
        for (bad, why) in [
            ("12345", "5 hex digits"),
            ("0123456789ag", "not a hex digit"),
            ("", "0 hex"),
        ] {
            let err = parse_node(bad).expect_err(bad).to_string();
            assert!(
                err.contains(why) && err.contains("12 hex digits"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn gregorian_ticks_round_trip_to_unix_ms() {
        let ticks = gregorian_ticks(NOW, "test").expect("in range");
        assert_eq!(gregorian_to_unix_ms(ticks), NOW);
        assert_eq!(gregorian_to_unix_ms(0), 0);
    }

    #[test]
    fn gregorian_rejects_clocks_past_its_field() {
        let g = GregorianUuidGenerator::new(ManualClock::new(u64::MAX / 2), [0; 6], 0);
        let err = g.next_v1().expect_err("out of range").to_string();
        assert!(err.contains("5236"), "{err}");
    }
}
