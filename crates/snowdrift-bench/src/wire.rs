//! What [`load`](crate::load) says on the wire: the bytes of one request (an HTTP/1.1
//! GET, or a RESP `INCR key` for a Redis server or snowdrift's RESP listener) and where the
//! answer to it ends in what a connection has read.

use std::net::{SocketAddr, ToSocketAddrs};

use url::Url;

use crate::error::{Context, Error};

/// The protocol a target speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http,
    Resp,
}

/// A parsed `--target`: where to connect and the one request every connection repeats.
pub struct Target {
    /// The address connections go to (the URL's host, resolved once).
    pub addr: SocketAddr,
    /// What the output calls the load, e.g. `GET http://127.0.0.1:8080/v1/ids/a?count=1`.
    pub label: String,
    protocol: Protocol,
    request: Vec<u8>,
    /// Sent once on each new connection before any request (RESP's `AUTH token`).
    handshake: Option<Vec<u8>>,
    /// With `https://` or `rediss://`: the host name TLS checks the certificate against.
    pub tls_host: Option<String>,
}

/// One whole answer at the start of a connection's read buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    /// Its length in bytes, to drop from the buffer.
    pub len: usize,
    /// The IDs it carried, or why it is an error (status and message).
    pub outcome: Result<u64, String>,
    /// The server will close the connection after it (`Connection: close`).
    pub closes: bool,
}

impl Target {
    /// Parses `url`: `http://HOST:PORT/PATH?QUERY` for GETs, or `redis://HOST:PORT` with
    /// `incr` naming the key each request increments. A `token` goes in every GET's
    /// `Authorization` header, or in one `AUTH` per RESP connection.
    pub fn parse(url: &str, incr: Option<&str>, token: Option<&str>) -> Result<Self, Error> {
        let refuse = |why: String| Err(Error::Options(why));
        if token.is_some_and(|t| t.is_empty() || t.bytes().any(|b| b.is_ascii_control())) {
            return refuse("--token is empty or holds a control character".into());
        }
        let parsed = Url::parse(url).with_context(|| {
            format!("--target {url} is not a URL; e.g. http://127.0.0.1:8080/v1/ids/snowflake?count=1 or redis://127.0.0.1:6379")
        })?;
        let host = parsed
            .host_str()
            .ok_or_else(|| Error::Options(format!("--target {url} names no host")))?;
        let tls = matches!(parsed.scheme(), "https" | "rediss");
        let (protocol, request, label) = match (parsed.scheme(), incr) {
            ("http" | "https", None) => {
                let authority = match parsed.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host.to_string(),
                };
                let path = match parsed.query() {
                    Some(query) => format!("{}?{query}", parsed.path()),
                    None => parsed.path().to_string(),
                };
                let auth = token
                    .map(|t| format!("Authorization: Bearer {t}\r\n"))
                    .unwrap_or_default();
                let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\n{auth}\r\n");
                (Protocol::Http, request.into_bytes(), format!("GET {url}"))
            }
            ("http" | "https", Some(_)) => {
                return refuse(format!(
                    "--incr needs a redis:// or rediss:// --target, not {url}"
                ));
            }
            ("redis" | "rediss", Some(key)) => {
                if parsed.path().len() > 1 || parsed.query().is_some() {
                    return refuse(
                        "a redis:// --target is only redis://HOST:PORT; the key comes from --incr"
                            .into(),
                    );
                }
                if key.is_empty() {
                    return refuse("--incr needs a key".into());
                }
                let request = format!("*2\r\n$4\r\nINCR\r\n${}\r\n{key}\r\n", key.len());
                (
                    Protocol::Resp,
                    request.into_bytes(),
                    format!("INCR {key} at {url}"),
                )
            }
            ("redis" | "rediss", None) => {
                return refuse("a redis:// --target needs --incr KEY, the key to increment".into());
            }
            (scheme, _) => {
                return refuse(format!(
                    "--target {url}: {scheme}:// is not supported; use http:// or https:// (GETs), or redis:// or rediss:// with --incr (INCRs)"
                ));
            }
        };
        let port = parsed.port().unwrap_or(match (protocol, tls) {
            (Protocol::Http, false) => 80,
            (Protocol::Http, true) => 443,
            (Protocol::Resp, _) => 6379,
        });
        let addr = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {host}"))?
            .next()
            .ok_or_else(|| Error::Options(format!("{host} resolves to no address")))?;
        let handshake = match (protocol, token) {
            (Protocol::Resp, Some(t)) => {
                Some(format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{t}\r\n", t.len()).into_bytes())
            }
            _ => None,
        };
        Ok(Self {
            addr,
            label,
            protocol,
            request,
            handshake,
            tls_host: tls.then(|| {
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string()
            }),
        })
    }

