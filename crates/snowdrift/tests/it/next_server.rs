//! `snowdrift next --server URL[,URL...] NAME`: IDs from running servers through the client
//! crate, with a server that is down in the list, the errors of a name the servers do not
//! have, and servers that lie (repeat their IDs, answer a run that wraps past 2^64).

use std::collections::HashSet;
use std::process::Command;

fn next(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_snowdrift"))
        .arg("next")
        .args(args)
        .env_remove("SNOWDRIFT_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn next_takes_ids_from_the_servers_through_the_client() {
    let (dir, served) = crate::common::served_with_tag("next-server", "order", 1000);
    let base = served.url();
    // The first endpoint has nothing listening: the client moves on to the second.
    let servers = format!("http://127.0.0.1:1,{base}");
    let mut seen = HashSet::new();
    for (name, n) in [("order", 2500), ("snowflake", 1200)] {
        let out = next(&["--server", &servers, name, "-n", &n.to_string()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ids: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(ids.len(), n, "{name}");
        for id in ids {
            assert!(seen.insert(id), "{name}: {id} twice");
        }
    }
    let out = next(&["--server", &base, "uuid7", "-n", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.lines().filter(|l| l.len() == 36).count(), 3, "{text}");
    let out = next(&["--server", &base, "no-such-tag"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("no-such-tag"), "{err}");
    let out = next(&["--server", &base, "order", "--kind", "uuid7"]);
    assert!(!out.status.success(), "--server with --kind is refused");
    let _ = std::fs::remove_dir_all(&dir);
}

fn ids_of(out: &std::process::Output) -> Vec<u64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

fn assert_no_repeat(ids: &[u64]) {
    let mut seen = HashSet::with_capacity(ids.len());
    for &id in ids {
        assert!(seen.insert(id), "{id} printed twice");
    }
}

/// Issue 27, item 4: against a server that answers the same IDs on every call,
/// `snowdrift next --server` printed 100,000 IDs of which 10,000 unique and exited 0; one
/// answering a run near 2^64 printed IDs that wrapped to 0, 1, 2.
#[test]
fn next_refuses_a_server_that_repeats_or_wraps_and_exits_non_zero() {
    use snowdrift_testkit::{Liar, Lie};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // Its run is not the honest tag's: a client cannot tell who lies on first contact, so a
    // liar asked first with the honest server's own IDs would make the honest one look
    // like the repeater.
    let repeat = runtime
        .block_on(Liar::start("segment", Lie::Repeat { first: 1 << 41 }))
        .unwrap();
    let wrap = runtime.block_on(Liar::start("segment", Lie::Wrap)).unwrap();

    // The repeating liar alone: its first answer is new and printed, its repeats are not.
    let out = next(&["--server", &repeat.url(), "order", "-n", "100000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let ids = ids_of(&out);
    assert!(!out.status.success(), "exit 0 with {} IDs", ids.len());
    assert_no_repeat(&ids);
    assert!(ids.len() < 100_000, "{}", ids.len());
    assert!(
        err.contains(&format!("endpoint {} answered IDs", repeat.url()))
            && err.contains("a server that repeats IDs is refused"),
        "{err}"
    );
    eprintln!("repeat liar alone: {} IDs printed, {err}", ids.len());

    // The wrapping liar alone: not one ID.
    let out = next(&["--server", &wrap.url(), "order", "-n", "100000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(err.contains(&wrap.url()) && err.contains("wrap"), "{err}");

    // Each liar next to an honest server: every ID asked for, none twice. A wrapping answer
    // is refused whenever it comes, so the run exits 1 naming it; the repeating liar's
    // second answer may still be a prefetch in flight when the last ID is printed, so its
    // run exits 1 exactly when a refusal was reported (the liar-alone run above shows
    // that a repeat, once seen, always makes it exit 1).
    let (dir, served) = crate::common::served_with_tag("next-liar", "order", 1000);
    for liar in [&repeat, &wrap] {
        let servers = format!("{},{}", liar.url(), served.url());
        let before = liar.calls();
        let out = next(&["--server", &servers, "order", "-n", "100000"]);
        let err = String::from_utf8_lossy(&out.stderr);
        let ids = ids_of(&out);
        assert_eq!(ids.len(), 100_000, "{err}");
        assert_no_repeat(&ids);
        let refused = err.contains("were refused");
        assert_eq!(!out.status.success(), refused, "{err}");
        if std::ptr::eq(liar, &wrap) {
            assert!(refused, "exit 0 after {} liar calls", liar.calls() - before);
            assert!(ids.iter().all(|&id| id < 1 << 40), "{:?}", ids.iter().max());
        }
        eprintln!(
            "liar + honest: {} IDs printed, 0 repeated, {} liar calls: {err}",
            ids.len(),
            liar.calls() - before
        );
    }
    drop(served);
    let _ = std::fs::remove_dir_all(&dir);
}
