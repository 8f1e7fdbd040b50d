//! Cuid2, as [paralleldrive/cuid2](https://github.com/paralleldrive/cuid2) makes it: a
//! random lowercase letter, then the SHA3-512 of the time, a random salt, a counter and a
//! per-process fingerprint, written in base 36, cut to `length` characters (2 to 32,
//! default 24). The hash hides all four, so a cuid2 holds no field anyone can read back,
//! and none can be guessed from another.
//!
//! Every step is the reference's: its `random()` is a 32-bit draw divided by 2^32 and
//! `floor(random() × k)` is `(draw × k) >> 32` exactly, so the same draws, time, counter and
//! fingerprint give the same cuid2 as `@paralleldrive/cuid2`'s `init()`.
//!
//! ```
//! use snowdrift_core::{clock::ManualClock, kinds::cuid2::Cuid2Generator};
//! let g = Cuid2Generator::new(ManualClock::new(1_700_000_000_000), 24, "f".repeat(32), 0)?;
//! let id = g.next_with(&mut || Ok(0x8000_0000))?;
//! assert_eq!(id.len(), 24);
//! assert!(id.starts_with('n')); // floor(0.5 × 26) = 13: 'n'
//! snowdrift_core::kinds::cuid2::check(&id, 24)?;
//! # Ok::<(), snowdrift_core::Error>(())
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::Clock;
use crate::codec::invalid;
use crate::error::{Error, Result};

/// The default length.
pub const DEFAULT_LENGTH: usize = 24;
/// The shortest length.
pub const MIN_LENGTH: usize = 2;
/// The longest length (the reference's `bigLength`), also the fingerprint's.
pub const MAX_LENGTH: usize = 32;

/// The reference's `initialCountMax`: counters start below it.
pub const INITIAL_COUNT_MAX: u64 = 476_782_367;

const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// A 32-bit random draw, the reference's `random()` times 2^32.
pub type Draw<'a> = &'a mut dyn FnMut() -> Result<u32>;

/// `floor(random() × k)` for the draw `x`: exact, as `x / 2^32 × k` is in a double.
fn scaled(x: u32, k: u64) -> u64 {
    (u64::from(x) * k) >> 32
}

/// The base-36 digits of the 512-bit big-endian number `bytes`, without leading zeros,
/// into `out`; returns how many.
fn base36(bytes: &[u8; 64], out: &mut [u8; 104]) -> usize {
    // 16 limbs of 32 bits, most significant first; divided by 36^6 (below 2^32) each
    // round, so each step is a u64 division by a constant the compiler turns into a
    // multiplication.
    const CHUNK: u64 = 36u64.pow(6);
    let mut limbs = [0u32; 16];
    for (limb, b) in limbs.iter_mut().zip(bytes.chunks_exact(4)) {
        *limb = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    }
    let mut first = limbs.iter().position(|&l| l != 0).unwrap_or(16);
    let mut end = out.len();
    while first < 16 {
        let mut rem = 0u64;
        for limb in &mut limbs[first..] {
            let cur = (rem << 32) | u64::from(*limb);
            *limb = (cur / CHUNK) as u32;
            rem = cur % CHUNK;
        }
        while first < 16 && limbs[first] == 0 {
            first += 1;
        }
        for _ in 0..6 {
            end -= 1;
            out[end] = DIGITS[(rem % 36) as usize];
            rem /= 36;
        }
    }
    if end == out.len() {
        out[0] = b'0';
        return 1;
    }
    let leading = out[end..].iter().take_while(|&&d| d == b'0').count();
    let start = end + leading;
    let n = out.len() - start;
    out.copy_within(start.., 0);
    n
}

/// The reference's `hash(input)`: SHA3-512, in base 36, less its first digit (which leans
/// to small values).
pub fn hash(input: &[u8]) -> String {
    let mut digits = [0u8; 104];
    let n = hash_digits(input, &mut digits);
    String::from_utf8_lossy(&digits[1..n]).into_owned()
}

fn hash_digits(input: &[u8], digits: &mut [u8; 104]) -> usize {
    use sha3::{Digest, Sha3_512};
    let sum: [u8; 64] = Sha3_512::digest(input).into();
    base36(&sum, digits)
}

/// Appends `n` in base 36 (JavaScript's `n.toString(36)`).
fn push_base36(n: u64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 13];
    let mut at = buf.len();
    let mut n = n;
    loop {
        at -= 1;
        buf[at] = DIGITS[(n % 36) as usize];
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
}

/// The reference's `createEntropy(length)`: `length` random base-36 digits.
fn push_entropy(length: usize, random: Draw<'_>, out: &mut Vec<u8>) -> Result<()> {
    for _ in 0..length {
        out.push(DIGITS[scaled(random()?, 36) as usize]);
    }
    Ok(())
}

