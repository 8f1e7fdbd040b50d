//! What an ID of the uncoordinated kinds holds: a UUID's fields, the time inside a ULID or
//! ObjectId, and for legacy ObjectIds the machine hash and process ID.

use serde_json::{Value, json};
use snowdrift_core::kinds::{ObjectId, Ulid};
use snowdrift_core::layout::format_ms;

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::IdSource;
use crate::kinds::uuid::{invalid_id, uuid_text};

use super::SimpleSource;

/// What `text`, an ID of `source`, holds.
pub(super) fn decode(source: &SimpleSource, text: &str) -> Result<Value, Error> {
    let kind = source.kind();
    let bad = |e: &dyn std::fmt::Display| invalid_id(kind, text, e);
    match kind {
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
            let mut v = json!({
                "id": oid.to_string(),
                "time": format_ms(ms),
                "time_ms": ms,
                "process": process,
                "counter": oid.counter(),
            });
            if source.is_legacy_objectid() {
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
        // uuid4, uuid7: the UUID's own fields.
        _ => uuid_text(kind, text),
    }
}
