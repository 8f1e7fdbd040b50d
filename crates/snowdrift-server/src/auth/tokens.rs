//! One checked set of tokens: what a request is judged by. [`super::Auth`] holds the current
//! set and swaps in a new one on reload; a set itself never changes.

use std::sync::Arc;

use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

use super::limit::{RateLimit, retry_after_secs};
use super::{Names, Role, Target, TokenHash};
use crate::config::{AuthConfig, TokenConfig};
use crate::error::{ConfigError, Error};

/// The configured tokens; with none, auth is off and every check passes.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
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
    /// Shared with the set this one replaced when the token and its limit stayed the same,
    /// so a reload neither refills a spent burst nor forgets a wait.
    limit: Option<Arc<RateLimit>>,
}

impl Tokens {
    /// The tokens of `config`, checked: each hash parses, names and hashes are unique,
    /// generator lists and rates make sense. The error names the token at fault.
    ///
    /// A token of `previous` with the same hash, rate and burst lends its rate limiter, so
    /// what a token has spent carries over a reload.
    pub(crate) fn from_config(
        config: &AuthConfig,
        previous: Option<&Tokens>,
    ) -> Result<Self, ConfigError> {
        let mut tokens: Vec<Token> = Vec::with_capacity(config.tokens.len());
        for (i, t) in config.tokens.iter().enumerate() {
            let mut token = Token::from_config(t).map_err(|e| {
                ConfigError::new(format!("auth.token[{i}] ({:?}): {}", t.name, e.message()))
            })?;
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
            if let Some(kept) = previous.and_then(|p| p.same_limit(&token)) {
                token.limit = Some(kept);
            }
            tokens.push(token);
        }
        Ok(Self { tokens })
    }

    /// Takes over the rate limiter of every token of `previous` whose hash, rate and burst
    /// are the same here, so what a token has spent carries over a reload.
    pub(crate) fn adopt_limits(&mut self, previous: &Tokens) {
        for token in &mut self.tokens {
            if let Some(kept) = previous.same_limit(token) {
                token.limit = Some(kept);
            }
        }
    }

    /// The limiter of this set's token with `token`'s hash, if its rate and burst are
    /// `token`'s too.
    fn same_limit(&self, token: &Token) -> Option<Arc<RateLimit>> {
        let new = token.limit.as_deref()?;
        let old = self.tokens.iter().find(|o| o.hash == token.hash)?;
        let limit = old.limit.as_ref()?;
        (limit.rate() == new.rate() && limit.burst() == new.burst()).then(|| Arc::clone(limit))
    }

