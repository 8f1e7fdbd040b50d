//! The RESP listener's request parser on arbitrary bytes, under its real limits and under
//! tiny ones that put every bound within reach: it never panics; each request it takes is
//! within the bytes given and the limits; a request re-sent as an array of bulk strings
//! parses to the same arguments, and every strict prefix of that asks for more; and while
//! it asks for more, what it holds is never more than one request's bound, so a
//! connection's buffer cannot grow without end.
#![no_main]

use libfuzzer_sys::fuzz_target;

// snowdrift-proto without its gRPC part: the parser needs only std.
use snowdrift_proto::wire::resp::{self as frame, Limits, parse};

const TINY: Limits = Limits {
    max_args: 3,
    max_bulk: 5,
    max_inline: 12,
    max_frame: 20,
};

/// Every other bound within reach of the frame's: a request of many small arguments.
const FRAME: Limits = Limits {
    max_args: 16,
    max_bulk: 64 * 1024,
    max_inline: 64 * 1024,
    max_frame: 64,
};

fuzz_target!(|data: &[u8]| {
    for limits in [frame::LIMITS, TINY, FRAME] {
        check(data, &limits);
    }
});

fn check(data: &[u8], limits: &Limits) {
    let mut rest = data;
    loop {
        match parse(rest, limits) {
            Ok(Some(request)) => {
                assert!(request.len > 0 && request.len <= rest.len());
                // (A skipped `*0` is one count line, whatever the bound.)
                assert!(request.args.is_empty() || request.len <= limits.max_frame + 1);
                assert!(request.args.len() <= limits.max_args);
                for arg in &request.args {
                    assert!(arg.len() <= limits.max_bulk.max(limits.max_inline));
                }
                let encoded = encode(&request.args);
                // An inline request re-sent as an array is longer, maybe past the bound.
                if !request.args.is_empty()
                    && request.args.iter().all(|a| a.len() <= limits.max_bulk)
                    && encoded.len() <= limits.max_frame
                {
                    let again = parse(&encoded, limits)
                        .expect("a re-encoded request parses")
                        .expect("a re-encoded request is complete");
                    assert_eq!(again.args, request.args);
                    assert_eq!(again.len, encoded.len());
                    for end in 0..encoded.len() {
                        assert_eq!(parse(&encoded[..end], limits), Ok(None));
                    }
                }
                rest = &rest[request.len..];
            }
            Ok(None) => {
                assert!(
                    rest.len() <= request_bound(limits),
                    "{} bytes held waiting for one request",
                    rest.len()
                );
                return;
            }
            Err(_) => return,
        }
    }
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The most bytes one unfinished request may hold: a count line, then every argument's
/// length line, bytes and CRLF, within the frame bound (and an unfinished length line past
/// it); or an inline line.
fn request_bound(limits: &Limits) -> usize {
    let line = 1 + 20 + 2;
    let multibulk = line + limits.max_args * (line + limits.max_bulk + 2);
    multibulk
        .min(limits.max_frame + line)
        .max(limits.max_inline.min(limits.max_frame))
}
