//! `snowdrift next` for the 128- and 96-bit kinds.

use std::io::Write;

use anyhow::{Context, Result};
use snowdrift_core::kinds::uuid::v2::DceSecurityGenerator;
use snowdrift_core::kinds::{
    KsuidGenerator, TypeIdGenerator, objectid::ObjectIdGenerator, ulid::UlidGenerator, uuid,
};

use crate::clock::process_clock;
use crate::uuid_args::UuidChoice;
use snowdrift_proto::Kind;

/// Prints `count` IDs of `kind`, one per line, with the UUID options in `uuid` and a
/// TypeID's `prefix`. Randomness comes from the operating system.
pub fn print(
    kind: Kind,
    count: u64,
    uuid: UuidChoice,
    prefix: Option<&str>,
    out: &mut impl Write,
) -> Result<()> {
    let clock = process_clock()?;
    let mut seed = [0u8; 8];
    getrandom::fill(&mut seed).context("reading random bytes from the OS")?;
    let random_node = [seed[0], seed[1], seed[2], seed[3], seed[4], seed[5]];
    let clock_seq = u16::from_le_bytes([seed[6], seed[7]]);
    let gregorian = |node: Option<[u8; 6]>, clock| match node {
        Some(node) => uuid::GregorianUuidGenerator::with_node(clock, node, clock_seq),
        None => uuid::GregorianUuidGenerator::new(clock, random_node, clock_seq),
    };
    match kind {
        Kind::Uuid4 => (0..count).try_for_each(|_| writeln!(out, "{}", uuid::v4()))?,
        Kind::Uuid1 | Kind::Uuid6 => {
            let UuidChoice::Node(node) = uuid else {
                unreachable!("UuidArgs::resolve gives a node choice for uuid1 and uuid6")
            };
            let g = gregorian(node, clock);
            (0..count).try_for_each(|_| -> Result<()> {
                let id = if kind == Kind::Uuid6 {
                    g.next_v6()?
                } else {
                    g.next_v1()?
                };
                Ok(writeln!(out, "{id}")?)
            })?
        }
        Kind::Uuid2 => {
            let UuidChoice::Dce(node, domain, local_id) = uuid else {
                unreachable!("UuidArgs::resolve gives a DCE choice for uuid2")
            };
            // RFC 9562 section 6.10: a random node ID has the multicast bit set.
            let mut multicast = random_node;
            multicast[0] |= 0x01;
            let g = DceSecurityGenerator::new(
                clock,
                node.unwrap_or(multicast),
                seed[6],
                domain,
                local_id,
            );
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
        Kind::Uuid3 | Kind::Uuid5 => {
            let UuidChoice::Named(namespace, name) = uuid else {
                unreachable!("UuidArgs::resolve gives a name choice for uuid3 and uuid5")
            };
            let id = if kind == Kind::Uuid3 {
                uuid::v3(&namespace, name.as_bytes())
            } else {
                uuid::v5(&namespace, name.as_bytes())
            };
            writeln!(out, "{id}")?
        }
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
        Kind::Typeid => {
            let g = TypeIdGenerator::new(prefix.unwrap_or_default(), clock)
                .map_err(|e| anyhow::anyhow!("--prefix: {}", crate::uuid_args::reason(e)))?;
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
        Kind::Ksuid => {
            let g = KsuidGenerator::new(clock);
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
        // Snowflake and segment IDs are printed by next.rs and next_segment.rs, and --kind
        // takes no kind that is not made here.
        other => anyhow::bail!("--kind {other}: not made by this printer"),
    }
    out.flush()?;
    Ok(())
}
