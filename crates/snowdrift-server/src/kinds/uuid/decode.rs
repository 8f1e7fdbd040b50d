//! What a UUID holds, read from the UUID itself: what decode answers for every UUID kind.

use serde_json::{Value, json};
use snowdrift_core::kinds::Uuid;
use snowdrift_core::kinds::uuid::gregorian_to_unix_ms;
use snowdrift_core::kinds::uuid::v2::{DceFields, Domain};
use snowdrift_core::layout::format_ms;

use crate::config::Kind;
use crate::error::{Error, quoted};

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

/// What `text`, a UUID of `kind`, holds; refused when it is no UUID.
pub fn uuid_text(kind: Kind, text: &str) -> Result<Value, Error> {
    let uuid: Uuid = text.parse().map_err(|e| invalid_id(kind, text, &e))?;
    Ok(uuid_fields(&uuid))
}

/// The refusal of `text`, which is no ID of `kind`, and why.
pub fn invalid_id(kind: Kind, text: &str, e: &dyn std::fmt::Display) -> Error {
    Error::invalid(format!(
        "{} is not a valid {}: {e}",
        quoted(text),
        kind.as_str()
    ))
}
