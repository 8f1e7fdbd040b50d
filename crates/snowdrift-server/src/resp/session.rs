//! One connection's state (protocol, token, client name) and what each command does with
//! it: authentication, the connection commands clients send on connecting, and the ID
//! commands.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::answer::access;
use crate::auth::{Remembered, Target};
use crate::error::ErrorKind;
use crate::state::AppState;

use super::command::{self, Command};
use super::issue;
use super::refusal::Refusal;
use super::reply::{self, Protocol};
use snowdrift_proto::wire::resp::{LIMITS, Limits, UNAUTHENTICATED};

/// Whether the connection goes on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Read the next request.
    Continue,
    /// Write what is buffered and close (`QUIT`).
    Close,
}

/// Most commands one `MULTI` may queue, and most bytes they may hold (arguments and their
/// headers): a transaction waits in the server's memory until `EXEC`, so it is bounded as a
/// request is (1,000 connections each holding a full one take 64 MB). A client pipeline of
/// ID commands is far below both.
const MAX_QUEUED: usize = 1_000;
const MAX_QUEUED_BYTES: usize = 64 * 1024;

/// The commands a `MULTI` queued, as sent, to run at `EXEC`.
#[derive(Debug, Default)]
struct Transaction {
    queued: Vec<Vec<Vec<u8>>>,
    bytes: usize,
    /// A command was refused while queueing: `EXEC` runs nothing (`-EXECABORT`), as Redis.
    failed: bool,
}

/// One client connection.
pub struct Session {
    state: Arc<AppState>,
    /// Shown by `HELLO`, `CLIENT ID` and `CLIENT INFO`.
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    protocol: Protocol,
    /// `Bearer <token>` once `AUTH` passed: every ID command checks it again for its
    /// generator, role and rate, as each HTTP request checks its header.
    authorization: Option<String>,
    /// The token `authorization` named, identified once per set of tokens in force.
    remembered: Remembered,
    client_name: Option<String>,
    lib_name: Option<String>,
    lib_ver: Option<String>,
    /// Between `MULTI` and `EXEC` or `DISCARD`.
    transaction: Option<Transaction>,
}

