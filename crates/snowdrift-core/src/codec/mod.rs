//! Text forms of 64-bit IDs.
//!
//! Each codec turns a `u64` into a string and back, and every decoder is strict about what it
//! accepts: a string either decodes to the one ID it stands for or fails with
//! [`Error::InvalidEncoding`], whose message says what is
//! allowed. Decoders never panic, whatever the input.
//!
//! | codec | example (`1050118621198921728`) | notes |
//! | --- | --- | --- |
//! | [`base62`] | `1FZYNDFWXYm` | `0-9A-Za-z`, canonical (no leading zeros) |
//! | [`crockford32`] | `X4P5A9Y9BC00` | for people: case-insensitive, `I`/`L` read as `1`, `O` as `0`, hyphens ignored |
//! | [`sqids`] | `Sm5Tn1DQhx5X` | any Sqids implementation with the same alphabet decodes it |
//! | [`friendly`] | `20181010201924211-10-27-0` | the fields of a [`Layout`](crate::layout::Layout), time in UTC |
//!
//! [`Format`] names them all (plus decimal and hex) for command lines and configuration.
//!
//! None of these hide anything: anyone can decode them. To make sequential IDs look random,
//! permute them first with [`Obfuscator`](crate::obfuscate::Obfuscator): an [`IdFormat`]
//! such as `obfuscated-base62` names a format of the obfuscated ID, and its [`Codec`]
//! obfuscates before encoding and un-obfuscates after decoding.

pub mod base62;
pub mod crockford32;
pub mod format;
pub mod friendly;
pub mod id_format;
pub mod sqids;

pub use format::{Codec, Format};
pub use id_format::IdFormat;

use crate::error::Error;

/// Longest input echoed back in an error, so a hostile megabyte of text is not copied into
/// every log line that shows the error.
const SHOWN_INPUT_CHARS: usize = 64;

/// An [`Error::InvalidEncoding`] for `input`, truncated for display.
pub(crate) fn invalid(codec: &'static str, input: &str, reason: impl Into<String>) -> Error {
    let mut shown: String = input.chars().take(SHOWN_INPUT_CHARS).collect();
    if shown.len() < input.len() {
        shown.push('…');
    }
    Error::InvalidEncoding {
        codec,
        input: shown,
        reason: reason.into(),
    }
}

/// The first character that is not allowed, for error messages.
pub(crate) fn describe_char(input: &str, index: usize) -> String {
    match input.get(index..).and_then(|rest| rest.chars().next()) {
        Some(c) => format!("{c:?} at byte {index}"),
        None => format!("byte {index}"),
    }
}

/// Writes `id` in positional notation over `alphabet` (the base is its length) at the end of
/// `buf`, and returns that suffix. `buf` must hold the longest encoding of a `u64`.
#[inline]
pub(crate) fn encode_radix<'b>(id: u64, alphabet: &[u8], buf: &'b mut [u8]) -> &'b str {
    let base = alphabet.len() as u64;
    let mut n = id;
    let mut start = buf.len();
    loop {
        start -= 1;
        buf[start] = alphabet[(n % base) as usize];
        n /= base;
        if n == 0 {
            break;
        }
    }
    // Every byte written comes from the alphabet, which is ASCII.
    std::str::from_utf8(&buf[start..]).unwrap_or_default()
}
