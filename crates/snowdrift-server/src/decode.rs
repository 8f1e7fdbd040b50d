//! What an ID holds, as JSON: the fields of a snowflake ID under its layout, the time and
//! logical counter of a timestamp-oracle ID, the fields of a
//! UUID (version, variant; time, clock sequence and node of v1, v2 and v6; domain and local
//! ID of v2; time of v7), the time inside a ULID or ObjectId, the original of an obfuscated
//! ID. HTTP, gRPC and Leaf's
//! decode route all answer from here.

use serde_json::{Map, Value, json};
use snowdrift_core::codec::{Format, IdFormat};
use snowdrift_core::kinds::uuid::gregorian_to_unix_ms;
use snowdrift_core::kinds::uuid::v2::{DceFields, Domain};
use snowdrift_core::kinds::{ObjectId, Ulid, Uuid};
use snowdrift_core::layout::{Layout, format_ms};

use crate::config::Kind;
use crate::error::{Error, quoted};
use crate::source::{IdSource, Source};
use crate::state::Generators;

/// The fields of snowflake `id` under `layout` (called `layout_name`).
pub fn snowflake(layout: &Layout, layout_name: &str, id: u64) -> Result<Value, Error> {
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

/// What `text`, an ID of generator (or tag) `name` served by `source`, holds: the fields of a
/// snowflake ID, the time inside a UUID v7, ULID or ObjectId, and for segment, ticket and
/// counter IDs the number (in an obfuscated format, the original ID). `format` says how `text` is
/// written: a snowflake ID is read as decimal unless given (friendly when it has a `-`).
pub fn id(
    generators: &Generators,
    name: &str,
    source: &Source,
    text: &str,
    format: Option<IdFormat>,
) -> Result<Value, Error> {
    written_plainly(text)?;
    let kind = source.kind();
    let unreadable = |format: IdFormat, of: &str, e| {
        Error::invalid(format!(
            "cannot read {} as a {format} ID of {of}: {}",
            quoted(text),
            crate::error::core_reason(e)
        ))
    };
    match source {
        Source::Snowflake(s) => {
            let format = format.unwrap_or(IdFormat::plain(if text.contains('-') {
                Format::Friendly
            } else {
                Format::Decimal
            }));
            let codec = crate::format::number_codec(generators, name, source, format)?;
            let layout = format!("layout {}", s.layout_name());
            let id = codec
                .decode(text)
                .map_err(|e| unreadable(format, &layout, e))?;
            if !s.options().bit_reversed {
                return snowflake(s.layout(), s.layout_name(), id);
            }
            // The fields are in the ID whose bits were reversed on the way out.
            let composed = unreversed(s.layout(), id)?;
            let mut v = snowflake(s.layout(), s.layout_name(), composed)?;
            v["id"] = id.to_string().into();
            v["output"] = "bit-reversed".into();
            v["composed"] = composed.to_string().into();
            Ok(v)
        }
        Source::Tso(t) => {
            let format = format.unwrap_or_default();
            let codec = crate::format::number_codec(generators, name, source, format)?;
            let generator = format!("generator {name:?}");
            let id = codec
                .decode(text)
                .map_err(|e| unreadable(format, &generator, e))?;
            let parts = t
                .tso()
                .config()
                .decode(id)
                .map_err(|e| Error::invalid(crate::error::core_reason(e)))?;
            Ok(json!({
                "id": id.to_string(),
                "time": format_ms(parts.physical_ms),
                "time_ms": parts.physical_ms,
                "logical": parts.logical,
            }))
        }
        // Segment, ticket and counter IDs carry no fields: decoding reads the number (the
        // original, for an obfuscated format).
        _ if crate::format::is_64_bit(source) => {
            let format = format.unwrap_or_default();
            let codec = crate::format::number_codec(generators, name, source, format)?;
            let generator = format!("generator {name:?}");
            let value = codec
                .decode(text)
                .map_err(|e| unreadable(format, &generator, e))?;
            Ok(json!({"id": value.to_string()}))
        }
        _ => {
            if let Some(format) = format {
                crate::format::codec_for(generators, name, source, format)?;
            }
            let mut v = text_kind(kind, text)?;
            if let Source::Simple(simple) = source
                && simple.is_legacy_objectid()
                && let Ok(oid) = text.parse::<ObjectId>()
            {
                let machine: String = oid
                    .legacy_machine()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                v["machine"] = machine.into();
                v["pid"] = oid.legacy_pid().into();
            }
            Ok(v)
        }
    }
}

/// The ID a bit-reversed generator composed before reversing `id`'s bits: refused, as the
/// plain generator refuses it, when `id` has a bit above the layout's (reversing only the
/// layout's bits would drop it and decode some other ID).
pub(crate) fn unreversed(layout: &Layout, id: u64) -> Result<u64, Error> {
    if id > layout.max_id() {
        layout
            .decode(id)
            .map_err(|e| Error::invalid(e.to_string()))?;
    }
    Ok(layout.reverse_bits(id))
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

/// What a UUID holds, read from the UUID itself (any version, whichever generator made it):
/// `version` and `variant`; for v1 and v6 `timestamp` (100 ns since 1582-10-15), `time`,
/// `clock_seq` and `node`; for v2 the same with `domain` and `local_id`, its time being the
/// start of its window (the low 32 bits hold the local ID); for v7 the time.
pub fn uuid_fields(uuid: &Uuid) -> Value {
    use snowdrift_core::kinds::uuid::Variant;
    let variant = match uuid.get_variant() {
        Variant::NCS => "ncs",
        Variant::RFC4122 => "rfc9562",
        Variant::Microsoft => "microsoft",
        _ => "future",
    };
    let version = uuid.get_version_num();
    let mut out = json!({"id": uuid.to_string(), "version": version, "variant": variant});
    let hex = |node: [u8; 6]| node.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let time = |out: &mut Value, ms: u64| {
        out["time"] = format_ms(ms).into();
        out["time_ms"] = ms.into();
    };
    if let Some(dce) = DceFields::of(uuid) {
        time(&mut out, dce.window_unix_ms());
        out["timestamp"] = dce.window_ticks.into();
        out["clock_seq"] = dce.clock_seq.into();
        out["node"] = hex(dce.node).into();
        out["domain"] = match Domain::from_byte(dce.domain) {
            Some(d) => d.name().into(),
            None => dce.domain.to_string().into(),
        };
        out["local_id"] = dce.local_id.into();
        return out;
    }
    if variant != "rfc9562" {
        return out;
    }
    match (version, uuid.get_timestamp()) {
        (1 | 6, Some(ts)) => {
            let (ticks, clock_seq) = ts.to_gregorian();
            time(&mut out, gregorian_to_unix_ms(ticks));
            out["timestamp"] = ticks.into();
            out["clock_seq"] = clock_seq.into();
            if let Some(node) = uuid.get_node_id() {
                out["node"] = hex(node).into();
            }
        }
        (_, Some(ts)) => {
            let (secs, nanos) = ts.to_unix();
            time(&mut out, secs * 1000 + u64::from(nanos) / 1_000_000);
        }
        (_, None) => {}
    }
    out
}

/// The time (and parts) inside an ID of a text kind.
pub fn text_kind(kind: Kind, text: &str) -> Result<Value, Error> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::invalid(format!(
            "{} is not a valid {}: {e}",
            quoted(text),
            kind.as_str()
        ))
    };
    match kind {
        Kind::Uuid1
        | Kind::Uuid2
        | Kind::Uuid3
        | Kind::Uuid4
        | Kind::Uuid5
        | Kind::Uuid6
        | Kind::Uuid7 => {
            let uuid: Uuid = text.parse().map_err(|e| bad(&e))?;
            Ok(uuid_fields(&uuid))
        }
        Kind::Ulid => {
            // 26 characters of 5 bits are 130 bits: a first character above 7 is a number
            // no ULID is, which the parser would cut to 128 bits rather than refuse.
            if text.len() == 26 && !text.starts_with(|c: char| ('0'..='7').contains(&c)) {
                return Err(bad(
                    &"the first character of a ULID is 0 to 7 (a ULID is 128 \
                                 bits; 7ZZZZZZZZZZZZZZZZZZZZZZZZZ is the largest)",
                ));
            }
            let ulid: Ulid = text.parse().map_err(|e| bad(&e))?;
            let ms = ulid.timestamp_ms();
            Ok(json!({"id": ulid.to_string(), "time": format_ms(ms), "time_ms": ms}))
        }
        Kind::Objectid => {
            let oid: ObjectId = text.parse().map_err(|e| bad(&e))?;
            let ms = u64::from(oid.timestamp_secs()) * 1000;
            let process: String = oid.process().iter().map(|b| format!("{b:02x}")).collect();
            Ok(json!({
                "id": oid.to_string(),
                "time": format_ms(ms),
                "time_ms": ms,
                "process": process,
                "counter": oid.counter(),
            }))
        }
        other => Err(Error::invalid(format!(
            "IDs of kind {} carry no fields to decode",
            other.as_str()
        ))),
    }
}
