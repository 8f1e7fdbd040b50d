//! Parsing arbitrary counter templates never panics; a template that parses renders any value
//! at any time without panicking, shows its padded values at their width, refuses values over
//! its maximum instead of cutting them, and renders the same text at two times of one period.
#![no_main]

use libfuzzer_sys::fuzz_target;
use snowdrift_core::Error;
use snowdrift_core::counter::CounterTemplate;

fuzz_target!(|input: (&str, i32, u64, u64, u64)| {
    let (text, offset, ms, later, seq) = input;
    let Ok(parsed) = CounterTemplate::parse(text) else {
        return;
    };
    assert_eq!(parsed.to_string(), text);
    let template = parsed.clone().with_utc_offset(offset).unwrap_or(parsed);
    let max = template.max_seq();
    assert!(max <= i64::MAX.unsigned_abs());
    let Ok(at) = template.at(ms) else {
        return;
    };
    match at.render(seq) {
        Ok(shown) => {
            assert!(seq <= max);
            if let Some(width) = template.seq_width() {
                let padded = format!("{seq:0width$}", width = usize::from(width));
                assert!(shown.contains(&padded), "{shown} lacks {padded}");
            }
        }
        Err(Error::CounterOverflow { .. }) => assert!(seq > max),
        Err(e) => panic!("{text:?} at {ms}: {e}"),
    }
    // A second time up to an hour later: same period, same text.
    let then = ms.saturating_add(later % 3_600_000);
    if let Ok(at2) = template.at(then)
        && at2.period_key() == at.period_key()
    {
        let value = seq.min(max);
        assert_eq!(at.render(value).ok(), at2.render(value).ok());
    }
});
