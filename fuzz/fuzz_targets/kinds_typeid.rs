//! Parsing arbitrary text as a TypeID never panics and accepts only the one text a TypeID
//! has; every prefix the spec allows and every UUID round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::kinds::typeid::{TypeId, check_prefix};
use snowdrift_core::kinds::Uuid;

fuzz_target!(|input: (&str, &str, u128)| {
    let (text, prefix, uuid) = input;
    if let Ok(id) = text.parse::<TypeId>() {
        assert_eq!(id.to_string(), text, "accepted a non-canonical form");
    }
    if check_prefix(prefix).is_ok() {
        let id = TypeId::new(prefix, Uuid::from_u128(uuid)).expect("a checked prefix");
        assert_eq!(id.to_string().parse::<TypeId>().as_ref(), Ok(&id));
    }
});
