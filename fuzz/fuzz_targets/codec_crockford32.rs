//! Decoding arbitrary text never panics, whatever it decodes re-encodes to the same number,
//! and every `u64` round-trips, in either case.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::codec::crockford32;

fuzz_target!(|input: (&str, u64)| {
    let (text, id) = input;
    if let Ok(n) = crockford32::decode(text) {
        assert_eq!(crockford32::decode(&crockford32::encode(n)), Ok(n));
    }
    let mut buf = [0u8; crockford32::MAX_LEN];
    let encoded = crockford32::encode_to(id, &mut buf);
    assert_eq!(crockford32::decode(encoded), Ok(id));
    assert_eq!(crockford32::decode(&encoded.to_ascii_lowercase()), Ok(id));
});
