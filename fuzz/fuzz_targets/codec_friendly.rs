//! Decoding arbitrary text under every preset never panics and accepts only the canonical
//! form; every ID of the layout round-trips. Also runs every `Format` both ways.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::codec::{Format, friendly};
use snowdrift_core::layout::{Layout, preset};

fuzz_target!(|input: (u8, &str, u64)| {
    let (which, text, raw) = input;
    let name = preset::NAMES[usize::from(which) % preset::NAMES.len()];
    let layout = Layout::preset(name).expect("presets are valid");
    if let Ok(id) = friendly::decode(&layout, text) {
        assert_eq!(
            friendly::encode(&layout, id).as_deref(),
            Ok(text),
            "non-canonical text"
        );
    }
    let id = raw & layout.max_id();
    let shown = friendly::encode(&layout, id).expect("preset IDs are before year 9999");
    assert_eq!(friendly::decode(&layout, &shown), Ok(id), "{shown}");
    for format in Format::ALL {
        let _ = format.codec(&layout).decode(text);
        let shown = format.codec(&layout).encode(id)
            .expect("every format encodes a layout's IDs");
        assert_eq!(format.codec(&layout).decode(&shown), Ok(id), "{format} {shown}");
    }
});
