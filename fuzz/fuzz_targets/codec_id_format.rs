//! Format names and obfuscated codecs on arbitrary input: parsing a name never panics and an
//! accepted name is one `IdFormat` names (or the `obfuscated-decimal` alias); with any key
//! and width, every ID of the domain round-trips through every format, an ID beyond it is
//! an error, and decoding arbitrary text never panics and gives back only IDs that encode
//! to text decoding to them again.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use snowdrift_core::codec::{Format, IdFormat};
use snowdrift_core::layout::Layout;
use snowdrift_core::obfuscate::Obfuscator;

fn twitter() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| Layout::preset("twitter").expect("presets are valid"))
}

fuzz_target!(|input: (&str, [u8; 16], u8, u64, &str)| {
    let (name, key, bits, value, text) = input;
    if let Ok(format) = name.parse::<IdFormat>() {
        assert!(
            name == format.name() || name == "obfuscated-decimal",
            "{name:?} accepted as {format}"
        );
        assert_eq!(format.name().parse::<IdFormat>(), Ok(format));
    }
    let layout = twitter();
    let Ok(o) = Obfuscator::new(key, bits) else {
        return;
    };
    for format in IdFormat::ALL {
        let codec = format
            .codec(layout, Some(&o))
            .expect("every format has a codec");
        if let Ok(id) = codec.decode(text) {
            let again = codec.encode(id).expect("a decoded ID encodes");
            assert_eq!(codec.decode(&again), Ok(id), "{format} {text:?}");
        }
        if format.format() == Format::Friendly && value > layout.max_id() {
            continue;
        }
        match codec.encode(value) {
            Ok(shown) => assert_eq!(codec.decode(&shown), Ok(value), "{format} {shown}"),
            Err(e) => assert!(
                format.is_obfuscated() && value > o.max(),
                "{format} refused {value}: {e}"
            ),
        }
    }
});
