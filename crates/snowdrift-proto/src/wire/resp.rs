//! Client requests off the wire: a RESP array of bulk strings (`*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n`,
//! what every client library sends) or an inline line (`INCR order\r\n`, what a person types
//! into telnet or nc), with hard bounds on every length.
//!
//! Hand-written rather than taken from a RESP crate: requests are a strict subset of RESP
//! (Redis itself refuses anything but arrays of bulk strings from clients), and the general
//! decoders descend into nested arrays without a depth bound: 64 KiB of `*1\r\n` overflows
//! the stack of redis-protocol 6's decoder and aborts the whole process. This parser never
//! recurses, refuses an over-long length before its bytes arrive (so a connection's buffer
//! stays bounded), and borrows the arguments from the buffer. `fuzz/fuzz_targets/resp_frame.rs`
//! fuzzes it; it uses only `std` so that target can include this file as it is.

use std::fmt;

/// Bounds on one request; a request past any of them is a protocol error and its
/// connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most arguments, the command name included.
    pub max_args: usize,
    /// Longest argument, in bytes.
    pub max_bulk: usize,
    /// Longest inline request line, in bytes.
    pub max_inline: usize,
    /// Longest request, in bytes: an array with its count line, every argument's length
    /// line, bytes and CRLF; an inline line (with the smaller of this and `max_inline`).
    /// Checked at each length line, so a request over it is refused before its bytes come.
    pub max_frame: usize,
}

/// The listener's bounds: 16 arguments of at most 64 KiB each, inline lines of at most
/// 64 KiB, and a whole request of at most 4 KiB (the server's default
/// `limits.resp_max_frame`, which replaces it: an ID command needs a few hundred bytes).
pub const LIMITS: Limits = Limits {
    max_args: 16,
    max_bulk: 64 * 1024,
    max_inline: 64 * 1024,
    max_frame: 4 * 1024,
};

/// The bounds before `AUTH` on a server with tokens (as Redis bounds unauthenticated
/// requests): enough for `HELLO 3 AUTH user token SETNAME name` and a token of a few hundred
/// bytes, so a client without a token cannot make a connection hold a megabyte.
pub const UNAUTHENTICATED: Limits = Limits {
    max_args: 8,
    max_bulk: 1024,
    max_inline: 1024,
    max_frame: 4 * 1024,
};

/// A length or count line (`*3`, `$5`) is at most this long, sign and digits, before its
/// CRLF: 20 is every `i64`.
const MAX_NUMBER_LINE: usize = 20;

/// One request taken from the front of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The command name and its arguments; empty for a request Redis skips (an empty
    /// inline line, `*0`, `*-1`).
    pub args: Vec<&'a [u8]>,
    /// How many bytes of the buffer the request took.
    pub len: usize,
}

/// Why the bytes at the front of a buffer are not a request. The connection cannot find the
/// next request's start after one of these, so it is answered once and closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// `*N` where N is not a number, or its line is over-long or not ended by CRLF.
    BadCount,
    /// `*N` with N over [`Limits::max_args`].
    TooManyArgs {
        /// The count sent.
        count: i64,
        /// The bound.
        max: usize,
    },
    /// An array element that is not a bulk string.
    ExpectedBulk {
        /// The byte found where `$` belongs.
        found: u8,
    },
    /// A request whose length lines make it longer than [`Limits::max_frame`].
    FrameTooLarge {
        /// The request's length up to the end of the argument that passed the bound.
        size: u64,
        /// The bound.
        max: usize,
    },
    /// `$N` where N is not a number from 0 to [`Limits::max_bulk`].
    BadBulkLength {
        /// The bound.
        max: usize,
    },
    /// A bulk string not followed by CRLF.
    MissingCrlf,
    /// An inline line longer than [`Limits::max_inline`] (or no newline within it).
    InlineTooLong {
        /// The bound.
        max: usize,
    },
    /// An inline line with more words than [`Limits::max_args`].
    InlineTooManyArgs {
        /// The bound.
        max: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::BadCount => f.write_str(
                "invalid multibulk length: send a request as *<count>\\r\\n then <count> bulk strings",
            ),
            FrameError::TooManyArgs { count, max } => write!(
                f,
                "a request of {count} arguments is over this server's limit of {max}"
            ),
            FrameError::ExpectedBulk { found } => write!(
                f,
                "expected '$', got {:?}: a request is an array of bulk strings",
                char::from(*found)
            ),
            FrameError::FrameTooLarge { size, max } => {
                write!(f, "frame of {size} bytes is over the limit of {max}")
            }
            FrameError::BadBulkLength { max } => write!(
                f,
                "invalid bulk length: an argument may hold 0 to {max} bytes"
            ),
            FrameError::MissingCrlf => f.write_str("a bulk string must be followed by \\r\\n"),
            FrameError::InlineTooLong { max } => write!(
                f,
                "too big inline request: an inline line may hold at most {max} bytes"
            ),
            FrameError::InlineTooManyArgs { max } => write!(
                f,
                "an inline request may hold at most {max} words"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// The request at the front of `buf`: `Ok(None)` when more bytes are needed to finish it
/// (and the bytes so far are within `limits`, so reading on is safe), an error when the
/// bytes cannot start a valid request.
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<Request<'a>>, FrameError> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => multibulk(buf, limits),
        Some(_) => inline(buf, limits),
    }
}