// The authorization holds the token itself: printed only as whether there is one.
impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("peer", &self.peer)
            .field("local", &self.local)
            .field("protocol", &self.protocol)
            .field("authenticated", &self.authorization.is_some())
            .field("client_name", &self.client_name)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A connection from `peer` to `local`, numbered `id`.
    pub fn new(state: Arc<AppState>, id: u64, peer: SocketAddr, local: SocketAddr) -> Self {
        Self {
            state,
            id,
            peer,
            local,
            protocol: Protocol::Resp2,
            authorization: None,
            remembered: Remembered::default(),
            client_name: None,
            lib_name: None,
            lib_ver: None,
            transaction: None,
        }
    }

    /// The bounds of the next request: tight until `AUTH` passed on a server with tokens;
    /// a whole request within `limits.resp_max_frame` either way.
    pub fn limits(&self) -> Limits {
        let max_frame = self.state.conns.limits().resp_max_frame;
        let bounds = if self.state.auth.is_enabled() && self.authorization.is_none() {
            UNAUTHENTICATED
        } else {
            LIMITS
        };
        Limits {
            max_frame,
            ..bounds
        }
    }

    /// Runs the request `args` (the command name first), appending its reply to `out`.
    /// Inside `MULTI`, a command is checked and queued (`+QUEUED`) instead, and `EXEC` runs
    /// the queue in order, answering an array of the replies.
    pub async fn execute(&mut self, args: &[&[u8]], out: &mut Vec<u8>) -> Flow {
        let result = match command::parse(args) {
            Ok(Command::Multi) => self.multi(out),
            Ok(Command::Exec) => self.exec(out).await,
            Ok(Command::Discard) => match self.transaction.take() {
                Some(_) => {
                    reply::ok(out);
                    Ok(Flow::Continue)
                }
                None => Err(Refusal::err("DISCARD without MULTI")),
            },
            // QUIT ends the connection at once, transaction or not, as in Redis.
            Ok(command) if self.transaction.is_some() && command != Command::Quit => {
                self.queue(&command, args, out)
            }
            Ok(command) => self.run(command, out).await,
            Err(refusal) => {
                // A command Redis would not queue aborts the transaction it was sent in.
                if let Some(transaction) = &mut self.transaction {
                    transaction.failed = true;
                }
                Err(refusal)
            }
        };
        result.unwrap_or_else(|refusal| {
            refusal.write(out);
            Flow::Continue
        })
    }

    /// `MULTI`: starts queueing.
    fn multi(&mut self, out: &mut Vec<u8>) -> Result<Flow, Refusal> {
        self.gate(&Command::Multi)?;
        if self.transaction.is_some() {
            return Err(Refusal::err("MULTI calls can not be nested"));
        }
        self.transaction = Some(Transaction::default());
        reply::ok(out);
        Ok(Flow::Continue)
    }

    /// Queues `command` (sent as `args`) for `EXEC`, once it passed what can be checked now:
    /// its arity and numbers (parsed already), authentication, and the transaction's bounds.
    fn queue(
        &mut self,
        command: &Command<'_>,
        args: &[&[u8]],
        out: &mut Vec<u8>,
    ) -> Result<Flow, Refusal> {
        let gate = self.gate(command);
        let Some(transaction) = &mut self.transaction else {
            return Err(Refusal::err(
                "queued outside MULTI; this is a bug in snowdrift",
            ));
        };
        // Each argument costs its bytes and a vector's header.
        let bytes: usize = args.iter().map(|a| a.len() + 24).sum();
        let full = !transaction.failed
            && (transaction.queued.len() >= MAX_QUEUED
                || transaction.bytes + bytes > MAX_QUEUED_BYTES);
        let refused = match gate {
            Err(refusal) => Some(refusal),
            Ok(()) if full => Some(Refusal::err(format!(
                "a transaction holds at most {MAX_QUEUED} commands of {} KiB in all; this one \
                 is discarded at EXEC: send fewer commands per MULTI, or pipeline without \
                 MULTI (redis-py: pipeline(transaction=False))",
                MAX_QUEUED_BYTES / 1024
            ))),
            Ok(()) => None,
        };
        if let Some(refusal) = refused {
            transaction.failed = true;
            // What was queued is no longer needed: EXEC runs none of it.
            transaction.queued = Vec::new();
            return Err(refusal);
        }
        if transaction.failed {
            // EXEC will abort: the command is answered as Redis does, and not kept.
            reply::simple(out, "QUEUED");
            return Ok(Flow::Continue);
        }
        transaction.bytes += bytes;
        transaction
            .queued
            .push(args.iter().map(|a| a.to_vec()).collect());
        reply::simple(out, "QUEUED");
        Ok(Flow::Continue)
    }

    /// `EXEC`: runs the queued commands in order, each reply (an error too) an element of
    /// one array.
    async fn exec(&mut self, out: &mut Vec<u8>) -> Result<Flow, Refusal> {
        let Some(transaction) = self.transaction.take() else {
            return Err(Refusal::err("EXEC without MULTI"));
        };
        if transaction.failed {
            return Err(Refusal::new(
                "EXECABORT",
                "Transaction discarded because of previous errors (each was answered when its \
                 command was queued)",
            ));
        }
        reply::array(out, transaction.queued.len());
        for request in &transaction.queued {
            let args: Vec<&[u8]> = request.iter().map(Vec::as_slice).collect();
            let ran = match command::parse(&args) {
                Ok(command) => self.run(command, out).await,
                Err(refusal) => Err(refusal),
            };
            if let Err(refusal) = ran {
                refusal.write(out);
            }
        }
        Ok(Flow::Continue)
    }

    /// Refuses every command but `AUTH`, `HELLO` and `QUIT` until the connection has
    /// authenticated, on a server with tokens.
    fn gate(&self, command: &Command<'_>) -> Result<(), Refusal> {
        let open = matches!(
            command,
            Command::Auth { .. } | Command::Hello { .. } | Command::Quit
        );
        if !open && self.state.auth.is_enabled() && self.authorization.is_none() {
            return Err(Refusal::new(
                "NOAUTH",
                "Authentication required: send AUTH <token> first (an operator makes a token \
                 with `snowdrift token create`)",
            ));
        }
        Ok(())
    }

    async fn run(&mut self, command: Command<'_>, out: &mut Vec<u8>) -> Result<Flow, Refusal> {
        self.gate(&command)?;
        match command {
            Command::Incr { name } => {
                self.allow(name)?;
                let source = self.state.generators.get(name)?;
                issue::incr(name, &source).await?.write(out);
            }
            Command::IncrBy { name, count } => {
                self.allow(name)?;
                let source = self.state.generators.get(name)?;
                issue::incr_by(name, &source, count, self.state.max_count)
                    .await?
                    .write(out);
            }
            Command::Snowflake { name, format } => {
                let generators = &self.state.generators;
                let (name, source) = issue::snowflake_source(generators, name)?;
                allow(
                    &mut self.remembered,
                    &self.state,
                    self.authorization.as_deref(),
                    &name,
                )?;
                match format {
                    None => issue::incr(&name, &source).await?,
                    Some(format) => issue::formatted(generators, &name, &source, format).await?,
                }
                .write(out);
            }
            Command::Ping { message: None } => reply::simple(out, "PONG"),
            Command::Ping {
                message: Some(message),
            }
            | Command::Echo { message } => reply::bulk(out, message),
            Command::Auth { token } => {
                self.authenticate(token)?;
                reply::ok(out);
            }
            Command::Hello {
                protocol,
                token,
                client_name,
            } => self.hello(protocol, token, client_name, out)?,
            Command::ClientSetName { name } => {
                self.client_name = Some(printable("client name", name)?).filter(|n| !n.is_empty());
                reply::ok(out);
            }
            Command::ClientGetName => match &self.client_name {
                Some(name) => reply::bulk(out, name.as_bytes()),
                None => reply::null(out, self.protocol),
            },
            Command::ClientId => reply::integer(out, self.id_number()),
            Command::ClientInfo => reply::bulk(out, self.info().as_bytes()),
            Command::ClientSetInfo { attribute, value } => {
                let value = Some(printable("library attribute", value)?);
                if attribute.eq_ignore_ascii_case(b"LIB-NAME") {
                    self.lib_name = value;
                } else if attribute.eq_ignore_ascii_case(b"LIB-VER") {
                    self.lib_ver = value;
                } else {
                    return Err(Refusal::err(
                        "unrecognized CLIENT SETINFO option: use LIB-NAME or LIB-VER",
                    ));
                }
                reply::ok(out);
            }
            Command::Select { db: 0 } => reply::ok(out),
            Command::Select { .. } => {
                return Err(Refusal::err(
                    "DB index is out of range: snowdrift has only database 0 (names select \
                     generators and tags)",
                ));
            }
            Command::Quit => {
                reply::ok(out);
                return Ok(Flow::Close);
            }
            Command::Info => reply::bulk(out, server_info().as_bytes()),
            // Handled by `execute`, which never queues them.
            Command::Multi | Command::Exec | Command::Discard => {
                return Err(Refusal::err(
                    "MULTI, EXEC and DISCARD cannot be queued inside a transaction",
                ));
            }
        }
        Ok(Flow::Continue)
    }

    /// Whether this connection's token may read `name` (counting against its rate).
    fn allow(&mut self, name: &str) -> Result<(), Refusal> {
        allow(
            &mut self.remembered,
            &self.state,
            self.authorization.as_deref(),
            name,
        )
    }

    /// `AUTH token`: keeps the token when the server knows it. A refused `AUTH` leaves the
    /// connection as it was, as in Redis.
    fn authenticate(&mut self, token: &[u8]) -> Result<(), Refusal> {
        if !self.state.auth.is_enabled() {
            return Err(Refusal::err(
                "AUTH called, but this server has auth off (no [[auth.token]] is configured): \
                 connect without a token",
            ));
        }
        let wrong = || {
            Refusal::new(
                "WRONGPASS",
                "the token is not one this server knows; check it was copied whole, and that \
                 its hash is in the server's [[auth.token]] config",
            )
        };
        let token = std::str::from_utf8(token).map_err(|_| wrong())?.trim();
        if token.is_empty() {
            return Err(wrong());
        }
        let authorization = format!("Bearer {token}");
        match self
            .state
            .auth
            .authorize(Some(&authorization), Target::Any, access::ISSUE)
        {
            Ok(()) => {
                self.authorization = Some(authorization);
                Ok(())
            }
            Err(denied) if denied.kind() == ErrorKind::Unauthorized => Err(wrong()),
            Err(denied) => Err(denied.into()),
        }
    }

    /// `HELLO [2|3 [AUTH user token] [SETNAME name]]`: switches the protocol and answers
    /// with what this server is.
    fn hello(
        &mut self,
        protocol: Option<i64>,
        token: Option<&[u8]>,
        client_name: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), Refusal> {
        let protocol = match protocol {
            None => self.protocol,
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => {
                return Err(Refusal::new(
                    "NOPROTO",
                    "unsupported protocol version: this server speaks RESP2 and RESP3",
                ));
            }
        };
        match token {
            Some(token) => self.authenticate(token)?,
            None if self.state.auth.is_enabled() && self.authorization.is_none() => {
                return Err(Refusal::new(
                    "NOAUTH",
                    "HELLO must be called with the client already authenticated, or with \
                     HELLO <protover> AUTH <user> <token>",
                ));
            }
            None => {}
        }
        if let Some(name) = client_name {
            self.client_name = Some(printable("client name", name)?).filter(|n| !n.is_empty());
        }
        self.protocol = protocol;
        reply::map(out, 7, protocol);
        for (key, value) in [
            ("server", "snowdrift"),
            ("version", env!("CARGO_PKG_VERSION")),
        ] {
            reply::bulk(out, key.as_bytes());
            reply::bulk(out, value.as_bytes());
        }
        reply::bulk(out, b"proto");
        reply::integer(out, protocol.number());
        reply::bulk(out, b"id");
        reply::integer(out, self.id_number());
        for (key, value) in [("mode", "standalone"), ("role", "master")] {
            reply::bulk(out, key.as_bytes());
            reply::bulk(out, value.as_bytes());
        }
        reply::bulk(out, b"modules");
        reply::array(out, 0);
        Ok(())
    }

    fn id_number(&self) -> i64 {
        i64::try_from(self.id).unwrap_or(i64::MAX)
    }

    /// `CLIENT INFO`'s line, in Redis' `key=value` form.
    fn info(&self) -> String {
        format!(
            "id={} addr={} laddr={} name={} resp={} lib-name={} lib-ver={}\n",
            self.id,
            self.peer,
            self.local,
            self.client_name.as_deref().unwrap_or_default(),
            self.protocol.number(),
            self.lib_name.as_deref().unwrap_or_default(),
            self.lib_ver.as_deref().unwrap_or_default(),
        )
    }
}

