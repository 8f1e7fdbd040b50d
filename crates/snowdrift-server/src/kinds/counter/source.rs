//! Redis counters, plain or rendered through a template.

use snowdrift_store::counter::RedisCounter;

use serde_json::Value;

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{Consecutive, IdSource, Ids, one_run_last};

/// A Redis counter. With a template its IDs are text (`ORD20261122000042`); without one
/// they are integers.
#[derive(Debug)]
pub struct CounterSource {
    counter: RedisCounter,
}

impl CounterSource {
    /// Serves `counter`.
    pub fn new(counter: RedisCounter) -> Self {
        Self { counter }
    }

    /// The counter, for status.
    pub fn counter(&self) -> &RedisCounter {
        &self.counter
    }
}

impl IdSource for CounterSource {
    fn kind(&self) -> Kind {
        Kind::Counter
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        if self.counter.template().is_some() {
            return Ok(Ids::Text(self.counter.next_rendered(count).await?));
        }
        let values = self.counter.next(count).await?;
        // Counter values start at 1 and are never negative.
        Ok(Ids::from_values(values.into_iter().map(|v| v as u64)))
    }

    fn numeric(&self) -> bool {
        self.counter.template().is_none()
    }

    fn describe(&self, out: &mut Value) {
        let stats = self.counter.stats();
        out["round_trips"] = stats.round_trips.into();
        out["served"] = stats.served.into();
    }

    async fn consecutive(&self, name: &str, n: u64) -> Result<Consecutive, Error> {
        if !self.numeric() {
            return Ok(Consecutive::Never(
                "its IDs are text, rendered through a template".into(),
            ));
        }
        // A plain counter's batch is one run.
        one_run_last(name, self.kind(), self.next(n).await?, n)
    }
}
