//! The one way this crate opens Redis: a reconnecting connection with bounded waits.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::error::{Error, Result};

/// Connects to `redis://HOST[:PORT][/DB]`. The connection reconnects by itself; connecting
/// and each command give up after 5 s, so a Redis that stopped answering surfaces as an
/// error instead of a hang.
pub(crate) async fn connect(url: &str) -> Result<ConnectionManager> {
    let client = client(url)?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(Duration::from_secs(5)))
        .set_number_of_retries(2);
    Ok(ConnectionManager::new_with_config(client, config).await?)
}

/// Refuses `url` unless it is a Redis URL (`redis://`, `rediss://`, `unix://`), without
/// connecting: what a config check can know before start.
pub fn check_url(url: &str) -> Result<()> {
    client(url).map(|_| ())
}

fn client(url: &str) -> Result<redis::Client> {
    redis::Client::open(url).map_err(|e| Error::InvalidUrl {
        url: "redis://…".into(),
        reason: e.to_string(),
    })
}
