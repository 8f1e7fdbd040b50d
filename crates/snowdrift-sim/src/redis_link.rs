//! One node's connection to the simulated Redis: [`RedisConn`] over the simulated network
//! ([`network::send`]), with the `redis` crate's 5 s response timeout.
//!
//! A script, command or pipeline is one request and one answer, as on a real connection
//! (a pipeline's commands are sent together and run one after another, not atomically:
//! another client's command may fall between them, as in Redis). A request with no
//! answer fails after [`RESPONSE_TIMEOUT`], though it may have taken effect; while there is
//! no primary, the connection is refused.

use std::sync::Arc;
use std::time::Duration;

use snowdrift_store::worker::sim::{RedisConn, RedisFuture, Value};
use snowdrift_store::{Error, Result};
use tokio::time::Instant;

use crate::network::send;
use crate::redis::{CommandError, Redis};
use crate::world::World;

/// How long a request waits for its answer (the registry's connection gives up after 5 s).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Node `node`'s Redis connection.
#[derive(Debug, Clone)]
pub struct RedisLink {
    world: Arc<World>,
    node: usize,
}

fn bytes(args: &[String]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn failed(e: CommandError) -> Error {
    Error::Unavailable(format!("Redis answered an error: {e} (simulated)").into())
}

impl RedisLink {
    /// The connection of node `node`.
    pub fn new(world: Arc<World>, node: usize) -> Self {
        Self { world, node }
    }

    /// Sends `apply` to Redis and waits for its answer.
    async fn call<T: Send + 'static>(
        &self,
        apply: impl FnOnce(&mut Redis, Instant) -> Result<T, CommandError> + Send + 'static,
    ) -> Result<T> {
        let (world, node) = (self.world.clone(), self.node);
        world.awake(node).await;
        let rx = send(&world, node, move |coordinator, now| {
            let redis = coordinator.redis();
            redis.serve(now).and_then(|()| apply(redis, now))
        });
        // A lost request or answer drops the sender: the client hears nothing, and waits
        // out its timeout as over a real network.
        let heard = async {
            match rx.await {
                Ok(answer) => answer,
                Err(_) => std::future::pending().await,
            }
        };
        let answer = tokio::time::timeout(RESPONSE_TIMEOUT, heard).await;
        world.awake(node).await;
        match answer {
            Ok(answer) => answer.map_err(failed),
            Err(_) => Err(Error::Unavailable(
                format!("Redis gave no answer within {RESPONSE_TIMEOUT:?} (simulated)").into(),
            )),
        }
    }
}

impl RedisConn for RedisLink {
    fn eval(
        &self,
        script: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> RedisFuture<'_, Value> {
        Box::pin(self.call(move |redis, now| redis.eval(script, &keys, &args, now)))
    }

    fn query(&self, command: Vec<String>) -> RedisFuture<'_, Value> {
        Box::pin(self.call(move |redis, now| redis.command(&bytes(&command), now)))
    }

    fn pipeline(&self, commands: Vec<Vec<String>>) -> RedisFuture<'_, Vec<Value>> {
        Box::pin(self.call(move |redis, now| {
            commands
                .iter()
                .map(|c| redis.command(&bytes(c), now))
                .collect()
        }))
    }

    fn pipeline_each(
        &self,
        commands: Vec<Vec<String>>,
    ) -> RedisFuture<'_, Vec<std::result::Result<Value, String>>> {
        Box::pin(self.call(move |redis, now| {
            Ok(commands
                .iter()
                .map(|c| redis.command(&bytes(c), now))
                .collect())
        }))
    }
}
