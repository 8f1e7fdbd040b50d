//! The codec that writes and reads a kind's 64-bit IDs in a request's format: the kind says
//! which layout `friendly` shows, the generator's key which obfuscation applies.

use std::borrow::Cow;

use serde_json::{Value, json};

use snowdrift_core::codec::{Codec, Format, IdFormat};
use snowdrift_core::layout::Layout;
use snowdrift_core::obfuscate::Obfuscator;

use super::IdSource;
use crate::error::{Error, core_reason};

/// The codec of `format` for generator `name`'s 64-bit IDs from `source`, with the
/// generator's `obfuscator`. Refuses `friendly` on kinds without a layout and an obfuscated
/// format on a generator without an `obfuscate_key`.
pub fn number_codec<S: IdSource + ?Sized>(
    source: &S,
    name: &str,
    format: IdFormat,
    obfuscator: Option<&Obfuscator>,
) -> Result<Codec, Error> {
    if format.is_obfuscated() && obfuscator.is_none() {
        return Err(Error::unsupported(format!(
            "generator {name:?} has no obfuscation key, so it has no format={format}; give \
             its [[generator]] an obfuscate_key (32 hex digits). A segment tag served under its \
             own name has none: configure a generator for the tag"
        )));
    }
    let layout = if format.format() == Format::Friendly {
        Cow::Borrowed(source.friendly_layout(name)?)
    } else {
        match source.layout() {
            Some(layout) => Cow::Borrowed(layout),
            // Only the friendly form reads the layout.
            None => Cow::Owned(Layout::preset("twitter")?),
        }
    };
    format
        .codec(&layout, obfuscator)
        .map_err(|e| Error::invalid(core_reason(e)))
}

/// The value of `text`, an ID of generator `name` (`of` says what it is an ID of in a
/// refusal), read in `format` (decimal when `None`).
pub fn read<S: IdSource + ?Sized>(
    source: &S,
    name: &str,
    text: &str,
    format: IdFormat,
    obfuscator: Option<&Obfuscator>,
    of: &str,
) -> Result<u64, Error> {
    let codec = number_codec(source, name, format, obfuscator)?;
    codec.decode(text).map_err(|e| {
        Error::invalid(format!(
            "cannot read {} as a {format} ID of {of}: {}",
            crate::error::quoted(text),
            core_reason(e)
        ))
    })
}

/// The number `text` is, an ID of generator `name` of a kind whose IDs carry no fields
/// (segment, ticket, counter: the original, for an obfuscated format).
pub fn decode_number<S: IdSource + ?Sized>(
    source: &S,
    name: &str,
    text: &str,
    format: Option<IdFormat>,
    obfuscator: Option<&Obfuscator>,
) -> Result<Value, Error> {
    let of = format!("generator {name:?}");
    let value = read(
        source,
        name,
        text,
        format.unwrap_or_default(),
        obfuscator,
        &of,
    )?;
    Ok(json!({"id": value.to_string()}))
}
