//! What the Redis worker registry sends to Redis, as a trait: Lua scripts (`EVALSHA`,
//! loaded on `NOSCRIPT`), single commands (`GET`, `MGET`, `SCAN ... MATCH ... COUNT`) and
//! pipelines of them. The `redis` crate implements it for a real Redis
//! ([`super::client`]), the deterministic simulator (`crates/snowdrift-sim`) with a Redis
//! of its own that runs the same scripts in Lua 5.1, so both drive the one registry.

use std::future::Future;
use std::pin::Pin;

pub use redis::Value;

use crate::error::Result;

/// A boxed future, so [`RedisConn`] can be a trait object.
pub type RedisFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// A Redis server as one client sees it: every call may fail with
/// [`Error::Unavailable`](crate::Error::Unavailable) (no answer within the timeout, a lost
/// connection, a server error), and a write may or may not have taken effect then.
pub trait RedisConn: Send + Sync + std::fmt::Debug {
    /// Runs `script` atomically on `keys` and `args` (what `EVALSHA`/`EVAL` do) and
    /// answers its reply.
    fn eval(
        &self,
        script: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> RedisFuture<'_, Value>;
    /// One command, its name first (`["GET", key]`).
    fn query(&self, command: Vec<String>) -> RedisFuture<'_, Value>;
    /// Commands sent together; the replies in order. A command that fails fails the whole
    /// call.
    fn pipeline(&self, commands: Vec<Vec<String>>) -> RedisFuture<'_, Vec<Value>>;
    /// Commands sent together; each command's reply, or the error Redis gave that command
    /// alone (a key of another type), as text.
    fn pipeline_each(
        &self,
        commands: Vec<Vec<String>>,
    ) -> RedisFuture<'_, Vec<std::result::Result<Value, String>>>;
}
