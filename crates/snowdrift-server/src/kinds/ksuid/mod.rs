//! `ksuid`: KSUIDs (segmentio/ksuid) made in this process: the second and 16 random bytes;
//! nothing to connect and nothing to configure.

use serde_json::{Value, json};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::kinds::ksuid::{Ksuid, KsuidGenerator};
use snowdrift_core::layout::format_ms;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::Error;
use crate::kinds::uuid::invalid_id;
use crate::kinds::{IdSource, Ids, KindPlan, PlanError, StartContext};

/// A `ksuid` generator: it takes no keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KsuidPlan;

impl KindPlan for KsuidPlan {
    type Source = KsuidSource;
    const KINDS: &'static [Kind] = &[Kind::Ksuid];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &[]
    }

    fn plan(_config: &Config, _g: &GeneratorConfig) -> Result<Self, PlanError> {
        Ok(KsuidPlan)
    }

    fn kind(&self) -> Kind {
        Kind::Ksuid
    }

    async fn start(
        &self,
        _name: &str,
        _cx: &StartContext,
    ) -> Result<KsuidSource, snowdrift_store::Error> {
        Ok(KsuidSource {
            generator: KsuidGenerator::new(MonotonicClock::new()),
        })
    }
}

/// A started `ksuid` generator.
#[derive(Debug)]
pub struct KsuidSource {
    generator: KsuidGenerator<MonotonicClock>,
}

impl IdSource for KsuidSource {
    fn kind(&self) -> Kind {
        Kind::Ksuid
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ids::text(count, || Ok(self.generator.next()?.to_string()))
    }

    fn numeric(&self) -> bool {
        false
    }

    /// Its time (to the second), the raw timestamp (seconds since 2014-05-13T16:53:20Z) and
    /// the payload in hex.
    fn decode(
        &self,
        _name: &str,
        text: &str,
        _format: Option<IdFormat>,
        _obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        let id: Ksuid = text
            .parse()
            .map_err(|e| invalid_id(Kind::Ksuid, text, &reason(e)))?;
        Ok(fields(&id))
    }
}

/// What a KSUID holds: `id`, its second as `time` and `time_ms`, the raw `timestamp`
/// (seconds since 2014-05-13T16:53:20Z) and the `payload` in hex.
pub fn fields(id: &Ksuid) -> Value {
    let ms = id.unix_secs() * 1000;
    let payload: String = id.payload().iter().map(|b| format!("{b:02x}")).collect();
    json!({
        "id": id.to_string(),
        "time": format_ms(ms),
        "time_ms": ms,
        "timestamp": id.timestamp(),
        "payload": payload,
    })
}

/// Why the core refused a text, without the text again (the refusal names it).
fn reason(e: snowdrift_core::Error) -> String {
    match e {
        snowdrift_core::Error::InvalidEncoding { reason, .. } => reason,
        other => other.to_string(),
    }
}
