//! The layout options shared by `next`, `decode`, `layout` and `bench`.

use anyhow::{Context, Result, bail};
use snowdrift_core::layout::{Layout, parse_epoch, parse_unit};

/// Which bit layout to use.
#[derive(Debug, Clone, clap::Args)]
pub struct LayoutArgs {
    /// A preset layout: twitter, sonyflake, baidu, discord, instagram or js53.
    #[arg(long, value_name = "PRESET", conflicts_with = "bits")]
    pub layout: Option<String>,
    /// A custom layout, fields from high bits to low as name:bits, the time field first
    /// and the sequence last, e.g. time:41,datacenter:5,worker:5,seq:12. An optional
    /// ext:N before the time field holds extension bits.
    #[arg(long, value_name = "SPEC")]
    pub bits: Option<String>,
    /// Time unit of a custom layout: 1ms, 10ms, 1s or any whole number of ms.
    #[arg(long, value_name = "UNIT", default_value = "1ms", requires = "bits")]
    pub unit: String,
    /// Epoch of a custom layout: RFC 3339 (2010-11-04T01:42:54.657Z), a date, or ms since 1970.
    #[arg(
        long,
        value_name = "EPOCH",
        default_value = "1288834974657",
        requires = "bits"
    )]
    pub epoch: String,
}

impl LayoutArgs {
    /// The layout asked for, `default` preset when none is given, and a name to show.
    pub fn resolve(&self, positional_preset: Option<&str>) -> Result<(Layout, String)> {
        let preset_name = match (positional_preset, self.layout.as_deref()) {
            (Some(_), Some(_)) => {
                bail!("give the preset either as an argument or with --layout, not both")
            }
            (Some(p), None) | (None, Some(p)) => Some(p),
            (None, None) => None,
        };
        if let Some(spec) = &self.bits {
            if preset_name.is_some() {
                bail!("give either a preset or --bits, not both");
            }
            let unit = parse_unit(&self.unit)?;
            let epoch = parse_epoch(&self.epoch)?;
            let layout = Layout::from_spec(spec, unit, epoch).context("--bits")?;
            return Ok((layout, "custom".into()));
        }
        let name = preset_name.unwrap_or("twitter");
        let layout = Layout::preset(name)?;
        Ok((layout, name.to_ascii_lowercase()))
    }
}
