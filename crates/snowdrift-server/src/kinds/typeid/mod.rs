//! `typeid`: TypeIDs (jetify-com/typeid v0.3) of one configured prefix, their UUIDs v7 made
//! in this process, monotonic within it; nothing to connect.

use serde_json::{Value, json};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::kinds::typeid::{self, TypeId, TypeIdGenerator};
use snowdrift_core::layout::format_ms;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::{Error, core_reason, quoted};
use crate::kinds::uuid::invalid_id;
use crate::kinds::{IdSource, Ids, KindPlan, PlanError, StartContext};

/// A `typeid` generator: its prefix, checked against the specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeidPlan {
    /// The type prefix (may be empty).
    pub prefix: String,
}

impl KindPlan for TypeidPlan {
    type Source = TypeidSource;
    const KINDS: &'static [Kind] = &[Kind::Typeid];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["prefix"]
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let Some(prefix) = g.prefix.as_deref() else {
            return Err(PlanError::Whole(
                "kind typeid needs prefix = \"...\": the type its IDs name, e.g. \"user\" for \
                 user_01h455vb4pex5vsknk084sn02q (up to 63 characters of a-z and _, starting \
                 and ending with a letter), or \"\" for IDs without a prefix"
                    .into(),
            ));
        };
        typeid::check_prefix(prefix).map_err(|e| PlanError::Key("prefix", core_reason(e)))?;
        Ok(TypeidPlan {
            prefix: prefix.to_string(),
        })
    }

    fn kind(&self) -> Kind {
        Kind::Typeid
    }

    async fn start(
        &self,
        _name: &str,
        _cx: &StartContext,
    ) -> Result<TypeidSource, snowdrift_store::Error> {
        TypeIdGenerator::new(&self.prefix, MonotonicClock::new())
            .map(|generator| TypeidSource { generator })
            .map_err(|e| snowdrift_store::Error::Unavailable(e.to_string().into()))
    }
}

/// A started `typeid` generator.
#[derive(Debug)]
pub struct TypeidSource {
    generator: TypeIdGenerator<MonotonicClock>,
}

impl IdSource for TypeidSource {
    fn kind(&self) -> Kind {
        Kind::Typeid
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ids::text(count, || Ok(self.generator.next()?))
    }

    fn max_text_bytes(&self) -> Option<usize> {
        // `prefix_` and 26 characters of base32 (no underscore without a prefix).
        let prefix = self.generator.prefix().len();
        Some(26 + if prefix > 0 { prefix + 1 } else { 0 })
    }

    fn numeric(&self) -> bool {
        false
    }

    /// Its prefix, the UUID and, for a time-based UUID (every one this kind makes), its
    /// time. A TypeID of another prefix is no ID of this generator: refused, naming both.
    fn decode(
        &self,
        _name: &str,
        text: &str,
        _format: Option<IdFormat>,
        _obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        let id: TypeId = text
            .parse()
            .map_err(|e| invalid_id(Kind::Typeid, text, &reason(e)))?;
        let mine = self.generator.prefix();
        if id.prefix() != mine {
            return Err(invalid_id(
                Kind::Typeid,
                text,
                &format!(
                    "its prefix is {}, and this generator's IDs have the prefix {}",
                    quoted(id.prefix()),
                    quoted(mine)
                ),
            ));
        }
        Ok(fields(&id))
    }

    fn describe(&self, out: &mut Value) {
        out["prefix"] = self.generator.prefix().into();
    }
}

/// What a TypeID holds: `id`, `prefix`, `uuid` and, when the UUID holds a time (v7, as every
/// TypeID this kind makes; v1, v6), `time` and `time_ms`.
pub fn fields(id: &TypeId) -> Value {
    let mut out = json!({
        "id": id.to_string(),
        "prefix": id.prefix(),
        "uuid": id.uuid().to_string(),
    });
    if let Some(ms) = id.unix_ms() {
        out["time"] = format_ms(ms).into();
        out["time_ms"] = ms.into();
    }
    out
}

/// Why the core refused a text, without the text again (the refusal names it).
fn reason(e: snowdrift_core::Error) -> String {
    match e {
        snowdrift_core::Error::InvalidEncoding { reason, .. } => reason,
        other => other.to_string(),
    }
}
