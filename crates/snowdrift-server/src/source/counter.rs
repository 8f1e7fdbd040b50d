//! Redis counters, plain or rendered through a template.

use snowdrift_store::counter::RedisCounter;

use super::{IdSource, Ids};
use crate::config::Kind;
use crate::error::Error;

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
}
