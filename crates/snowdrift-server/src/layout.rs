//! A bit layout from its configuration: a preset name, or a custom `bits` spec with unit and
//! epoch. Shared by the config file and the command line.

use snowdrift_core::layout::{Layout, parse_epoch, parse_unit};

/// Twitter's epoch, the default for custom layouts.
pub const DEFAULT_EPOCH: &str = "1288834974657";

/// The layout asked for and a name to show: `preset` (default `twitter`), or `bits` with
/// `unit` (default 1 ms) and `epoch` (default Twitter's).
pub fn resolve(
    preset: Option<&str>,
    bits: Option<&str>,
    unit: Option<&str>,
    epoch: Option<&str>,
) -> Result<(Layout, String), String> {
    match (preset, bits) {
        (Some(_), Some(_)) => {
            Err("give either a preset layout or a custom bits spec, not both".into())
        }
        (_, Some(spec)) => {
            let unit = parse_unit(unit.unwrap_or("1ms")).map_err(|e| format!("unit: {e}"))?;
            let epoch =
                parse_epoch(epoch.unwrap_or(DEFAULT_EPOCH)).map_err(|e| format!("epoch: {e}"))?;
            let layout = Layout::from_spec(spec, unit, epoch).map_err(|e| format!("bits: {e}"))?;
            Ok((layout, "custom".into()))
        }
        (preset, None) => {
            if unit.is_some() || epoch.is_some() {
                return Err(
                    "unit and epoch apply to a custom layout given with bits; a preset has its own"
                        .into(),
                );
            }
            let name = preset.unwrap_or("twitter");
            let layout = Layout::preset(name).map_err(|e| e.to_string())?;
            Ok((layout, name.to_ascii_lowercase()))
        }
    }
}
