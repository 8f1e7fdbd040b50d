//! The layout options shared by `next`, `decode`, `layout` and `bench`.

use anyhow::{Result, bail};
use snowdrift_core::layout::{DEFAULT_EPOCH, DEFAULT_UNIT, Layout, resolve};

/// Which bit layout to use.
#[derive(Debug, Clone, clap::Args)]
pub struct LayoutArgs {
    /// A preset layout: twitter, sonyflake, baidu, discord, instagram, js53, tsid,
    /// sonyflake-v2 or mastodon (next: with --mastodon-secret and --mastodon-table).
    #[arg(long, value_name = "PRESET", conflicts_with = "bits")]
    pub layout: Option<String>,
    /// A custom layout, fields from high bits to low as name:bits, the time field first
    /// and the sequence last, e.g. time:41,datacenter:5,worker:5,seq:12. An optional
    /// ext:N before the time field holds extension bits.
    #[arg(long, value_name = "SPEC")]
    pub bits: Option<String>,
    /// Time unit of a custom layout: 1ms, 10ms, 1s or any whole number of ms.
    #[arg(long, value_name = "UNIT", default_value = DEFAULT_UNIT, requires = "bits")]
    pub unit: String,
    /// Epoch of a custom layout (default Twitter's), or a new epoch for a preset (its fields
    /// and unit from this time on): RFC 3339 (2010-11-04T01:42:54.657Z), a date, or ms since
    /// 1970.
    #[arg(long, value_name = "EPOCH")]
    pub epoch: Option<String>,
}

impl LayoutArgs {
    /// The layout asked for, `default` preset when none is given, and a name to show:
    /// `snowdrift_core::layout::resolve`, as the server's config resolves it.
    pub fn resolve(&self, positional_preset: Option<&str>) -> Result<(Layout, String)> {
        let preset = match (positional_preset, self.layout.as_deref()) {
            (Some(_), Some(_)) => {
                bail!("give the preset either as an argument or with --layout, not both")
            }
            (Some(p), None) | (None, Some(p)) => Some(p),
            (None, None) => None,
        };
        // clap fills in the unit's default; it means something only with --bits.
        let custom = self.bits.is_some();
        let unit = custom.then_some(self.unit.as_str());
        let epoch = match &self.epoch {
            Some(epoch) => Some(epoch.as_str()),
            None => custom.then_some(DEFAULT_EPOCH),
        };
        Ok(resolve(preset, self.bits.as_deref(), unit, epoch)?)
    }
}
