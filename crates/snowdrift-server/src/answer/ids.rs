//! The answers to `GET /v1/ids/{name}` and `GET /v1/ids/{name}/decode/{id}`, for the
//! router (`crate::http`) and the fast path (`crate::fast`) alike.

use serde_json::Value;
use snowdrift_core::codec::{Codec, IdFormat};

use super::query::{Form, Params};
use crate::error::{Error, ErrorKind};
use crate::format::codec_for;
use crate::kinds::{IdSource, Ids, Source};
use crate::state::AppState;
use crate::state::issue;
use snowdrift_proto::http as shape;

/// The JSON body that answers `GET /v1/ids/{name}?{query}`: `{"name": "...", "ids": ["...",
/// ...]}`, `count` new IDs as strings (or with `form=runs`, their runs). The format (and for
/// an obfuscated one, the generator's key) is checked before any ID is issued, so a bad
/// request wastes none.
pub(crate) async fn next(
    state: &AppState,
    name: &str,
    query: Option<&str>,
) -> Result<Vec<u8>, Error> {
    let params = Params::parse(query, &["count", "format", "form", "input"])?;
    let count = params.count(state.max_count)?;
    let format = params.format()?;
    let form = params.form()?;
    let input = params.input();
    let source = state.generators.get(name)?;
    if form == Form::Runs {
        return runs_body(name, &source, count, format.is_some(), input).await;
    }
    let codec = match format {
        Some(format) => codec_for(&state.generators, name, &source, format)?,
        None => None,
    };
    // Decimal is written straight into the body, without a codec's string per ID.
    let codec = codec.filter(|c| c.id_format() != IdFormat::default());
    let ids = issue(name, &source, count, input).await?;
    if codec.is_some() && matches!(ids, Ids::Text(_)) {
        // Only a tag whose template this node learnt with this very request gets here.
        return Err(text_has_no_format(name));
    }
    json_body(name, &ids, codec.as_ref())
}

/// The refusal of a format for `name`, which turned out to issue text.
pub(crate) fn text_has_no_format(name: &str) -> Error {
    Error::invalid(format!(
        "{name:?} issues text IDs (a segment tag with a template); format applies to 64-bit \
         IDs: ask without one"
    ))
}

/// The body of `form=runs`: checked before anything is issued (runs carry 64-bit IDs as
/// they are, so no format and no text kind).
async fn runs_body(
    name: &str,
    source: &Source,
    count: u64,
    formatted: bool,
    input: Option<&str>,
) -> Result<Vec<u8>, Error> {
    let kind = source.kind();
    if formatted {
        return Err(Error::invalid(
            "form=runs carries 64-bit IDs as decimal runs; format applies to form=ids",
        ));
    }
    if !crate::format::is_64_bit(source) {
        return Err(Error::unsupported(format!(
            "form=runs is for 64-bit IDs; {} IDs are text: use form=ids",
            kind.as_str()
        )));
    }
    // 64-bit kinds take no input: `issue` refuses one rather than ignore it.
    let runs = match issue(name, source, count, input).await? {
        Ids::Runs(runs) => runs,
        // A tag with a template, served for the first time by this request.
        Ids::Text(_) => {
            return Err(Error::unsupported(format!(
                "form=runs is for 64-bit IDs; {name:?} issues text (a segment tag with a \
                 template): use form=ids"
            )));
        }
    };
    let body = shape::Runs {
        name: name.to_string(),
        kind: kind.as_str().to_string(),
        runs: runs
            .iter()
            .map(|r| shape::Run {
                first: r.first,
                count: r.count,
                stride: r.stride,
            })
            .collect(),
    };
    serde_json::to_vec(&body).map_err(|e| Error::internal(format!("writing the answer: {e}")))
}

/// The response body, written straight into one buffer: a batch of 10,000 IDs costs no
/// allocation per ID.
fn json_body(name: &str, ids: &Ids, codec: Option<&Codec>) -> Result<Vec<u8>, Error> {
    use std::io::Write;
    let mut out = Vec::with_capacity(32 + name.len() + ids.len() as usize * 24);
    // Writing to a Vec cannot fail, and serde_json escapes every string it writes.
    let bad = |e: &dyn std::fmt::Display| Error::unavailable(format!("writing the answer: {e}"));
    out.extend_from_slice(b"{\"name\":");
    serde_json::to_writer(&mut out, name).map_err(|e| bad(&e))?;
    out.extend_from_slice(b",\"ids\":[");
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    match ids {
        Ids::Text(text) => {
            for id in text {
                sep(&mut out);
                serde_json::to_writer(&mut out, id).map_err(|e| bad(&e))?;
            }
        }
        Ids::Runs(runs) => {
            for id in runs.iter().flat_map(|r| r.iter()) {
                sep(&mut out);
                match codec {
                    None => write!(out, "\"{id}\"").map_err(|e| bad(&e))?,
                    Some(codec) => {
                        let text = crate::format::encode(name, codec, id)?;
                        serde_json::to_writer(&mut out, &text).map_err(|e| bad(&e))?
                    }
                }
            }
        }
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// The fields inside ID `id` of generator `name` (or, for an obfuscated counter ID, the
/// original), for `GET /v1/ids/{name}/decode/{id}?{query}`.
pub(crate) fn decode(
    state: &AppState,
    name: &str,
    id: &str,
    query: Option<&str>,
) -> Result<Value, Error> {
    let params = Params::parse(query, &["format"])?;
    let format = params.format()?;
    let source = state.generators.get(name)?;
    // Checked before the 404 below: a space or tab in an ID is a malformed request (400,
    // naming the character), not an ID this name does not have.
    crate::decode::written_plainly(id)?;
    crate::decode::id(&state.generators, name, &source, id, format).map_err(|e| match e.kind() {
        // The ID is part of the path: one this name cannot read (in this format) names
        // no resource.
        ErrorKind::InvalidRequest => Error::not_found(e.message()),
        _ => e,
    })
}
