//! A gRPC client of a running `snowdrift serve`: a few IDs with `Next`, one decoded with
//! `Decode`, then many with `Stream`, reporting the rate and the bytes on the wire.
//!
//! ```text
//! cargo run --release -p snowdrift-server --example grpc_client -- \
//!     [URL (http://127.0.0.1:8080)] [NAME (snowflake)] [STREAM COUNT (1000000)]
//! ```

use std::time::Instant;

use prost::Message;
use snowdrift_proto::grpc::id_service_client::IdServiceClient;
use snowdrift_proto::grpc::{DecodeRequest, IdBatch, NextRequest, StreamRequest};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let name = args.next().unwrap_or_else(|| "snowflake".into());
    let total: u64 = match args.next() {
        Some(n) => n
            .parse()
            .map_err(|e| format!("STREAM COUNT {n:?} is not a whole number: {e}"))?,
        None => 1_000_000,
    };

    let channel = tonic::transport::Endpoint::from_shared(url.clone())?
        .connect()
        .await
        .map_err(|e| format!("cannot reach {url}: {e}; is `snowdrift serve` running?"))?;
    let mut client = IdServiceClient::new(channel);

    let batch = client
        .next(NextRequest {
            name: name.clone(),
            count: Some(5),
            format: None,
            input: None,
        })
        .await?
        .into_inner();
    println!("Next(5) from {name} ({}): {:?}", batch.kind, shown(&batch));
    if let Some(first) = shown(&batch).first() {
        let decoded = client
            .decode(DecodeRequest {
                name: name.clone(),
                id: first.clone(),
                format: None,
            })
            .await;
        match decoded {
            Ok(d) => println!("Decode({first}): {:?}", d.into_inner()),
            Err(status) => println!(
                "Decode({first}): {} ({:?})",
                status.message(),
                status.code()
            ),
        }
    }

    let started = Instant::now();
    let mut stream = client
        .stream(StreamRequest {
            name: name.clone(),
            count: total,
            batch: None,
            format: None,
            input: None,
        })
        .await?
        .into_inner();
    let (mut got, mut messages, mut bytes) = (0u64, 0u64, 0usize);
    while let Some(batch) = stream.message().await? {
        got += batch.count;
        messages += 1;
        bytes += batch.encoded_len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "Stream({total}): {got} IDs in {messages} messages, {bytes} bytes of messages, \
         {secs:.3} s, {:.0} IDs/s",
        got as f64 / secs
    );
    Ok(())
}

/// The IDs of a batch as text, whatever the kind.
fn shown(batch: &IdBatch) -> Vec<String> {
    if batch.runs.is_empty() {
        batch.text.clone()
    } else {
        batch.ids().map(|id| id.to_string()).collect()
    }
}
