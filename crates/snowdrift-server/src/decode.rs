//! What an ID holds, as JSON: each kind decodes its own IDs
//! ([`IdSource::decode`](crate::kinds::IdSource::decode): a snowflake ID's fields under its
//! layout, a timestamp-oracle ID's time and logical counter, a UUID's fields, the time inside
//! a ULID or ObjectId, the original of an obfuscated ID). HTTP, gRPC and Leaf's decode route
//! all answer from here.

use serde_json::Value;
use snowdrift_core::codec::IdFormat;

use crate::error::{Error, quoted};
use crate::kinds::{IdSource, Source};
use crate::state::Generators;

pub use crate::kinds::snowflake::{fields as snowflake, unreversed};
pub use crate::kinds::uuid::uuid_fields;
pub use crate::kinds::{cuid2::fields as cuid2, nanoid::fields as nanoid, xid::fields as xid};
pub use crate::kinds::{ksuid::fields as ksuid_fields, typeid::fields as typeid_fields};

/// What `text`, an ID of generator (or tag) `name` served by `source`, holds. `format` says
/// how `text` is written: a snowflake ID is read as decimal unless given (friendly when it
/// has a `-`); a text kind takes no format but its own.
pub fn id(
    generators: &Generators,
    name: &str,
    source: &Source,
    text: &str,
    format: Option<IdFormat>,
) -> Result<Value, Error> {
    written_plainly(text)?;
    if !source.numeric()
        && let Some(format) = format
    {
        crate::format::codec_for(generators, name, source, format)?;
    }
    source.decode(name, text, format, generators.obfuscator(name))
}

/// Refuses an ID holding a space, tab, newline or other control character, naming it and
/// where it is: no format writes one, and reading past it (as trimming would) answers for
/// text the client did not mean, against the API's description (digits only).
pub(crate) fn written_plainly(text: &str) -> Result<(), Error> {
    let Some((at, c)) = text
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_whitespace() || c.is_control())
    else {
        return Ok(());
    };
    let what = match c {
        ' ' => "a space".to_string(),
        '\t' => "a tab (U+0009)".to_string(),
        '\n' => "a newline (U+000A)".to_string(),
        '\r' => "a carriage return (U+000D)".to_string(),
        c => format!("the character U+{:04X}", u32::from(c)),
    };
    Err(Error::invalid(format!(
        "the ID {} holds {what} at character {}: write the ID alone, with no spaces, tabs, \
         newlines or other control characters around or inside it",
        quoted(text),
        at + 1
    )))
}
