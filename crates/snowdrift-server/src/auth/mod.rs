//! Bearer-token auth: each token has a role (`read` issues and decodes IDs, `admin` also
//! administers tags) over a set of generator names (or `*`), and optionally a rate limit.
//!
//! Auth is on when the config lists at least one `[[auth.token]]`:
//!
//! ```toml
//! [[auth.token]]
//! name = "ci"
//! hash = "sha256:..."          # printed by `snowdrift token create`
//! generators = ["orders"]      # or ["*"]
//! role = "read"                # or "admin"
//! rate = 100                   # requests per second (optional)
//! burst = 200                  # requests at once (optional, default: rate)
//! ```
//!
//! The server keeps only the SHA-256 of each token. A request's token is hashed and compared
//! with every configured hash in constant time, all of them every time, so the response time
//! says nothing about which hash (or how much of one) matched.
//!
//! [`Auth::check`] is the whole decision for one request; HTTP goes through [`require`], and
//! other protocols (gRPC) call [`Auth::check`] with their `authorization` metadata.

mod http;
mod limit;
mod scope;
mod token;

use std::time::Duration;

use axum::http::StatusCode;
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

pub use http::require;
pub use limit::retry_after_secs;
pub use scope::{Names, Role, Target};
pub use token::{BadHash, TOKEN_PREFIX, TokenHash, generate as generate_token};

use crate::config::{AuthConfig, TokenConfig};
use crate::error::{ApiError, ConfigError};
use limit::RateLimit;

/// The configured tokens; with none, auth is off and every check passes.
#[derive(Debug, Default)]
pub struct Auth {
    tokens: Vec<Token>,
}

#[derive(Debug)]
struct Token {
    name: String,
    hash: TokenHash,
    /// `hash.words()`, kept for the comparison on every request.
    words: [u64; 4],
    names: Names,
    role: Role,
    limit: Option<RateLimit>,
}

/// A refused request: the contract error, and for a rate limit how long to wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// 401 `unauthorized`, 403 `forbidden` or 429 `rate_limited`.
    pub error: ApiError,
    /// For 429: when the token may send again (HTTP sends it as `Retry-After`).
    pub retry_after: Option<Duration>,
}

impl From<Denied> for ApiError {
    fn from(d: Denied) -> Self {
        d.error
    }
}

impl Auth {
    /// The tokens of `config`, checked: each hash parses, names and hashes are unique,
    /// generator lists and rates make sense. The error names the token at fault.
    pub fn from_config(config: &AuthConfig) -> Result<Self, ConfigError> {
        let mut tokens: Vec<Token> = Vec::with_capacity(config.tokens.len());
        for (i, t) in config.tokens.iter().enumerate() {
            let token = Token::from_config(t)
                .map_err(|e| ConfigError::new(format!("auth.token[{i}] ({:?}): {e}", t.name)))?;
            if let Some(j) = tokens.iter().position(|o| o.name == token.name) {
                return Err(ConfigError::new(format!(
                    "auth.token[{i}]: the name {:?} is already used by auth.token[{j}]; names \
                     tell tokens apart in messages and logs",
                    token.name
                )));
            }
            if let Some(j) = tokens.iter().position(|o| o.hash == token.hash) {
                return Err(ConfigError::new(format!(
                    "auth.token[{i}] ({:?}): the same hash as auth.token[{j}]; make a new \
                     token for each use with `snowdrift token create`",
                    token.name
                )));
            }
            tokens.push(token);
        }
        Ok(Self { tokens })
    }

    /// Whether requests need a token.
    pub fn is_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// Whether the `Authorization` value `authorization` (`Bearer <token>`) allows `role` on
    /// the generator or tag `generator`, counting the request against the token's rate.
    ///
    /// Always `Ok` when auth is off. Otherwise 401 `unauthorized` without a known token,
    /// 429 `rate_limited` over the token's rate, 403 `forbidden` naming what the token
    /// lacks.
    pub fn check(
        &self,
        authorization: Option<&str>,
        generator: &str,
        role: Role,
    ) -> Result<(), ApiError> {
        self.authorize(authorization, Target::Name(generator), role)
            .map_err(ApiError::from)
    }

