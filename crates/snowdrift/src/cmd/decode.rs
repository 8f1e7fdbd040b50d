//! `snowdrift decode`: an ID back to its fields, as JSON.

use anyhow::{Context, Result};
use snowdrift_core::codec::{Format, IdFormat};

use crate::layout_args::LayoutArgs;
use crate::obfuscate_args::ObfuscateArgs;

/// Print the fields of an ID as JSON: a snowflake ID's time, node fields and sequence; a
/// UUID's version and variant, and for v1, v2 and v6 its time, clock sequence and node
/// (v2: also domain and local ID), for v7 its time.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift decode 1050118621198921728\n  snowdrift decode 175928847299117063 --layout discord\n  snowdrift decode 20210623131730192-1-0 --bits time:41,worker:10,seq:12\n  snowdrift decode 1mQyWz8kQ7 --format base62\n  snowdrift decode 1ef0c6d2-9c1b-6a3e-8a51-0123456789ab\n  SNOWDRIFT_OBFUSCATE_KEY=5f1e0c9a27b34d6e8a91c2d3e4f50617 snowdrift decode 3W7I5iheWFp --format obfuscated-base62"
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
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let text = args.id.trim();
    // No snowflake encoding is 32 characters or more, so a text that reads as a UUID is one.
    if args.format.is_none()
        && text.len() >= 32
        && let Ok(uuid) = text.parse::<snowdrift_core::kinds::Uuid>()
    {
        let out = snowdrift_server::decode::uuid_fields(&uuid);
        println!("{}", serde_json::to_string_pretty(&out)?);
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
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