/// The reference's `createFingerprint`: the hash of `environment` (its
/// `Object.keys(globalThis)` joined by commas; here whatever tells this process apart, the
/// host name and PID say) and 32 random digits, cut to 32 characters.
pub fn fingerprint(environment: &str, random: Draw<'_>) -> Result<String> {
    let mut source = environment.as_bytes().to_vec();
    push_entropy(MAX_LENGTH, random, &mut source)?;
    let mut digits = [0u8; 104];
    let n = hash_digits(&source, &mut digits);
    let end = (1 + MAX_LENGTH).min(n);
    Ok(String::from_utf8_lossy(&digits[1..end]).into_owned())
}

/// The reference's starting count, `floor(random() × 476782367)`, from one draw.
pub fn counter_start(draw: u32) -> u64 {
    scaled(draw, INITIAL_COUNT_MAX)
}

/// The random bits a cuid2 of `length` characters carries, as two IDs of one process
/// collide: a letter of 26, then `length − 1` base-36 digits of a hash that differs for every
/// ID (time, counter, fingerprint and entropy go in, so its digits are as good as random).
///
/// ```
/// assert!((snowdrift_core::kinds::cuid2::bits(24) - 123.6).abs() < 0.1);
/// ```
pub fn bits(length: usize) -> f64 {
    26f64.log2() + (length.saturating_sub(1)) as f64 * 36f64.log2()
}

/// A length of 2 to 32, or why not.
pub fn check_length(length: usize) -> Result<usize> {
    if (MIN_LENGTH..=MAX_LENGTH).contains(&length) {
        Ok(length)
    } else {
        Err(Error::InvalidConfig(format!(
            "cuid2 length {length} is out of range; allowed: {MIN_LENGTH} to {MAX_LENGTH} \
             (default {DEFAULT_LENGTH})"
        )))
    }
}

/// Checks that `text` could be a cuid2 of `length` characters: a letter `a-z`, then
/// `a-z` and `0-9` (the reference's `isCuid`, with the length fixed).
pub fn check(text: &str, length: usize) -> Result<()> {
    let what =
        format!("a cuid2 of this generator is {length} characters: a letter a-z, then a-z and 0-9");
    for (i, c) in text.char_indices() {
        let ok = c.is_ascii_lowercase() || (i > 0 && c.is_ascii_digit());
        if !ok {
            let place = if i == 0 {
                " (the first must be a letter a-z)"
            } else {
                ""
            };
            return Err(invalid(
                "cuid2",
                text,
                format!("{c:?} at byte {i} is not allowed{place}; {what}"),
            ));
        }
    }
    if text.len() != length {
        return Err(invalid(
            "cuid2",
            text,
            format!("it has {} characters; {what}", text.len()),
        ));
    }
    Ok(())
}

/// Makes cuid2s for one process: the time from a [`Clock`], a fingerprint and a counter
/// fixed at construction, and random draws for the first letter and the salt.
#[derive(Debug)]
pub struct Cuid2Generator<C> {
    clock: C,
    length: usize,
    fingerprint: String,
    counter: AtomicU64,
}

impl<C: Clock> Cuid2Generator<C> {
    /// A generator of `length`-character cuid2s (2 to 32) with this process's
    /// `fingerprint` ([`fingerprint`]) and a counter that starts at `counter_start`
    /// ([`counter_start`]).
    pub fn new(clock: C, length: usize, fingerprint: String, counter_start: u64) -> Result<Self> {
        Ok(Self {
            clock,
            length: check_length(length)?,
            fingerprint,
            counter: AtomicU64::new(counter_start),
        })
    }

    /// A generator for this process, its draws from the OS CSPRNG: the fingerprint hashes
    /// the host name, the process ID and 32 random digits (the reference hashes its global
    /// object's keys and 32 digits), and the counter starts at a random value.
    pub fn for_this_process(clock: C, length: usize) -> Result<Self> {
        use super::os_random;
        let host = gethostname::gethostname();
        let environment = format!("{},{}", host.to_string_lossy(), std::process::id());
        let fingerprint = fingerprint(&environment, &mut os_random::u32)?;
        let start = counter_start(os_random::u32()?);
        Self::new(clock, length, fingerprint, start)
    }

    /// Characters per cuid2.
    pub fn length(&self) -> usize {
        self.length
    }

    /// The next cuid2, with `random` for its first letter and its salt (the OS CSPRNG in
    /// production: [`os_random::u32`](super::os_random::u32)).
    pub fn next_with(&self, random: Draw<'_>) -> Result<String> {
        let letter = DIGITS[10 + scaled(random()?, 26) as usize];
        let time = self.clock.now_ms();
        let count = self.counter.fetch_add(1, Ordering::Relaxed);
        // time + salt + count + fingerprint, as the reference joins them.
        let mut input = Vec::with_capacity(16 + self.length + 13 + self.fingerprint.len());
        push_base36(time, &mut input);
        push_entropy(self.length, random, &mut input)?;
        push_base36(count, &mut input);
        input.extend_from_slice(self.fingerprint.as_bytes());
        let mut digits = [0u8; 104];
        let n = hash_digits(&input, &mut digits);
        // hash() drops the first digit and the reference then skips one more:
        // letter + hash(input).substring(1, length).
        let end = (self.length + 1).min(n);
        let mut id = String::with_capacity(self.length);
        id.push(char::from(letter));
        id.push_str(std::str::from_utf8(&digits[2..end]).unwrap_or_default());
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::collections::HashSet;

    fn draws(values: &[u32]) -> impl FnMut() -> Result<u32> + '_ {
        let mut i = 0;
        move || {
            let v = values[i % values.len()];
            i += 1;
            Ok(v)
        }
    }

