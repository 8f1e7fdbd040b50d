//! Decoding arbitrary text never panics, accepts only canonical text, and every `u64`
//! round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::codec::base62;

fuzz_target!(|input: (&str, u64)| {
    let (text, id) = input;
    if let Ok(n) = base62::decode(text) {
        assert_eq!(base62::encode(n), text, "accepted a non-canonical form");
    }
    let mut buf = [0u8; base62::MAX_LEN];
    let encoded = base62::encode_to(id, &mut buf);
    assert_eq!(base62::decode(encoded), Ok(id));
});
