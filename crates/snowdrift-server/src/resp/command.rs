//! The commands the listener knows, read from a request's arguments: names matched without
//! regard to case, arities and numbers checked, errors worded as Redis words them (clients
//! and people recognise `wrong number of arguments`), plus what this server does speak.

use super::refusal::Refusal;

/// What `-ERR unknown command` lists, so a caller learns what to send instead.
pub const SUPPORTED: &str = "INCR name, INCRBY name n, SNOWFLAKE [name [format]], MULTI, EXEC, \
                             DISCARD, PING, ECHO, AUTH, HELLO, INFO, \
                             CLIENT SETNAME|GETNAME|INFO|ID|SETINFO, SELECT 0, QUIT";

/// One request, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command<'a> {
    /// `INCR name`: the next ID of a generator or tag.
    Incr {
        /// The generator or tag.
        name: &'a str,
    },
    /// `INCRBY name n`: `n` new IDs, answered with the last.
    IncrBy {
        /// The generator or tag.
        name: &'a str,
        /// How many, as sent (bounded later, against the server's limit).
        count: i64,
    },
    /// `SNOWFLAKE [name [format]]`: one snowflake ID, of the default snowflake generator
    /// when no name is given; with a format, as text in that format.
    Snowflake {
        /// The snowflake generator.
        name: Option<&'a str>,
        /// A format name (`base62`, `obfuscated-sqids`, ...), read later against the
        /// generator.
        format: Option<&'a str>,
    },
    /// `PING [message]`.
    Ping {
        /// Echoed back when given.
        message: Option<&'a [u8]>,
    },
    /// `ECHO message`.
    Echo {
        /// Echoed back.
        message: &'a [u8],
    },
    /// `AUTH [user] token`: the user is ignored (tokens carry their own name).
    Auth {
        /// The token.
        token: &'a [u8],
    },
    /// `HELLO [protover [AUTH user token] [SETNAME name]]`.
    Hello {
        /// 2 or 3 (checked later, so the error can be `NOPROTO`).
        protocol: Option<i64>,
        /// The token of an `AUTH` option.
        token: Option<&'a [u8]>,
        /// The name of a `SETNAME` option.
        client_name: Option<&'a [u8]>,
    },
    /// `CLIENT SETNAME name`.
    ClientSetName {
        /// The connection's new name.
        name: &'a [u8],
    },
    /// `CLIENT GETNAME`.
    ClientGetName,
    /// `CLIENT INFO`.
    ClientInfo,
    /// `CLIENT ID`.
    ClientId,
    /// `CLIENT SETINFO LIB-NAME|LIB-VER value`, which client libraries send on connecting.
    ClientSetInfo {
        /// `LIB-NAME` or `LIB-VER`, as sent.
        attribute: &'a [u8],
        /// Its value.
        value: &'a [u8],
    },
    /// `SELECT db`: only database 0 exists.
    Select {
        /// The database asked for.
        db: i64,
    },
    /// `QUIT`: answered `+OK`, then the connection closes.
    Quit,
    /// `MULTI`: the commands up to `EXEC` are queued, then run in order.
    Multi,
    /// `EXEC`: runs the queued commands, answering an array of their replies.
    Exec,
    /// `DISCARD`: drops the queued commands.
    Discard,
    /// `INFO [section ...]`: the server section (client libraries read `loading` and
    /// `redis_version` from it before their first command); the sections are not read.
    Info,
}

