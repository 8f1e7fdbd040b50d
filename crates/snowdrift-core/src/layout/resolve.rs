//! A layout as people name one, on the command line or in a config file: a preset, or a
//! custom `bits` spec with its unit and epoch. One function, so the CLI and the server
//! accept exactly the same things and say the same things about the rest.

use super::{Layout, parse_epoch, parse_unit};
use crate::error::{Error, Result};

/// The default epoch of a custom layout: Twitter's (2010-11-04T01:42:54.657Z).
pub const DEFAULT_EPOCH: &str = "1288834974657";

/// The default time unit of a custom layout.
pub const DEFAULT_UNIT: &str = "1ms";

/// The preset used when none is named.
pub const DEFAULT_PRESET: &str = "twitter";

/// The layout named by `preset` (default [`DEFAULT_PRESET`]) or by a custom `bits` spec
/// with `unit` (default 1 ms) and `epoch` (default Twitter's), and the name to show for it:
/// the preset's, or `custom`.
///
/// A preset and a spec together are refused, and so is a unit without a spec (a preset has
/// its own): a setting that would be ignored is an error, never a surprise. An epoch with a
/// preset moves the preset's epoch.
///
/// ```
/// use snowdrift_core::layout::resolve;
/// let (layout, name) = resolve(Some("sonyflake"), None, None, None)?;
/// assert_eq!((name.as_str(), layout.unit_ms()), ("sonyflake", 10));
/// let (layout, name) = resolve(None, Some("time:41,worker:10,seq:12"), Some("1ms"), None)?;
/// assert_eq!((name.as_str(), layout.total_bits()), ("custom", 63));
/// assert!(resolve(Some("twitter"), Some("time:41,seq:22"), None, None).is_err());
/// # Ok::<(), snowdrift_core::Error>(())
/// ```
pub fn resolve(
    preset: Option<&str>,
    bits: Option<&str>,
    unit: Option<&str>,
    epoch: Option<&str>,
) -> Result<(Layout, String)> {
    let invalid = |message: String| Error::InvalidConfig(message);
    match (preset, bits) {
        (Some(_), Some(_)) => Err(invalid(
            "give either a preset layout or a custom bits spec, not both".into(),
        )),
        (_, Some(spec)) => {
            let unit = parse_unit(unit.unwrap_or(DEFAULT_UNIT))
                .map_err(|e| invalid(format!("unit: {e}")))?;
            let epoch = parse_epoch(epoch.unwrap_or(DEFAULT_EPOCH))
                .map_err(|e| invalid(format!("epoch: {e}")))?;
            let layout =
                Layout::from_spec(spec, unit, epoch).map_err(|e| invalid(format!("bits: {e}")))?;
            Ok((layout, "custom".into()))
        }
        (preset, None) => {
            if unit.is_some() {
                return Err(invalid(
                    "unit applies to a custom layout given with bits; a preset has its own \
                     (the preset's epoch can be moved with epoch)"
                        .into(),
                ));
            }
            let name = preset.unwrap_or(DEFAULT_PRESET);
            let layout = Layout::preset(name)?;
            let layout = match epoch {
                // A preset's fields and unit under another epoch: how a layout whose time
                // field ran out (baidu's, since 2024) is used again.
                Some(text) => {
                    let epoch = parse_epoch(text).map_err(|e| invalid(format!("epoch: {e}")))?;
                    Layout::new(layout.fields().to_vec(), layout.unit_ms(), epoch)
                        .map_err(|e| invalid(format!("epoch: {e}")))?
                }
                None => layout,
            };
            Ok((layout, name.to_ascii_lowercase()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_specs_and_what_is_refused() {
        let (twitter, name) = resolve(None, None, None, None).unwrap();
        assert_eq!(
            (twitter, name.as_str()),
            (Layout::preset("twitter").unwrap(), "twitter")
        );
        assert_eq!(
            resolve(Some("Discord"), None, None, None).unwrap().1,
            "discord"
        );
        // An epoch moves a preset's: baidu's ran out in 2024, and works again from 2025.
        let (baidu, name) = resolve(Some("baidu"), None, None, Some("2025-01-01")).unwrap();
        assert_eq!(name, "baidu");
        assert_eq!(baidu.epoch_ms(), 1_735_689_600_000);
        assert_eq!(baidu.fields(), Layout::preset("baidu").unwrap().fields());
        assert!(baidu.check_at(1_764_000_000_000).is_ok());
        assert!(
            Layout::preset("baidu")
                .unwrap()
                .check_at(1_764_000_000_000)
                .is_err()
        );
        let (custom, name) = resolve(
            None,
            Some("time:39,worker:12,seq:12"),
            Some("10ms"),
            Some("2020-01-01"),
        )
        .unwrap();
        assert_eq!((custom.unit_ms(), name.as_str()), (10, "custom"));
        for (preset, bits, unit, epoch, says) in [
            (
                Some("twitter"),
                Some("time:41,seq:22"),
                None,
                None,
                "not both",
            ),
            (
                Some("twitter"),
                None,
                Some("1ms"),
                None,
                "a preset has its own",
            ),
            (Some("baidu"), None, None, Some("someday"), "epoch:"),
            (None, Some("time:41,seq:22"), Some("1h"), None, "unit:"),
            (
                None,
                Some("time:41,seq:22"),
                None,
                Some("tomorrow"),
                "epoch:",
            ),
            (None, Some("time:60,seq:22"), None, None, "bits:"),
            (Some("tweeter"), None, None, None, "known presets"),
        ] {
            let e = resolve(preset, bits, unit, epoch).unwrap_err().to_string();
            assert!(
                e.contains(says),
                "{preset:?} {bits:?} {unit:?} {epoch:?}: {e}"
            );
        }
    }
}
