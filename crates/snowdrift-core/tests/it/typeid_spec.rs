//! The TypeID specification's own test cases (v0.3.0, `tests/data/typeid/`, copied from
//! jetify-com/typeid with their licence): every valid TypeID decodes to its prefix and UUID,
//! and that prefix and UUID encode back to the same text; every invalid one is refused, with
//! a message that names the input and says what a TypeID is.

use std::path::Path;

use serde::Deserialize;
use snowdrift_core::kinds::Uuid;
use snowdrift_core::kinds::typeid::{self, TypeId};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Valid {
    name: String,
    typeid: String,
    prefix: String,
    uuid: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Invalid {
    name: String,
    typeid: String,
    description: String,
}

fn cases<T: serde::de::DeserializeOwned>(file: &str) -> Vec<T> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/typeid")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_valid_case_decodes_to_its_uuid_and_encodes_back() {
    let valid: Vec<Valid> = cases("valid.yml");
    assert_eq!(valid.len(), 9, "the specification's nine valid cases");
    for case in &valid {
        let want: Uuid = case
            .uuid
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let id: TypeId = case
            .typeid
            .parse()
            .unwrap_or_else(|e| panic!("{} ({:?}) refused: {e}", case.name, case.typeid));
        assert_eq!(id.prefix(), case.prefix, "{}", case.name);
        assert_eq!(id.uuid(), want, "{}", case.name);
        let made = TypeId::new(&case.prefix, want).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(made.to_string(), case.typeid, "{}: encoding", case.name);
        let mut written = String::new();
        typeid::write(&case.prefix, &want, &mut written);
        assert_eq!(written, case.typeid, "{}: write", case.name);
    }
}

#[test]
fn every_invalid_case_is_refused_with_a_reason() {
    let invalid: Vec<Invalid> = cases("invalid.yml");
    assert_eq!(invalid.len(), 21, "the specification's 21 invalid cases");
    for case in &invalid {
        match case.typeid.parse::<TypeId>() {
            Ok(id) => panic!(
                "{} ({:?}: {}) was read as prefix {:?}, UUID {}",
                case.name,
                case.typeid,
                case.description,
                id.prefix(),
                id.uuid()
            ),
            Err(e) => {
                let message = e.to_string();
                let names_the_part = ["prefix", "suffix", "separator"]
                    .iter()
                    .any(|part| message.contains(part));
                assert!(
                    message.contains("is not valid typeid") && names_the_part,
                    "{}: {message}",
                    case.name
                );
            }
        }
    }
}
