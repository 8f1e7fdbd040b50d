//! `snowdrift decode`: an ID back to its fields, as JSON.

use anyhow::{Context, Result};
use snowdrift_core::codec::Format;
use snowdrift_core::layout::format_ms;

use crate::layout_args::LayoutArgs;

/// Print the fields of a snowflake ID as JSON: time, node fields, sequence.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  snowdrift decode 1050118621198921728\n  snowdrift decode 175928847299117063 --layout discord\n  snowdrift decode 20210623131730192-1-0 --bits time:41,worker:10,seq:12\n  snowdrift decode 1mQyWz8kQ7 --format base62"
)]
pub struct Args {
    /// The ID: decimal, or the friendly form time-node-sequence; other encodings with --format.
    id: String,
    #[command(flatten)]
    layout: LayoutArgs,
    /// How the ID is written: decimal, hex, base62, crockford32, sqids or friendly.
    /// Default: decimal, or friendly when the ID contains '-'.
    #[arg(long, value_name = "FMT")]
    format: Option<Format>,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let (layout, name) = args.layout.resolve(None)?;
    let format = args.format.unwrap_or(if args.id.contains('-') {
        Format::Friendly
    } else {
        Format::Decimal
    });
    let id = format
        .codec(&layout)
        .decode(args.id.trim())
        .with_context(|| {
            format!(
                "cannot read {:?} as a {format} ID of layout {name}",
                args.id
            )
        })?;
    let d = layout.decode(id)?;
    let fields: serde_json::Map<String, serde_json::Value> = layout
        .fields()
        .iter()
        .zip(&d.values)
        .map(|(f, v)| (f.name().to_string(), (*v).into()))
        .collect();
    let out = serde_json::json!({
        "id": id.to_string(),
        "layout": name,
        "time": format_ms(d.time_ms),
        "time_ms": d.time_ms,
        "fields": fields,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
