//! What a snowflake ID holds: its fields under the generator's layout, for a bit-reversed
//! generator after reversing its bits back.

use serde_json::{Map, Value, json};
use snowdrift_core::codec::{Format, IdFormat};
use snowdrift_core::layout::{Layout, format_ms};
use snowdrift_core::obfuscate::Obfuscator;

use super::SnowflakeSource;
use crate::error::Error;

/// The fields of snowflake `id` under `layout` (called `layout_name`).
pub fn fields(layout: &Layout, layout_name: &str, id: u64) -> Result<Value, Error> {
    let d = layout
        .decode(id)
        .map_err(|e| Error::invalid(e.to_string()))?;
    let fields: Map<String, Value> = layout
        .fields()
        .iter()
        .zip(&d.values)
        .map(|(f, v)| (f.name().to_string(), (*v).into()))
        .collect();
    Ok(json!({
        "id": id.to_string(),
        "layout": layout_name,
        "time": format_ms(d.time_ms),
        "time_ms": d.time_ms,
        "fields": fields,
    }))
}

/// What `text`, an ID of generator `name` served by `s`, holds. It is read as decimal
/// unless `format` is given (friendly when it has a `-`).
pub(super) fn decode(
    s: &SnowflakeSource,
    name: &str,
    text: &str,
    format: Option<IdFormat>,
    obfuscator: Option<&Obfuscator>,
) -> Result<Value, Error> {
    let format = format.unwrap_or(IdFormat::plain(if text.contains('-') {
        Format::Friendly
    } else {
        Format::Decimal
    }));
    let of = format!("layout {}", s.layout_name());
    let id = crate::kinds::codec::read(s, name, text, format, obfuscator, &of)?;
    if !s.options().bit_reversed {
        let mut v = fields(s.layout(), s.layout_name(), id)?;
        hashed_note(s, &mut v);
        return Ok(v);
    }
    // The fields are in the ID whose bits were reversed on the way out.
    let composed = unreversed(s.layout(), id)?;
    let mut v = fields(s.layout(), s.layout_name(), composed)?;
    v["id"] = id.to_string().into();
    v["output"] = "bit-reversed".into();
    v["composed"] = composed.to_string().into();
    hashed_note(s, &mut v);
    Ok(v)
}

/// Under `layout = "mastodon"`, says that the sequence field is hashed. Decode never takes
/// the hash off: whoever may decode would learn how many IDs a millisecond held, which is
/// what the hash hides.
fn hashed_note(s: &SnowflakeSource, v: &mut Value) {
    if s.tail().is_some() {
        v["hashed"] = "the sequence field holds the sequence plus a keyed hash of the \
                       millisecond and worker (Mastodon's), so it does not count IDs"
            .into();
    }
}

/// The ID a bit-reversed generator composed before reversing `id`'s bits: refused, as the
/// plain generator refuses it, when `id` has a bit above the layout's (reversing only the
/// layout's bits would drop it and decode some other ID).
pub fn unreversed(layout: &Layout, id: u64) -> Result<u64, Error> {
    if id > layout.max_id() {
        layout
            .decode(id)
            .map_err(|e| Error::invalid(e.to_string()))?;
    }
    Ok(layout.reverse_bits(id))
}