    /// [`Auth::check`] for any [`Target`], keeping the wait of a rate limit.
    pub fn authorize(
        &self,
        authorization: Option<&str>,
        target: Target<'_>,
        role: Role,
    ) -> Result<(), Denied> {
        if !self.is_enabled() {
            return Ok(());
        }
        let presented = bearer(authorization)?;
        let token = self.find(presented).ok_or_else(|| {
            unauthorized(
                "the bearer token is not one this server knows; check it was copied whole, \
                 and that its hash is in the server's [[auth.token]] config",
            )
        })?;
        if let Some(limit) = &token.limit {
            limit.take().map_err(|wait| {
                let secs = retry_after_secs(wait);
                Denied {
                    error: ApiError {
                        status: StatusCode::TOO_MANY_REQUESTS,
                        code: "rate_limited",
                        message: format!(
                            "token {:?} is over its limit of {} requests/s (burst {}); retry \
                             in {secs} s",
                            token.name,
                            limit.rate(),
                            limit.burst()
                        ),
                    },
                    retry_after: Some(wait),
                }
            })?;
        }
        if token.role < role {
            return Err(forbidden(format!(
                "token {:?} has role {}; this needs role {role}",
                token.name, token.role
            )));
        }
        if !token.names.covers(target) {
            let what = match target {
                Target::Name(name) => format!("generator or tag {name:?}"),
                Target::All | Target::Any => {
                    "every generator and tag (listing or creating tags)".to_string()
                }
            };
            return Err(forbidden(format!(
                "token {:?} may use only {}; this needs {what}, so use a token whose \
                 generators include it{}",
                token.name,
                token.names,
                if target == Target::All {
                    " (generators = [\"*\"])"
                } else {
                    ""
                }
            )));
        }
        Ok(())
    }

    /// The token whose hash matches `presented`'s. Every configured hash is compared, in
    /// constant time, whatever matches first.
    fn find(&self, presented: &str) -> Option<&Token> {
        let words = TokenHash::of(presented).words();
        let mut found = Choice::from(0);
        let mut index = 0u64;
        for (i, token) in (0u64..).zip(&self.tokens) {
            let same = token.words[..].ct_eq(&words[..]);
            index.conditional_assign(&i, same);
            found |= same;
        }
        if bool::from(found) {
            usize::try_from(index).ok().and_then(|i| self.tokens.get(i))
        } else {
            None
        }
    }
}

impl Token {
    fn from_config(t: &TokenConfig) -> Result<Self, String> {
        if t.name.trim().is_empty() || t.name.chars().any(char::is_control) {
            return Err(
                "name is empty or has control characters; give each token a plain name (it \
                 shows in messages and logs)"
                    .into(),
            );
        }
        let hash = t
            .hash
            .parse::<TokenHash>()
            .map_err(|e| format!("hash: {e}"))?;
        let names = Names::from_list(&t.generators)?;
        let limit = match (t.rate, t.burst) {
            (Some(rate), burst) => Some(RateLimit::new(rate, burst)?),
            (None, Some(_)) => {
                return Err(
                    "burst is set without rate; give rate (requests per second) too".into(),
                );
            }
            (None, None) => None,
        };
        Ok(Self {
            name: t.name.clone(),
            words: hash.words(),
            hash,
            names,
            role: t.role,
            limit,
        })
    }
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer(authorization: Option<&str>) -> Result<&str, Denied> {
    let value = authorization.ok_or_else(|| {
        unauthorized(
            "this server needs a token: send `Authorization: Bearer <token>` (an operator \
             makes one with `snowdrift token create`)",
        )
    })?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(unauthorized(
            "the Authorization header is not `Bearer <token>`; send the token as \
             `Authorization: Bearer <token>`",
        ));
    }
    Ok(token)
}

fn unauthorized(message: &str) -> Denied {
    Denied {
        error: ApiError {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message: message.into(),
        },
        retry_after: None,
    }
}

