//! `snowdrift decode`: an ID back to its fields, as JSON.

use anyhow::{Context, Result, bail};
use snowdrift_core::codec::{Format, IdFormat};
use snowdrift_core::kinds::{Ksuid, TypeId};
use snowdrift_proto::Kind;

use crate::layout_args::LayoutArgs;
use crate::obfuscate_args::ObfuscateArgs;

/// Print the fields of an ID as JSON: a snowflake ID's time, node fields and sequence; a
/// UUID's version and variant, and for v1, v2 and v6 its time, clock sequence and node
/// (v2: also domain and local ID), for v7 its time; a TypeID's prefix, UUID and time; a
/// KSUID's time, timestamp and payload; with --kind, an xid's time, machine, process ID and
/// counter, or a Nano ID or cuid2 checked (they hold no fields).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift decode 1050118621198921728\n  snowdrift decode 175928847299117063 --layout discord\n  snowdrift decode 20210623131730192-1-0 --bits time:41,worker:10,seq:12\n  snowdrift decode 1mQyWz8kQ7 --format base62\n  snowdrift decode 1ef0c6d2-9c1b-6a3e-8a51-0123456789ab\n  snowdrift decode user_01h455vb4pex5vsknk084sn02q\n  snowdrift decode 0ujtsYcgvSTl8PAuAdqWYSMnLOv\n  snowdrift decode --kind typeid 01h455vb4pex5vsknk084sn02q\n  snowdrift decode --kind xid 9m4e2mr0ui3e8a215n4g\n  snowdrift decode --kind nanoid --size 12 --alphabet 0123456789abcdef 4f90d13a42bc\n  SNOWDRIFT_OBFUSCATE_KEY=5f1e0c9a27b34d6e8a91c2d3e4f50617 snowdrift decode 3W7I5iheWFp --format obfuscated-base62"
)]
pub struct Args {
    /// The ID: decimal, or the friendly form time-node-sequence; other encodings with
    /// --format. A UUID (32 hex digits, hyphens optional) is read as one, whatever its
    /// version.
    id: String,
    #[command(flatten)]
    layout: LayoutArgs,
    /// How the ID is written: decimal, hex, base62, crockford32, tsid, sqids or friendly; or
    /// obfuscated (decimal), obfuscated-hex, obfuscated-base62, obfuscated-crockford32, obfuscated-tsid or
    /// obfuscated-sqids for an ID obfuscated under --obfuscate-key, whose original is shown.
    /// Default: decimal, or friendly when the ID contains '-'.
    #[arg(long, value_name = "FMT")]
    format: Option<IdFormat>,
    #[command(flatten)]
    obfuscation: ObfuscateArgs,
    /// Read the ID as this kind's text: typeid, ksuid, xid (shows time, machine, pid,
    /// counter), nanoid (checked against --alphabet and --size) or cuid2 (checked against
    /// --length; the last two hold no fields). Default: a TypeID when it holds a '_' (one
    /// without a prefix needs --kind typeid), a KSUID when it is 27 letters and digits, a
    /// UUID when it reads as one, else a snowflake ID.
    #[arg(long, value_name = "KIND", value_parser = text_kind_parser())]
    kind: Option<Kind>,
    /// --kind nanoid: the alphabet IDs are drawn from (default nanoid's A-Za-z0-9_-).
    #[arg(long, value_name = "CHARS", requires = "kind")]
    alphabet: Option<String>,
    /// --kind nanoid: characters per ID (default 21).
    #[arg(long, value_name = "N", requires = "kind")]
    size: Option<u64>,
    /// --kind cuid2: characters per ID (default 24).
    #[arg(long, value_name = "N", requires = "kind")]
    length: Option<u64>,
}

/// The kinds `--kind` names: those whose text decode reads without a layout.
const TEXT_KINDS: &[Kind] = &[
    Kind::Typeid,
    Kind::Ksuid,
    Kind::Xid,
    Kind::Nanoid,
    Kind::Cuid2,
];

