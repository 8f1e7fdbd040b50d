//! `snowdrift next --kind segment`: IDs of a segment tag, claimed from a store.

use std::io::Write;

use anyhow::{Context, Result};
use snowdrift_core::codec::Codec;
use snowdrift_store::segment::{BufferConfig, SegmentBuffer};

use crate::store_args::{StoreArgs, runtime};

/// Largest run asked of the buffer at once, so output starts before a huge count is
/// claimed.
const RUN: u64 = 10_000;

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
        let buffer = SegmentBuffer::start(store, tag, BufferConfig::default())
            .await
            .with_context(|| format!("starting tag {tag:?}"))?;
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