/// `INFO`'s reply, whatever sections were asked for: the server section, with what client
/// libraries read before their first command (ioredis' ready check waits while `loading` is
/// 1, and reads `redis_version`). `redis_version` is the Redis release whose protocol this
/// listener follows (RESP3 and `HELLO` as in Redis 7); `snowdrift_version` is this server's.
fn server_info() -> String {
    format!(
        "# Server\r\nredis_version:7.0.0\r\nsnowdrift_version:{}\r\nredis_mode:standalone\r\n\
         loading:0\r\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// `value` as text when it is printable ASCII without spaces (as Redis requires of client
/// names, which `CLIENT INFO` shows space-separated).
fn printable(what: &str, value: &[u8]) -> Result<String, Refusal> {
    if value.len() > 256 || !value.iter().all(|b| (b'!'..=b'~').contains(b)) {
        return Err(Refusal::err(format!(
            "a {what} may hold up to 256 printable ASCII characters, no spaces or newlines"
        )));
    }
    Ok(String::from_utf8_lossy(value).into_owned())
}

/// Whether the token `authorization` names may read `name` (counting against its rate): a
/// function of the session's fields, so a command can check while it holds the state.
fn allow(
    remembered: &mut Remembered,
    state: &AppState,
    authorization: Option<&str>,
    name: &str,
) -> Result<(), Refusal> {
    remembered
        .check(
            &state.auth,
            authorization.map(str::as_bytes),
            Target::Name(name),
            access::ISSUE,
        )
        .map_err(Refusal::from)
}