fn forbidden(message: String) -> Denied {
    Denied {
        error: ApiError {
            status: StatusCode::FORBIDDEN,
            code: "forbidden",
            message,
        },
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str, secret: &str, generators: &[&str], role: Role) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            hash: TokenHash::of(secret).to_string(),
            generators: generators.iter().map(|s| s.to_string()).collect(),
            role,
            rate: None,
            burst: None,
        }
    }

    fn auth(tokens: Vec<TokenConfig>) -> Auth {
        Auth::from_config(&AuthConfig { tokens }).unwrap()
    }

    fn code(r: Result<(), ApiError>) -> &'static str {
        r.map(|()| "ok").unwrap_or_else(|e| e.code)
    }

    #[test]
    fn off_without_tokens() {
        let a = auth(vec![]);
        assert!(!a.is_enabled());
        assert_eq!(code(a.check(None, "x", Role::Admin)), "ok");
    }

    #[test]
    fn the_right_token_passes_and_every_other_is_unauthorized() {
        let a = auth(vec![
            token("one", "sd_one", &["*"], Role::Read),
            token("two", "sd_two", &["*"], Role::Read),
            token("three", "sd_three", &["*"], Role::Read),
        ]);
        // Matches at the first, a middle and the last position.
        for secret in ["sd_one", "sd_two", "sd_three"] {
            let header = format!("Bearer {secret}");
            assert_eq!(code(a.check(Some(&header), "x", Role::Read)), "ok");
            assert_eq!(a.find(secret).map(|t| t.hash), Some(TokenHash::of(secret)));
        }
        assert_eq!(
            code(a.check(Some("bearer  sd_two "), "x", Role::Read)),
            "ok"
        );
        for bad in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer sd_four"),
            Some("Bearer sd_on"),
            Some("Basic c2Rfb25lOg=="),
            Some("sd_one"),
        ] {
            let e = a.check(bad, "x", Role::Read).unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code),
                (401, "unauthorized"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn scope_and_role_are_enforced_and_named() {
        let a = auth(vec![
            token("reader", "sd_r", &["orders"], Role::Read),
            token("admin", "sd_a", &["orders"], Role::Admin),
            token("root", "sd_root", &["*"], Role::Admin),
        ]);
        assert_eq!(
            code(a.check(Some("Bearer sd_r"), "orders", Role::Read)),
            "ok"
        );
        let e = a
            .check(Some("Bearer sd_r"), "users", Role::Read)
            .unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (403, "forbidden"));
        assert!(
            e.message.contains("\"users\"") && e.message.contains("orders"),
            "{e:?}"
        );
        let e = a
            .check(Some("Bearer sd_r"), "orders", Role::Admin)
            .unwrap_err();
        assert_eq!(e.code, "forbidden");
        assert!(e.message.contains("role admin"), "{e:?}");
        assert_eq!(
            code(a.check(Some("Bearer sd_a"), "orders", Role::Admin)),
            "ok"
        );
        assert_eq!(
            code(a.check(Some("Bearer sd_a"), "orders", Role::Read)),
            "ok"
        );
        let e = a
            .authorize(Some("Bearer sd_a"), Target::All, Role::Admin)
            .unwrap_err();
        assert!(e.error.message.contains("\"*\""), "{e:?}");
        assert_eq!(
            a.authorize(Some("Bearer sd_root"), Target::All, Role::Admin),
            Ok(())
        );
        assert_eq!(
            a.authorize(Some("Bearer sd_r"), Target::Any, Role::Read),
            Ok(())
        );
    }

    #[test]
    fn rate_limit_refuses_with_a_wait_and_only_for_that_token() {
        let mut limited = token("slow", "sd_slow", &["*"], Role::Read);
        limited.rate = Some(1);
        limited.burst = Some(2);
        let a = auth(vec![limited, token("free", "sd_free", &["*"], Role::Read)]);
        assert_eq!(code(a.check(Some("Bearer sd_slow"), "x", Role::Read)), "ok");
        assert_eq!(code(a.check(Some("Bearer sd_slow"), "x", Role::Read)), "ok");
        let denied = (0..1000)
            .find_map(|_| {
                a.authorize(Some("Bearer sd_slow"), Target::Any, Role::Read)
                    .err()
            })
            .unwrap();
        assert_eq!(denied.error.status.as_u16(), 429);
        assert_eq!(denied.error.code, "rate_limited");
        assert!(
            denied
                .retry_after
                .is_some_and(|w| w <= Duration::from_secs(1))
        );
        for _ in 0..10 {
            assert_eq!(code(a.check(Some("Bearer sd_free"), "x", Role::Read)), "ok");
        }
    }

    #[test]
    fn bad_configs_name_the_token() {
        let err = |tokens: Vec<TokenConfig>| {
            Auth::from_config(&AuthConfig { tokens })
                .unwrap_err()
                .to_string()
        };
        let mut t = token("ci", "sd_x", &["*"], Role::Read);
        t.hash = "sd_x".into();
        let e = err(vec![t]);
        assert!(
            e.contains("auth.token[0] (\"ci\")") && e.contains("not its hash"),
            "{e}"
        );
        let e = err(vec![
            token("ci", "sd_x", &["*"], Role::Read),
            token("ci", "sd_y", &["*"], Role::Read),
        ]);
        assert!(e.contains("already used"), "{e}");
        let e = err(vec![
            token("a", "sd_x", &["*"], Role::Read),
            token("b", "sd_x", &["*"], Role::Read),
        ]);
        assert!(e.contains("same hash"), "{e}");
        let mut t = token("ci", "sd_x", &["*"], Role::Read);
        t.burst = Some(3);
        assert!(err(vec![t]).contains("without rate"));
        let e = err(vec![token("ci", "sd_x", &[], Role::Read)]);
        assert!(e.contains("empty"), "{e}");
    }
}
