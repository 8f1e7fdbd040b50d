//! The collision gate of the random text kinds (`nanoid`, `cuid2`): a shape whose IDs repeat
//! within one answer, or within a day at `expected_rate`, is refused unless the config says
//! `accept_collision_risk = true`; one that repeats within a year at `expected_rate` is
//! warned about. A random kind has no state that could keep two of its IDs apart: its random
//! bits are all there is.

use snowdrift_core::kinds::nanoid::{CollisionRisk, YEAR_SECS};

use crate::config::{Config, GeneratorConfig};
use crate::kinds::PlanError;

/// The chance of a repeat within one answer of `limits.max_count` IDs above which a shape is
/// refused: one in a million.
pub const ANSWER_RISK: f64 = 1e-6;

/// The time to a 1% chance of a repeat at `expected_rate` below which a shape is refused.
pub const REFUSE_SECS: f64 = 86_400.0;

/// Refuses `shape` (said in words, e.g. `size 1 of a 2-character alphabet`) of `bits` random
/// bits unless its risk is negligible or accepted; `larger` says what to raise.
pub fn gate(
    config: &Config,
    g: &GeneratorConfig,
    shape: &str,
    bits: f64,
    larger: &str,
) -> Result<(), PlanError> {
    if g.accept_collision_risk == Some(true) {
        return Ok(());
    }
    let n = config.limits.max_count;
    let within = CollisionRisk::within(bits, n);
    if within > ANSWER_RISK {
        return Err(PlanError::Whole(format!(
            "{shape} carries {bits:.1} random bits: one answer of limits.max_count = {n} IDs \
             holds two equal ones with a chance of {}, more than 1 in a million. {larger}, or \
             set accept_collision_risk = true if repeats are acceptable",
            percent(within)
        )));
    }
    if let Some(rate) = g.expected_rate {
        let risk = CollisionRisk::of(bits, rate);
        if risk.seconds < REFUSE_SECS {
            return Err(PlanError::Whole(format!(
                "{shape} carries {bits:.1} random bits: at expected_rate = {rate} IDs/s a 1% \
                 chance of a repeat comes in {}, within a day. {larger}, or set \
                 accept_collision_risk = true if repeats are acceptable",
                risk.time_text()
            )));
        }
    }
    Ok(())
}

/// `expected_rate` as given, or why it is no rate.
pub fn check_rate(g: &GeneratorConfig) -> Result<(), PlanError> {
    match g.expected_rate {
        Some(rate) if !(rate.is_finite() && rate > 0.0) => Err(PlanError::Key(
            "expected_rate",
            format!("{rate} is not a rate; give the IDs per second you expect, above 0"),
        )),
        _ => Ok(()),
    }
}

/// The warning for a shape whose 1% chance of a repeat at `expected_rate` comes within a
/// year (and so was accepted or is over a day away).
pub fn warning(expected_rate: Option<f64>, shape: &str, bits: f64, larger: &str) -> Option<String> {
    let rate = expected_rate?;
    let risk = CollisionRisk::of(bits, rate);
    (risk.seconds < YEAR_SECS).then(|| {
        format!(
            "at expected_rate = {rate} IDs/s, {shape} ({bits:.0} random bits) reaches a 1% \
             chance of a repeat in {}: {larger} until that is years",
            risk.time_text()
        )
    })
}

fn percent(p: f64) -> String {
    if p >= 0.999_5 {
        "~100%".into()
    } else if p >= 0.01 {
        format!("{:.1}%", p * 100.0)
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_read_plainly() {
        assert_eq!(percent(1.0), "~100%");
        assert_eq!(percent(0.25), "25.0%");
        assert_eq!(percent(2e-5), "2.0e-5");
    }
}
