//! Timestamp-oracle IDs: from this node's term when it leads, else from the leader.

use super::{IdRun, IdSource, Ids};
use crate::config::Kind;
use crate::error::Error;
use crate::tso::Tso;

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
        let range = self.tso.next(count).await?;
        Ok(Ids::Runs(vec![IdRun {
            first: range.start,
            count: range.len(),
            stride: 1,
        }]))
    }
}