fn multibulk<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<Request<'a>>, FrameError> {
    let Some((count, mut pos)) = number_line(buf, 1).ok_or(FrameError::BadCount)? else {
        return Ok(None);
    };
    if count <= 0 {
        // Redis skips these without a reply.
        return Ok(Some(Request {
            args: Vec::new(),
            len: pos,
        }));
    }
    let max = limits.max_args;
    let n = usize::try_from(count)
        .ok()
        .filter(|n| *n <= max)
        .ok_or(FrameError::TooManyArgs { count, max })?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        let Some(&kind) = buf.get(pos) else {
            return Ok(None);
        };
        if kind != b'$' {
            return Err(FrameError::ExpectedBulk { found: kind });
        }
        let bad_length = FrameError::BadBulkLength {
            max: limits.max_bulk,
        };
        let Some((len, start)) = number_line(buf, pos + 1).ok_or(bad_length.clone())? else {
            return Ok(None);
        };
        // The whole request's size first: `*1\r\n$1048576\r\n` is over the frame bound
        // (the server's setting) before it is over the argument's.
        if let Ok(unsigned) = u64::try_from(len) {
            let size = (start as u64).saturating_add(unsigned).saturating_add(2);
            if size > limits.max_frame as u64 {
                return Err(FrameError::FrameTooLarge {
                    size,
                    max: limits.max_frame,
                });
            }
        }
        let len = usize::try_from(len)
            .ok()
            .filter(|l| *l <= limits.max_bulk)
            .ok_or(bad_length)?;
        let end = start + len;
        let Some(crlf) = buf.get(end..end + 2) else {
            return Ok(None);
        };
        if crlf != b"\r\n" {
            return Err(FrameError::MissingCrlf);
        }
        args.push(&buf[start..end]);
        pos = end + 2;
    }
    Ok(Some(Request { args, len: pos }))
}

/// The number on the line starting at `start`, and where the next line starts. `None`
/// (the outer option) for a line that is not a number ended by CRLF; `Some(None)` when the
/// line is not complete yet.
fn number_line(buf: &[u8], start: usize) -> Option<Option<(i64, usize)>> {
    let rest = buf.get(start..).unwrap_or_default();
    let window = &rest[..rest.len().min(MAX_NUMBER_LINE + 1)];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        // No CR within a number's length: more bytes can only help if they may still hold it.
        return (rest.len() <= MAX_NUMBER_LINE).then_some(None);
    };
    match rest.get(cr + 1) {
        None => return Some(None),
        Some(b'\n') => {}
        Some(_) => return None,
    }
    let digits = &rest[..cr];
    // Strict: an optional '-' and decimal digits, as Redis reads lengths.
    let unsigned = digits.strip_prefix(b"-").unwrap_or(digits);
    if unsigned.is_empty() || !unsigned.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = std::str::from_utf8(digits).ok()?.parse::<i64>().ok()?;
    Some(Some((value, start + cr + 2)))
}

