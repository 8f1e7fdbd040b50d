//! The text form a request asks IDs in (`format=` over HTTP, `format` in gRPC, an argument in
//! RESP): read, checked against the generator before any ID is issued (so a request that
//! cannot be answered wastes none), and applied to each ID.
//!
//! The names and the obfuscate-then-encode order are `snowdrift_core::codec::IdFormat`'s;
//! what this adds is the server's side: which generator has which obfuscation key, which
//! kinds take which formats, and the API's errors.

use snowdrift_core::codec::{Codec, IdFormat};

use crate::error::{Error, core_reason};
use crate::kinds::{IdSource, Source};
use crate::state::Generators;

/// A format name from a request, or the 400 that lists the names.
pub fn parse(name: &str) -> Result<IdFormat, Error> {
    name.parse::<IdFormat>()
        .map_err(|e| Error::invalid(core_reason(e)))
}

/// An optional format name from a request.
pub fn parse_optional(name: Option<&str>) -> Result<Option<IdFormat>, Error> {
    name.map(parse).transpose()
}

/// The codec that writes generator `name`'s IDs (from `source`) in `format`, checked before
/// anything is issued: `None` only for a text kind asked for `decimal` (the default, which
/// for text kinds means their own form); any other format on a text kind is refused.
pub fn codec_for(
    generators: &Generators,
    name: &str,
    source: &Source,
    format: IdFormat,
) -> Result<Option<Codec>, Error> {
    if is_64_bit(source) {
        return number_codec(generators, name, source, format).map(Some);
    }
    if format == IdFormat::default() {
        return Ok(None);
    }
    Err(Error::unsupported(format!(
        "format={format} applies to 64-bit IDs; {} IDs have one standard text form",
        source.kind().as_str()
    )))
}

/// [`codec_for`] a 64-bit kind (snowflake, segment, ticket, plain counter). Refuses
/// `friendly` on kinds without a layout and an obfuscated format on a generator without an
/// `obfuscate_key`.
pub fn number_codec(
    generators: &Generators,
    name: &str,
    source: &Source,
    format: IdFormat,
) -> Result<Codec, Error> {
    crate::kinds::codec::number_codec(source, name, format, generators.obfuscator(name))
}

/// `id`, issued by generator `name`, written by `codec`. An ID beyond the width of the
/// generator's obfuscation is refused rather than written plain, which would publish what
/// the format is there to hide.
pub fn encode(name: &str, codec: &Codec, id: u64) -> Result<String, Error> {
    codec.encode(id).map_err(|e| match e {
        snowdrift_core::Error::OutOfDomain { value, bits, max } => Error::exhausted(format!(
            "generator {name:?} issued {value}, beyond its obfuscate_bits of {bits} (largest \
             {max}), so it has no format={}: the generator has outgrown the width. Plain \
             formats still work; a wider obfuscate_bits changes every obfuscated ID",
            codec.id_format()
        )),
        other => Error::from(other),
    })
}

/// True for the kinds whose IDs are 64-bit numbers, the only ones formats apply to.
pub fn is_64_bit(source: &Source) -> bool {
    source.numeric()
}
