//! The client against a server that lies (issue 27, item 4): one that answers the same IDs
//! on every call, and one that answers a run near 2^64 that would wrap to 0, 1, 2. Next to
//! an honest server the client hands out 100,000 IDs with no duplicate and counts the
//! refused batches; with the liar alone it fails with an error naming what the liar sent,
//! never repeating an ID.

use std::collections::HashSet;
use std::time::Duration;

use snowdrift_client::{Client, ErrorKind};
use snowdrift_testkit::{Liar, Lie};

use crate::server::{self, Server, create_tag};

/// A client with batches of up to `max_batch` IDs: above 10,000 they are streamed.
fn client(endpoints: &[String], max_batch: u64) -> Client {
    Client::builder()
        .endpoints(endpoints.iter().cloned())
        .batch(100, max_batch)
        .deadline(Duration::from_secs(2))
        .backoff(Duration::from_millis(10), Duration::from_millis(50))
        .build()
        .unwrap()
}

/// Takes `n` IDs of `name` in calls of up to 1,000, asserting each is new.
async fn collect(client: &Client, name: &str, n: usize) -> HashSet<u64> {
    let mut seen = HashSet::with_capacity(n);
    while seen.len() < n {
        let want = (n - seen.len()).min(1_000);
        let ids = client.next_n(name, want).await.unwrap();
        for id in ids {
            assert!(seen.insert(id), "{id} handed out twice");
        }
    }
    seen
}

