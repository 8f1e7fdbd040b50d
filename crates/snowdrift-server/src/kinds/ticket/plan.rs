//! A `ticket` generator's keys and plan: its servers and table.

use snowdrift_store::ticket::{TicketPool, TicketPoolBuilder};

use crate::config::{Config, GeneratorConfig, Kind};
use crate::kinds::{KindPlan, PlanError, Reached, StartContext};

use super::TicketSource;

/// A `ticket` generator: the pool, checked, to connect.
#[derive(Debug, Clone)]
pub struct TicketPlan {
    /// The pool.
    pub pool: TicketPoolBuilder,
}

impl KindPlan for TicketPlan {
    type Source = TicketSource;
    const KINDS: &'static [Kind] = &[Kind::Ticket];
    fn keys(_kind: Kind) -> &'static [&'static str] {
        &["servers", "table", "obfuscate_key", "obfuscate_bits"]
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        if g.servers.is_empty() {
            return Err(PlanError::Whole(
                "kind ticket needs servers = [\"mysql://...\", ...]".into(),
            ));
        }
        // Generators on the same servers and table share its tickets, which keeps them
        // unique across those generators too.
        let mut pool = TicketPool::builder();
        if let Some(table) = &g.table {
            pool = pool.name(table.as_str());
        }
        for url in &g.servers {
            pool = pool.server(url.as_str());
        }
        pool.check().map_err(|e| PlanError::Whole(e.to_string()))?;
        Ok(TicketPlan { pool })
    }

    fn kind(&self) -> Kind {
        Kind::Ticket
    }

    async fn start(
        &self,
        _name: &str,
        _cx: &StartContext,
    ) -> Result<TicketSource, snowdrift_store::Error> {
        Ok(TicketSource::new(self.pool.clone().connect().await?))
    }

    async fn reach(&self, name: &str, _seen: &mut Vec<String>) -> Vec<Reached> {
        let what = format!("ticket server of generator {name:?}");
        match Reached::bounded(self.pool.reach()).await {
            Ok(servers) => servers
                .into_iter()
                .map(|(url, answer)| Reached::new(what.clone(), &url, answer))
                .collect(),
            Err(e) => vec![Reached::new(what, "(the pool)", Err::<(), _>(e))],
        }
    }
}