/// The command `args` (non-empty: the name first) stand for.
pub fn parse<'a>(args: &[&'a [u8]]) -> Result<Command<'a>, Refusal> {
    let Some((&name, rest)) = args.split_first() else {
        return Err(Refusal::err("empty command"));
    };
    let is = |word: &str| name.eq_ignore_ascii_case(word.as_bytes());
    let arity = |ok: bool| {
        if ok {
            Ok(())
        } else {
            Err(Refusal::err(format!(
                "wrong number of arguments for '{}' command",
                shown(name).to_ascii_lowercase()
            )))
        }
    };
    if is("INCR") {
        arity(rest.len() == 1)?;
        Ok(Command::Incr {
            name: text(rest[0])?,
        })
    } else if is("INCRBY") {
        arity(rest.len() == 2)?;
        Ok(Command::IncrBy {
            name: text(rest[0])?,
            count: integer(rest[1])?,
        })
    } else if is("SNOWFLAKE") {
        arity(rest.len() <= 2)?;
        Ok(Command::Snowflake {
            name: rest.first().map(|n| text(n)).transpose()?,
            format: rest.get(1).map(|f| text(f)).transpose()?,
        })
    } else if is("PING") {
        arity(rest.len() <= 1)?;
        Ok(Command::Ping {
            message: rest.first().copied(),
        })
    } else if is("ECHO") {
        arity(rest.len() == 1)?;
        Ok(Command::Echo { message: rest[0] })
    } else if is("AUTH") {
        arity(matches!(rest.len(), 1 | 2))?;
        Ok(Command::Auth {
            token: rest[rest.len() - 1],
        })
    } else if is("HELLO") {
        hello(rest)
    } else if is("CLIENT") {
        client(rest)
    } else if is("SELECT") {
        arity(rest.len() == 1)?;
        Ok(Command::Select {
            db: integer(rest[0])?,
        })
    } else if is("QUIT") {
        Ok(Command::Quit)
    } else if is("MULTI") {
        arity(rest.is_empty())?;
        Ok(Command::Multi)
    } else if is("EXEC") {
        arity(rest.is_empty())?;
        Ok(Command::Exec)
    } else if is("DISCARD") {
        arity(rest.is_empty())?;
        Ok(Command::Discard)
    } else if is("INFO") {
        Ok(Command::Info)
    } else {
        let mut message = format!(
            "unknown command '{}', with args beginning with:",
            shown(name)
        );
        for arg in rest.iter().take(3) {
            message.push_str(&format!(" '{}'", shown(arg)));
        }
        message.push_str(&format!(
            "; snowdrift's RESP listener issues IDs and speaks only {SUPPORTED}"
        ));
        Err(Refusal::err(message))
    }
}

fn hello<'a>(rest: &[&'a [u8]]) -> Result<Command<'a>, Refusal> {
    let Some((&version, mut options)) = rest.split_first() else {
        return Ok(Command::Hello {
            protocol: None,
            token: None,
            client_name: None,
        });
    };
    let protocol = Some(
        integer(version)
            .map_err(|_| Refusal::new("NOPROTO", "the protocol version must be 2 or 3"))?,
    );
    let (mut token, mut client_name) = (None, None);
    while let Some((&option, after)) = options.split_first() {
        if option.eq_ignore_ascii_case(b"AUTH") && after.len() >= 2 {
            token = Some(after[1]);
            options = &after[2..];
        } else if option.eq_ignore_ascii_case(b"SETNAME") && !after.is_empty() {
            client_name = Some(after[0]);
            options = &after[1..];
        } else {
            return Err(Refusal::err(format!(
                "syntax error in HELLO option '{}': use HELLO [2|3 [AUTH user token] [SETNAME name]]",
                shown(option)
            )));
        }
    }
    Ok(Command::Hello {
        protocol,
        token,
        client_name,
    })
}

fn client<'a>(rest: &[&'a [u8]]) -> Result<Command<'a>, Refusal> {
    let usage = || {
        Refusal::err(
            "this server knows CLIENT SETNAME name, CLIENT GETNAME, CLIENT INFO, CLIENT ID and \
             CLIENT SETINFO LIB-NAME|LIB-VER value",
        )
    };
    let Some((&sub, args)) = rest.split_first() else {
        return Err(usage());
    };
    let is = |word: &str| sub.eq_ignore_ascii_case(word.as_bytes());
    match args {
        [name] if is("SETNAME") => Ok(Command::ClientSetName { name }),
        [] if is("GETNAME") => Ok(Command::ClientGetName),
        [] if is("INFO") => Ok(Command::ClientInfo),
        [] if is("ID") => Ok(Command::ClientId),
        [attribute, value] if is("SETINFO") => Ok(Command::ClientSetInfo { attribute, value }),
        _ => Err(usage()),
    }
}

