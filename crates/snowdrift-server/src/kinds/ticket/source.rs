//! Flickr ticket servers in round-robin.

use snowdrift_store::ticket::TicketPool;

use crate::config::Kind;
use crate::error::Error;
use crate::kinds::{Consecutive, IdSource, Ids};

/// A pool of ticket servers.
#[derive(Debug)]
pub struct TicketSource {
    pool: TicketPool,
}

impl TicketSource {
    /// Serves tickets from `pool`.
    pub fn new(pool: TicketPool) -> Self {
        Self { pool }
    }

    /// The pool, for status.
    pub fn pool(&self) -> &TicketPool {
        &self.pool
    }
}

impl IdSource for TicketSource {
    fn kind(&self) -> Kind {
        Kind::Ticket
    }

    async fn next(&self, count: u64) -> Result<Ids, Error> {
        let mut values = Vec::new();
        let mut left = count;
        while left > 0 {
            let take = left.min(snowdrift_store::ticket::MAX_TICKETS_PER_CALL as u64);
            let got = self.pool.next(take as usize).await?;
            left -= got.len() as u64;
            values.extend(got);
        }
        Ok(Ids::from_values(values))
    }

    fn numeric(&self) -> bool {
        true
    }

    async fn readiness(&self) -> Result<(), String> {
        if self.pool.status().iter().any(|s| s.up) {
            Ok(())
        } else {
            Err("every ticket server is down".into())
        }
    }

    /// Each server's state by its class, not by its URL (`/metrics` names no hosts):
    /// `server="k"` is the k-th of `servers`, whose IDs are ≡ k (mod N).
    fn gauges(&self, name: &str) {
        for server in self.pool.status() {
            let labels = [
                ("generator", name.to_string()),
                ("server", server.offset.to_string()),
            ];
            metrics::gauge!("snowdrift_ticket_server_up", &labels)
                .set(f64::from(u8::from(server.up)));
        }
    }

    async fn consecutive(&self, _name: &str, _n: u64) -> Result<Consecutive, Error> {
        Ok(Consecutive::Never(
            "ticket servers take turns, so a batch is not one run".into(),
        ))
    }
}
