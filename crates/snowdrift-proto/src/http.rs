//! The HTTP API: its routes, and the JSON shapes of its bodies.
//!
//! [`Route`] is the one route table: the server builds its router from it, its HTTP/1.1
//! fast path takes the routes that have a [`Route::fast_prefix`], its auth gives each a
//! role, and a client builds URLs from [`Route::pattern`]. IDs in JSON are strings, so
//! JavaScript loses no precision.

use serde::{Deserialize, Serialize};

/// A route of the HTTP API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `GET /v1/ids/{name}`: new IDs of a generator or tag ([`Ids`], or [`Runs`] with
    /// `form=runs`).
    Ids,
    /// `GET /v1/ids/{name}/decode/{id}`: the fields inside an ID.
    Decode,
    /// `GET`, `POST /v1/tags`: list segment tags ([`Tags`]), create one ([`NewTag`]).
    Tags,
    /// `GET`, `PATCH /v1/tags/{tag}`: one tag ([`Tag`]), change it ([`TagPatch`]).
    Tag,
    /// `GET /v1/generators`: every generator's kind and state.
    Generators,
    /// Leaf's `GET|POST /api/segment/get/{tag}`: one segment ID as text.
    LeafSegment,
    /// Leaf's `GET|POST /api/snowflake/get/{key}`: one snowflake ID as text.
    LeafSnowflake,
    /// `GET /api/snowflake/decode/{id}`: a snowflake ID's fields, Leaf-style.
    LeafDecode,
    /// Leaf's monitor `GET|POST /decodeSnowflakeId?snowflakeId=ID`: `timestamp`,
    /// `workerId`, `sequenceId`, as Leaf names them.
    LeafDecodeQuery,
    /// Leaf's monitor page `GET /cache`: the segment buffers, per tag (HTML).
    LeafCache,
    /// Leaf's monitor page `GET /db`: the tag table (HTML).
    LeafDb,
    /// Didi Tinyid's `/tinyid/id/nextId`, any method: IDs as Tinyid's JSON
    /// ([`crate::tinyid::Answer`] of a list).
    TinyidNextId,
    /// Tinyid's `/tinyid/id/nextIdSimple`: IDs as text, comma-separated.
    TinyidNextIdSimple,
    /// Tinyid's `/tinyid/id/nextSegmentId`: a segment for the client to issue itself, as
    /// Tinyid's JSON ([`crate::tinyid::Answer`] of a [`crate::tinyid::Segment`]).
    TinyidNextSegmentId,
    /// Tinyid's `/tinyid/id/nextSegmentIdSimple`: the segment as
    /// `currentId,loadingId,maxId,delta,remainder`, what Tinyid's own client asks for.
    TinyidNextSegmentIdSimple,
    /// `GET /healthz`: the process is up.
    Healthz,
    /// `GET /readyz`: every generator can issue.
    Readyz,
    /// `GET /metrics`: Prometheus text.
    Metrics,
    /// `GET /openapi.json`: the API's description.
    OpenApi,
    /// `GET /ui`: the dashboard.
    Ui,
    /// `GET /ui/app.js`: the dashboard's script.
    UiScript,
    /// `GET /ui/style.css`: the dashboard's style sheet.
    UiStyle,
}

impl Route {
    /// Every route.
    pub const ALL: [Route; 22] = [
        Route::Ids,
        Route::Decode,
        Route::Tags,
        Route::Tag,
        Route::Generators,
        Route::LeafSegment,
        Route::LeafSnowflake,
        Route::LeafDecode,
        Route::LeafDecodeQuery,
        Route::LeafCache,
        Route::LeafDb,
        Route::TinyidNextId,
        Route::TinyidNextIdSimple,
        Route::TinyidNextSegmentId,
        Route::TinyidNextSegmentIdSimple,
        Route::Healthz,
        Route::Readyz,
        Route::Metrics,
        Route::OpenApi,
        Route::Ui,
        Route::UiScript,
        Route::UiStyle,
    ];

