//! `xid`: rs/xid's IDs (seconds, machine ID, process ID, counter), with nothing to connect.
//! The machine ID is resolved in the plan, by rs/xid's rule or from `machine_id`, so
//! `--check-config` and `/v1/generators` show the one start uses.

use serde_json::{Value, json};
use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::codec::IdFormat;
use snowdrift_core::kinds::xid::{self, MachineSource, Xid, XidGenerator};
use snowdrift_core::layout::format_ms;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::Error;
use crate::kinds::uuid::invalid_id;
use crate::kinds::{IdSource, Ids, KindPlan, PlanError, StartContext};

/// An `xid` generator: its machine ID and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidPlan {
    /// The machine ID in every xid.
    pub machine: [u8; 3],
    /// Where it came from.
    pub source: MachineSource,
}

impl KindPlan for XidPlan {
    type Source = XidSource;
    const KINDS: &'static [Kind] = &[Kind::Xid];

    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["machine_id"]
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        if let Some(n) = g.machine_id {
            let machine = xid::machine_id_from_number(n)
                .map_err(|e| PlanError::Key("machine_id", crate::error::core_reason(e)))?;
            return Ok(XidPlan {
                machine,
                source: MachineSource::Set,
            });
        }
        let mut random = [0u8; 3];
        // Used only where the host has neither a machine ID nor a name.
        let _ = getrandom::fill(&mut random);
        let env = std::env::var("XID_MACHINE_ID").ok();
        let (machine, source) = xid::read_host_machine_id(env.as_deref(), random)
            .map_err(|e| PlanError::Key("machine_id", crate::error::core_reason(e)))?;
        Ok(XidPlan { machine, source })
    }

    fn kind(&self) -> Kind {
        Kind::Xid
    }

    async fn start(&self, _name: &str, _cx: &StartContext) -> Result<XidSource, snowdrift_store::Error> {
        let generator = XidGenerator::for_this_process(MonotonicClock::new(), Some(self.machine))
            .map_err(|e| snowdrift_store::Error::Unavailable(e.to_string().into()))?;
        Ok(XidSource {
            generator,
            source: self.source,
        })
    }
}

/// xids of this process.
#[derive(Debug)]
pub struct XidSource {
    generator: XidGenerator<MonotonicClock>,
    source: MachineSource,
}

impl IdSource for XidSource {
    fn kind(&self) -> Kind {
        Kind::Xid
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ids::text(count, || Ok(self.generator.next()?.to_string()))
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
        fields(text).map_err(|e| invalid_id(Kind::Xid, text, &e))
    }

    fn describe(&self, out: &mut Value) {
        let machine = self.generator.machine();
        out["machine"] = hex(&machine).into();
        out["machine_id"] = xid::machine_id_number(machine).into();
        out["machine_source"] = self.source.as_str().into();
        out["pid"] = self.generator.pid().into();
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What an xid holds: its time, machine ID (hex), process ID and counter.
pub fn fields(text: &str) -> Result<Value, snowdrift_core::Error> {
    let id: Xid = text.parse()?;
    let ms = u64::from(id.timestamp_secs()) * 1000;
    Ok(json!({
        "id": id.to_string(),
        "time": format_ms(ms),
        "time_ms": ms,
        "machine": hex(&id.machine()),
        "pid": id.pid(),
        "counter": id.counter(),
    }))
}