/// The stats of `name` once at least `want` batches are refused, or after 5 s: a prefetch
/// may still be on its way back from the liar (which counts a call as it answers) when the
/// last ID is collected, and its refusal is counted when the answer arrives.
async fn stats_once_refused(client: &Client, name: &str, want: u64) -> snowdrift_client::Stats {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let stats = client.stats(name).unwrap();
        if stats.refused >= want || tokio::time::Instant::now() >= deadline {
            return stats;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_repeats_its_ids_is_refused_and_the_honest_one_serves() {
    let dir = server::dir("client-liar-repeat");
    let honest = Server::start(&dir, 0, None).await;
    create_tag(&honest.base(), "order", 1000).await;
    // The liar answers the same run on every call, from 2^41: not the honest tag's IDs.
    // (A liar that repeated the honest server's first IDs could be asked first; the
    // client, which cannot tell who lies on first contact, would then refuse the honest
    // server as the repeater: README says so.)
    let liar = Liar::start("segment", Lie::Repeat { first: 1 << 41 })
        .await
        .unwrap();
    // Small batches, so the liar is asked many times.
    let client = client(&[liar.url(), honest.base()], 2_000);
    let seen = collect(&client, "order", 100_000).await;
    assert_eq!(seen.len(), 100_000);
    // The liar was asked more than once; every answer after its first repeated IDs the
    // client had received, and was refused.
    let calls = liar.calls();
    assert!(calls >= 2, "the liar was asked {calls} times");
    let stats = stats_once_refused(&client, "order", calls - 1).await;
    assert!(
        stats.refused >= calls - 1,
        "{calls} calls to the liar, {stats:?}"
    );
    eprintln!(
        "repeat liar + honest: {} IDs, 0 duplicates, {calls} liar calls, {} batches refused, {} fetches",
        seen.len(),
        stats.refused,
        stats.fetches
    );
    honest.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_repeats_alone_gives_a_clear_error_not_a_repeat() {
    let liar = Liar::start("segment", Lie::Repeat { first: 1 })
        .await
        .unwrap();
    let client = client(&[liar.url()], 10_000);
    let mut seen = HashSet::new();
    let error = loop {
        match client.next_n("order", 1_000).await {
            Ok(ids) => {
                for id in ids {
                    assert!(seen.insert(id), "{id} handed out twice");
                }
                assert!(
                    seen.len() <= 100_000,
                    "the liar's IDs were served on and on"
                );
            }
            Err(e) => break e,
        }
    };
    assert_eq!(error.kind(), ErrorKind::Refused, "{error}");
    let message = error.message();
    assert!(
        message.contains(&format!("endpoint {} answered IDs 1..=", liar.url()))
            && message.contains("\"order\"")
            && message.contains("a server that repeats IDs is refused"),
        "{message}"
    );
    // Its first answer was new, and served; none after it.
    assert_eq!(seen.len(), 1_000, "{}", seen.len());
    let stats = client.stats("order").unwrap();
    assert!(stats.refused >= 3, "{stats:?}");
    eprintln!(
        "repeat liar alone: {} IDs served, {stats:?}: {error}",
        seen.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_would_wrap_past_2_64_is_refused() {
    let dir = server::dir("client-liar-wrap");
    let honest = Server::start(&dir, 0, None).await;
    create_tag(&honest.base(), "order", 1000).await;
    let liar = Liar::start("segment", Lie::Wrap).await.unwrap();
    // Batches grow past 10,000: the liar's wrapping runs come through `Stream` too.
    let client = client(&[liar.url(), honest.base()], 1_000_000);
    let seen = collect(&client, "order", 100_000).await;
    // Not one ID from the wrapping run, neither its top nor what it wraps to.
    assert!(
        seen.iter().all(|&id| id < 1 << 40),
        "{:?}",
        seen.iter().max()
    );
    // Every liar answer was refused.
    let calls = liar.calls();
    let stats = stats_once_refused(&client, "order", calls).await;
    assert!(
        calls >= 1 && stats.refused >= calls,
        "{stats:?}, {calls} liar calls"
    );
    eprintln!(
        "wrap liar + honest: {} IDs, 0 duplicates, {calls} liar calls, {} batches refused",
        seen.len(),
        stats.refused
    );
    honest.stop().await;

    // Alone, for a snowflake name too: a clear error, no ID.
    let alone = client_alone(&liar);
    let e = alone.next("snowflake").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    assert!(
        e.message().contains(&liar.url()) && e.message().contains("wrap"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn client_alone(liar: &Liar) -> Client {
    client(&[liar.url()], 10_000)
}

#[test]
fn refusals_go_to_the_metrics_recorder() {
    // A recorder for this thread alone, and a runtime on this thread, so every fetch
    // (prefetches included) reports to it.
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let liar = Liar::start("segment", Lie::Repeat { first: 7 })
                .await
                .unwrap();
            let client = client(&[liar.url()], 10_000);
            client.next_n("order", 100).await.unwrap();
            client.next_n("order", 100).await.unwrap_err();
            let stats = client.stats("order").unwrap();
            assert!(stats.refused >= 3, "{stats:?}");
            liar.url()
        })
    });
    let text = handle.render();
    let line = text
        .lines()
        .find(|l| l.starts_with("snowdrift_client_refused_total") && l.contains(&url))
        .unwrap_or_else(|| panic!("no refused count in:\n{text}"));
    assert!(line.contains("name=\"order\""), "{line}");
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(value >= 3.0, "{line}");
}

/// An answer that does not fit the request by what it says of itself (issue 31's
/// conformance suite, scenario 7): IDs under another name, or runs under a text kind. Its
/// IDs are new and well formed, so only those fields give it away; beside an honest server
/// none of them is handed out, and alone the call fails naming what was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_for_another_name_or_in_the_other_kinds_form_are_refused() {
    let dir = server::dir("client-liar-mismatch");
    let honest = Server::start(&dir, 0, None).await;
    create_tag(&honest.base(), "order", 1000).await;
    let other_name = Liar::start("segment", Lie::OtherName { first: 1 << 41 })
        .await
        .unwrap();
    let text_kind = Liar::start("uuid7", Lie::OtherName { first: 1 << 42 })
        .await
        .unwrap();
    // Same name, but runs under uuid7: a repeat-free lie, so only the kind gives it away.
    let text_kind_same_name = Liar::start("uuid7", Lie::Repeat { first: 1 << 43 })
        .await
        .unwrap();
    for (liar, what) in [
        (&other_name, "IDs of \"other-order\""),
        (
            &text_kind_same_name,
            "runs of 64-bit IDs under the text kind uuid7",
        ),
    ] {
        let client = client(&[liar.url(), honest.base()], 2_000);
        let seen = collect(&client, "order", 20_000).await;
        assert!(
            seen.iter().all(|&id| id < 1 << 40),
            "{what}: {:?} handed out",
            seen.iter().max()
        );
        let stats = client.stats("order").unwrap();
        assert!(
            liar.calls() >= 1 && stats.refused >= 1,
            "{what}: {stats:?}, {} liar calls",
            liar.calls()
        );

        let alone = client_alone(liar);
        let e = alone.next("order").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
        assert!(
            e.message().contains(&liar.url()) && e.message().contains(what),
            "{what}: {e}"
        );
    }
    // Both at once (another name, a text kind): refused for the name first.
    let e = client_alone(&text_kind).next("order").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    honest.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