    /// What a new connection sends once before its first request, if anything.
    pub fn handshake(&self) -> Option<&[u8]> {
        self.handshake.as_deref()
    }

    /// The request every connection sends, one at a time.
    pub fn request(&self) -> &[u8] {
        &self.request
    }

    /// The answer at the start of `read` once all of it has arrived; `Ok(None)` while it is
    /// partial. An error means the bytes are not an answer this client understands: the
    /// connection cannot be trusted any further.
    pub fn answer(&self, read: &[u8]) -> Result<Option<Answer>, String> {
        match self.protocol {
            Protocol::Http => http_answer(read),
            Protocol::Resp => Ok(resp_answer(read)),
        }
    }
}

fn http_answer(read: &[u8]) -> Result<Option<Answer>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(read) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("not an HTTP/1.1 answer: {e}")),
    };
    let code = response.code.unwrap_or(0);
    let mut body_len = None;
    let mut closes = response.version == Some(0);
    for header in response.headers.iter() {
        let value = String::from_utf8_lossy(header.value);
        if header.name.eq_ignore_ascii_case("content-length") {
            body_len = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("bad Content-Length {value:?}"))?,
            );
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(format!(
                "the answer is sent with Transfer-Encoding {value}; bench reads answers with a Content-Length (the ID routes)"
            ));
        } else if header.name.eq_ignore_ascii_case("connection") {
            closes = value.eq_ignore_ascii_case("close");
        }
    }
    let body_len = match (body_len, code) {
        (Some(len), _) => len,
        (None, 204 | 304) => 0,
        (None, _) => return Err(format!("status {code} came without a Content-Length")),
    };
    let Some(body) = read.get(head..head + body_len) else {
        return Ok(None);
    };
    let outcome = if (200..300).contains(&code) {
        Ok(count_ids(body))
    } else {
        let reason = response.reason.unwrap_or("");
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
        Err(format!("status {code} {reason}: {}", text.trim()))
    };
    Ok(Some(Answer {
        len: head + body_len,
        outcome,
        closes,
    }))
}

/// `:N` is one ID; `-ERR …` is an error; anything else is not an answer to `INCR`.
fn resp_answer(read: &[u8]) -> Option<Answer> {
    let end = read.windows(2).position(|w| w == b"\r\n")?;
    let line = String::from_utf8_lossy(&read[1..end]);
    let outcome = match read.first() {
        Some(b':') => Ok(1),
        // The answer to AUTH; INCR never answers a simple string.
        Some(b'+') => Ok(0),
        Some(b'-') => Err(line.into_owned()),
        _ => Err(format!(
            "INCR answered {:?}, not an integer",
            String::from_utf8_lossy(&read[..end])
        )),
    };
    Some(Answer {
        len: end + 2,
        outcome,
        closes: false,
    })
}

