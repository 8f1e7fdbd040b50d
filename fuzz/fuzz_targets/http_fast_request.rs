//! The HTTP/1.1 fast path's request reader on arbitrary bytes: it never panics; a request
//! it takes lies within the bytes given and the head limit, and is a GET of its route with
//! a name and query of plain characters; the same bytes cut to that request read the same;
//! and it asks for more only while the bytes are under the limit, so a connection's buffer
//! cannot grow without end on the fast path.
#![no_main]

use libfuzzer_sys::fuzz_target;

// snowdrift-proto without its gRPC part: the reader needs only std and httparse.
use snowdrift_proto::wire::http1::{Head, MAX_HEAD, parse};

fuzz_target!(|data: &[u8]| {
    check(data);
    // The same bytes behind a route's prefix, so that short runs reach requests the fast
    // path takes, not only the ones it leaves to hyper.
    check(&[&b"GET /v1/ids/"[..], data].concat());
    check(&[&b"GET /api/segment/get/"[..], data].concat());
});

fn check(data: &[u8]) {
    match parse(data, MAX_HEAD) {
        Head::Partial => assert!(data.len() < MAX_HEAD),
        Head::TooLarge => assert!(data.len() >= MAX_HEAD),
        Head::Other | Head::Malformed => {}
        Head::Get {
            len,
            route,
            name,
            query,
            close,
            authorization,
        } => {
            assert!(len > 0 && len <= data.len() && len <= MAX_HEAD);
            // httparse, like hyper, skips empty lines before a request line.
            let start = data.iter().position(|b| !b"\r\n".contains(b)).unwrap_or(0);
            let path = route.pattern().split('{').next().unwrap_or_default();
            assert!(data[start..].starts_with(format!("GET {path}").as_bytes()));
            assert!(!name.is_empty());
            assert!(!name.contains(['/', '%', '?']));
            assert!(query.is_none_or(|q| !q.contains(['#', ' '])));
            // A request ends where it says, whatever follows it.
            let alone = &data[..len];
            assert_eq!(
                parse(alone, MAX_HEAD),
                Head::Get {
                    len,
                    route,
                    name,
                    query,
                    close,
                    authorization
                }
            );
            // The header's value is a part of the head, as httparse found it.
            assert!(authorization.is_none_or(|a| a.len() < len));
            // A strict prefix of it is never taken for a request.
            assert!(matches!(
                parse(&alone[..len - 1], MAX_HEAD),
                Head::Partial | Head::Other | Head::Malformed
            ));
        }
    }
}
