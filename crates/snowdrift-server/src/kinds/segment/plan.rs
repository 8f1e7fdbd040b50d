//! A `segment` generator's keys and plan: the tag it serves.

use crate::config::{Config, GeneratorConfig, Kind};
use crate::kinds::{KindPlan, PlanError, StartContext};

use super::SegmentSource;

/// A `segment` generator: the tag served under its name.
#[derive(Debug, Clone)]
pub struct SegmentPlan {
    /// The tag.
    pub tag: String,
}

impl KindPlan for SegmentPlan {
    type Source = SegmentSource;
    const KINDS: &'static [Kind] = &[Kind::Segment];
    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["tag", "obfuscate_key", "obfuscate_bits"]
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let tag = g.tag.clone().unwrap_or_else(|| g.name.clone());
        snowdrift_store::segment::validate_tag(&tag)
            .map_err(|e| PlanError::Whole(format!("tag: {e}")))?;
        Ok(SegmentPlan { tag })
    }

    fn kind(&self) -> Kind {
        Kind::Segment
    }

    async fn start(
        &self,
        _name: &str,
        cx: &StartContext,
    ) -> Result<SegmentSource, snowdrift_store::Error> {
        Ok(SegmentSource::new(cx.segments.clone(), self.tag.clone()))
    }
}