/// IDs in a response body: the entries of a JSON `ids` array, or 1 for a text/plain answer
/// (Leaf's routes). Counted by commas so the client spends little time per response.
fn count_ids(body: &[u8]) -> u64 {
    match body.first() {
        Some(b'{') => {
            let Some(start) = body.windows(7).position(|w| w == b"\"ids\":[") else {
                return 0;
            };
            let rest = &body[start + 7..];
            if rest.first() == Some(&b']') {
                return 0;
            }
            1 + rest
                .iter()
                .take_while(|&&b| b != b']')
                .filter(|&&b| b == b',')
                .count() as u64
        }
        Some(_) => 1,
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http() -> Target {
        Target::parse("http://127.0.0.1:8080/v1/ids/a?count=2", None, None).unwrap()
    }

    #[test]
    fn builds_the_get_and_the_incr() {
        assert_eq!(
            http().request(),
            b"GET /v1/ids/a?count=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
        );
        let resp = Target::parse("redis://127.0.0.1:6379", Some("order"), None).unwrap();
        assert_eq!(resp.request(), b"*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n");
        assert_eq!(resp.addr.port(), 6379);
    }

    #[test]
    fn sends_the_token_as_each_protocol_expects() {
        let get = Target::parse("http://127.0.0.1:1/v1/ids/a", None, Some("sd_x")).unwrap();
        assert_eq!(
            get.request(),
            b"GET /v1/ids/a HTTP/1.1\r\nHost: 127.0.0.1:1\r\nAuthorization: Bearer sd_x\r\n\r\n"
        );
        assert_eq!(get.handshake(), None);
        let incr = Target::parse("redis://127.0.0.1:1", Some("k"), Some("sd_x")).unwrap();
        assert_eq!(
            incr.handshake(),
            Some(&b"*2\r\n$4\r\nAUTH\r\n$4\r\nsd_x\r\n"[..])
        );
        assert_eq!(incr.answer(b"+OK\r\n").unwrap().unwrap().outcome, Ok(0));
        let bad = Target::parse("http://127.0.0.1:1/", None, Some("a\r\nX-Evil: 1"));
        assert!(bad.err().unwrap().to_string().contains("control character"));
    }

    #[test]
    fn refuses_targets_it_cannot_load() {
        let err = |url: &str, incr: Option<&str>| {
            Target::parse(url, incr, None).err().unwrap().to_string()
        };
        assert!(err("ftp://127.0.0.1:1/", None).contains("ftp:// is not supported"));
        let tls = Target::parse("https://localhost:1/v1/ids/a", None, None).unwrap();
        assert_eq!(tls.tls_host.as_deref(), Some("localhost"));
        let plain = Target::parse("http://localhost:1/v1/ids/a", None, None).unwrap();
        assert_eq!(plain.tls_host, None);
        assert!(err("redis://127.0.0.1:6379", None).contains("needs --incr"));
        assert!(err("redis://127.0.0.1:6379/0", Some("k")).contains("only redis://HOST:PORT"));
        assert!(err("http://127.0.0.1:1/", Some("k")).contains("needs a redis://"));
        assert!(err("127.0.0.1:8080", None).contains("is not a URL"));
    }

    #[test]
    fn frames_http_answers_by_content_length() {
        let whole = b"HTTP/1.1 200 OK\r\ncontent-length: 24\r\n\r\n{\"name\":\"a\",\"ids\":[1,2]}";
        let t = http();
        for cut in 0..whole.len() {
            assert_eq!(t.answer(&whole[..cut]), Ok(None), "cut at {cut}");
        }
        let mut two = whole.to_vec();
        two.extend_from_slice(b"HTTP/1.1 200");
        let answer = t.answer(&two).unwrap().unwrap();
        assert_eq!(answer.len, whole.len());
        assert_eq!(answer.outcome, Ok(2));
        assert!(!answer.closes);

        let refused = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"e\":\"busy\"}";
        let answer = t.answer(refused).unwrap().unwrap();
        assert!(answer.closes);
        assert_eq!(
            answer.outcome,
            Err("status 503 Service Unavailable: {\"e\":\"busy\"}".into())
        );
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(t.answer(chunked).unwrap_err().contains("Transfer-Encoding"));
        assert!(t.answer(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
    }

    #[test]
    fn frames_resp_answers_by_line() {
        let t = Target::parse("redis://127.0.0.1:6379", Some("k"), None).unwrap();
        assert_eq!(t.answer(b":12"), Ok(None));
        let answer = t.answer(b":12\r\n:13\r\n").unwrap().unwrap();
        assert_eq!((answer.len, answer.outcome), (5, Ok(1)));
        let answer = t.answer(b"-ERR no such tag\r\n").unwrap().unwrap();
        assert_eq!(answer.outcome, Err("ERR no such tag".into()));
        let answer = t.answer(b"$2\r\nab\r\n").unwrap().unwrap();
        assert!(answer.outcome.unwrap_err().contains("not an integer"));
    }

    proptest::proptest! {
        /// Whatever a server sends, the framer answers without panicking, and an answer it
        /// finds lies within what was read.
        #[test]
        fn framing_any_bytes_is_safe(read in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            for target in [http(), Target::parse("redis://127.0.0.1:6379", Some("k"), None).unwrap()] {
                if let Ok(Some(answer)) = target.answer(&read) {
                    proptest::prop_assert!(answer.len <= read.len());
                }
            }
        }
    }

    #[test]
    fn counts_ids_in_both_body_shapes() {
        assert_eq!(count_ids(br#"{"name":"a","ids":["1","2","3"]}"#), 3);
        assert_eq!(count_ids(br#"{"name":"a","ids":["1"]}"#), 1);
        assert_eq!(count_ids(br#"{"name":"a","ids":[]}"#), 0);
        assert_eq!(count_ids(b"123456"), 1);
        assert_eq!(count_ids(b""), 0);
    }
}
