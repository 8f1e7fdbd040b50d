//! A connection's token, identified once. A keep-alive HTTP client that presents the same
//! `Authorization` bytes again, or a RESP connection after `AUTH`, skips the hashing and the
//! constant-time comparisons; only the per-request part (rate limit, role, scope) runs each
//! time. A reload puts a new set of tokens in force, and a remembered verdict belongs to the
//! set it was made under (compared by identity, and kept alive by the verdict so the identity
//! cannot be reused), so the first request after a reload is identified again against the
//! new tokens.

use std::sync::Arc;

use super::{Auth, Role, Target, Tokens};
use crate::error::Error;

/// What one connection remembers.
#[derive(Debug, Default)]
pub(crate) struct Remembered {
    verdict: Option<Verdict>,
}

/// The set, the value presented, and the token it named.
struct Verdict {
    tokens: Arc<Tokens>,
    presented: Vec<u8>,
    token: usize,
}

// The value presented holds the token itself: never printed.
impl std::fmt::Debug for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verdict")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Remembered {
    /// The decision [`Auth::authorize`] makes for `presented` (an `Authorization` value),
    /// `target` and `role`, identifying the token only when the value or the set in force
    /// changed since this connection's last request.
    pub(crate) fn check(
        &mut self,
        auth: &Auth,
        presented: Option<&[u8]>,
        target: Target<'_>,
        role: Role,
    ) -> Result<(), Error> {
        let tokens = auth.current();
        if !tokens.is_enabled() {
            return Ok(());
        }
        let token = match &self.verdict {
            Some(v)
                if Arc::ptr_eq(&v.tokens, &tokens) && presented == Some(v.presented.as_slice()) =>
            {
                v.token
            }
            _ => {
                let token = tokens.identify(presented.map(header_str))?;
                self.verdict = presented.map(|presented| Verdict {
                    tokens: Arc::clone(&tokens),
                    presented: presented.to_vec(),
                    token,
                });
                token
            }
        };
        tokens.judge(token, target, role)
    }
}

/// The value as the router's layer reads a header (`HeaderValue::to_str`): only visible
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
