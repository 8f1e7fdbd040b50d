//! Replies on the wire, RESP2 or RESP3: appended to a connection's output buffer, which is
//! written once per batch of requests read, so a pipeline of a thousand `INCR`s costs one
//! write.

use std::io::Write;

/// The protocol a connection speaks: RESP2 until `HELLO 3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Every client's default.
    Resp2,
    /// After `HELLO 3`: maps and a null of their own.
    Resp3,
}

impl Protocol {
    /// 2 or 3, as `HELLO` and `CLIENT INFO` show it.
    pub fn number(self) -> i64 {
        match self {
            Protocol::Resp2 => 2,
            Protocol::Resp3 => 3,
        }
    }
}

/// `+OK`.
pub fn ok(out: &mut Vec<u8>) {
    out.extend_from_slice(b"+OK\r\n");
}

/// A simple string; `text` must hold no CR or LF (every caller passes a constant).
pub fn simple(out: &mut Vec<u8>, text: &str) {
    out.push(b'+');
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// An error reply: `-CODE message`. Line breaks in `message` become spaces, since an
/// error is one line.
pub fn error(out: &mut Vec<u8>, code: &str, message: &str) {
    out.push(b'-');
    out.extend_from_slice(code.as_bytes());
    out.push(b' ');
    out.extend(
        message
            .bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\r\n");
}

/// `:value`.
pub fn integer(out: &mut Vec<u8>, value: i64) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, ":{value}\r\n");
}

/// A bulk string.
pub fn bulk(out: &mut Vec<u8>, data: &[u8]) {
    let _ = write!(out, "${}\r\n", data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The null reply (`$-1` in RESP2, `_` in RESP3).
pub fn null(out: &mut Vec<u8>, protocol: Protocol) {
    out.extend_from_slice(match protocol {
        Protocol::Resp2 => b"$-1\r\n",
        Protocol::Resp3 => b"_\r\n",
    });
}

/// The header of an array of `len` replies.
pub fn array(out: &mut Vec<u8>, len: usize) {
    let _ = write!(out, "*{len}\r\n");
}

/// The header of a map of `len` key-value pairs: a RESP3 map, or in RESP2 an array of
/// `2 * len` replies, keys and values in turn (as Redis answers `HELLO 2`).
pub fn map(out: &mut Vec<u8>, len: usize, protocol: Protocol) {
    let _ = match protocol {
        Protocol::Resp2 => write!(out, "*{}\r\n", 2 * len),
        Protocol::Resp3 => write!(out, "%{len}\r\n"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut out);
        out
    }

    #[test]
    fn each_reply_in_both_protocols() {
        assert_eq!(bytes(ok), b"+OK\r\n");
        assert_eq!(bytes(|o| integer(o, -7)), b":-7\r\n");
        assert_eq!(bytes(|o| bulk(o, b"a\r\nb")), b"$4\r\na\r\nb\r\n");
        assert_eq!(bytes(|o| null(o, Protocol::Resp2)), b"$-1\r\n");
        assert_eq!(bytes(|o| null(o, Protocol::Resp3)), b"_\r\n");
        assert_eq!(bytes(|o| map(o, 3, Protocol::Resp2)), b"*6\r\n");
        assert_eq!(bytes(|o| map(o, 3, Protocol::Resp3)), b"%3\r\n");
        assert_eq!(
            bytes(|o| error(o, "ERR", "two\r\nlines")),
            b"-ERR two  lines\r\n"
        );
    }
}
