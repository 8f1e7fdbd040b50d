//! A name's cache without a server: the batch size following the rate, the counts, and the
//! kind checks.

use super::*;

fn policy() -> Policy {
    Policy {
        prefetch_at: 0.8,
        hold: Duration::from_secs(1),
        min_batch: 100,
        max_batch: 50_000,
        max_age: Duration::from_secs(10),
        generate_locally: false,
        thread_block: crate::local::MAX_BLOCK,
    }
}

fn runs(first: u64, count: u64) -> Batch {
    Batch::Runs {
        runs: vec![(first, count, 1)],
        expires: false,
        ordered: false,
    }
}

fn take(cache: &NameCache, n: u64) {
    let mut left = n;
    while left > 0 {
        left -= cache.runs.take(left).expect("cached IDs").ids.len();
    }
}

#[test]
fn the_batch_follows_the_rate_within_its_bounds() {
    let c = NameCache::new(policy());
    // Before any fetch: the minimum, or what the caller needs.
    assert_eq!(c.next_size(1), 100);
    assert_eq!(c.next_size(700), 700);
    assert_eq!(c.next_size(1_000_000), 50_000, "never above the maximum");
    // 20,000 in ~100 ms is ~200,000/s: a second of that is above the maximum.
    c.install("n", runs(0, 100_000));
    take(&c, 20_000);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(c.next_size(1), 50_000);
    // 100 in ~100 ms or more is at most 1,000/s: about a second of it.
    c.install("n", runs(1_000_000, 100));
    take(&c, 100);
    std::thread::sleep(Duration::from_millis(100));
    let size = c.next_size(1);
    assert!((100..=1_000).contains(&size), "{size}");
    // Nothing taken since the last fetch: back to the minimum.
    c.install("n", runs(2_000_000, 100));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(c.next_size(1), 100);
}

#[test]
fn counts_and_kinds() {
    let c = NameCache::new(policy());
    assert!(c.check_kind(false).is_ok() && c.check_kind(true).is_ok());
    c.install("n", runs(10, 50));
    take(&c, 20);
    c.lose(5);
    let s = c.stats();
    assert_eq!((s.fetches, s.cached, s.wasted), (1, 30, 5));
    assert_eq!(s.served, 15, "taken but lost is not served");
    assert_eq!(c.check_kind(true).unwrap_err().kind(), ErrorKind::WrongKind);
    let t = NameCache::new(policy());
    t.install(
        "t",
        Batch::Text {
            ids: vec!["a".into(), "b".into()],
            kind: Some(Kind::Objectid),
        },
    );
    assert_eq!(
        t.check_kind(false).unwrap_err().kind(),
        ErrorKind::WrongKind
    );
    assert!(t.local.get().is_none());
    assert_eq!(t.stats().cached, 2);
}

/// What the cache does with a batch depends on its kind alone, not on how the server said
/// it: the `kind` string of servers from before `kind_code`, the code alone, or both.
#[test]
fn old_servers_strings_and_the_kind_code_give_the_same_batch() {
    use snowdrift_proto::grpc::{IdRun, KindCode};
    let sent = |kind: Option<Kind>, code: Option<Kind>, text: bool| IdBatch {
        name: "n".into(),
        kind: kind.map(|k| k.as_str().to_string()).unwrap_or_default(),
        kind_code: code.map_or(0, |k| KindCode::from(k).into()),
        count: 1,
        runs: if text {
            Vec::new()
        } else {
            vec![IdRun {
                first: 7,
                count: 1,
                stride: 1,
            }]
        },
        text: if text { vec!["x".into()] } else { Vec::new() },
    };
    let shape = |b: Batch| match b {
        Batch::Runs {
            expires, ordered, ..
        } => (false, expires, ordered, None),
        Batch::Text { kind, .. } => (true, false, false, kind),
    };
    for &kind in Kind::ALL {
        let text = kind.is_text();
        let old = shape(Batch::from_message(sent(Some(kind), None, text)));
        let new = shape(Batch::from_message(sent(None, Some(kind), text)));
        let both = shape(Batch::from_message(sent(Some(kind), Some(kind), text)));
        assert_eq!(old, new, "{kind}");
        assert_eq!(old, both, "{kind}");
        assert_eq!(old.1, kind == Kind::Snowflake, "{kind}: expires");
        assert_eq!(old.2, kind == Kind::Tso, "{kind}: ordered");
        if text {
            assert_eq!(old.3, Some(kind));
        }
    }
    // A tso batch is never cached, whichever way the server named its kind.
    for batch in [
        sent(Some(Kind::Tso), None, false),
        sent(None, Some(Kind::Tso), false),
    ] {
        let c = NameCache::new(policy());
        c.install("n", Batch::from_message(batch));
        assert!(c.is_ordered());
        assert_eq!(c.stats().cached, 0);
    }
}
