//! The body of `Stream`: batches of at most `batch` IDs until `total` were sent. The next
//! batch is issued only when the client has taken the last one, so a slow client holds back
//! its own stream, not the server's memory; when the server shuts down, the stream ends with
//! UNAVAILABLE at a batch boundary, saying how many IDs were sent.

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use snowdrift_core::codec::Codec;
use tokio::sync::watch;
use tonic::Status;

use super::convert::batch;
use super::pb;
use crate::kinds::{IdSource, Source};
use crate::state::issue;

/// Most IDs in one message of text IDs (UUIDs, ULIDs, ObjectIds, formatted 64-bit IDs), so a
/// message is about 16 KiB (a UUID is 36 characters and 2 bytes of framing; a TypeID of the
/// longest prefix, 90 characters, makes it 37 KiB). The server holds
/// the message a stream's client has not taken yet: with `limits.max_streams` streams that
/// never read, a batch of `max_count` UUIDs (380 KB) held 470 MB (BENCHMARKS.md, "Slow and
/// hostile clients"). 64-bit IDs go as runs, a few bytes whatever the batch.
pub const TEXT_BATCH: u64 = 400;

/// About how many bytes of text IDs one `Stream` message carries: [`TEXT_BATCH`] UUIDs.
pub const TEXT_MESSAGE_BYTES: usize = 16 * 1024;

/// IDs per message of a text stream whose IDs take up to `max_bytes` each (unknown: at most
/// a UUID's), at most `batch`: long IDs (a Nano ID of 255 characters) go fewer to a message,
/// so a message stays about [`TEXT_MESSAGE_BYTES`] (256 KB were seen before).
pub fn text_batch(batch: u64, max_bytes: Option<usize>) -> u64 {
    let by_bytes = max_bytes.map_or(TEXT_BATCH, |b| {
        u64::try_from(TEXT_MESSAGE_BYTES / b.max(1))
            .unwrap_or(1)
            .max(1)
    });
    batch.min(TEXT_BATCH).min(by_bytes)
}

/// What `Stream` returns.
pub type IdStream = Pin<Box<dyn Stream<Item = Result<pb::IdBatch, Status>> + Send>>;

struct Progress {
    source: Arc<Source>,
    name: String,
    /// The name a uuid3 or uuid5 generator makes the UUID of.
    input: Option<String>,
    /// The request's format, when it asked for text.
    codec: Option<Codec>,
    total: u64,
    sent: u64,
    batch: u64,
    stop: watch::Receiver<bool>,
    done: bool,
}

/// `total` IDs of `source` (served as `name`) in batches of at most `batch`, as text in
/// `codec`'s format when given, stopping early once `stop` turns true.
pub fn batches(
    source: Arc<Source>,
    name: String,
    input: Option<String>,
    codec: Option<Codec>,
    total: u64,
    batch: u64,
    stop: watch::Receiver<bool>,
) -> IdStream {
    let progress = Progress {
        source,
        name,
        input,
        codec,
        total,
        sent: 0,
        batch,
        stop,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(progress, step))
}

async fn step(mut p: Progress) -> Option<(Result<pb::IdBatch, Status>, Progress)> {
    if p.done || p.sent >= p.total {
        return None;
    }
    let n = (p.total - p.sent).min(p.batch);
    let issued = tokio::select! {
        // A stop already signalled wins over issuing another batch.
        biased;
        () = stopping(&mut p.stop) => None,
        issued = issue(&p.name, &p.source, n, p.input.as_deref()) => Some(issued),
    };
    let item = match issued {
        Some(Ok(ids)) if !ids.is_empty() => {
            p.sent += ids.len();
            let message = batch(&p.name, p.source.kind(), ids, p.codec.as_ref());
            // An ID that cannot be written ends the stream, as any issuing error does.
            p.done = message.is_err();
            message.map_err(Status::from)
        }
        Some(Ok(_)) => {
            p.done = true;
            Err(Status::internal(format!(
                "generator {:?} returned no IDs; this is a bug in snowdrift, please report it",
                p.name
            )))
        }
        Some(Err(e)) => {
            p.done = true;
            Err(e.into())
        }
        None => {
            p.done = true;
            Err(Status::unavailable(format!(
                "the server is shutting down: {} of the {} IDs asked for were sent (all of \
                 them valid); ask another node, or this one once it is back, for the remaining {}",
                p.sent,
                p.total,
                p.total - p.sent
            )))
        }
    };
    Some((item, p))
}

/// Completes once the server starts shutting down (or the signal is gone with the server).
async fn stopping(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_ids_go_fewer_to_a_message() {
        // UUIDs (and unknown lengths): TEXT_BATCH, or fewer when asked.
        assert_eq!(text_batch(10_000, None), TEXT_BATCH);
        assert_eq!(text_batch(10_000, Some(36)), TEXT_BATCH);
        assert_eq!(text_batch(7, Some(36)), 7);
        // A Nano ID of 255 two-byte characters: 32 a message (16 KiB), not 400 (204 KB).
        assert_eq!(text_batch(10_000, Some(510)), 32);
        // Longer than a message: one at a time.
        assert_eq!(text_batch(10_000, Some(100_000)), 1);
    }
}
