//! `snowdrift next` for the 128- and 96-bit kinds.

use std::io::Write;

use anyhow::{Context, Result};
use snowdrift_core::kinds::{objectid::ObjectIdGenerator, ulid::UlidGenerator, uuid};

use super::next::Kind;
use crate::clock::process_clock;

/// Prints `count` IDs of `kind`, one per line. Randomness comes from the operating system.
pub fn print(kind: Kind, count: u64, out: &mut impl Write) -> Result<()> {
    let clock = process_clock()?;
    match kind {
        Kind::Snowflake | Kind::Segment => {
            unreachable!("printed by next.rs and next_segment.rs")
        }
        Kind::Uuid4 => (0..count).try_for_each(|_| writeln!(out, "{}", uuid::v4()))?,
        Kind::Uuid7 => {
            let g = uuid::UuidV7Generator::new(clock);
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
        Kind::Ulid => {
            let g = UlidGenerator::new(clock);
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
        Kind::Objectid => {
            let mut seed = [0u8; 8];
            getrandom::fill(&mut seed).context("reading random bytes from the OS")?;
            let process = [seed[0], seed[1], seed[2], seed[3], seed[4]];
            let counter = u32::from_le_bytes([seed[5], seed[6], seed[7], 0]);
            let g = ObjectIdGenerator::new(clock, process, counter);
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
    }
    out.flush()?;
    Ok(())
}