    #[test]
    fn base36_agrees_with_a_plain_conversion() {
        let text = |bytes: &[u8; 64]| {
            let mut digits = [0u8; 104];
            let n = base36(bytes, &mut digits);
            String::from_utf8(digits[..n].to_vec()).unwrap()
        };
        let mut bytes = [0u8; 64];
        assert_eq!(text(&bytes), "0");
        bytes[63] = 35;
        assert_eq!(text(&bytes), "z");
        bytes[62] = 1; // 256 + 35 = 291 = 8 × 36 + 3
        assert_eq!(text(&bytes), "83");
        let mut digits = [0u8; 104];
        // 2^512 - 1, as Python's int conversion writes it: 100 digits.
        let all = [0xffu8; 64];
        let n = base36(&all, &mut digits);
        assert_eq!(
            std::str::from_utf8(&digits[..n]).unwrap(),
            "14plki42mdv1mt36i2rnak3ginnt5vcx207hpuf9x0vj6i1i7h29nu12wls3ulfv1yyabi94ua3wauamsxz4snwv27fya36hqdj3"
        );
    }

    #[test]
    fn ids_have_the_length_alphabet_and_first_letter() {
        for length in MIN_LENGTH..=MAX_LENGTH {
            let g = Cuid2Generator::new(ManualClock::new(1), length, "x".repeat(32), 5).unwrap();
            for draw in [0, 1, u32::MAX / 2, u32::MAX] {
                let id = g.next_with(&mut draws(&[draw, 7, 99])).unwrap();
                assert_eq!(id.len(), length, "{id}");
                check(&id, length).unwrap();
            }
        }
        // floor(random × 26): 0 gives 'a', the largest draw 'z'.
        let g = Cuid2Generator::new(ManualClock::new(1), 24, String::new(), 0).unwrap();
        assert!(g.next_with(&mut draws(&[0])).unwrap().starts_with('a'));
        assert!(
            g.next_with(&mut draws(&[u32::MAX]))
                .unwrap()
                .starts_with('z')
        );
    }

    #[test]
    fn lengths_outside_2_to_32_are_refused() {
        for bad in [0, 1, 33, 100] {
            let err = check_length(bad).unwrap_err().to_string();
            assert!(err.contains("allowed: 2 to 32"), "{err}");
            assert!(Cuid2Generator::new(ManualClock::new(1), bad, String::new(), 0).is_err());
        }
    }

    #[test]
    fn check_refuses_malformed_ids_saying_why() {
        check("tz4a98xxat96iws9zmbrgj3a", 24).unwrap();
        for (text, reason) in [
            (
                "1z4a98xxat96iws9zmbrgj3a",
                "'1' at byte 0 is not allowed (the first must be a letter a-z)",
            ),
            ("tz4a98xxaT96iws9zmbrgj3a", "'T' at byte 9"),
            ("tz4a98xxat96iws9zmbrgj3", "it has 23 characters"),
            ("tz4a98xxat96iws9zmbrgj3a-", "'-' at byte 24"),
        ] {
            let err = check(text, 24).unwrap_err().to_string();
            assert!(err.contains(reason), "{text}: {err}");
            assert!(
                err.contains("24 characters: a letter a-z, then a-z and 0-9"),
                "{err}"
            );
        }
    }

    /// The counter moves on and the time and salt change each hash, so one generator's
    /// IDs differ even with the same draws.
    #[test]
    fn the_counter_alone_makes_ids_differ() {
        let g = Cuid2Generator::new(ManualClock::new(1_700_000_000_000), 24, "f".repeat(32), 9)
            .unwrap();
        let mut seen = HashSet::new();
        for _ in 0..1_000 {
            assert!(seen.insert(g.next_with(&mut draws(&[42])).unwrap()));
        }
        assert_eq!(counter_start(0), 0);
        assert_eq!(counter_start(u32::MAX), INITIAL_COUNT_MAX - 1);
    }

    #[test]
    fn fingerprints_are_32_digits_and_hash_drops_the_first_digit() {
        let f = fingerprint("host,123", &mut draws(&[1, 2, 3])).unwrap();
        assert_eq!(f.len(), 32);
        assert!(f.bytes().all(|b| DIGITS.contains(&b)));
        let mut digits = [0u8; 104];
        let n = hash_digits(b"abc", &mut digits);
        assert_eq!(hash(b"abc"), std::str::from_utf8(&digits[1..n]).unwrap());
    }
}
