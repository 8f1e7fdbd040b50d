//! The obfuscation options of `next` and `decode`: the key and width a server generator's
//! `obfuscate_key` and `obfuscate_bits` set, so that an ID obfuscated by the server decodes
//! here and the other way round.

use anyhow::{Context, Result, bail};
use snowdrift_core::codec::{Codec, Format, IdFormat};
use snowdrift_core::layout::Layout;
use snowdrift_core::obfuscate::{DEFAULT_BITS, Obfuscator, parse_key};

/// The key and width of the obfuscated formats.
#[derive(Debug, Clone, clap::Args)]
pub struct ObfuscateArgs {
    /// Key of the obfuscated formats (--format obfuscated, obfuscated-hex, ...): 32 hex
    /// digits, the generator's obfuscate_key. The environment variable keeps it out of the
    /// process list and the shell's history.
    #[arg(
        long,
        value_name = "HEX",
        env = "SNOWDRIFT_OBFUSCATE_KEY",
        hide_env_values = true
    )]
    pub obfuscate_key: Option<String>,
    /// Width of obfuscated IDs in bits, the generator's obfuscate_bits. Default: the
    /// layout's width for snowflake IDs, 63 for segment IDs.
    #[arg(long, value_name = "BITS")]
    pub obfuscate_bits: Option<u8>,
}

impl ObfuscateArgs {
    /// The codec of `format` for snowflake IDs of `snowflake`, or for segment IDs when it
    /// is `None`; for an obfuscated format, under the key and width given.
    pub fn codec(&self, format: IdFormat, snowflake: Option<&Layout>) -> Result<Codec> {
        let layout = match snowflake {
            Some(layout) => layout.clone(),
            None if format.format() == Format::Friendly => {
                bail!(
                    "--format friendly shows the fields of a snowflake layout; segment IDs have none"
                )
            }
            // Only friendly reads the layout.
            None => Layout::preset("twitter")?,
        };
        if !format.is_obfuscated() {
            if self.obfuscate_bits.is_some() {
                bail!(
                    "--obfuscate-bits applies to the obfuscated formats (--format obfuscated...)"
                );
            }
            return Ok(format.format().codec(&layout));
        }
        let Some(text) = &self.obfuscate_key else {
            bail!(
                "--format {format} needs the generator's key: --obfuscate-key HEX or \
                 SNOWDRIFT_OBFUSCATE_KEY (32 hex digits)"
            );
        };
        let key = parse_key(text).context("--obfuscate-key")?;
        let obfuscator = match snowflake {
            Some(layout) => Obfuscator::for_layout(key, layout, self.obfuscate_bits),
            None => Obfuscator::new(key, self.obfuscate_bits.unwrap_or(DEFAULT_BITS)),
        }
        .context("--obfuscate-bits")?;
        Ok(format.codec(&layout, Some(&obfuscator))?)
    }
}
