//! Auth on the fast path: the decision the router's layer makes ([`crate::http::auth`]),
//! made from the request head the fast path read, so that authenticated single-ID requests
//! stay off hyper and axum too.
//!
//! A connection remembers which token its `Authorization` value named, under which set of
//! tokens: a keep-alive client that sends the same bytes again skips the hashing and the
//! constant-time comparisons, and only the per-request part (rate limit, role, scope) runs.
//! A reload puts a new set in force, and the remembered verdict belongs to the old one
//! (compared by identity, and kept alive by the verdict so the identity cannot be reused),
//! so the first request after a reload is identified again against the new tokens.

use std::sync::Arc;

use snowdrift_proto::wire::http1::Route;

use crate::auth::{Role, Target, Tokens};
use crate::error::Error;
use crate::http::auth::snowflake_name;
use crate::state::AppState;

/// What a connection remembers: the set, the value presented, and the token it named.
struct Verdict {
    tokens: Arc<Tokens>,
    presented: Vec<u8>,
    token: usize,
}

/// One connection's auth state.
#[derive(Default)]
pub(crate) struct Gate {
    remembered: Option<Verdict>,
}

impl Gate {
    /// `Ok` when the request may go on (always, with auth off), else the refusal the
    /// router's layer would give: 401, 403 or 429.
    pub(crate) fn admit(
        &mut self,
        state: &AppState,
        route: Route,
        name: &str,
        authorization: Option<&[u8]>,
    ) -> Result<(), Error> {
        let tokens = state.auth.current();
        if !tokens.is_enabled() {
            return Ok(());
        }
        let default_snowflake;
        let target = match route {
            Route::LeafSnowflake => {
                default_snowflake = snowflake_name(state, name);
                default_snowflake
                    .as_deref()
                    .map_or(Target::Any, Target::Name)
            }
            _ => Target::Name(name),
        };
        let token = match &self.remembered {
            Some(v)
                if Arc::ptr_eq(&v.tokens, &tokens)
                    && authorization == Some(v.presented.as_slice()) =>
            {
                v.token
            }
            _ => {
                let token = tokens.identify(authorization.map(header_str))?;
                self.remembered = authorization.map(|presented| Verdict {
                    tokens: Arc::clone(&tokens),
                    presented: presented.to_vec(),
                    token,
                });
                token
            }
        };
        tokens.judge(token, target, Role::Read)
    }
}

/// The header's value as the router's layer reads it (`HeaderValue::to_str`): only visible
/// ASCII and tabs make a string, anything else reads as empty.
fn header_str(value: &[u8]) -> &str {
    if value
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        std::str::from_utf8(value).unwrap_or_default()
    } else {
        ""
    }
}
