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
//! Every answer is HTTP 200, as Tinyid's: a missing, unknown or out-of-scope token, and a
//! missing or empty `bizType` (Tinyid's token check `canVisit(bizType, token)` fails for
//! one), is code 5 `token is error`, anything else code 6 with the reason; the `*Simple`
//! routes answer every error with an empty body, which Tinyid's client takes as a failed
//! fetch. The token is snowdrift's own (hashed, scoped, rate-limited), sent as the `token`
//! parameter, or as `Authorization: Bearer` when there is none. Parameters the routes do
//! not take are ignored, as Spring ignores them.
//!
//! `batchSize` is read as Spring reads Tinyid's `Integer batchSize` ([`batch_size`]):
//! missing, empty or blank is 1; above `limits.max_count` it is cut to it, as Tinyid cuts it
//! to `batch.size.max`, so a caller that asks for more gets what Tinyid would have given it
//! rather than nothing. Zero or negative asks for no IDs: `nextId` answers an empty list and
//! `nextIdSimple` an empty body, as Tinyid's do, and nothing is issued. Text Spring cannot
//! read as a Java `int` is code 6 (Tinyid answered it with Spring's HTTP 400 page).

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
    let params = Params::read(request.query, request.body).map_err(Refusal::system)?;
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
        // Tinyid's token check refuses a request without one, so its answer is code 5.
        return Err(Refusal {
            code: TOKEN_ERROR,
            reason: if ids {
                "give bizType: the generator (any with 64-bit IDs) or segment tag to take IDs \
                 from"
            } else {
                "give bizType: the segment tag to take a segment of"
            }
            .to_string(),
        });
    };
    if ids {
        let count = batch_size(params.batch_size.as_deref(), state.max_count)?;
        let ids = next_ids(state, biz_type, count).await?;
        if ids.is_empty() && request.route == Route::TinyidNextIdSimple {
            // Tinyid's nextIdSimple fails on an empty list (it cuts the last comma of none).
            return Err(Refusal::system(format!(
                "batchSize {} asks for no IDs; Tinyid's nextIdSimple answers that with an \
                 empty body (its nextId with an empty list)",
                params.batch_size.as_deref().unwrap_or_default().trim()
            )));
        }
        Ok(Taken::Ids(ids))
    } else {
        Ok(Taken::Segment(next_segment(state, biz_type).await?))
    }
}

/// `batchSize` as Spring reads Tinyid's `Integer batchSize`, as a count of IDs: missing,
/// empty or blank is 1, zero or negative 0 (no IDs), above `max` `max`. What Spring cannot
/// read as an `int` is refused.
fn batch_size(text: Option<&str>, max: u64) -> Result<u64, Refusal> {
    let text = text.unwrap_or_default();
    match java_int(text) {
        Ok(None) => Ok(1),
        Ok(Some(n)) => Ok(u64::try_from(n).map_or(0, |n| n.min(max))),
        Err(()) => Err(Refusal::system(format!(
            "batchSize must be a whole number that fits a Java int; from 1 to {max} (this \
             server's limits.max_count; a larger one is cut to it, as Tinyid cuts it to \
             batch.size.max) are issued, zero or less asks for none; got {}",
            quoted(text)
        ))),
    }
}

/// `text` read as Spring reads a request parameter into an `Integer`: `None` when it holds
/// nothing but whitespace; otherwise, all whitespace taken out (Spring's
/// `trimAllWhitespace`), a hex number (`0x`, `0X` or `#`, after an optional `-`) or a
/// decimal one with an optional sign, in the range of a Java `int`. Only ASCII digits are
/// read (Java would read other scripts' too; no client sends them).
fn java_int(text: &str) -> Result<Option<i32>, ()> {
    // Java's Character.isWhitespace: Unicode's spaces but the no-break ones, and the
    // separators U+001C to U+001F; not U+0085.
    let java_space = |c: char| {
        matches!(c, '\u{1c}'..='\u{1f}')
            || (c.is_whitespace() && !matches!(c, '\u{a0}' | '\u{2007}' | '\u{202f}' | '\u{85}'))
    };
    if text.chars().all(java_space) {
        return Ok(None);
    }
    let trimmed: String = text.chars().filter(|&c| !java_space(c)).collect();
    let (negative, rest) = match trimmed.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, trimmed.strip_prefix('+').unwrap_or(&trimmed)),
    };
    let hex = ["0x", "0X", "#"].iter().find_map(|p| rest.strip_prefix(p));
    // Integer.decode takes no `+` before a hex number, and no sign after the prefix.
    if hex.is_some() && trimmed.starts_with('+') {
        return Err(());
    }
    let (digits, radix) = hex.map_or((rest, 10), |h| (h, 16));
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(());
    }
    let magnitude = i64::from_str_radix(digits, radix).map_err(|_| ())?;
    i32::try_from(if negative { -magnitude } else { magnitude })
        .map(Some)
        .map_err(|_| ())
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
    // A count of none is answered without asking the generator, which is then sure to
    // issue nothing. Tinyid looked the bizType up first, so a tag that does not exist (or
    // issues text) is refused as for any count: one read of the store, no claim.
    if count == 0 {
        if let Some(tag) = source.segment() {
            let stored = tag
                .service()
                .get_tag(tag.tag())
                .await
                .map_err(Error::from)?;
            if stored.template.is_some() {
                return Err(text());
            }
        }
        return Ok(Vec::new());
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
    fn batch_size_as_spring_reads_tinyid_s_integer() {
        let ok = |t: Option<&str>| batch_size(t, 100).map_err(|r| r.reason);
        assert_eq!(ok(None), Ok(1));
        assert_eq!(ok(Some("")), Ok(1));
        assert_eq!(ok(Some("  ")), Ok(1));
        assert_eq!(ok(Some(" 7 ")), Ok(7));
        assert_eq!(ok(Some("1 0")), Ok(10));
        assert_eq!(ok(Some("+7")), Ok(7));
        assert_eq!(ok(Some("007")), Ok(7));
        assert_eq!(ok(Some("0x10")), Ok(16));
        assert_eq!(ok(Some("#1F")), Ok(31));
        assert_eq!(ok(Some("100")), Ok(100));
        assert_eq!(ok(Some("101")), Ok(100));
        assert_eq!(ok(Some("2147483647")), Ok(100));
        for none in ["0", "000", "-0", "-1", "-2147483648", "-0x10"] {
            assert_eq!(ok(Some(none)), Ok(0), "{none}");
        }
        for bad in [
            "abc",
            "1.5",
            "1e3",
            "+",
            "-",
            "0x",
            "+0x10",
            "0x-1",
            "--1",
            "2147483648",
            "-2147483649",
            "99999999999999999999999",
            "\u{a0}7",
        ] {
            let reason = ok(Some(bad)).unwrap_err();
            assert!(
                reason.contains("from 1 to 100") && reason.contains(&format!("{bad:?}")),
                "{bad}: {reason}"
            );
        }
    }
}
