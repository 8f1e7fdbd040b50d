//! The answers every transport gives, in no transport's types: what a request for IDs is
//! answered with ([`ids`], [`leaf`], [`tinyid`]), how a query string is read ([`query`]), what a refusal
//! says and with which status ([`refusal`]), and which role and names each route needs
//! ([`access`]). The transports call these and only put the result on their wire: the fast
//! path (`crate::fast`) and the router (`crate::http`) write an [`Answer`] as an HTTP
//! response, gRPC (`crate::grpc`) and RESP (`crate::resp`) take the same refusals and the
//! same access rule for a name.
//!
//! Nothing here knows axum, hyper or tonic: a status is a [`Status`] number, which each
//! HTTP transport maps to its own type.

pub(crate) mod access;
pub(crate) mod ids;
pub(crate) mod leaf;
pub(crate) mod query;
pub(crate) mod refusal;
pub(crate) mod tinyid;

pub use refusal::{body, www_authenticate};

use crate::error::Error;

/// An HTTP status, as a number: only the ones this layer answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Status(u16);

impl Status {
    /// 200.
    pub(crate) const OK: Status = Status(200);
    /// 400.
    pub(crate) const BAD_REQUEST: Status = Status(400);
    /// 401.
    pub(crate) const UNAUTHORIZED: Status = Status(401);
    /// 403.
    pub(crate) const FORBIDDEN: Status = Status(403);
    /// 404.
    pub(crate) const NOT_FOUND: Status = Status(404);
    /// 409.
    pub(crate) const CONFLICT: Status = Status(409);
    /// 414.
    pub(crate) const URI_TOO_LONG: Status = Status(414);
    /// 429.
    pub(crate) const TOO_MANY_REQUESTS: Status = Status(429);
    /// 431.
    pub(crate) const REQUEST_HEADER_FIELDS_TOO_LARGE: Status = Status(431);
    /// 500.
    pub(crate) const INTERNAL_SERVER_ERROR: Status = Status(500);
    /// 503.
    pub(crate) const SERVICE_UNAVAILABLE: Status = Status(503);

    /// The number.
    pub(crate) const fn code(self) -> u16 {
        self.0
    }
}

/// The headers a refusal adds beside its body: `www-authenticate` (401, 403, RFC 6750) and
/// `retry-after` (429, RFC 9110).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extra {
    /// `www-authenticate`'s value.
    pub(crate) www_authenticate: Option<&'static str>,
    /// `retry-after`, in whole seconds.
    pub(crate) retry_after: Option<u64>,
}

/// `application/json`.
pub(crate) const JSON: &str = "application/json";

/// One answer to an HTTP request: its status, the type and bytes of its body, and the
/// headers a refusal adds. The transport adds its own (`content-length`, `date`,
/// `x-content-type-options`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    pub(crate) status: Status,
    pub(crate) content_type: &'static str,
    pub(crate) body: Vec<u8>,
    pub(crate) extra: Extra,
}

impl Answer {
    /// 200 with a JSON `body`.
    pub(crate) fn json(body: Vec<u8>) -> Self {
        Self {
            status: Status::OK,
            content_type: JSON,
            body,
            extra: Extra::default(),
        }
    }

    /// The refusal `e`: its status, the contract's JSON error body, and its headers.
    pub(crate) fn refused(e: &Error) -> Self {
        Self {
            status: refusal::status(e.kind()),
            content_type: JSON,
            body: body(e.code(), e.message()),
            extra: refusal::extra(e),
        }
    }
}
