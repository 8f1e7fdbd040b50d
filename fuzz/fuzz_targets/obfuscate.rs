//! Any key, width and value: construction fails cleanly for impossible widths, and encoding
//! then decoding gives the value back, inside the domain.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::obfuscate::Obfuscator;

fuzz_target!(|input: ([u8; 16], u8, u64)| {
    let (key, bits, value) = input;
    let Ok(o) = Obfuscator::new(key, bits) else {
        assert!(bits == 0 || bits > 64, "width {bits} refused");
        return;
    };
    match o.encode(value) {
        Ok(y) => {
            assert!(y <= o.max());
            assert_eq!(o.decode(y), Ok(value));
        }
        Err(_) => assert!(value > o.max()),
    }
    match o.decode(value) {
        Ok(x) => assert_eq!(o.encode(x), Ok(value)),
        Err(_) => assert!(value > o.max()),
    }
});
