//! Which `[[generator]]` keys apply to which kind: each kind lists its own
//! ([`KindPlan::keys`](super::KindPlan::keys)); a key set for a kind that does not list it
//! is refused by name, so a misplaced key is never silently dropped.

use crate::config::{GeneratorConfig, Kind};

use super::SourcePlan;

/// Keys every generator has.
const COMMON: &[&str] = &["name", "kind"];

/// Refuses a key of `g` that its kind does not list, naming the kinds it is a key of: the
/// key and why.
pub fn check_keys(g: &GeneratorConfig) -> Result<(), (String, String)> {
    let own = SourcePlan::keys(g.kind);
    for key in set_keys(g) {
        if COMMON.contains(&key.as_str()) || own.contains(&key.as_str()) {
            continue;
        }
        let owners: Vec<&str> = Kind::ALL
            .iter()
            .filter(|k| SourcePlan::keys(**k).contains(&key.as_str()))
            .map(|k| k.as_str())
            .collect();
        let why = format!(
            "key {key:?} does not apply to kind {}; it is a key of kind {}",
            g.kind.as_str(),
            owners.join(", ")
        );
        return Err((key, why));
    }
    Ok(())
}

/// The keys `g` sets, in the schema's order: its serialized form leaves out what is unset,
/// so the schema stays the one list of keys.
fn set_keys(g: &GeneratorConfig) -> Vec<String> {
    match serde_json::to_value(g) {
        Ok(serde_json::Value::Object(map)) => map.into_iter().map(|(k, _)| k).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generator keys, as serde's derive reads them.
    fn schema_keys() -> &'static [&'static str] {
        crate::config::schema::serde_fields::<GeneratorConfig>()
    }

    #[test]
    fn every_key_of_the_schema_belongs_to_some_kind() {
        let keys = schema_keys();
        assert!(keys.len() > 20, "{keys:?}");
        for key in keys {
            assert!(
                COMMON.contains(key)
                    || Kind::ALL.iter().any(|k| SourcePlan::keys(*k).contains(key)),
                "no kind lists {key:?}: it could never be used"
            );
        }
        for kind in Kind::ALL {
            for key in SourcePlan::keys(*kind) {
                assert!(
                    keys.contains(key),
                    "kind {kind} lists {key:?}, which the schema lacks"
                );
            }
        }
    }

    #[test]
    fn a_misplaced_key_names_the_kinds_it_belongs_to() {
        let mut g = GeneratorConfig::new("x", Kind::Snowflake);
        g.window = Some(std::time::Duration::from_secs(3));
        let (key, e) = check_keys(&g).unwrap_err();
        assert_eq!(key, "window");
        assert_eq!(
            e,
            "key \"window\" does not apply to kind snowflake; it is a key of kind tso"
        );
    }
}
