//! Which requests the server's HTTP/1.1 fast path answers itself, and where each ends in a
//! connection's buffer. Only a plain GET of a single-ID route over HTTP/1.1 qualifies (the
//! routes with a [`Route::fast_prefix`]: `/v1/ids/{name}` and Leaf's
//! `/api/segment/get/{tag}` and `/api/snowflake/get/{key}`); anything else, or anything
//! unusual about it, is left to hyper, so the fast path never has to reject a request or
//! know HTTP's corner cases.
//!
//! Uses only std and httparse, so the fuzz target builds it on its own.

pub use crate::http::Route;

/// The default bound of [`parse`]'s `max_head` (the server's `limits.max_head`).
pub const MAX_HEAD: usize = 16 * 1024;

/// More headers than this and the request goes to hyper.
const MAX_HEADERS: usize = 32;

/// What the start of a connection's buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Head<'a> {
    /// Not yet a whole request head, and shorter than `max_head`: read more.
    Partial,
    /// Not a request: the request line or a header breaks HTTP/1.1's syntax (answered 400).
    Malformed,
    /// A request head of `max_head` bytes or more (answered 431).
    TooLarge,
    /// A request for hyper, from its first byte on: another route or method, a body,
    /// HTTP/1.0, HTTP/2's preface, a malformed or oversized head, or a path or query with a
    /// character the fast path does not take as is.
    Other,
    /// A GET of `route` with its parameter `name`: a whole request of `len` bytes, with no
    /// body.
    Get {
        /// The request's length in bytes, head and all.
        len: usize,
        /// Which route.
        route: Route,
        /// The route's parameter (a generator or tag name), exactly as in the path: it has
        /// no `%`.
        name: &'a str,
        /// The raw query string, if any.
        query: Option<&'a str>,
        /// The client asked to close the connection after the answer (`Connection: close`).
        close: bool,
        /// The `Authorization` header's value, if the request has one (a request with two
        /// is hyper's).
        authorization: Option<&'a [u8]>,
    },
}

/// What the start of `buf` holds, for heads up to `max_head` bytes.
pub fn parse(buf: &[u8], max_head: usize) -> Head<'_> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let len = match request.parse(buf) {
        Ok(httparse::Status::Complete(len)) if len <= max_head => len,
        Ok(httparse::Status::Complete(_)) => return Head::TooLarge,
        Ok(httparse::Status::Partial) if buf.len() < max_head => return Head::Partial,
        Ok(httparse::Status::Partial) => return Head::TooLarge,
        // More headers than the fast path has room for: a request, but hyper's. Another
        // version: HTTP/2's preface (prior knowledge), or one hyper refuses itself.
        Err(httparse::Error::TooManyHeaders | httparse::Error::Version) => return Head::Other,
        Err(_) => return Head::Malformed,
    };
    if request.method != Some("GET") || request.version != Some(1) {
        return Head::Other;
    }
    let Some(target) = request.path else {
        return Head::Other;
    };
    let (path, query) = match target.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (target, None),
    };
    let Some((name, route)) = Route::ALL
        .into_iter()
        .find_map(|route| Some((path.strip_prefix(route.fast_prefix()?)?, route)))
    else {
        return Head::Other;
    };
    // A name with a `%` needs percent-decoding and one with a `/` is another route; a query
    // is passed on raw, so only characters every URI parser takes as they are qualify.
    if name.is_empty()
        || !name.bytes().all(is_path_char)
        || !query.unwrap_or_default().bytes().all(is_query_char)
    {
        return Head::Other;
    }
    let mut close = false;
    let mut authorization = None;
    for header in request.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("authorization") {
            if authorization.replace(header.value).is_some() {
                return Head::Other;
            }
        } else if name.eq_ignore_ascii_case("connection") {
            if header.value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if !header.value.eq_ignore_ascii_case(b"keep-alive") {
                return Head::Other;
            }
        } else if ["content-length", "transfer-encoding", "upgrade", "expect"]
            .iter()
            .any(|framing| name.eq_ignore_ascii_case(framing))
        {
            return Head::Other;
        }
    }
    Head::Get {
        len,
        route,
        name,
        query,
        close,
        authorization,
    }
}

/// RFC 3986's `pchar` without percent-encoding: unreserved, sub-delims, `:` and `@`.
fn is_path_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

