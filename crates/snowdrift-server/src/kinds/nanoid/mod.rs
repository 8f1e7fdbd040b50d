//! `nanoid`: random characters of an alphabet, from the OS CSPRNG, with nothing to connect.
//! The plan checks `alphabet` and `size` and works out the collision risk at
//! `expected_rate`, which `--check-config` warns about when it is under a year.

use serde_json::{Value, json};
use snowdrift_core::codec::IdFormat;
use snowdrift_core::kinds::nanoid::{self, Nanoid, YEAR_SECS};
use snowdrift_core::kinds::os_random;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::Error;
use crate::kinds::uuid::invalid_id;
use crate::kinds::{IdSource, Ids, KindPlan, PlanError, StartContext};

/// A `nanoid` generator: its shape and the rate it expects.
#[derive(Debug, Clone, PartialEq)]
pub struct NanoidPlan {
    /// The alphabet and size.
    pub shape: Nanoid,
    /// IDs per second expected, for the collision report.
    pub expected_rate: Option<f64>,
    /// Most IDs one answer holds: `limits.max_answer_bytes` over the longest ID's bytes.
    pub max_per_answer: u64,
}

impl KindPlan for NanoidPlan {
    type Source = NanoidSource;
    const KINDS: &'static [Kind] = &[Kind::Nanoid];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["alphabet", "size", "expected_rate", "accept_collision_risk"]
    }

    fn plan(config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let size = match g.size {
            None => nanoid::DEFAULT_SIZE,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let alphabet = g.alphabet.as_deref().unwrap_or(nanoid::DEFAULT_ALPHABET);
        let key = if g.size.is_some() && !(1..=nanoid::MAX_SIZE).contains(&size) {
            "size"
        } else {
            "alphabet"
        };
        let shape = Nanoid::new(alphabet, size)
            .map_err(|e| PlanError::Key(key, crate::error::core_reason(e)))?;
        crate::kinds::collision::check_rate(g)?;
        crate::kinds::collision::gate(
            config,
            g,
            &describe_shape(&shape),
            shape.bits(),
            "Give a larger size or a wider alphabet",
        )?;
        let max_per_answer = (config.limits.max_answer_bytes / max_bytes(&shape)).max(1);
        Ok(NanoidPlan {
            shape,
            expected_rate: g.expected_rate,
            max_per_answer,
        })
    }

    fn kind(&self) -> Kind {
        Kind::Nanoid
    }

    fn warnings(&self) -> Vec<String> {
        let Some(rate) = self.expected_rate else {
            return Vec::new();
        };
        let risk = self.shape.collision_risk(rate);
        if risk.seconds >= YEAR_SECS {
            return Vec::new();
        }
        vec![format!(
            "at expected_rate = {rate} IDs/s, {} ({:.0} random bits) reaches a 1% chance of a \
             repeat in {}: raise size (or widen the alphabet) until that is years; `snowdrift \
             next --kind nanoid --size N --explain --rate {rate}` shows it",
            describe_shape(&self.shape),
            risk.bits,
            risk.time_text()
        )]
    }

    async fn start(&self, _name: &str, _cx: &StartContext) -> Result<NanoidSource, snowdrift_store::Error> {
        // The first draw, so a machine without OS randomness fails at start, not per ID.
        os_random::u32().map_err(|e| snowdrift_store::Error::Unavailable(e.to_string().into()))?;
        Ok(NanoidSource { plan: self.clone() })
    }
}

/// The most bytes one ID of `shape` takes as UTF-8: its size times its widest character.
fn max_bytes(shape: &Nanoid) -> u64 {
    let widest = shape.alphabet().chars().map(char::len_utf8).max().unwrap_or(1);
    (shape.size() * widest) as u64
}

/// The shape in words: `IDs of 21 characters from an alphabet of 64`.
fn describe_shape(shape: &Nanoid) -> String {
    format!(
        "IDs of {} characters from an alphabet of {}",
        shape.size(),
        shape.alphabet().chars().count()
    )
}

/// Nano IDs of one shape.
#[derive(Debug)]
pub struct NanoidSource {
    plan: NanoidPlan,
}

impl IdSource for NanoidSource {
    fn kind(&self) -> Kind {
        Kind::Nanoid
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        let most = self.plan.max_per_answer;
        if count > most {
            let bytes = max_bytes(&self.plan.shape);
            return Err(Error::invalid(format!(
                "count {count}: Nano IDs of this generator take up to {bytes} bytes each, so \
                 limits.max_answer_bytes lets one answer hold at most {most} of them; ask for \
                 at most {most} at a time (a gRPC Stream sends any number, in bounded \
                 messages)"
            )));
        }
        Ids::text(count, || Ok(self.plan.shape.generate(&mut os_random::fill)?))
    }

    fn max_text_bytes(&self) -> Option<usize> {
        usize::try_from(max_bytes(&self.plan.shape)).ok()
    }

    fn numeric(&self) -> bool {
        false
    }

    fn decode(
        &self,
        _name: &str,
        text: &str,
        _format: Option<IdFormat>,
        _obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        fields(&self.plan.shape, text).map_err(|e| invalid_id(Kind::Nanoid, text, &e))
    }

    fn describe(&self, out: &mut Value) {
        let shape = &self.plan.shape;
        out["alphabet"] = shape.alphabet().into();
        out["size"] = shape.size().into();
        out["random_bits"] = shape.bits().into();
        out["max_per_answer"] = self.plan.max_per_answer.into();
        if let Some(rate) = self.plan.expected_rate {
            let risk = shape.collision_risk(rate);
            out["expected_rate"] = rate.into();
            out["collision_1pct_after"] = risk.time_text().into();
            out["collision_1pct_after_secs"] = risk.seconds.into();
        }
    }
}

/// What a Nano ID of `shape` holds: nothing but its characters, said plainly; refused when
/// its length or a character does not fit the shape.
pub fn fields(shape: &Nanoid, text: &str) -> Result<Value, snowdrift_core::Error> {
    shape.check(text)?;
    Ok(json!({
        "id": text,
        "holds": "no fields: a nanoid is random characters alone, with no time, counter or \
                  node to read back",
        "size": shape.size(),
        "alphabet": shape.alphabet(),
        "random_bits": shape.bits(),
    }))
}
