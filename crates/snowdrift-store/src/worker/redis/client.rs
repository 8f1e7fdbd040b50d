//! [`RedisConn`] for a real Redis, through the `redis` crate's reconnecting connection:
//! scripts by `EVALSHA` (loaded on `NOSCRIPT`), commands and pipelines one to one.

use redis::Script;
use redis::aio::ConnectionManager;

use super::conn::{RedisConn, RedisFuture, Value};

/// A connection to one Redis (cheap to clone: the manager multiplexes one socket).
#[derive(Clone)]
pub(crate) struct ClientConn {
    conn: ConnectionManager,
}

impl std::fmt::Debug for ClientConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConn").finish_non_exhaustive()
    }
}

impl ClientConn {
    pub(crate) fn new(conn: ConnectionManager) -> Self {
        Self { conn }
    }
}

fn command(args: &[String]) -> redis::Cmd {
    let mut cmd = redis::cmd(args.first().map_or("", String::as_str));
    for arg in args.iter().skip(1) {
        cmd.arg(arg);
    }
    cmd
}

impl RedisConn for ClientConn {
    fn eval(
        &self,
        script: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> RedisFuture<'_, Value> {
        Box::pin(async move {
            let script = Script::new(script);
            let mut invocation = script.prepare_invoke();
            for key in &keys {
                invocation.key(key);
            }
            for arg in &args {
                invocation.arg(arg);
            }
            Ok(invocation.invoke_async(&mut self.conn.clone()).await?)
        })
    }

    fn query(&self, args: Vec<String>) -> RedisFuture<'_, Value> {
        Box::pin(async move { Ok(command(&args).query_async(&mut self.conn.clone()).await?) })
    }

    fn pipeline(&self, commands: Vec<Vec<String>>) -> RedisFuture<'_, Vec<Value>> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            for c in &commands {
                pipe.add_command(command(c));
            }
            Ok(pipe.query_async(&mut self.conn.clone()).await?)
        })
    }

    fn pipeline_each(
        &self,
        commands: Vec<Vec<String>>,
    ) -> RedisFuture<'_, Vec<std::result::Result<Value, String>>> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            // A key of another type fails its own command only.
            pipe.ignore_errors();
            for c in &commands {
                pipe.add_command(command(c));
            }
            let answers: Vec<redis::RedisResult<Value>> =
                pipe.query_async(&mut self.conn.clone()).await?;
            Ok(answers
                .into_iter()
                .map(|a| a.map_err(|e| e.to_string()))
                .collect())
        })
    }
}
