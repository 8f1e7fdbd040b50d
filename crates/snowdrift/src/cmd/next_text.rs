//! `snowdrift next` for xid, Nano ID and cuid2, and `--explain`, the collision report of a
//! Nano ID shape (the twin of `snowdrift layout`'s lifetime).

use std::io::Write;

use anyhow::{Result, bail};
use snowdrift_core::kinds::cuid2::{self, Cuid2Generator};
use snowdrift_core::kinds::nanoid::{self, Nanoid, YEAR_SECS};
use snowdrift_core::kinds::os_random;
use snowdrift_core::kinds::xid::{self, XidGenerator};
use snowdrift_proto::Kind;

use crate::clock::process_clock;

/// The options of `next` for xid, nanoid and cuid2.
#[derive(Debug, Clone, clap::Args)]
pub struct TextIdArgs {
    /// --kind xid: the machine ID, 0 to 16777215. Default rs/xid's rule: XID_MACHINE_ID,
    /// else the first 3 bytes of the SHA-256 of /etc/machine-id, else of the host name.
    #[arg(long, value_name = "N")]
    pub machine_id: Option<u64>,
    /// --kind nanoid: the characters IDs are drawn from, 2 to 256 distinct (default
    /// nanoid's A-Za-z0-9_-).
    #[arg(long, value_name = "CHARS")]
    pub alphabet: Option<String>,
    /// --kind nanoid: characters per ID, 1 to 255 (default 21).
    #[arg(long, value_name = "N")]
    pub size: Option<u64>,
    /// --kind cuid2: characters per ID, 2 to 32 (default 24).
    #[arg(long, value_name = "N")]
    pub length: Option<u64>,
    /// --kind nanoid: print the collision risk of --alphabet and --size instead of IDs: how
    /// long until a 1% chance that two IDs are equal, at --rate (or at a range of rates).
    #[arg(long)]
    pub explain: bool,
    /// With --explain: the IDs per second to work the risk out for.
    #[arg(long, value_name = "PER_SEC", requires = "explain")]
    pub rate: Option<f64>,
    /// With --explain: print JSON instead of text.
    #[arg(long, requires = "explain")]
    pub json: bool,
}

impl TextIdArgs {
    /// Refuses an option given for a kind that ignores it, so a mistyped --kind does not
    /// pass unnoticed.
    pub fn check(&self, kind: Kind) -> Result<()> {
        let given = [
            ("--machine-id", self.machine_id.is_some(), Kind::Xid),
            ("--alphabet", self.alphabet.is_some(), Kind::Nanoid),
            ("--size", self.size.is_some(), Kind::Nanoid),
            ("--explain", self.explain, Kind::Nanoid),
            ("--length", self.length.is_some(), Kind::Cuid2),
        ];
        for (flag, present, owner) in given {
            if present && kind != owner {
                bail!("{flag} applies to --kind {owner}, not {kind}");
            }
        }
        Ok(())
    }

    /// The Nano ID shape of --alphabet and --size.
    pub fn nanoid(&self) -> Result<Nanoid> {
        let size = self.size.unwrap_or(nanoid::DEFAULT_SIZE as u64);
        let alphabet = self.alphabet.as_deref().unwrap_or(nanoid::DEFAULT_ALPHABET);
        Nanoid::new(alphabet, usize::try_from(size).unwrap_or(usize::MAX))
            .map_err(|e| anyhow::anyhow!("{}", reason(e)))
    }

    /// The cuid2 length of --length.
    pub fn cuid2_length(&self) -> Result<usize> {
        let length = self.length.unwrap_or(cuid2::DEFAULT_LENGTH as u64);
        cuid2::check_length(usize::try_from(length).unwrap_or(usize::MAX))
            .map_err(|e| anyhow::anyhow!("--length: {}", reason(e)))
    }
}

/// Is `kind` one this module prints?
pub fn prints(kind: Kind) -> bool {
    matches!(kind, Kind::Xid | Kind::Nanoid | Kind::Cuid2)
}

