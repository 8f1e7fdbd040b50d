//! `cuid2`: paralleldrive/cuid2's IDs, with a fingerprint made at start for this process,
//! and nothing to connect.

use serde_json::{Value, json};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::kinds::cuid2::{self, Cuid2Generator};
use snowdrift_core::kinds::os_random;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::Error;
use crate::kinds::uuid::invalid_id;
use crate::kinds::{IdSource, Ids, KindPlan, PlanError, StartContext};

/// A `cuid2` generator: its length and the rate it expects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cuid2Plan {
    /// Characters per ID, 2 to 32.
    pub length: usize,
    /// IDs per second expected, for the collision report.
    pub expected_rate: Option<f64>,
}

impl KindPlan for Cuid2Plan {
    type Source = Cuid2Source;
    const KINDS: &'static [Kind] = &[Kind::Cuid2];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["length", "expected_rate", "accept_collision_risk"]
    }

    fn plan(config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let length = match g.length {
            None => cuid2::DEFAULT_LENGTH,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let length = cuid2::check_length(length)
            .map_err(|e| PlanError::Key("length", crate::error::core_reason(e)))?;
        crate::kinds::collision::check_rate(g)?;
        crate::kinds::collision::gate(
            config,
            g,
            &format!("cuid2 of length {length}"),
            cuid2::bits(length),
            "Give a larger length (the default is 24)",
        )?;
        Ok(Cuid2Plan {
            length,
            expected_rate: g.expected_rate,
        })
    }

    fn kind(&self) -> Kind {
        Kind::Cuid2
    }

    fn warnings(&self) -> Vec<String> {
        crate::kinds::collision::warning(
            self.expected_rate,
            &format!("cuid2 of length {}", self.length),
            cuid2::bits(self.length),
            "raise length",
        )
        .into_iter()
        .collect()
    }

    async fn start(&self, _name: &str, _cx: &StartContext) -> Result<Cuid2Source, snowdrift_store::Error> {
        let unavailable = |e: snowdrift_core::Error| {
            snowdrift_store::Error::Unavailable(e.to_string().into())
        };
        let generator = Cuid2Generator::for_this_process(MonotonicClock::new(), self.length)
            .map_err(unavailable)?;
        Ok(Cuid2Source {
            generator,
            expected_rate: self.expected_rate,
        })
    }
}

/// cuid2s of one length.
#[derive(Debug)]
pub struct Cuid2Source {
    generator: Cuid2Generator<MonotonicClock>,
    expected_rate: Option<f64>,
}

impl IdSource for Cuid2Source {
    fn kind(&self) -> Kind {
        Kind::Cuid2
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ids::text(count, || Ok(self.generator.next_with(&mut os_random::u32)?))
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
        fields(self.generator.length(), text).map_err(|e| invalid_id(Kind::Cuid2, text, &e))
    }

    fn describe(&self, out: &mut Value) {
        let length = self.generator.length();
        let bits = cuid2::bits(length);
        out["length"] = length.into();
        out["random_bits"] = bits.into();
        if let Some(rate) = self.expected_rate {
            let risk = snowdrift_core::kinds::nanoid::CollisionRisk::of(bits, rate);
            out["expected_rate"] = rate.into();
            out["collision_1pct_after"] = risk.time_text().into();
            out["collision_1pct_after_secs"] = risk.seconds.into();
        }
    }
}

/// What a cuid2 of `length` characters holds: nothing readable, said plainly; refused when
/// its length or a character does not fit.
pub fn fields(length: usize, text: &str) -> Result<Value, snowdrift_core::Error> {
    cuid2::check(text, length)?;
    Ok(json!({
        "id": text,
        "holds": "no fields: a cuid2 is a hash of its time, salt, counter and fingerprint, \
                  none of which can be read back",
        "length": length,
    }))
}