/// A generator or tag name, or a format name: text, since both are (a subset of) ASCII.
fn text(arg: &[u8]) -> Result<&str, Refusal> {
    std::str::from_utf8(arg).map_err(|_| {
        Refusal::err(format!(
            "'{}' is not UTF-8; generator and tag names use A-Z, a-z, 0-9, '_', '-', '.', ':', \
             and format names are words such as base62 or obfuscated-hex",
            shown(arg)
        ))
    })
}

fn integer(arg: &[u8]) -> Result<i64, Refusal> {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|t| t.parse::<i64>().ok())
        .ok_or_else(|| Refusal::err("value is not an integer or out of range"))
}

/// An argument as it may appear inside an error line: at most 64 characters, control
/// characters and quotes escaped.
fn shown(arg: &[u8]) -> String {
    let mut s = String::new();
    for c in String::from_utf8_lossy(arg).chars().take(64) {
        if c.is_control() || c == '\'' {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(line: &str) -> Result<Command<'_>, Refusal> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse(&args)
    }

    #[test]
    fn names_are_matched_without_case_and_arities_checked() {
        assert_eq!(cmd("incr order"), Ok(Command::Incr { name: "order" }));
        assert_eq!(
            cmd("IncrBy order 10"),
            Ok(Command::IncrBy {
                name: "order",
                count: 10
            })
        );
        assert_eq!(
            cmd("SNOWFLAKE"),
            Ok(Command::Snowflake {
                name: None,
                format: None
            })
        );
        assert_eq!(
            cmd("snowflake sf obfuscated-base62"),
            Ok(Command::Snowflake {
                name: Some("sf"),
                format: Some("obfuscated-base62")
            })
        );
        assert!(cmd("SNOWFLAKE sf hex extra").is_err());
        assert_eq!(cmd("AUTH u t"), Ok(Command::Auth { token: b"t" }));
        assert_eq!(
            cmd("hello 3 auth default sd_x setname app"),
            Ok(Command::Hello {
                protocol: Some(3),
                token: Some(b"sd_x"),
                client_name: Some(b"app")
            })
        );
        assert_eq!(cmd("client info"), Ok(Command::ClientInfo));
        assert_eq!(cmd("multi"), Ok(Command::Multi));
        assert_eq!(cmd("EXEC"), Ok(Command::Exec));
        assert_eq!(cmd("Discard"), Ok(Command::Discard));
        assert!(cmd("MULTI x").is_err());
        assert_eq!(cmd("INFO"), Ok(Command::Info));
        assert_eq!(cmd("info server clients"), Ok(Command::Info));
        let e = cmd("INCR").unwrap_err();
        assert_eq!(e.message, "wrong number of arguments for 'incr' command");
        assert!(cmd("INCR a b").is_err());
        let e = cmd("INCRBY a ten").unwrap_err();
        assert!(e.message.contains("not an integer"), "{e:?}");
        assert_eq!(cmd("HELLO x").unwrap_err().code, "NOPROTO");
        assert!(cmd("HELLO 3 AUTH onlyuser").is_err());
        assert!(cmd("CLIENT KILL x").is_err());
    }

    #[test]
    fn unknown_commands_name_themselves_and_what_is_supported() {
        let e = cmd("GET order").unwrap_err();
        assert_eq!(e.code, "ERR");
        assert!(
            e.message
                .starts_with("unknown command 'GET', with args beginning with: 'order'"),
            "{e:?}"
        );
        assert!(e.message.contains("INCR name"), "{e:?}");
        let args: [&[u8]; 2] = [b"SET\r\n", &[0xff, b'\'']];
        let e = parse(&args).unwrap_err();
        assert!(e.message.contains("'SET\\r\\n'"), "{e:?}");
        assert!(!e.message.contains('\n'), "{e:?}");
    }
}
