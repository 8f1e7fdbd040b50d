//! Timestamp-oracle IDs: from this node's term when it leads, else from the leader.

use serde_json::{Value, json};
use snowdrift_core::codec::IdFormat;
use snowdrift_core::layout::format_ms;
use snowdrift_core::obfuscate::Obfuscator;

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{Consecutive, IdRun, IdSource, Ids, one_run_last};
use super::oracle::Tso;
use snowdrift_core::segment::IdRange;

/// The IDs of one `tso` generator.
#[derive(Debug)]
pub struct TsoSource {
    // Boxed: its forwarder's TLS settings would make every `Source` this large.
    tso: Box<Tso>,
}

impl TsoSource {
    /// Serves `tso`.
    pub fn new(tso: Tso) -> Self {
        Self { tso: Box::new(tso) }
    }

    /// The oracle's handle: its options, its role, its counters.
    pub fn tso(&self) -> &Tso {
        &self.tso
    }
}

impl IdSource for TsoSource {
    fn kind(&self) -> Kind {
        Kind::Tso
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        Ok(one_run(self.tso.next(count).await?))
    }

    fn numeric(&self) -> bool {
        true
    }

    fn decode(
        &self,
        name: &str,
        text: &str,
        format: Option<IdFormat>,
        obfuscator: Option<&Obfuscator>,
    ) -> Result<Value, Error> {
        let of = format!("generator {name:?}");
        let format = format.unwrap_or_default();
        let id = crate::kinds::codec::read(self, name, text, format, obfuscator, &of)?;
        let parts = self
            .tso
            .config()
            .decode(id)
            .map_err(|e| Error::invalid(crate::error::core_reason(e)))?;
        Ok(json!({
            "id": id.to_string(),
            "time": format_ms(parts.physical_ms),
            "time_ms": parts.physical_ms,
            "logical": parts.logical,
        }))
    }

    fn describe(&self, out: &mut Value) {
        out["tso"] = super::status::json(&self.tso);
    }

    async fn readiness(&self) -> Result<(), String> {
        super::status::readiness(&self.tso)
    }

    fn gauges(&self, name: &str) {
        super::status::gauges(name, &self.tso.report(), self.tso.config().window_ms);
    }

    async fn shutdown(&self, _name: &str, _keepers: &tokio::runtime::Handle) {
        // A leader resigns, so another takes over at once.
        self.tso.shutdown().await;
    }

    async fn consecutive(&self, name: &str, n: u64) -> Result<Consecutive, Error> {
        // One allocation is one run.
        one_run_last(name, self.kind(), self.next(n).await?, n)
    }

    async fn next_for_peer(&self, count: u64) -> Option<Result<(Ids, i64), Error>> {
        let answer = super::oracle::serve_forwarded(true, self.tso.next_in_term(count)).await;
        Some(answer.map(|(range, term)| (one_run(range), term)))
    }
}

/// An oracle's allocation as IDs: one run.
fn one_run(range: IdRange) -> Ids {
    Ids::Runs(vec![IdRun {
        first: range.start,
        count: range.len(),
        stride: 1,
    }])
}
