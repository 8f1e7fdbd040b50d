//! Parsing arbitrary layout specs, units and epochs never panics, nor does anything asked of
//! a layout that parsed: decoding an arbitrary ID, composing it back, its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::codec::friendly;
use snowdrift_core::layout::{Layout, parse_epoch, parse_unit};

fuzz_target!(|input: (&str, &str, &str, u64)| {
    let (spec, unit, epoch, raw) = input;
    let unit_ms = parse_unit(unit).ok();
    let epoch_ms = parse_epoch(epoch).ok();
    if let Some(ms) = unit_ms {
        assert!(ms > 0);
    }
    let mut layouts = Vec::new();
    if let Ok(layout) = Layout::from_spec(spec, 1, 0) {
        layouts.push(layout);
    }
    if let (Some(unit_ms), Some(epoch_ms)) = (unit_ms, epoch_ms)
        && let Ok(layout) = Layout::from_spec(spec, unit_ms, epoch_ms)
    {
        layouts.push(layout);
    }
    for layout in layouts {
        assert!(layout.total_bits() <= 64);
        let _ = layout.lifetime().to_string();
        let _ = layout.max_ids_per_second();
        let _ = layout.max_nodes();
        let _ = layout.js_unsafe_from_ms();
        let _ = layout.is_js_safe(raw);
        let _ = layout.check_at(raw);
        let _ = layout.ms_to_tick(raw);
        let _ = layout.tick_to_ms(raw);
        for id in [raw, raw & layout.max_id()] {
            match layout.decode(id) {
                Ok(decoded) => {
                    assert!(id <= layout.max_id());
                    assert_eq!(layout.compose(&decoded.values), Ok(id));
                    if let Ok(text) = friendly::encode(&layout, id) {
                        assert_eq!(friendly::decode(&layout, &text), Ok(id), "{text}");
                    }
                }
                Err(_) => assert!(id > layout.max_id()),
            }
        }
    }
});
