//! Parsing arbitrary text as a KSUID never panics and accepts only its 27 base62 characters;
//! every 20 bytes round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::kinds::Ksuid;

fuzz_target!(|input: (&str, [u8; 20])| {
    let (text, bytes) = input;
    if let Ok(id) = text.parse::<Ksuid>() {
        assert_eq!(id.to_string(), text, "accepted a non-canonical form");
    }
    let id = Ksuid::from_bytes(bytes);
    assert_eq!(id.to_string().parse::<Ksuid>(), Ok(id));
});
