//! The answers of Didi Tinyid's routes (its `IdContronller`), so Tinyid's own client and
//! callers written for Tinyid work unchanged:
//!
//! - `nextId` (`bizType`, `batchSize`, `token`): `{"data":[2,3],"code":200,"message":""}`,
//!   from any generator with 64-bit IDs or segment tag;
//! - `nextIdSimple`: the same IDs as `2,3`;
//! - `nextSegmentId` (`bizType`, `token`): a segment the client issues itself,
//!   `{"data":{"maxId":…,"loadingId":…,"currentId":…,"delta":…,"remainder":…},…}`,
//!   durably claimed from the store first (`segment`);
//! - `nextSegmentIdSimple`: the same segment as `currentId,loadingId,maxId,delta,remainder`,
//!   which is what Tinyid's client asks for.
//!
//! Every answer is HTTP 200, as Tinyid's: a missing, unknown or out-of-scope token is code 5
//! `token is error`, anything else code 6 with the reason; the `*Simple` routes answer every
//! error with an empty body, which Tinyid's client takes as a failed fetch. The token is
//! snowdrift's own (hashed, scoped, rate-limited), sent as the `token` parameter, or as
//! `Authorization: Bearer` when there is none.
//!
//! `batchSize` missing or empty is 1, as Tinyid's; above `limits.max_count` it is cut to it,
//! as Tinyid cuts it to `batch.size.max`, so a caller that asks for more gets what Tinyid
//! would have given it rather than nothing. Zero, negative or not a number is code 6 (Tinyid
//! answered zero or less with an empty list, or its `*Simple` routes an empty body, and a
//! word with Spring's 400 page).

mod params;
mod segment;

pub(crate) use params::{Body, masked};

use snowdrift_proto::http::Route;
use snowdrift_proto::tinyid::{
    Answer as Body200, OK, SYSTEM_ERROR, Segment, TOKEN_ERROR, TOKEN_ERROR_MESSAGE,
};

use super::{Answer, Extra, Status};
use crate::auth::Target;
use crate::error::{Error, ErrorKind, quoted};
use crate::kinds::{IdSource, Ids};
use crate::state::{AppState, issue};
use params::Params;

/// Tinyid's JSON content type, as its Spring Boot server sends it.
const JSON_UTF8: &str = "application/json;charset=UTF-8";
/// The `*Simple` routes' content type, as Tinyid's server sends it.
const TEXT_UTF8: &str = "text/plain;charset=UTF-8";

/// One request to a Tinyid route.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// Which of the four.
    pub(crate) route: Route,
    /// The raw query string.
    pub(crate) query: Option<&'a str>,
    /// The body.
    pub(crate) body: Body<'a>,
    /// The `Authorization` header, for a request without a `token` parameter.
    pub(crate) authorization: Option<&'a str>,
}

/// The answer to a request, with the Tinyid code it carries and, for an error, the reason
/// (which the `*Simple` routes do not send), for the log and the metrics.
#[derive(Debug)]
pub(crate) struct Answered {
    /// What to send.
    pub(crate) answer: Answer,
    /// [`OK`], [`TOKEN_ERROR`] or [`SYSTEM_ERROR`].
    pub(crate) code: i32,
    /// Why, for an error.
    pub(crate) reason: Option<String>,
}

/// What went wrong, as Tinyid tells it: its code and the reason.
struct Refusal {
    code: i32,
    reason: String,
}

impl Refusal {
    fn system(reason: impl Into<String>) -> Self {
        Self {
            code: SYSTEM_ERROR,
            reason: reason.into(),
        }
    }
}

impl From<Error> for Refusal {
    fn from(e: Error) -> Self {
        // Tinyid's "token is error" is every refusal of the token itself; a spent rate is
        // not one, and says when to come back.
        let code = match e.kind() {
            ErrorKind::Unauthorized | ErrorKind::Forbidden => TOKEN_ERROR,
            _ => SYSTEM_ERROR,
        };
        Self {
            code,
            reason: e.message().to_string(),
        }
    }
}

/// What a successful request gets.
enum Taken {
    Ids(Vec<u64>),
    Segment(Segment),
}

/// The answer to `request`, one of Tinyid's routes.
pub(crate) async fn answer(state: &AppState, request: Request<'_>) -> Answered {
    let simple = matches!(
        request.route,
        Route::TinyidNextIdSimple | Route::TinyidNextSegmentIdSimple
    );
    match take(state, request).await {
        Ok(taken) => Answered {
            answer: success(&taken, simple),
            code: OK,
            reason: None,
        },
        Err(Refusal { code, reason }) => {
            let body = if simple {
                Vec::new()
            } else {
                let message = if code == TOKEN_ERROR {
                    TOKEN_ERROR_MESSAGE
                } else {
                    reason.as_str()
                };
                json(&Body200::<()>::error(code, message))
            };
            Answered {
                answer: ok_answer(simple, body),
                code,
                reason: Some(reason),
            }
        }
    }
}

