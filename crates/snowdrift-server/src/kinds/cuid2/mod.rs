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

/// A `cuid2` generator: its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cuid2Plan {
    /// Characters per ID, 2 to 32.
    pub length: usize,
}

impl KindPlan for Cuid2Plan {
    type Source = Cuid2Source;
    const KINDS: &'static [Kind] = &[Kind::Cuid2];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["length"]
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let length = match g.length {
            None => cuid2::DEFAULT_LENGTH,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let length = cuid2::check_length(length)
            .map_err(|e| PlanError::Key("length", crate::error::core_reason(e)))?;
        Ok(Cuid2Plan { length })
    }

    fn kind(&self) -> Kind {
        Kind::Cuid2
    }

    async fn start(&self, _name: &str, _cx: &StartContext) -> Result<Cuid2Source, snowdrift_store::Error> {
        let unavailable = |e: snowdrift_core::Error| {
            snowdrift_store::Error::Unavailable(e.to_string().into())
        };
        let generator = Cuid2Generator::for_this_process(MonotonicClock::new(), self.length)
            .map_err(unavailable)?;
        Ok(Cuid2Source { generator })
    }
}

/// cuid2s of one length.
#[derive(Debug)]
pub struct Cuid2Source {
    generator: Cuid2Generator<MonotonicClock>,
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
        out["length"] = self.generator.length().into();
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