/// A query character: a path character, `/`, `?`, or `%` (the query parser decodes it).
fn is_query_char(b: u8) -> bool {
    is_path_char(b) || b"/?%".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids<'a>(len: usize, name: &'a str, query: Option<&'a str>, close: bool) -> Head<'a> {
        Head::Get {
            len,
            route: Route::Ids,
            name,
            query,
            close,
            authorization: None,
        }
    }

    #[test]
    fn a_plain_get_of_ids_is_answered_here() {
        let req = b"GET /v1/ids/orders?count=5 HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(
            parse(req, MAX_HEAD),
            ids(req.len(), "orders", Some("count=5"), false)
        );
        let req = b"GET /v1/ids/counter:__rand_int__ HTTP/1.1\r\n\r\n";
        assert_eq!(
            parse(req, MAX_HEAD),
            ids(req.len(), "counter:__rand_int__", None, false)
        );
        let req = b"GET /v1/ids/a HTTP/1.1\r\nConnection: Close\r\n\r\n";
        assert_eq!(parse(req, MAX_HEAD), ids(req.len(), "a", None, true));
        let req = b"GET /v1/ids/a HTTP/1.1\r\nconnection: keep-alive\r\n\r\n";
        assert_eq!(parse(req, MAX_HEAD), ids(req.len(), "a", None, false));
    }

    #[test]
    fn leaf_s_single_id_routes_are_answered_here() {
        for (path, route) in [
            ("/api/segment/get/orders", Route::LeafSegment),
            ("/api/snowflake/get/orders", Route::LeafSnowflake),
        ] {
            let req = format!("GET {path} HTTP/1.1\r\n\r\n");
            let want = Head::Get {
                len: req.len(),
                route,
                name: "orders",
                query: None,
                close: false,
                authorization: None,
            };
            assert_eq!(parse(req.as_bytes(), MAX_HEAD), want);
        }
    }

    #[test]
    fn the_authorization_header_is_passed_on_and_two_are_hyper_s() {
        let req = b"GET /v1/ids/a HTTP/1.1\r\nauthorization: Bearer sd_x\r\n\r\n";
        let Head::Get { authorization, .. } = parse(req, MAX_HEAD) else {
            panic!("not a fast request");
        };
        assert_eq!(authorization, Some(&b"Bearer sd_x"[..]));
        let two =
            b"GET /v1/ids/a HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n";
        assert_eq!(parse(two, MAX_HEAD), Head::Other);
    }

    #[test]
    fn pipelined_requests_end_where_the_first_ends() {
        let one = b"GET /v1/ids/a HTTP/1.1\r\n\r\n";
        let two = [&one[..], b"POST /v1/tags HTTP/1.1\r\n"].concat();
        assert_eq!(parse(&two, MAX_HEAD), ids(one.len(), "a", None, false));
    }

    #[test]
    fn every_strict_prefix_asks_for_more() {
        let req = b"GET /v1/ids/a?count=2 HTTP/1.1\r\nHost: x\r\n\r\n";
        for end in 0..req.len() {
            assert_eq!(
                parse(&req[..end], MAX_HEAD),
                Head::Partial,
                "prefix of {end} bytes"
            );
        }
    }

    #[test]
    fn everything_else_is_hyper_s() {
        for req in [
            &b"POST /v1/ids/a HTTP/1.1\r\n\r\n"[..],
            b"HEAD /v1/ids/a HTTP/1.1\r\n\r\n",
            b"GET /v1/ids/a HTTP/1.0\r\n\r\n",
            b"GET /v1/ids/a/decode/1 HTTP/1.1\r\n\r\n",
            b"GET /v1/ids/ HTTP/1.1\r\n\r\n",
            b"GET /v1/ids/caf%C3%A9 HTTP/1.1\r\n\r\n",
            b"GET /v1/ids/a?x=%7B# HTTP/1.1\r\n\r\n",
            b"GET /v1/tags HTTP/1.1\r\n\r\n",
            b"GET /api/snowflake/decode/1 HTTP/1.1\r\n\r\n",
            b"GET /api/segment/get/a/b HTTP/1.1\r\n\r\n",
            b"GET http://host/v1/ids/a HTTP/1.1\r\n\r\n",
            b"GET /v1/ids/a HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            b"GET /v1/ids/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET /v1/ids/a HTTP/1.1\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n",
            b"GET /v1/ids/a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        ] {
            assert_eq!(
                parse(req, MAX_HEAD),
                Head::Other,
                "{}",
                String::from_utf8_lossy(req)
            );
        }
    }

    #[test]
    fn a_head_over_the_limit_is_too_large_whatever_its_route() {
        for start in [&b"GET /v1/ids/a"[..], b"POST /v1/tags"] {
            let mut req = [start, b" HTTP/1.1\r\nX-Pad: "].concat();
            req.resize(MAX_HEAD - 1, b'p');
            assert_eq!(parse(&req, MAX_HEAD), Head::Partial);
            req.push(b'p');
            assert_eq!(parse(&req, MAX_HEAD), Head::TooLarge);
            req.extend_from_slice(b"\r\n\r\n");
            assert_eq!(parse(&req, MAX_HEAD), Head::TooLarge);
            assert!(matches!(
                parse(&req, 2 * MAX_HEAD),
                Head::Get { .. } | Head::Other
            ));
        }
    }

    #[test]
    fn what_breaks_http_s_syntax_is_malformed() {
        for req in [
            &b"GET /v1/ids/a HTTP/1.1\r\nbad header\r\n\r\n"[..],
            b"G\x00T / HTTP/1.1\r\n\r\n",
            b"GET /v1/ids/a HTTP/1.1\r\nna me: v\r\n\r\n",
        ] {
            assert_eq!(
                parse(req, MAX_HEAD),
                Head::Malformed,
                "{}",
                String::from_utf8_lossy(req)
            );
        }
    }

    #[test]
    fn too_many_headers_are_hyper_s() {
        let mut req = b"GET /v1/ids/a HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            req.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        req.extend_from_slice(b"\r\n");
        assert_eq!(parse(&req, MAX_HEAD), Head::Other);
    }
}
