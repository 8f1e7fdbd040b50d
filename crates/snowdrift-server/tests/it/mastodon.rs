//! `layout = "mastodon"`: snowflake IDs whose low bits hold a keyed hash of the millisecond
//! plus the sequence, as Mastodon's. Several servers leasing worker IDs on one registry
//! never issue an ID twice; each millisecond of each worker still counts 0, 1, 2... under
//! the hash; the secret is masked and never shown; the keys are checked.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;
use snowdrift_core::generator::MastodonTail;
use snowdrift_core::layout::Layout;
use snowdrift_server::Config;
use snowdrift_testkit::{unique_name, urls};

use crate::support::{Running, TempDir, ids_of, load, spawn, start, try_load};

const SECRET: &str = "5f1e0c9a27b34d6e8a91c2d3e4f50617";

fn generator(extra: &str) -> String {
    format!(
        "[[generator]]\nname = \"statuses\"\nkind = \"snowflake\"\nlayout = \"mastodon\"\n\
         secret = \"{SECRET}\"\n{extra}"
    )
}

async fn get(base: &str, path: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// The generator's entry in `/v1/generators`, once it issues.
async fn listed(base: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let (_, v) = get(base, "/v1/generators").await;
        let g = v["generators"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "statuses")
            .cloned()
            .unwrap();
        if g["worker"]["state"] == "issuing" {
            return g;
        }
        assert!(std::time::Instant::now() < deadline, "never issuing: {g}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn server_config(dir: &Path, worker: &str) -> Config {
    load(dir, &format!("[worker]\n{worker}\n{}", generator("")))
}

/// Three servers lease worker IDs on PostgreSQL and are asked at once, in batches and one ID
/// at a time: no ID twice, the worker bits are each server's worker ID, and under the hash
/// every millisecond of every worker counts 0, 1, 2... with no gap: the tails are the
/// sequence numbers moved by the keyed offset, nothing lost and nothing repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_registry_never_repeat_an_id() {
    let worker = format!(
        "registry = \"sql\"\nurl = \"{}\"\nnamespace = \"{}\"\nttl = \"3s\"",
        urls::postgres(),
        unique_name("mastodon")
    );
    let dirs: Vec<TempDir> = (0..3)
        .map(|k| TempDir::new(&format!("mastodon-{k}")))
        .collect();
    let mut servers: Vec<Running> = Vec::new();
    for dir in &dirs {
        servers.push(spawn(&server_config(&dir.0, &worker)).await);
    }
    let mut workers = HashSet::new();
    for s in &servers {
        let g = listed(&s.base()).await;
        assert_eq!(g["layout"], "mastodon", "{g}");
        assert!(workers.insert(g["worker"]["worker_id"].as_u64().unwrap()));
    }
    let tasks: Vec<_> = servers
        .iter()
        .flat_map(|s| {
            let base = s.base();
            [1000u64, 1].map(|count| {
                let base = base.clone();
                tokio::spawn(async move {
                    let mut ids = Vec::new();
                    for _ in 0..if count == 1 { 300 } else { 30 } {
                        let (status, v) =
                            get(&base, &format!("/v1/ids/statuses?count={count}")).await;
                        assert_eq!(status, 200, "{v}");
                        ids.extend(ids_of::<u64>(&v));
                    }
                    ids
                })
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let distinct: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), all.len(), "an ID was issued twice");
    assert_eq!(all.len(), 3 * (30 * 1000 + 300));

    let layout = Layout::preset("mastodon").unwrap();
    let tail = MastodonTail::new(&layout, "statuses", SECRET).unwrap();
    let mut per_millisecond: BTreeMap<(u64, u64), Vec<u64>> = BTreeMap::new();
    let mut hashed_starts = HashSet::new();
    for &id in &all {
        let worker = (id >> 10) & 63;
        assert!(workers.contains(&worker), "{id}: worker {worker}");
        let seq = tail.remove(id) & 1023;
        hashed_starts.insert(id & 1023);
        per_millisecond
            .entry((id >> 16, worker))
            .or_default()
            .push(seq);
    }
    for ((ms, worker), mut seqs) in per_millisecond {
        seqs.sort_unstable();
        let gap = (0u64..).zip(&seqs).find(|(want, got)| want != *got);
        assert!(
            gap.is_none(),
            "millisecond {ms} of worker {worker}: {} IDs, sequence {gap:?} (counted, found)",
            seqs.len()
        );
    }
    // Unhashed, every millisecond would start at tail 0 and most tails would be small.
    assert!(hashed_starts.len() > 512, "{} tails", hashed_starts.len());
    for s in servers {
        s.shutdown().await.unwrap();
    }
}

/// Decode shows the time (and says the sequence is hashed), for the server's own IDs and for
/// one of Mastodon's: status 103270115826048975 of the API documentation, made at
/// 2019-12-08T03:48:33.849Z (the status's `created_at` is 52 ms later, set by Rails).
/// `/v1/generators` names the table and never the secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_shows_the_time_and_the_secret_is_never_shown() {
    let s = start("mastodon-decode", &generator("table = \"accounts\"\n")).await;
    let before = jiff::Timestamp::now().as_millisecond() as u64;
    let v = s.json("/v1/ids/statuses?count=3", 200).await;
    let after = jiff::Timestamp::now().as_millisecond() as u64;
    for id in ids_of::<u64>(&v) {
        let d = s.json(&format!("/v1/ids/statuses/decode/{id}"), 200).await;
        let ms = d["time_ms"].as_u64().unwrap();
        assert!((before..=after).contains(&ms), "{d}");
        assert_eq!(ms, id >> 16, "{d}");
        assert_eq!(d["layout"], "mastodon");
        assert!(d["hashed"].as_str().unwrap().contains("keyed hash"), "{d}");
    }
    let d = s
        .json("/v1/ids/statuses/decode/103270115826048975", 200)
        .await;
    assert_eq!(d["time"], "2019-12-08T03:48:33.849Z", "{d}");
    let listed = s.text("/v1/generators", 200).await;
    assert!(!listed.contains(SECRET), "{listed}");
    let v: Value = serde_json::from_str(&listed).unwrap();
    let g = v["generators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "statuses")
        .unwrap();
    assert_eq!(g["mastodon"]["table"], "accounts", "{g}");
    assert_eq!(g["mastodon"]["hashed_bits"], 10, "{g}");
}

#[test]
fn keys_are_checked_and_the_secret_is_masked() {
    let dir = TempDir::new("mastodon-keys");
    let c = load(&dir.0, &generator(""));
    let text = c.to_masked_toml();
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("secret = \"***\""), "{text}");
    let refused = |toml: &str| try_load(&dir.0, toml).unwrap_err().to_string();
    for (toml, says) in [
        (
            "[[generator]]\nname = \"s\"\nkind = \"snowflake\"\nlayout = \"mastodon\"\n"
                .to_string(),
            "generator[0].secret",
        ),
        (
            "[[generator]]\nname = \"s\"\nkind = \"snowflake\"\nlayout = \"mastodon\"\n\
             secret = \"too short\"\n"
                .to_string(),
            "at least 16 bytes",
        ),
        (
            format!("[[generator]]\nname = \"s\"\nkind = \"snowflake\"\nsecret = \"{SECRET}\"\n"),
            "applies to layout = \"mastodon\"",
        ),
        (
            "[[generator]]\nname = \"s\"\nkind = \"snowflake\"\nbits = \"time:41,seq:22\"\n\
             table = \"statuses\"\n"
                .to_string(),
            "generator[0].table",
        ),
        (
            generator("table = \"a\\u0000b\"\n"),
            "no control characters",
        ),
        (
            "[[generator]]\nname = \"s\"\nkind = \"segment\"\ntable = \"statuses\"\n".to_string(),
            "it is a key of kind snowflake, ticket",
        ),
    ] {
        let e = refused(&toml);
        assert!(e.contains(says), "{toml}: {e}");
        assert!(!e.contains(SECRET), "{e} shows the secret");
    }
}
