//! The wire messages built from the server's own values: a batch of [`Ids`] as an
//! [`pb::IdBatch`], the decoded fields (the same JSON the HTTP API returns) as a
//! [`pb::DecodeResponse`], and the decoding itself, which depends on the generator's kind.

use serde_json::Value;
use snowdrift_core::codec::Codec;

use super::pb;
use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{IdSource, Ids, Source};
use crate::state::Generators;

/// `ids` from generator `name` of `kind` as one message: runs stay runs, text stays text,
/// and with a `codec` (a request's `format`) runs become text in that format.
pub fn batch(
    name: &str,
    kind: Kind,
    ids: Ids,
    codec: Option<&Codec>,
) -> Result<pb::IdBatch, Error> {
    let count = ids.len();
    let (runs, text) = match (ids, codec) {
        (Ids::Runs(runs), Some(codec)) => (
            Vec::new(),
            runs.iter()
                .flat_map(|r| r.iter())
                .map(|id| crate::format::encode(name, codec, id))
                .collect::<Result<_, _>>()?,
        ),
        (Ids::Runs(runs), None) => (
            runs.into_iter()
                .map(|r| pb::IdRun {
                    first: r.first,
                    count: r.count,
                    stride: r.stride,
                })
                .collect(),
            Vec::new(),
        ),
        // A format is checked before issuing for kinds that are always text; a segment tag
        // shows it has a template only once this node serves it.
        (Ids::Text(_), Some(_)) => return Err(crate::answer::ids::text_has_no_format(name)),
        (Ids::Text(text), None) => (Vec::new(), text),
    };
    Ok(pb::IdBatch {
        name: name.to_string(),
        // Both: the string for clients from before `kind_code`, the code for the rest.
        kind: kind.as_str().to_string(),
        kind_code: pb::KindCode::from(kind).into(),
        count,
        runs,
        text,
    })
}

/// What `id` (text, in `format` when given) of generator `name` holds; the same rules and
/// messages as `GET /v1/ids/{name}/decode/{id}`.
pub fn decode(
    generators: &Generators,
    name: &str,
    source: &Source,
    id: &str,
    format: Option<&str>,
) -> Result<pb::DecodeResponse, Error> {
    let format = crate::format::parse_optional(format)?;
    let fields = crate::decode::id(generators, name, source, id, format)?;
    Ok(decoded(source.kind(), &fields))
}

/// The JSON of [`crate::decode`] as a message (the keys it may hold, each where it belongs).
fn decoded(kind: Kind, v: &Value) -> pb::DecodeResponse {
    let text = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let number = |key: &str| v.get(key).and_then(Value::as_u64);
    let small = |key: &str| number(key).and_then(|n| u32::try_from(n).ok());
    pb::DecodeResponse {
        id: text("id").unwrap_or_default(),
        kind: kind.as_str().to_string(),
        layout: text("layout").unwrap_or_default(),
        time: text("time"),
        time_ms: number("time_ms"),
        fields: v
            .get("fields")
            .and_then(Value::as_object)
            .map(|fields| {
                fields
                    .iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                    .collect()
            })
            .unwrap_or_default(),
        version: small("version"),
        process: text("process"),
        counter: small("counter"),
        variant: text("variant"),
        timestamp: number("timestamp"),
        clock_seq: small("clock_seq"),
        node: text("node"),
        domain: text("domain"),
        local_id: small("local_id"),
        prefix: text("prefix"),
        uuid: text("uuid"),
        payload: text("payload"),
        machine: text("machine"),
        pid: small("pid"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::IdRun;

    #[test]
    fn runs_and_text_travel_as_they_are() {
        let runs = vec![
            IdRun {
                first: 10,
                count: 3,
                stride: 1,
            },
            IdRun {
                first: 100,
                count: 2,
                stride: 7,
            },
        ];
        let b = batch("order", Kind::Segment, Ids::Runs(runs), None).unwrap();
        assert_eq!(
            (b.name.as_str(), b.kind.as_str(), b.count),
            ("order", "segment", 5)
        );
        assert!(b.text.is_empty());
        assert_eq!(b.ids().collect::<Vec<_>>(), [10, 11, 12, 100, 107]);
        let b = batch(
            "ulid",
            Kind::Ulid,
            Ids::Text(vec!["a".into(), "b".into()]),
            None,
        )
        .unwrap();
        assert_eq!(b.count, 2);
        assert!(b.runs.is_empty());
        assert_eq!(b.text, ["a", "b"]);
    }

    /// Every batch names its kind twice, the string for clients from before `kind_code` and
    /// the code for the rest, and the two always agree.
    #[test]
    fn every_batch_says_its_kind_as_the_old_string_and_as_the_code() {
        for &kind in Kind::ALL {
            let ids = Ids::Runs(vec![IdRun {
                first: 1,
                count: 1,
                stride: 1,
            }]);
            let b = batch("n", kind, ids, None).unwrap();
            assert_eq!(b.kind, kind.as_str());
            assert_eq!(b.kind_code(), pb::KindCode::from(kind));
            assert_eq!(b.kind_code().kind(), Some(kind));
            let old_client_view = pb::IdBatch {
                kind_code: 0,
                ..b.clone()
            };
            assert_eq!(old_client_view.kind_value(), b.kind_value());
        }
    }

    #[test]
    fn a_million_consecutive_ids_are_a_few_bytes() {
        use prost::Message;
        let runs = vec![IdRun {
            first: 1 << 40,
            count: 1_000_000,
            stride: 1,
        }];
        let b = batch("order", Kind::Segment, Ids::Runs(runs), None).unwrap();
        assert!(b.encoded_len() < 40, "{} bytes", b.encoded_len());
    }
}