    /// The path pattern, parameters in braces (axum's and OpenAPI's syntax).
    pub const fn pattern(self) -> &'static str {
        match self {
            Route::Ids => "/v1/ids/{name}",
            Route::Decode => "/v1/ids/{name}/decode/{id}",
            Route::Tags => "/v1/tags",
            Route::Tag => "/v1/tags/{tag}",
            Route::Generators => "/v1/generators",
            Route::LeafSegment => "/api/segment/get/{tag}",
            Route::LeafSnowflake => "/api/snowflake/get/{key}",
            Route::LeafDecode => "/api/snowflake/decode/{id}",
            Route::LeafDecodeQuery => "/decodeSnowflakeId",
            Route::LeafCache => "/cache",
            Route::LeafDb => "/db",
            Route::TinyidNextId => "/tinyid/id/nextId",
            Route::TinyidNextIdSimple => "/tinyid/id/nextIdSimple",
            Route::TinyidNextSegmentId => "/tinyid/id/nextSegmentId",
            Route::TinyidNextSegmentIdSimple => "/tinyid/id/nextSegmentIdSimple",
            Route::Healthz => "/healthz",
            Route::Readyz => "/readyz",
            Route::Metrics => "/metrics",
            Route::OpenApi => "/openapi.json",
            Route::Ui => "/ui",
            Route::UiScript => "/ui/app.js",
            Route::UiStyle => "/ui/style.css",
        }
    }

    /// The methods it answers; any other gets 405.
    pub const fn methods(self) -> &'static [&'static str] {
        match self {
            Route::Tags => &["GET", "POST"],
            Route::Tag => &["GET", "PATCH"],
            // Leaf maps these without a method, so its clients may POST.
            Route::LeafSegment | Route::LeafSnowflake | Route::LeafDecodeQuery => &["GET", "POST"],
            // Tinyid's controller maps them for every method too; its client POSTs.
            Route::TinyidNextId
            | Route::TinyidNextIdSimple
            | Route::TinyidNextSegmentId
            | Route::TinyidNextSegmentIdSimple => &["GET", "POST", "PUT", "PATCH", "DELETE"],
            _ => &["GET"],
        }
    }

    /// Whether it is one of Tinyid's routes, which `[tinyid] enabled = false` turns off.
    pub const fn is_tinyid(self) -> bool {
        matches!(
            self,
            Route::TinyidNextId
                | Route::TinyidNextIdSimple
                | Route::TinyidNextSegmentId
                | Route::TinyidNextSegmentIdSimple
        )
    }

    /// For a single-ID route whose one parameter ends the path, the path up to it: such a
    /// GET is answered on the server's HTTP/1.1 fast path ([`crate::wire::http1`]).
    pub const fn fast_prefix(self) -> Option<&'static str> {
        match self {
            Route::Ids => Some("/v1/ids/"),
            Route::LeafSegment => Some("/api/segment/get/"),
            Route::LeafSnowflake => Some("/api/snowflake/get/"),
            _ => None,
        }
    }

    /// The route whose pattern is `pattern`.
    pub fn from_pattern(pattern: &str) -> Option<Route> {
        Route::ALL.into_iter().find(|r| r.pattern() == pattern)
    }
}

/// The body of `GET /v1/ids/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ids {
    /// The generator or tag.
    pub name: String,
    /// The new IDs, in the request's `format` (decimal by default).
    pub ids: Vec<String>,
}

/// The body of `GET /v1/ids/{name}?form=runs`: 64-bit IDs as runs, so a client can cache a
/// range without a string per ID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runs {
    /// The generator or tag.
    pub name: String,
    /// Its kind (`snowflake`, `segment`, ...).
    pub kind: String,
    /// The IDs, in the order issued.
    pub runs: Vec<Run>,
}

/// IDs `first, first + stride, ...`, `count` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    /// The first ID, as a string like every ID in JSON.
    #[serde(with = "decimal")]
    pub first: u64,
    /// How many IDs (at least 1).
    pub count: u64,
    /// The difference between neighbours (1 unless striped or interleaved).
    pub stride: u64,
}

impl Run {
    /// The IDs in order; a run that would pass `u64::MAX` (never sent by a snowdrift
    /// server) stops there.
    pub fn ids(&self) -> impl Iterator<Item = u64> + use<> {
        let Run {
            first,
            count,
            stride,
        } = *self;
        (0..count).map_while(move |k| first.checked_add(k.checked_mul(stride)?))
    }
}

