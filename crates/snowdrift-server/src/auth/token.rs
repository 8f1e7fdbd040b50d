//! Bearer tokens and their stored form: a new token is `sd_` and 43 random base62 characters
//! (256 bits); the config holds only `sha256:<hex>` of it.
//!
//! A plain SHA-256 is enough because the token is high-entropy random: nobody can guess one
//! from its hash, so a slow password hash (argon2) would only slow every request down.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// What every token starts with, so a leaked one is recognisable (and greppable).
pub const TOKEN_PREFIX: &str = "sd_";

/// Random characters after the prefix: 43 base62 characters carry 256 bits.
const TOKEN_CHARS: usize = 43;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// How a stored hash starts in the config.
const HASH_PREFIX: &str = "sha256:";

/// A new random token from the operating system's generator.
pub fn generate() -> std::io::Result<String> {
    let mut token = String::with_capacity(TOKEN_PREFIX.len() + TOKEN_CHARS);
    token.push_str(TOKEN_PREFIX);
    let mut pool = [0u8; 64];
    while token.len() < TOKEN_PREFIX.len() + TOKEN_CHARS {
        getrandom::fill(&mut pool).map_err(std::io::Error::other)?;
        // Bytes from 248 up are dropped so that `b % 62` is uniform (248 = 4 * 62).
        for &b in pool.iter().filter(|&&b| b < 248) {
            if token.len() == TOKEN_PREFIX.len() + TOKEN_CHARS {
                break;
            }
            token.push(char::from(BASE62[usize::from(b % 62)]));
        }
    }
    Ok(token)
}

/// The SHA-256 of a token, as the config stores it (`sha256:<64 hex digits>`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenHash([u8; 32]);

impl TokenHash {
    /// The hash of `token`.
    pub fn of(token: &str) -> Self {
        Self(Sha256::digest(token.as_bytes()).into())
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest as four words: constant-time comparison costs a fixed amount per element,
    /// so four words compare about eight times faster than 32 bytes.
    pub fn words(&self) -> [u64; 4] {
        let mut words = [0u64; 4];
        for (word, bytes) in words.iter_mut().zip(self.0.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            *word = u64::from_le_bytes(b);
        }
        words
    }
}

impl fmt::Display for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{HASH_PREFIX}{}", hex::encode(self.0))
    }
}

impl fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenHash({self})")
    }
}

/// Why a configured hash is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0}; write the hash `snowdrift token create` prints: \"sha256:\" and 64 hex digits (a \
     token itself, starting with sd_, never goes in the config)"
)]
pub struct BadHash(&'static str);

impl FromStr for TokenHash {
    type Err = BadHash;

    fn from_str(text: &str) -> Result<Self, BadHash> {
        if text.starts_with(TOKEN_PREFIX) {
            return Err(BadHash("this is a token, not its hash"));
        }
        let digits = text
            .strip_prefix(HASH_PREFIX)
            .ok_or(BadHash("the hash does not start with \"sha256:\""))?;
        let mut raw = [0u8; 32];
        hex::decode_to_slice(digits, &mut raw)
            .map_err(|_| BadHash("the hash is not 64 hex digits after \"sha256:\""))?;
        Ok(Self(raw))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn tokens_are_prefixed_base62_of_full_length_and_differ() {
        let tokens: Vec<String> = (0..200).map(|_| generate().unwrap()).collect();
        for t in &tokens {
            assert_eq!(t.len(), 3 + 43, "{t}");
            let rest = t.strip_prefix("sd_").unwrap();
            assert!(rest.bytes().all(|b| b.is_ascii_alphanumeric()), "{t}");
        }
        let distinct: HashSet<_> = tokens.iter().collect();
        assert_eq!(distinct.len(), tokens.len());
        // Every base62 character turns up across 200 tokens (8,600 draws): a skewed or
        // truncated alphabet would miss some.
        let seen: HashSet<u8> = tokens.iter().flat_map(|t| t.bytes().skip(3)).collect();
        assert_eq!(seen.len(), 62);
    }

    #[test]
    fn hash_is_sha256_hex_and_parses_back() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        let h = TokenHash::of("abc");
        assert_eq!(
            h.to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(h.to_string().parse::<TokenHash>(), Ok(h));
        let upper = h.to_string().to_uppercase().replace("SHA256:", "sha256:");
        assert_eq!(upper.parse::<TokenHash>(), Ok(h));
        assert_ne!(TokenHash::of("abd"), h);
        assert_eq!(
            h.words()[0],
            u64::from_le_bytes([0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea])
        );
        assert_eq!(
            h.words()[3],
            u64::from_le_bytes([0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad])
        );
    }

    #[test]
    fn bad_hashes_say_what_to_write() {
        let token = generate().unwrap();
        let e = token.parse::<TokenHash>().unwrap_err();
        assert!(e.to_string().contains("a token, not its hash"), "{e}");
        let e = "md5:abcd".parse::<TokenHash>().unwrap_err();
        assert!(e.to_string().contains("sha256:"), "{e}");
        let e = "sha256:abcd".parse::<TokenHash>().unwrap_err();
        assert!(e.to_string().contains("64 hex digits"), "{e}");
        let e = format!("sha256:{}", "g".repeat(64))
            .parse::<TokenHash>()
            .unwrap_err();
        assert!(e.to_string().contains("64 hex digits"), "{e}");
    }
}
