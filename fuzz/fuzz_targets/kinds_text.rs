//! xid, Nano ID and cuid2 on arbitrary input never panic: an xid parses only from the text it
//! writes, and writes back what it parsed; a Nano ID shape from any alphabet and size is
//! refused or makes IDs its own check accepts, from any random bytes; a cuid2 check and any
//! draws never panic, and what a generator makes passes the check.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::clock::ManualClock;
use snowdrift_core::kinds::cuid2::{self, Cuid2Generator};
use snowdrift_core::kinds::nanoid::Nanoid;
use snowdrift_core::kinds::xid::Xid;

fuzz_target!(|input: (&str, [u8; 12], &str, u8, &[u8], u8, u64)| {
    let (text, bytes, alphabet, size, random, length, draw) = input;
    if let Ok(id) = text.parse::<Xid>() {
        assert_eq!(id.to_string(), text);
    }
    let id = Xid::from_bytes(bytes);
    assert_eq!(id.to_string().parse::<Xid>(), Ok(id));

    if let Ok(shape) = Nanoid::new(alphabet, usize::from(size)) {
        let _ = shape.check(text);
        // The fuzzer's bytes, then zeros: byte 0 always picks the first character, so a run
        // of bytes past the alphabet cannot keep the generator drawing for ever.
        let mut at = 0;
        let mut fill = |buf: &mut [u8]| {
            for b in buf {
                *b = random.get(at).copied().unwrap_or(0);
                at += 1;
            }
            Ok(())
        };
        let made = shape.generate(&mut fill).unwrap();
        assert!(shape.check(&made).is_ok(), "{made:?}");
    }

    let _ = cuid2::check(text, usize::from(length));
    if let Ok(g) = Cuid2Generator::new(
        ManualClock::new(draw),
        usize::from(length),
        alphabet.into(),
        draw,
    ) {
        let mut d = draw;
        let made = g
            .next_with(&mut || {
                d = d.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                Ok((d >> 32) as u32)
            })
            .unwrap();
        assert!(cuid2::check(&made, usize::from(length)).is_ok(), "{made:?}");
    }
});
