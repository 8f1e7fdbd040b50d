//! Snowflake IDs from an in-process generator.

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::generator::{Attempt, SnowflakeGenerator};
use snowdrift_core::layout::Layout;

use super::{IdRun, IdSource, Ids};
use crate::config::Kind;
use crate::error::ApiError;

/// A snowflake generator; a request for more IDs than the current tick holds waits for the
/// next tick asynchronously instead of blocking a worker thread.
#[derive(Debug)]
pub struct SnowflakeSource {
    generator: SnowflakeGenerator<MonotonicClock>,
    layout_name: String,
}

impl SnowflakeSource {
    /// Serves `generator`, whose layout is called `layout_name` in status output.
    pub fn new(generator: SnowflakeGenerator<MonotonicClock>, layout_name: String) -> Self {
        Self {
            generator,
            layout_name,
        }
    }

    /// The bit layout.
    pub fn layout(&self) -> &Layout {
        self.generator.layout()
    }

    /// The layout's name (a preset, or `custom`).
    pub fn layout_name(&self) -> &str {
        &self.layout_name
    }
}

impl IdSource for SnowflakeSource {
    fn kind(&self) -> Kind {
        Kind::Snowflake
    }

    async fn next(&self, count: u64) -> Result<Ids, ApiError> {
        let mut runs = Vec::new();
        let mut left = count;
        while left > 0 {
            match self.generator.try_next_block(left)? {
                Attempt::Ready(block) => {
                    left -= block.len();
                    runs.extend(block.runs().map(|(first, count, stride)| IdRun {
                        first,
                        count,
                        stride,
                    }));
                }
                Attempt::RetryAfter(wait) => tokio::time::sleep(wait).await,
            }
        }
        Ok(Ids::Runs(runs))
    }
}
