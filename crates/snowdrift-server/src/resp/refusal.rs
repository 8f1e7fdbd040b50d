//! Refusals as RESP error replies: the API's errors mapped onto the codes Redis clients
//! know, so a client can tell "log in" from "not allowed" from "try again later".
//!
//! | API error | reply |
//! | --- | --- |
//! | 401 `unauthorized` | `-NOAUTH` (no token yet) / `-WRONGPASS` (AUTH with an unknown token) |
//! | 403 `forbidden` | `-NOPERM` |
//! | 429 `rate_limited`, 503 `unavailable` | `-TRYAGAIN` |
//! | a kind that cannot do what was asked | `-WRONGTYPE` |
//! | anything else (400, 404, 503 `exhausted`) | `-ERR` |

use crate::error::{Error, ErrorKind};

use super::reply;

/// An error reply: its code (`ERR`, `NOAUTH`, ...) and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The first word of the reply.
    pub code: &'static str,
    /// What happened and what to do.
    pub message: String,
}

impl Refusal {
    /// A refusal with `code`.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// `-ERR message`.
    pub fn err(message: impl Into<String>) -> Self {
        Self::new("ERR", message)
    }

    /// `-WRONGTYPE message`: the generator's kind cannot do what was asked.
    pub fn wrong_type(message: impl Into<String>) -> Self {
        Self::new("WRONGTYPE", message)
    }

    /// Appends the reply to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        reply::error(out, self.code, &self.message);
    }
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Self {
        let code = match e.kind() {
            ErrorKind::Unauthorized => "NOAUTH",
            ErrorKind::Forbidden => "NOPERM",
            ErrorKind::RateLimited | ErrorKind::Unavailable => "TRYAGAIN",
            _ => "ERR",
        };
        Self::new(code, e.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_errors_get_the_codes_redis_clients_know() {
        let code = |e: Error| Refusal::from(e).code;
        assert_eq!(code(Error::not_found("x")), "ERR");
        assert_eq!(code(Error::invalid("x")), "ERR");
        assert_eq!(code(Error::unavailable("x")), "TRYAGAIN");
        assert_eq!(code(Error::exhausted("x")), "ERR");
        assert_eq!(code(Error::forbidden("x")), "NOPERM");
        assert_eq!(code(Error::unauthorized("x")), "NOAUTH");
        assert_eq!(
            code(Error::rate_limited("x", std::time::Duration::from_secs(1))),
            "TRYAGAIN"
        );
        let mut out = Vec::new();
        Refusal::from(Error::not_found("no tag \"a\"")).write(&mut out);
        assert_eq!(out, b"-ERR no tag \"a\"\r\n");
    }
}
