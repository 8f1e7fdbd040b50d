//! Compatibility fixtures of the wire (issue 39): the gRPC answers a released server gave
//! (`tests/fixtures/<VERSION>/wire/grpc.json`, see `tests/fixtures/README.md`), replayed
//! byte for byte as recorded to today's client, which must hand out exactly the IDs they
//! carry. A change to the messages that today's client cannot read (a field renumbered, a
//! kind it no longer knows, a run it refuses) fails here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use prost::Message;
use snowdrift_client::Client;
use snowdrift_proto::grpc::IdBatch;
use snowdrift_testkit::Liar;

/// Every version's recorded gRPC answers, oldest first; fails when there is none.
fn recordings() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures exists")
        .filter_map(|e| e.ok().map(|e| e.path().join("wire/grpc.json")))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    assert!(
        !found.is_empty(),
        "no wire/grpc.json under {}",
        root.display()
    );
    found
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The recorded `Next` answers that carry 64-bit runs, decoded with today's types.
fn recorded_batches(file: &Path) -> Vec<IdBatch> {
    let text = std::fs::read_to_string(file).unwrap();
    let records: serde_json::Value = serde_json::from_str(&text).unwrap();
    records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["call"] == "Next")
        .filter_map(|r| r["response"].as_str())
        .map(|hex| IdBatch::decode(unhex(hex).as_slice()).unwrap())
        .filter(|b| !b.runs.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_grpc_answers_are_read_by_todays_client() {
    for file in recordings() {
        let batches = recorded_batches(&file);
        assert!(
            batches.len() >= 2,
            "{}: a segment and a snowflake answer",
            file.display()
        );
        for batch in batches {
            let what = format!("{} {}", file.display(), batch.name);
            let want: Vec<u64> = batch
                .runs
                .iter()
                .flat_map(|r| (0..r.count).map(move |k| r.first + k * r.stride))
                .collect();
            let count = usize::try_from(batch.count).unwrap();
            let name = batch.name.clone();
            let liar = Liar::replay(vec![batch]).await.unwrap();
            let client = Client::builder()
                .endpoints([liar.url()])
                .batch(batch_size(count), batch_size(count))
                .deadline(Duration::from_secs(5))
                .backoff(Duration::from_millis(10), Duration::from_millis(50))
                .build()
                .unwrap();
            let got = client
                .next_n(&name, count)
                .await
                .unwrap_or_else(|e| panic!("{what}: today's client refused the answer: {e}"));
            assert_eq!(got, want, "{what}");
        }
    }
}

fn batch_size(count: usize) -> u64 {
    u64::try_from(count).unwrap()
}
