//! `snowdrift next` for the 128- and 96-bit kinds.

use std::io::Write;

use anyhow::{Result, bail};

use super::next::Kind;

/// Prints `count` IDs of `kind`.
pub fn print(kind: Kind, _count: u64, _out: &mut impl Write) -> Result<()> {
    bail!("{kind:?} is not wired in yet")
}
