//! `snowdrift next --kind segment`: IDs of a segment tag, claimed from a store.

use std::io::Write;

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use snowdrift_core::clock::{OffsetClock, SystemClock};
use snowdrift_core::codec::Codec;
use snowdrift_core::counter::CounterTemplate;
use snowdrift_store::Error;
use snowdrift_store::segment::{BufferConfig, DatedBuffer, SegmentBuffer, SegmentStore};

use crate::store_args::{StoreArgs, runtime};

/// Largest run asked of the buffer at once, so output starts before a huge count is
/// claimed.
const RUN: u64 = 10_000;

/// The buffer a command that prints IDs as fast as its output takes them: it drains its
/// segments and waits on the store again and again, so it waits for a refill as long as a
/// person would (a store's commit can stall for seconds on a busy disk), where a server's
/// request waits the default second and the client tries another server.
fn cli_buffer() -> BufferConfig {
    BufferConfig {
        wait: std::time::Duration::from_secs(30),
        ..BufferConfig::default()
    }
}

/// Prints `count` IDs of `tag`, one per line, in decimal or written by `codec`. Every
/// printed ID was durably claimed first, so a process killed mid-stream never causes a
/// repeat: the next one starts after everything claimed.
pub fn print(
    store: &StoreArgs,
    tag: &str,
    count: u64,
    codec: Option<&Codec>,
    out: &mut impl Write,
) -> Result<()> {
    runtime()?.block_on(async {
        let store = store.connect().await?;
        let buffer = match SegmentBuffer::start(store.clone(), tag, cli_buffer()).await {
            Err(Error::TagTemplated { template, .. }) => {
                return print_rendered(store, tag, *template, count, codec, out).await;
            }
            started => started.with_context(|| format!("starting tag {tag:?}"))?,
        };
        let mut left = count;
        while left > 0 {
            let ids = buffer.next(left.min(RUN)).await?;
            for id in ids.iter() {
                match codec {
                    Some(codec) => writeln!(out, "{}", codec.encode(id)?)?,
                    None => writeln!(out, "{id}")?,
                }
            }
            left -= ids.len();
        }
        out.flush()?;
        Ok(())
    })
}

/// Prints `count` numbers of `tag`, a tag with a template, rendered with the date they were
/// issued at (this process's clock, shifted by `SNOWDRIFT_TEST_CLOCK_OFFSET_MS` in tests).
async fn print_rendered(
    store: SegmentStore,
    tag: &str,
    template: CounterTemplate,
    count: u64,
    codec: Option<&Codec>,
    out: &mut impl Write,
) -> Result<()> {
    if codec.is_some() {
        bail!(
            "tag {tag:?} has a template ({template}): its numbers are text, and --format \
             applies to 64-bit IDs; drop --format"
        );
    }
    let offset = crate::clock::test_offset_ms()?;
    let clock = Arc::new(OffsetClock::new(SystemClock, offset));
    let buffer = DatedBuffer::start(store, tag, template, cli_buffer(), clock)
        .await
        .with_context(|| format!("starting tag {tag:?}"))?;
    let mut left = count;
    while left > 0 {
        let numbers = buffer.next_rendered(left.min(RUN)).await?;
        for n in &numbers {
            writeln!(out, "{n}")?;
        }
        left -= numbers.len() as u64;
    }
    out.flush()?;
    Ok(())
}