/// The IDs or the segment `request` asks for.
async fn take(state: &AppState, request: Request<'_>) -> Result<Taken, Refusal> {
    let ids = matches!(
        request.route,
        Route::TinyidNextId | Route::TinyidNextIdSimple
    );
    let params = Params::read(request.query, request.body, ids).map_err(Refusal::system)?;
    let biz_type = params.biz_type.as_deref().filter(|b| !b.is_empty());
    // The token first, as Tinyid checks it: who may not ask learns nothing of the names.
    let target = biz_type.map_or(Target::Any, Target::Name);
    {
        // One set of tokens for the decision, let go before anything is awaited.
        let tokens = state.auth.current();
        match (params.token.as_deref(), request.authorization) {
            (None, Some(header)) => tokens.authorize(Some(header), target, super::access::ISSUE),
            (token, _) => tokens.authorize_token(token, target, super::access::ISSUE),
        }?;
    }
    let Some(biz_type) = biz_type else {
        return Err(Refusal::system(if ids {
            "give bizType: the generator (any with 64-bit IDs) or segment tag to take IDs from"
        } else {
            "give bizType: the segment tag to take a segment of"
        }));
    };
    if ids {
        let count = batch_size(params.batch_size.as_deref(), state.max_count)?;
        Ok(Taken::Ids(next_ids(state, biz_type, count).await?))
    } else {
        Ok(Taken::Segment(next_segment(state, biz_type).await?))
    }
}

/// `batchSize` as Tinyid reads it: missing or empty is 1, above `max` is `max`; zero,
/// negative or not a number is refused.
fn batch_size(text: Option<&str>, max: u64) -> Result<u64, Refusal> {
    let text = text.map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Ok(1);
    }
    let digits = text.strip_prefix('+').unwrap_or(text);
    let whole = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let nonzero = digits.bytes().any(|b| b != b'0');
    if !whole || !nonzero {
        return Err(Refusal::system(format!(
            "batchSize must be a whole number from 1 to {max} (this server's \
             limits.max_count; a larger one is cut to it, as Tinyid cuts it to batch.size.max), \
             got {}",
            quoted(text)
        )));
    }
    // Digits past u64 are a number above `max` all the same.
    Ok(digits.parse::<u64>().map_or(max, |n| n.min(max)))
}

/// `count` IDs of the generator or tag `name`: numbers, as Tinyid's are.
async fn next_ids(state: &AppState, name: &str, count: u64) -> Result<Vec<u64>, Refusal> {
    let source = state.generators.get(name)?;
    let text = || {
        Refusal::system(format!(
            "bizType {} issues text IDs ({}), and Tinyid's answers are numbers: take them from \
             /v1/ids/{name}",
            quoted(name),
            source.kind().as_str()
        ))
    };
    // Checked before issuing, so a refused request wastes no ID.
    if !crate::format::is_64_bit(&source) {
        return Err(text());
    }
    let runs = match issue(name, &source, count, None).await? {
        Ids::Runs(runs) => runs,
        // A tag with a template, served for the first time by this request.
        Ids::Text(_) => return Err(text()),
    };
    let ids: Vec<u64> = runs.iter().flat_map(|r| r.iter()).collect();
    // Tinyid's client and callers read `long`s.
    if ids.iter().any(|&id| i64::try_from(id).is_err()) {
        return Err(Refusal::system(format!(
            "bizType {} issued an ID above 2^63 - 1, which Tinyid's callers cannot read as a \
             Java long",
            quoted(name)
        )));
    }
    Ok(ids)
}

/// A segment of tag `name` (or of the tag a `segment` generator of that name serves),
/// claimed from the store for the client alone.
async fn next_segment(state: &AppState, name: &str) -> Result<Segment, Refusal> {
    let source = state.generators.get(name)?;
    let Some(tag) = source.segment() else {
        return Err(Refusal::system(format!(
            "bizType {} is a {} generator, not a segment tag: nextSegmentId hands out segments \
             of tags (nextId serves any generator with 64-bit IDs)",
            quoted(name),
            source.kind().as_str()
        )));
    };
    let service = tag.service();
    let claim = service
        .claim_for_client(tag.tag())
        .await
        .map_err(Error::from)?;
    Ok(segment::of_claim(
        claim.ids,
        service.config().chain.prefetch_percent,
    )?)
}

/// The body of a success: Tinyid's JSON, or its text.
fn success(taken: &Taken, simple: bool) -> Answer {
    let body = match (taken, simple) {
        (Taken::Ids(ids), false) => json(&Body200::ok(ids)),
        (Taken::Segment(segment), false) => json(&Body200::ok(segment)),
        (Taken::Ids(ids), true) => {
            let mut text = String::with_capacity(ids.len() * 20);
            for (i, id) in ids.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&id.to_string());
            }
            text.into_bytes()
        }
        (Taken::Segment(segment), true) => segment.to_simple().into_bytes(),
    };
    ok_answer(simple, body)
}

/// Tinyid answers everything with 200.
fn ok_answer(simple: bool, body: Vec<u8>) -> Answer {
    Answer {
        status: Status::OK,
        content_type: if simple { TEXT_UTF8 } else { JSON_UTF8 },
        body,
        extra: Extra::default(),
    }
}

fn json(body: &impl serde::Serialize) -> Vec<u8> {
    // Plain numbers and strings: serde_json cannot fail on them.
    serde_json::to_vec(body).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_size_as_tinyid_reads_it() {
        let ok = |t: Option<&str>| batch_size(t, 100).map_err(|r| r.reason);
        assert_eq!(ok(None), Ok(1));
        assert_eq!(ok(Some("")), Ok(1));
        assert_eq!(ok(Some(" 7 ")), Ok(7));
        assert_eq!(ok(Some("+7")), Ok(7));
        assert_eq!(ok(Some("100")), Ok(100));
        assert_eq!(ok(Some("101")), Ok(100));
        assert_eq!(ok(Some("99999999999999999999999")), Ok(100));
        for bad in ["0", "000", "-1", "-0", "abc", "1.5", "0x10", "1e3", "+"] {
            let reason = ok(Some(bad)).unwrap_err();
            assert!(
                reason.contains("from 1 to 100") && reason.contains(&format!("{bad:?}")),
                "{bad}: {reason}"
            );
        }
    }
}
