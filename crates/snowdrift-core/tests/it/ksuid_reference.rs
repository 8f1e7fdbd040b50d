//! KSUIDs beside a reference implementation: svix-ksuid (PyPI), installed at its pinned
//! version by scripts/id-references, which this test runs itself. Both ways: every KSUID
//! snowdrift makes (and the extremes) reads in svix-ksuid as the same second and payload and
//! comes back as the same text; every KSUID svix-ksuid makes (now, and at fixed times with
//! fixed payloads) reads here as its second and payload, and those parts encode here to its
//! text; and KSUIDs sort here as svix-ksuid sorts them.

use std::io::Write;
use std::process::{Command, Stdio};

use snowdrift_core::clock::SystemClock;
use snowdrift_core::kinds::ksuid::{Ksuid, KsuidGenerator, MAX_TEXT};

/// KSUIDs each side makes.
const COUNT: usize = 2_000;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn payload_of(text: &str) -> [u8; 16] {
    assert_eq!(text.len(), 32, "{text}");
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).expect("hex from the reference");
    }
    out
}

#[test]
fn ksuids_agree_with_svix_ksuid_both_ways() {
    let generator = KsuidGenerator::new(SystemClock);
    let mut ours: Vec<Ksuid> = (0..COUNT)
        .map(|_| generator.next().expect("the clock is in range"))
        .collect();
    ours.push(Ksuid::from_bytes([0; 20]));
    ours.push(Ksuid::from_bytes([0xff; 20]));
    ours.push(
        "0ujtsYcgvSTl8PAuAdqWYSMnLOv"
            .parse()
            .expect("segmentio's example"),
    );

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new("bash")
        .arg(root.join("scripts/id-references"))
        .args(["ksuid", &COUNT.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs scripts/id-references");
    {
        let mut stdin = child.stdin.take().expect("piped");
        for id in &ours {
            writeln!(stdin, "{id}").expect("the reference reads its input");
        }
    }
    let out = child.wait_with_output().expect("the reference ends");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "scripts/id-references ksuid failed:\n{stdout}\n{stderr}"
    );

    let (mut parsed, mut made, mut sorted) = (0, Vec::new(), None);
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words[..] {
            ["parsed", text, secs, payload, again] => {
                let id = ours[parsed];
                assert_eq!(text, id.to_string());
                assert_eq!(secs.parse::<u64>(), Ok(id.unix_secs()), "{line}");
                assert_eq!(payload, hex(&id.payload()), "{line}");
                assert_eq!(again, text, "svix-ksuid writes it back as it was: {line}");
                parsed += 1;
            }
            ["made", text, secs, payload] => {
                let id: Ksuid = text
                    .parse()
                    .unwrap_or_else(|e| panic!("svix-ksuid's {text} refused here: {e}"));
                let secs: u64 = secs.parse().expect("a number of seconds");
                assert_eq!(id.unix_secs(), secs, "{line}");
                assert_eq!(hex(&id.payload()), payload, "{line}");
                let parts = Ksuid::from_parts((secs - 1_400_000_000) as u32, payload_of(payload));
                assert_eq!(
                    parts.to_string(),
                    text,
                    "its parts encode to its text: {line}"
                );
                made.push(id);
            }
            ["sorted", ref texts @ ..] => sorted = Some(texts.to_vec()),
            _ => panic!("unexpected line from the reference: {line:?}"),
        }
    }
    assert_eq!(parsed, ours.len(), "every KSUID of ours was read");
    assert_eq!(made.len(), COUNT + 4, "{stdout}");
    assert!(
        made.iter().any(|id| id.to_string() == MAX_TEXT),
        "the largest KSUID came from the reference"
    );
    made.sort();
    let here: Vec<String> = made.iter().map(Ksuid::to_string).collect();
    let there: Vec<String> = sorted
        .expect("the reference's order")
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(here, there, "the same order");
    let mut as_text = here.clone();
    as_text.sort();
    assert_eq!(as_text, here, "the text sorts as the KSUIDs do");
}