fn text_kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(TEXT_KINDS.iter().map(|k| k.as_str()))
        .try_map(|name| name.parse::<Kind>())
}

/// The text kind `text` is written in, when `--kind` does not say: a TypeID holds a '_',
/// which no snowflake format writes; a KSUID is 27 base62 characters, longer than any
/// 64-bit ID's text and shorter than a UUID's.
fn text_kind_of(text: &str) -> Option<Kind> {
    if text.contains('_') {
        Some(Kind::Typeid)
    } else if text.len() == 27 && text.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Some(Kind::Ksuid)
    } else {
        None
    }
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let text = args.id.trim();
    let text_kind = match args.kind {
        Some(kind) => Some(kind),
        None if args.format.is_none() => text_kind_of(text),
        None => None,
    };
    if let Some(kind) = text_kind {
        if args.format.is_some() {
            bail!("--format applies to 64-bit IDs; a {kind} has one text form");
        }
        return decode_text(&args, kind, text);
    }
    // No snowflake encoding is 32 characters or more, so a text that reads as a UUID is one.
    if args.format.is_none()
        && text.len() >= 32
        && let Ok(uuid) = text.parse::<snowdrift_core::kinds::Uuid>()
    {
        let out = snowdrift_server::decode::uuid_fields(&uuid);
        print(&out)?;
        return Ok(());
    }
    let (layout, name) = args.layout.resolve(None)?;
    let format = args
        .format
        .unwrap_or(IdFormat::plain(if args.id.contains('-') {
            Format::Friendly
        } else {
            Format::Decimal
        }));
    let id = args
        .obfuscation
        .codec(format, Some(&layout))?
        .decode(args.id.trim())
        .with_context(|| {
            format!(
                "cannot read {:?} as a {format} ID of layout {name}",
                args.id
            )
        })?;
    let out = snowdrift_server::decode::snowflake(&layout, &name, id)?;
    print(&out)?;
    Ok(())
}

/// `--kind xid|nanoid|cuid2`: the fields of an xid, or the check of a Nano ID or cuid2
/// against its shape (they hold no fields); a malformed ID is refused saying why.
fn decode_text(args: &Args, kind: Kind, text: &str) -> Result<()> {
    let kind_name = kind.as_str();
    let given = [
        ("--alphabet", args.alphabet.is_some(), "nanoid"),
        ("--size", args.size.is_some(), "nanoid"),
        ("--length", args.length.is_some(), "cuid2"),
    ];
    for (flag, present, owner) in given {
        if present && kind_name != owner {
            anyhow::bail!("{flag} applies to --kind {owner}, not {kind_name}");
        }
    }
    let shape = crate::cmd::next_text::TextIdArgs {
        machine_id: None,
        alphabet: args.alphabet.clone(),
        size: args.size,
        length: args.length,
        explain: false,
        rate: None,
        json: false,
    };
    let fields = match kind {
        Kind::Typeid => {
            let id: TypeId = text.parse().context("cannot read it as a TypeID")?;
            return print(&snowdrift_server::decode::typeid_fields(&id));
        }
        Kind::Ksuid => {
            let id: Ksuid = text.parse().context("cannot read it as a KSUID")?;
            return print(&snowdrift_server::decode::ksuid_fields(&id));
        }
        Kind::Xid => snowdrift_server::decode::xid(text),
        Kind::Nanoid => snowdrift_server::decode::nanoid(&shape.nanoid()?, text),
        _ => snowdrift_server::decode::cuid2(shape.cuid2_length()?, text),
    };
    // The core's message names the ID, the kind and what is wrong.
    print(&fields.map_err(|e| anyhow::anyhow!("{e}"))?)
}

/// Writes the fields as pretty JSON; a closed stdout (`| head`) is an error, not a panic.
fn print(fields: &serde_json::Value) -> Result<()> {
    use std::io::Write;
    writeln!(
        std::io::stdout().lock(),
        "{}",
        serde_json::to_string_pretty(fields)?
    )?;
    Ok(())
}