/// Prints `count` IDs of `kind` (xid, nanoid or cuid2), or with --explain the collision
/// report.
pub fn print(kind: Kind, count: u64, args: &TextIdArgs, out: &mut impl Write) -> Result<()> {
    args.check(kind)?;
    match kind {
        Kind::Xid => {
            let machine = args
                .machine_id
                .map(xid::machine_id_from_number)
                .transpose()
                .map_err(|e| anyhow::anyhow!("--machine-id: {}", reason(e)))?;
            let g = XidGenerator::for_this_process(process_clock()?, machine)
                .map_err(|e| anyhow::anyhow!("{}", reason(e)))?;
            (0..count).try_for_each(|_| -> Result<()> { Ok(writeln!(out, "{}", g.next()?)?) })?
        }
        Kind::Nanoid => {
            let shape = args.nanoid()?;
            if args.explain {
                explain(&shape, args.rate, args.json, out)?;
                out.flush()?;
                return Ok(());
            }
            (0..count).try_for_each(|_| -> Result<()> {
                Ok(writeln!(out, "{}", shape.generate(&mut os_random::fill)?)?)
            })?
        }
        Kind::Cuid2 => {
            let g = Cuid2Generator::for_this_process(process_clock()?, args.cuid2_length()?)?;
            (0..count).try_for_each(|_| -> Result<()> {
                Ok(writeln!(out, "{}", g.next_with(&mut os_random::u32)?)?)
            })?
        }
        other => bail!("--kind {other}: not made by this printer"),
    }
    out.flush()?;
    Ok(())
}

/// The rates the report shows when no --rate is given, per second.
const RATES: &[(f64, &str)] = &[
    (1.0 / 3600.0, "1/h"),
    (1.0, "1/s"),
    (1_000.0, "1,000/s"),
    (100_000.0, "100,000/s"),
    (10_000_000.0, "10,000,000/s"),
];

/// The collision report of `shape`: random bits, IDs until a 1% chance of a repeat, and the
/// time that takes at `rate` (or at each of [`RATES`]), flagging those under a year.
fn explain(shape: &Nanoid, rate: Option<f64>, json: bool, out: &mut impl Write) -> Result<()> {
    if let Some(rate) = rate
        && !(rate.is_finite() && rate > 0.0)
    {
        bail!("--rate {rate}: give the IDs per second, above 0");
    }
    let rates: Vec<(f64, String)> = match rate {
        Some(r) => vec![(r, format!("{r}/s"))],
        None => RATES.iter().map(|&(r, s)| (r, s.to_string())).collect(),
    };
    let any = shape.collision_risk(1.0);
    if json {
        let rows: Vec<_> = rates
            .iter()
            .map(|(r, _)| {
                let risk = shape.collision_risk(*r);
                serde_json::json!({
                    "rate_per_second": r,
                    "seconds_to_1pct": risk.seconds,
                    "time_to_1pct": risk.time_text(),
                    "under_a_year": risk.seconds < YEAR_SECS,
                })
            })
            .collect();
        let report = serde_json::json!({
            "alphabet": shape.alphabet(),
            "alphabet_size": shape.alphabet().chars().count(),
            "size": shape.size(),
            "random_bits": any.bits,
            "ids_to_1pct": any.ids,
            "rates": rows,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "alphabet  {} ({} characters)",
        shape.alphabet(),
        shape.alphabet().chars().count()
    )?;
    writeln!(
        out,
        "size      {} characters = {:.1} random bits",
        shape.size(),
        any.bits
    )?;
    writeln!(
        out,
        "1% chance of a repeat after {:.3e} IDs (birthday bound, as nanoid's calculator)",
        any.ids
    )?;
    for (r, label) in &rates {
        let risk = shape.collision_risk(*r);
        let flag = if risk.seconds < YEAR_SECS {
            "   UNDER A YEAR: raise --size"
        } else {
            ""
        };
        writeln!(out, "at {label:>14}  {}{flag}", risk.time_text())?;
    }
    Ok(())
}

/// A core error's message without the "invalid configuration" in front.
fn reason(e: snowdrift_core::Error) -> String {
    match e {
        snowdrift_core::Error::InvalidConfig(message) => message,
        other => other.to_string(),
    }
}
