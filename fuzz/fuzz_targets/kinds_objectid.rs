//! Parsing arbitrary text as an ObjectId never panics and accepts only 24 hex digits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::kinds::ObjectId;

fuzz_target!(|input: (&str, [u8; 12])| {
    let (text, bytes) = input;
    if let Ok(id) = text.parse::<ObjectId>() {
        assert_eq!(id.to_string(), text.to_ascii_lowercase());
    }
    let id = ObjectId::from_bytes(bytes);
    assert_eq!(id.to_string().parse::<ObjectId>(), Ok(id));
});