fn inline<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<Request<'a>>, FrameError> {
    let max = limits.max_inline.min(limits.max_frame);
    let window = &buf[..buf.len().min(max + 1)];
    let Some(newline) = window.iter().position(|&b| b == b'\n') else {
        if buf.len() > max {
            return Err(FrameError::InlineTooLong { max });
        }
        return Ok(None);
    };
    let line = &buf[..newline];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut args = Vec::new();
    for word in line
        .split(|b| matches!(b, b' ' | b'\t'))
        .filter(|w| !w.is_empty())
    {
        if args.len() == limits.max_args {
            return Err(FrameError::InlineTooManyArgs {
                max: limits.max_args,
            });
        }
        args.push(word);
    }
    Ok(Some(Request {
        args,
        len: newline + 1,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(buf: &[u8]) -> Vec<&[u8]> {
        let r = parse(buf, &LIMITS).unwrap().unwrap();
        assert_eq!(r.len, buf.len(), "{buf:?}");
        r.args
    }

    #[test]
    fn arrays_of_bulk_strings_and_inline_lines() {
        assert_eq!(
            whole(b"*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n"),
            [&b"INCR"[..], b"order"]
        );
        assert_eq!(whole(b"*1\r\n$0\r\n\r\n"), [&b""[..]]);
        // Binary-safe: CR and LF inside a bulk string are data.
        assert_eq!(whole(b"*1\r\n$2\r\n\r\n\r\n"), [&b"\r\n"[..]]);
        assert_eq!(whole(b"INCR  order\r\n"), [&b"INCR"[..], b"order"]);
        assert_eq!(whole(b"PING\n"), [&b"PING"[..]]);
        assert!(whole(b"\r\n").is_empty());
        assert!(whole(b"*0\r\n").is_empty());
        assert!(whole(b"*-1\r\n").is_empty());
        // Only the first request is taken; the rest waits for the next call.
        let two = b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
        assert_eq!(parse(two, &LIMITS).unwrap().unwrap().len, two.len() / 2);
    }

    #[test]
    fn every_prefix_of_a_request_asks_for_more() {
        let full = b"*3\r\n$6\r\nINCRBY\r\n$5\r\norder\r\n$3\r\n100\r\n";
        for end in 0..full.len() {
            assert_eq!(parse(&full[..end], &LIMITS), Ok(None), "{end}");
        }
        assert!(parse(b"INCR ord", &LIMITS).unwrap().is_none());
    }

    #[test]
    fn bad_and_oversized_requests_are_refused_before_their_bytes_arrive() {
        let err = |b: &[u8]| parse(b, &LIMITS).unwrap_err();
        assert_eq!(err(b"*x\r\n"), FrameError::BadCount);
        assert_eq!(err(b"*1\rx"), FrameError::BadCount);
        assert_eq!(err(b"*+1\r\n"), FrameError::BadCount);
        assert_eq!(err(b"*123456789012345678901234"), FrameError::BadCount);
        assert!(matches!(
            err(b"*17\r\n"),
            FrameError::TooManyArgs { count: 17, .. }
        ));
        assert!(matches!(
            err(b"*99999999999\r\n"),
            FrameError::TooManyArgs { .. }
        ));
        assert_eq!(
            err(b"*1\r\n+PING\r\n"),
            FrameError::ExpectedBulk { found: b'+' }
        );
        assert_eq!(
            err(b"*1\r\n*1\r\n"),
            FrameError::ExpectedBulk { found: b'*' }
        );
        let max = LIMITS.max_bulk;
        // With room for a frame of more than one argument's bound, that bound is hit.
        let wide = Limits {
            max_frame: 1 << 20,
            ..LIMITS
        };
        assert_eq!(
            parse(b"*1\r\n$65537\r\n", &wide),
            Err(FrameError::BadBulkLength { max })
        );
        assert_eq!(err(b"*1\r\n$-1\r\n"), FrameError::BadBulkLength { max });
        assert_eq!(err(b"*1\r\n$4\r\nPINGxx"), FrameError::MissingCrlf);
        let long = vec![b'a'; LIMITS.max_inline + 1];
        assert!(matches!(err(&long), FrameError::InlineTooLong { .. }));
        let words = "a ".repeat(17) + "\r\n";
        assert!(matches!(
            err(words.as_bytes()),
            FrameError::InlineTooManyArgs { .. }
        ));
        // At the bounds: accepted.
        let mut biggest = format!("*1\r\n${max}\r\n").into_bytes();
        biggest.extend(vec![b'x'; max]);
        biggest.extend(b"\r\n");
        let r = parse(&biggest, &wide).unwrap().unwrap();
        assert_eq!((r.args[0].len(), r.len), (max, biggest.len()));
        assert_eq!(whole(("a ".repeat(16) + "\r\n").as_bytes()).len(), 16);
    }

    #[test]
    fn a_request_over_the_frame_bound_is_refused_at_its_length_line() {
        // What the length line says, not what has come: refused with 14 bytes read.
        assert_eq!(
            parse(b"*1\r\n$1048576\r\n", &LIMITS),
            Err(FrameError::FrameTooLarge {
                size: 14 + 1_048_576 + 2,
                max: 4096
            })
        );
        assert_eq!(
            FrameError::FrameTooLarge {
                size: 1_048_592,
                max: 4096
            }
            .to_string(),
            "frame of 1048592 bytes is over the limit of 4096"
        );
        // The bound is the whole request's: arguments within theirs add up past it.
        let tight = Limits {
            max_frame: 35,
            ..LIMITS
        };
        let exact = b"*2\r\n$8\r\nSNOWFLAK\r\n$10\r\n0123456789\r\n";
        assert_eq!(exact.len(), 35);
        assert_eq!(parse(exact, &tight).unwrap().unwrap().len, 35);
        let at = Limits {
            max_frame: 34,
            ..LIMITS
        };
        assert_eq!(
            parse(b"*2\r\n$8\r\nSNOWFLAK\r\n$10\r\n", &at),
            Err(FrameError::FrameTooLarge { size: 35, max: 34 })
        );
        // Inline lines are bounded by it too.
        let line = vec![b'a'; 36];
        assert_eq!(
            parse(&line, &tight),
            Err(FrameError::InlineTooLong { max: 35 })
        );
    }

    #[test]
    fn deep_nesting_is_one_error_not_a_stack_overflow() {
        let nested = b"*1\r\n".repeat(16 * 1024);
        assert_eq!(
            parse(&nested, &LIMITS),
            Err(FrameError::ExpectedBulk { found: b'*' })
        );
    }
}
