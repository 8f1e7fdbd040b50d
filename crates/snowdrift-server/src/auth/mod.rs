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
//! [`Auth::check`] is the whole decision for one request; HTTP goes through [`RequireLayer`], and
//! other protocols (gRPC, RESP) call [`Auth::authorize`] with the token they were sent.
//!
//! The tokens can change while the server runs ([`Reloader`], `SIGHUP` for `snowdrift
//! serve`): the new set replaces the old one at once, for every protocol. Each check reads
//! one set, so a request is judged wholly by the old tokens or wholly by the new ones, and
//! what was already let in (a gRPC stream, a request being served) finishes.

mod limit;
mod remembered;
mod scope;
mod token;
mod tokens;

use std::sync::Arc;

use arc_swap::ArcSwap;

pub use crate::config::Role;
pub use limit::retry_after_secs;
pub use scope::{Names, Target};
pub use token::{BadHash, TOKEN_PREFIX, TokenHash, generate as generate_token};

use crate::config::AuthConfig;
use crate::error::{ConfigError, Error};
pub(crate) use remembered::Remembered;
pub(crate) use tokens::Tokens;

/// The tokens in force; with none, auth is off and every check passes.
#[derive(Debug, Default)]
pub struct Auth {
    current: ArcSwap<Tokens>,
}

impl Auth {
    /// The tokens of `config`, checked: each hash parses, names and hashes are unique,
    /// generator lists and rates make sense. The error names the token at fault.
    pub fn from_config(config: &AuthConfig) -> Result<Self, ConfigError> {
        Ok(Self {
            current: ArcSwap::from_pointee(Tokens::from_config(config, None)?),
        })
    }

    /// Whether requests need a token now.
    pub fn is_enabled(&self) -> bool {
        self.current.load().is_enabled()
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
    ) -> Result<(), Error> {
        self.current.load().check(authorization, generator, role)
    }

    /// [`Auth::check`] for any [`Target`]. A refusal is [`ErrorKind::Unauthorized`],
    /// [`ErrorKind::Forbidden`] or [`ErrorKind::RateLimited`] (with the wait in
    /// [`Error::retry_after`]).
    ///
    /// [`ErrorKind::Unauthorized`]: crate::ErrorKind::Unauthorized
    /// [`ErrorKind::Forbidden`]: crate::ErrorKind::Forbidden
    /// [`ErrorKind::RateLimited`]: crate::ErrorKind::RateLimited
    pub fn authorize(
        &self,
        authorization: Option<&str>,
        target: Target<'_>,
        role: Role,
    ) -> Result<(), Error> {
        self.current.load().authorize(authorization, target, role)
    }

    /// The tokens in force now, for a decision that must read one set throughout. A guard,
    /// not a counted reference: it is cheaper, and it is held only for one synchronous
    /// decision.
    pub(crate) fn current(&self) -> arc_swap::Guard<Arc<Tokens>> {
        self.current.load()
    }

    /// Puts the tokens of `config` in force, keeping the rate limiter of every token whose
    /// hash, rate and burst stay the same. Returns how many tokens there are now. On an
    /// error nothing changes.
    pub(crate) fn replace(&self, mut new: Tokens) -> usize {
        new.adopt_limits(&self.current.load());
        let count = new.len();
        self.current.store(Arc::new(new));
        count
    }

    /// Auth by `tokens`, checked already (by the [`Plan`](crate::plan::Plan)).
    pub(crate) fn new(tokens: Tokens) -> Self {
        Self {
            current: ArcSwap::from_pointee(tokens),
        }
    }
}
