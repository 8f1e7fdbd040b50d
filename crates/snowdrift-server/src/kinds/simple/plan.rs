//! The keys and plan of the kinds that need no coordination: only an ObjectId's `layout`.

use crate::config::{Config, GeneratorConfig, Kind};
use crate::kinds::{KindPlan, PlanError, StartContext};

use super::SimpleSource;

/// A `uuid4`, `uuid7`, `ulid` or `objectid` generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimplePlan {
    /// Which of the four.
    pub kind: Kind,
    /// ObjectIds under the legacy layout (machine hash and process ID).
    pub legacy: bool,
}

impl KindPlan for SimplePlan {
    type Source = SimpleSource;
    const KINDS: &'static [Kind] = &[Kind::Uuid4, Kind::Uuid7, Kind::Ulid, Kind::Objectid];

    fn keys(kind: Kind) -> &'static [&'static str] {
        match kind {
            Kind::Objectid => &["layout"],
            _ => &[],
        }
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let legacy = match g.layout.as_deref() {
            None | Some("random") => false,
            Some("legacy") => true,
            Some(other) => {
                return Err(PlanError::Key(
                    "layout",
                    format!(
                        "{} is not an ObjectId layout; use \"random\" (the default: 5 random \
                         bytes per process, today's specification) or \"legacy\" (a 3-byte \
                         hash of the host name and the 2-byte process ID, as drivers before \
                         2018 wrote them)",
                        crate::error::quoted(other)
                    ),
                ));
            }
        };
        Ok(SimplePlan {
            kind: g.kind,
            legacy,
        })
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    async fn start(
        &self,
        _name: &str,
        _cx: &StartContext,
    ) -> Result<SimpleSource, snowdrift_store::Error> {
        let (started, what) = if self.legacy {
            (SimpleSource::legacy_objectid(), "counter")
        } else {
            (SimpleSource::new(self.kind), "process value")
        };
        started.ok_or_else(|| {
            snowdrift_store::Error::Unavailable(
                format!("the operating system gave no randomness for the ObjectId {what}").into(),
            )
        })
    }
}