    /// Whether requests need a token.
    pub(crate) fn is_enabled(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// How many tokens there are.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// [`Tokens::authorize`] of one generator or tag, as the contract's error.
    pub(crate) fn check(
        &self,
        authorization: Option<&str>,
        generator: &str,
        role: Role,
    ) -> Result<(), Error> {
        self.authorize(authorization, Target::Name(generator), role)
    }

    /// Whether the `Authorization` value `authorization` (`Bearer <token>`) allows `role` on
    /// `target`, counting the request against the token's rate.
    ///
    /// Always `Ok` when auth is off. Otherwise 401 `unauthorized` without a known token,
    /// 429 `rate_limited` over the token's rate, 403 `forbidden` naming what the token
    /// lacks.
    pub(crate) fn authorize(
        &self,
        authorization: Option<&str>,
        target: Target<'_>,
        role: Role,
    ) -> Result<(), Error> {
        if !self.is_enabled() {
            return Ok(());
        }
        let token = self.identify(authorization)?;
        self.judge(token, target, role)
    }

    /// [`Tokens::authorize`] of a token sent bare, not in an `Authorization` header: Tinyid's
    /// routes take it as the `token` parameter. `None` or an empty token is 401 as a
    /// missing header is.
    pub(crate) fn authorize_token(
        &self,
        token: Option<&str>,
        target: Target<'_>,
        role: Role,
    ) -> Result<(), Error> {
        if !self.is_enabled() {
            return Ok(());
        }
        let presented = token.filter(|t| !t.is_empty()).ok_or_else(|| {
            unauthorized(
                "this server needs a token: send it as the token parameter (an operator makes                  one with `snowdrift token create`)",
            )
        })?;
        let token = self.find(presented).ok_or_else(unknown_token)?;
        self.judge(token, target, role)
    }

    /// Which token of this set the `Authorization` value `authorization` presents: its
    /// place, for [`Tokens::judge`]. 401 `unauthorized` without a known token. Only for a
    /// set with tokens ([`Tokens::is_enabled`]).
    ///
    /// A caller that sees the same value again under the same set may keep the place and
    /// skip this (the hashing and the comparisons) the next time: the fast path does, per
    /// connection.
    pub(crate) fn identify(&self, authorization: Option<&str>) -> Result<usize, Error> {
        let presented = bearer(authorization)?;
        self.find(presented).ok_or_else(unknown_token)
    }

    /// Whether the token at `token` ([`Tokens::identify`]) allows `role` on `target`,
    /// counting the request against its rate: 429 `rate_limited` over it, 403 `forbidden`
    /// naming what the token lacks.
    pub(crate) fn judge(&self, token: usize, target: Target<'_>, role: Role) -> Result<(), Error> {
        let Some(token) = self.tokens.get(token) else {
            return Err(unknown_token());
        };
        if let Some(limit) = &token.limit {
            limit.take().map_err(|wait| {
                let secs = retry_after_secs(wait);
                Error::rate_limited(
                    format!(
                        "token {:?} is over its limit of {} requests/s (burst {}); retry in \
                         {secs} s",
                        token.name,
                        limit.rate(),
                        limit.burst()
                    ),
                    wait,
                )
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
                Target::All | Target::Any => "every generator and tag (listing tags or \
                                               generators, creating tags)"
                    .to_string(),
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
    fn find(&self, presented: &str) -> Option<usize> {
        let words = TokenHash::of(presented).words();
        let mut found = Choice::from(0);
        let mut index = 0u64;
        for (i, token) in (0u64..).zip(&self.tokens) {
            let same = token.words[..].ct_eq(&words[..]);
            index.conditional_assign(&i, same);
            found |= same;
        }
        if bool::from(found) {
            usize::try_from(index).ok()
        } else {
            None
        }
    }
}

impl Token {
    fn from_config(t: &TokenConfig) -> Result<Self, ConfigError> {
        if t.name.trim().is_empty() || t.name.chars().any(char::is_control) {
            return Err(ConfigError::new(
                "name is empty or has control characters; give each token a plain name (it \
                 shows in messages and logs)"
                    .into(),
            ));
        }
        let hash = t
            .hash
            .parse::<TokenHash>()
            .map_err(|e| ConfigError::new(format!("hash: {e}")))?;
        let names = Names::from_list(&t.generators)?;
        let limit = match (t.rate, t.burst) {
            (Some(rate), burst) => Some(Arc::new(RateLimit::new(rate, burst)?)),
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "burst is set without rate; give rate (requests per second) too".into(),
                ));
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
fn bearer(authorization: Option<&str>) -> Result<&str, Error> {
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

fn unknown_token() -> Error {
    unauthorized(
        "the bearer token is not one this server knows; check it was copied whole, and that \
         its hash is in the server's [[auth.token]] config",
    )
}

fn unauthorized(message: &str) -> Error {
    Error::unauthorized(message)
}

fn forbidden(message: String) -> Error {
    Error::forbidden(message)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::ErrorKind;

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

    fn auth(tokens: Vec<TokenConfig>) -> Tokens {
        Tokens::from_config(&AuthConfig { tokens }, None).unwrap()
    }

    fn code(r: Result<(), Error>) -> &'static str {
        r.map(|()| "ok").unwrap_or_else(|e| e.code())
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
            assert_eq!(
                a.find(secret).map(|i| a.tokens[i].hash),
                Some(TokenHash::of(secret))
            );
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
                (e.kind(), e.code()),
                (ErrorKind::Unauthorized, "unauthorized"),
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
        assert_eq!((e.kind(), e.code()), (ErrorKind::Forbidden, "forbidden"));
        assert!(
            e.message().contains("\"users\"") && e.message().contains("orders"),
            "{e:?}"
        );
        let e = a
            .check(Some("Bearer sd_r"), "orders", Role::Admin)
            .unwrap_err();
        assert_eq!(e.code(), "forbidden");
        assert!(e.message().contains("role admin"), "{e:?}");
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
        assert!(e.message().contains("\"*\""), "{e:?}");
        assert_eq!(
            a.authorize(Some("Bearer sd_root"), Target::All, Role::Admin),
            Ok(())
        );
        assert_eq!(
            a.authorize(Some("Bearer sd_r"), Target::Any, Role::Read),
            Ok(())
        );
        // A bare token (Tinyid's parameter) is judged the same way.
        let bare = |t: Option<&str>, name: &str| {
            a.authorize_token(t, Target::Name(name), Role::Read)
                .map_err(|e| e.kind())
        };
        assert_eq!(bare(Some("sd_r"), "orders"), Ok(()));
        assert_eq!(bare(Some("sd_r"), "users"), Err(ErrorKind::Forbidden));
        assert_eq!(
            bare(Some("Bearer sd_r"), "orders"),
            Err(ErrorKind::Unauthorized)
        );
        assert_eq!(bare(Some(""), "orders"), Err(ErrorKind::Unauthorized));
        assert_eq!(bare(None, "orders"), Err(ErrorKind::Unauthorized));
        assert_eq!(
            auth(vec![]).authorize_token(None, Target::Any, Role::Read),
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
        assert_eq!(denied.kind(), ErrorKind::RateLimited);
        assert_eq!(denied.code(), "rate_limited");
        assert!(
            denied
                .retry_after()
                .is_some_and(|w| w <= Duration::from_secs(1))
        );
        for _ in 0..10 {
            assert_eq!(code(a.check(Some("Bearer sd_free"), "x", Role::Read)), "ok");
        }
    }

    #[test]
    fn a_token_keeps_what_it_spent_across_a_new_set_unless_its_limit_changed() {
        let limited = |secret: &str, rate: u32, burst: u32| {
            let mut t = token("slow", secret, &["*"], Role::Read);
            t.rate = Some(rate);
            t.burst = Some(burst);
            AuthConfig { tokens: vec![t] }
        };
        let spent = |set: &Tokens, secret: &str| {
            // 1/s with a burst of 1: the first request takes the burst, and the next ones
            // within the second are refused (a slow machine may free one more).
            let header = format!("Bearer {secret}");
            (0..1000).any(|_| set.check(Some(&header), "x", Role::Read).is_err())
        };
        let first = Tokens::from_config(&limited("sd_slow", 1, 1), None).unwrap();
        assert!(spent(&first, "sd_slow"));
        let same = Tokens::from_config(&limited("sd_slow", 1, 1), Some(&first)).unwrap();
        let e = same
            .check(Some("Bearer sd_slow"), "x", Role::Read)
            .unwrap_err();
        assert_eq!(e.code(), "rate_limited", "the spent burst carried over");
        // A new burst, a new rate or a new hash is a new limiter, with its burst to spend.
        let wider = Tokens::from_config(&limited("sd_slow", 1, 3), Some(&first)).unwrap();
        assert_eq!(
            code(wider.check(Some("Bearer sd_slow"), "x", Role::Read)),
            "ok"
        );
        let faster = Tokens::from_config(&limited("sd_slow", 2, 1), Some(&first)).unwrap();
        assert_eq!(
            code(faster.check(Some("Bearer sd_slow"), "x", Role::Read)),
            "ok"
        );
        let other = Tokens::from_config(&limited("sd_new", 1, 1), Some(&first)).unwrap();
        assert_eq!(
            code(other.check(Some("Bearer sd_new"), "x", Role::Read)),
            "ok"
        );
    }

    #[test]
    fn bad_configs_name_the_token() {
        let err = |tokens: Vec<TokenConfig>| {
            Tokens::from_config(&AuthConfig { tokens }, None)
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
