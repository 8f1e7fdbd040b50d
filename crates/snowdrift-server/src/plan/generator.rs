//! One `[[generator]]`, resolved: its keys checked against its kind's, its kind's plan
//! (from the kind's folder) and its obfuscation, each checked the way start would use it.
//! Nothing here connects to anything; `state::generators` does, from these plans.

use snowdrift_core::obfuscate::{self, Obfuscator};

use crate::config::{Config, GeneratorConfig};
use crate::error::{ConfigError, core_reason};
use crate::kinds::PlanError;

pub use crate::kinds::SourcePlan;
pub use crate::kinds::counter::CounterPlan;
pub use crate::kinds::snowflake::{SnowflakeOptions, SnowflakePlan};
pub use crate::kinds::tso::{DEFAULT_TSO_TTL, TSO_NAMESPACE, TsoPlan};
pub use crate::kinds::uuid::{UuidPlan, default_local_id};

/// A generator as it will be served.
#[derive(Debug, Clone)]
pub struct GeneratorPlan {
    /// The name it is served under.
    pub name: String,
    /// Where its IDs come from.
    pub source: SourcePlan,
    /// The obfuscation of `format=obfuscated...`, with an `obfuscate_key`.
    pub obfuscator: Option<Obfuscator>,
}

/// The plan of `g`, the `index`-th generator of `config`. Errors name the generator and
/// the key at fault.
pub fn plan(
    config: &Config,
    index: usize,
    g: &GeneratorConfig,
) -> Result<GeneratorPlan, ConfigError> {
    let table = format!("generator[{index}]");
    let fail = |e: String| ConfigError::at(&table, format!("{table} ({:?}): {e}", g.name));
    let at_key = |key: &str, e: String| {
        let path = format!("{table}.{key}");
        ConfigError::at(&path, format!("{path} ({:?}): {e}", g.name))
    };
    snowdrift_store::segment::validate_tag(&g.name).map_err(|e| {
        let path = format!("{table}.name");
        ConfigError::at(&path, format!("{table} ({:?}): name: {e}", g.name))
    })?;
    crate::kinds::check_keys(g).map_err(|(key, e)| {
        let path = format!("{table}.{key}");
        ConfigError::at(&path, format!("{table} ({:?}): {e}", g.name))
    })?;
    let source = SourcePlan::plan(config, g).map_err(|e| match e {
        PlanError::Whole(e) => fail(e),
        PlanError::Key(key, e) => at_key(key, e),
    })?;
    let obfuscator = obfuscator(g, &source).map_err(|(key, e)| at_key(key, e))?;
    Ok(GeneratorPlan {
        name: g.name.clone(),
        source,
        obfuscator,
    })
}

/// The obfuscator of `format=obfuscated...`, when `obfuscate_key` is set; or the key
/// (`obfuscate_key` or `obfuscate_bits`) that is wrong, and why. The message never shows
/// the key.
fn obfuscator(
    g: &GeneratorConfig,
    source: &SourcePlan,
) -> Result<Option<Obfuscator>, (&'static str, String)> {
    let Some(text) = &g.obfuscate_key else {
        return match g.obfuscate_bits {
            Some(_) => Err((
                "obfuscate_bits",
                "applies only with obfuscate_key (32 hex digits)".into(),
            )),
            None => Ok(None),
        };
    };
    let key = obfuscate::parse_key(text).map_err(|e| ("obfuscate_key", core_reason(e)))?;
    let obfuscator = match source.layout() {
        Some(layout) => Obfuscator::for_layout(key, layout, g.obfuscate_bits),
        None => Obfuscator::new(key, g.obfuscate_bits.unwrap_or(obfuscate::DEFAULT_BITS)),
    };
    obfuscator
        .map(Some)
        .map_err(|e| ("obfuscate_bits", core_reason(e)))
}