/// A `u64` written as a decimal string, so JavaScript loses no precision.
mod decimal {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a decimal ID")))
    }
}

/// The body of every error: `{"error": {"code": "...", "message": "..."}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The inside of [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A stable, machine-readable code: `invalid_request`, `unauthorized`, `forbidden`,
    /// `not_found`, `method_not_allowed`, `conflict`, `payload_too_large`, `rate_limited`,
    /// `unavailable`, `exhausted`.
    pub code: String,
    /// What happened and what to do, for a person.
    pub message: String,
}

/// A segment tag, as `/v1/tags` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    /// Its name.
    pub tag: String,
    /// The highest ID claimed so far, as a string like every ID.
    pub max_id: String,
    /// IDs per segment.
    pub step: i64,
    /// What it is for.
    pub description: Option<String>,
    /// The template its numbers are rendered through (`ORD{date:%Y%m%d}{seq:06}`), for a
    /// tag that has one; absent for Leaf's numeric tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The UTC offset the template's dates are in (`+08:00`), with a template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utc_offset: Option<String>,
    /// The period `max_id` counts in (`20261122`), with a template whose count has started
    /// in a dated period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<String>,
}

/// The body of `GET /v1/tags`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tags {
    /// Every tag in the store.
    pub tags: Vec<Tag>,
}

/// The body of `POST /v1/tags`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTag {
    /// The name; it must not be a generator's.
    pub tag: String,
    /// IDs per segment (the server's default when absent, 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A template to render its numbers through, counting from 1 each period it names
    /// (`ORD{date:%Y%m%d}{seq:06}`); SQL stores only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// The UTC offset the template's dates and periods are in, `+HH:MM` or `-HH:MM`
    /// (UTC when absent); only with a template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utc_offset: Option<String>,
}

/// The body of `PATCH /v1/tags/{tag}`: what to change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagPatch {
    /// A new step, used from the next segment on.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub step: Option<i64>,
    /// A new description.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
}

/// A field that may be left out but, when given, is a value: `null` is refused (it would
/// read as "left out", so `{"description": null}` would look like an update and be none).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_patch_field_is_a_value_or_left_out_never_null() {
        let patch: TagPatch = serde_json::from_str(r#"{"step": 5}"#).unwrap();
        assert_eq!((patch.step, patch.description), (Some(5), None));
        assert!(serde_json::from_str::<TagPatch>(r#"{"description": null}"#).is_err());
        assert!(serde_json::from_str::<TagPatch>(r#"{"step": null, "description": "x"}"#).is_err());
    }

    #[test]
    fn patterns_are_unique_and_found_again() {
        for route in Route::ALL {
            assert_eq!(Route::from_pattern(route.pattern()), Some(route));
            if let Some(prefix) = route.fast_prefix() {
                let param = &route.pattern()[prefix.len()..];
                assert!(
                    param.starts_with('{') && param.ends_with('}') && !param.contains('/'),
                    "{route:?}: a fast route's parameter ends its path"
                );
            }
        }
        assert_eq!(Route::from_pattern("/v1/nothing"), None);
    }

    #[test]
    fn the_error_body_is_the_contract_s() {
        let body: ErrorBody =
            serde_json::from_str(r#"{"error": {"code": "not_found", "message": "no tag"}}"#)
                .unwrap();
        assert_eq!(body.error.code, "not_found");
        let runs: Runs = serde_json::from_str(
            r#"{"name": "o", "kind": "segment", "runs": [{"first": "18446744073709551610", "count": 3, "stride": 2}]}"#,
        )
        .unwrap();
        assert_eq!(
            runs.runs[0].ids().collect::<Vec<_>>(),
            [u64::MAX - 5, u64::MAX - 3, u64::MAX - 1]
        );
        let text = serde_json::to_string(&runs).unwrap();
        assert!(text.contains(r#""first":"18446744073709551610""#), "{text}");
        let e = serde_json::from_str::<NewTag>(r#"{"tag": "a", "stp": 5}"#).unwrap_err();
        assert!(e.to_string().contains("stp"), "{e}");
    }
}
