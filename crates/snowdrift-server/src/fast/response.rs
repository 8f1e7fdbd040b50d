//! The fast path's answers on the wire: what hyper would send for the same response (status
//! line, `content-type`, `content-length`, `date`), written into the connection's output
//! buffer so that pipelined answers go out in one write.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;

use crate::answer::{Extra, Status};

/// Appends the head of an answer with `status` and a body of `content_type` and `len` bytes
/// to `out`, with `extra`'s headers, and `connection: close` when the connection ends after
/// it.
pub(crate) fn head(
    out: &mut Vec<u8>,
    status: Status,
    content_type: &str,
    len: usize,
    close: bool,
    extra: Extra,
) {
    // As hyper writes the status line. Every `Status` is a valid code: the fallback is
    // never taken.
    let status = StatusCode::from_u16(status.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\ncontent-type: ");
    out.extend_from_slice(content_type.as_bytes());
    if let Some(value) = extra.www_authenticate {
        out.extend_from_slice(b"\r\nwww-authenticate: ");
        out.extend_from_slice(value.as_bytes());
    }
    if let Some(secs) = extra.retry_after {
        out.extend_from_slice(b"\r\nretry-after: ");
        out.extend_from_slice(itoa::Buffer::new().format(secs).as_bytes());
    }
    // As the router's answers, where its outermost layer adds it: no browser sniffs a
    // body's type.
    out.extend_from_slice(b"\r\nx-content-type-options: nosniff");
    out.extend_from_slice(b"\r\ncontent-length: ");
    out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    out.extend_from_slice(b"\r\ndate: ");
    with_date(|date| out.extend_from_slice(date));
    if close {
        out.extend_from_slice(b"\r\nconnection: close");
    }
    out.extend_from_slice(b"\r\n\r\n");
}

thread_local! {
    /// The `date` header's value and the second it is for: formatting it takes longer than
    /// the rest of the head, and it changes once a second (hyper caches it the same way).
    static DATE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
}

fn with_date(f: impl FnOnce(&[u8])) {
    let now = SystemTime::now();
    let second = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    DATE.with_borrow_mut(|(cached, date)| {
        if *cached != second {
            *cached = second;
            *date = httpdate::fmt_http_date(now);
        }
        f(date.as_bytes());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_whole_http_response() {
        let mut out = Vec::new();
        let body = br#"{"ids":["1"]}"#;
        head(
            &mut out,
            Status::OK,
            "application/json",
            body.len(),
            false,
            Extra::default(),
        );
        out.extend_from_slice(body);
        head(
            &mut out,
            Status::NOT_FOUND,
            "application/json",
            2,
            true,
            Extra::default(),
        );
        out.extend_from_slice(b"{}");
        let text = String::from_utf8(out).unwrap();
        let (first, second) = text.split_once(r#"{"ids":["1"]}"#).unwrap();
        assert!(first.starts_with(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
             x-content-type-options: nosniff\r\ncontent-length: 13\r\ndate: "
        ));
        assert!(first.ends_with(" GMT\r\n\r\n"), "{first:?}");
        assert!(!first.contains("connection"));
        assert!(second.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(
            second.ends_with("\r\nconnection: close\r\n\r\n{}"),
            "{second:?}"
        );
        let date = first.split("date: ").nth(1).unwrap().trim_end();
        assert!(httpdate::parse_http_date(date).is_ok(), "{date:?}");
    }
}
