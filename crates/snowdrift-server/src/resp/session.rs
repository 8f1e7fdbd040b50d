//! One connection's state (protocol, token, client name) and what each command does with
//! it: authentication, the connection commands clients send on connecting, and the ID
//! commands.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::auth::{Remembered, Role, Target};
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
    pub async fn execute(&mut self, args: &[&[u8]], out: &mut Vec<u8>) -> Flow {
        match command::parse(args) {
            Ok(command) => match self.run(command, out).await {
                Ok(flow) => flow,
                Err(refusal) => {
                    refusal.write(out);
                    Flow::Continue
                }
            },
            Err(refusal) => {
                refusal.write(out);
                Flow::Continue
            }
        }
    }

    async fn run(&mut self, command: Command<'_>, out: &mut Vec<u8>) -> Result<Flow, Refusal> {
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
            .authorize(Some(&authorization), Target::Any, Role::Read)
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
            Role::Read,
        )
        .map_err(Refusal::from)
}
