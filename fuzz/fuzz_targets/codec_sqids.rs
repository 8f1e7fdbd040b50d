//! Decoding arbitrary text never panics and accepts only canonical codes of one number;
//! every `u64` round-trips, with and without a minimum length.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use snowdrift_core::codec::sqids::Sqids;

fn codecs() -> &'static (Sqids, Sqids) {
    static CODECS: OnceLock<(Sqids, Sqids)> = OnceLock::new();
    CODECS.get_or_init(|| {
        let plain = Sqids::new();
        let padded = Sqids::new()
            .with_min_length(16)
            .expect("16 is a valid minimum length");
        (plain, padded)
    })
}

fuzz_target!(|input: (&str, u64, bool)| {
    let (text, id, use_padded) = input;
    let (plain, padded) = codecs();
    let sqids = if use_padded { padded } else { plain };
    if let Ok(n) = sqids.decode(text) {
        assert_eq!(
            sqids.encode(n).as_deref(),
            Ok(text),
            "accepted a non-canonical code"
        );
    }
    let code = sqids
        .encode(id)
        .expect("the default alphabet encodes every u64");
    assert_eq!(sqids.decode(&code), Ok(id));
});
