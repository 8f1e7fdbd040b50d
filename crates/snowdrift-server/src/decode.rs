//! What an ID holds, as JSON: the fields of a snowflake ID under its layout, the time inside
//! a UUID v7, ULID or ObjectId.

use serde_json::{Map, Value, json};
use snowdrift_core::codec::Format;
use snowdrift_core::kinds::{ObjectId, Ulid, Uuid};
use snowdrift_core::layout::{Layout, format_ms};

use crate::config::Kind;

/// The fields of snowflake `id` under `layout` (called `layout_name`).
pub fn snowflake(layout: &Layout, layout_name: &str, id: u64) -> Result<Value, String> {
    let d = layout.decode(id).map_err(|e| e.to_string())?;
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

/// Reads a snowflake ID written in `format` (decimal unless given; friendly when it has a
/// `-`) and returns its fields.
pub fn snowflake_text(
    layout: &Layout,
    layout_name: &str,
    text: &str,
    format: Option<Format>,
) -> Result<Value, String> {
    let format = format.unwrap_or(if text.contains('-') {
        Format::Friendly
    } else {
        Format::Decimal
    });
    let id = format.codec(layout).decode(text.trim()).map_err(|e| {
        format!("cannot read {text:?} as a {format} ID of layout {layout_name}: {e}")
    })?;
    snowflake(layout, layout_name, id)
}

/// The time (and parts) inside an ID of a text kind.
pub fn text_kind(kind: Kind, text: &str) -> Result<Value, String> {
    let bad = |e: &dyn std::fmt::Display| format!("{text:?} is not a valid {}: {e}", kind.name());
    match kind {
        Kind::Uuid4 | Kind::Uuid7 => {
            let uuid: Uuid = text.trim().parse().map_err(|e| bad(&e))?;
            let version = uuid.get_version_num();
            let mut out = json!({"id": uuid.to_string(), "version": version});
            if let Some(ts) = uuid.get_timestamp() {
                let (secs, nanos) = ts.to_unix();
                let ms = secs * 1000 + u64::from(nanos) / 1_000_000;
                out["time"] = format_ms(ms).into();
                out["time_ms"] = ms.into();
            }
            Ok(out)
        }
        Kind::Ulid => {
            let ulid: Ulid = text.trim().parse().map_err(|e| bad(&e))?;
            let ms = ulid.timestamp_ms();
            Ok(json!({"id": ulid.to_string(), "time": format_ms(ms), "time_ms": ms}))
        }
        Kind::Objectid => {
            let oid: ObjectId = text.trim().parse().map_err(|e| bad(&e))?;
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
        other => Err(format!(
            "IDs of kind {} carry no fields to decode",
            other.name()
        )),
    }
}
