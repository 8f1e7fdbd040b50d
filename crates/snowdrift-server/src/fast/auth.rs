//! Auth on the fast path: the decision the router's layer makes ([`crate::http::auth`]),
//! made from the request head the fast path read, so that authenticated single-ID requests
//! stay off hyper and axum too.
//!
//! A connection remembers which token its `Authorization` value named
//! ([`Remembered`]), so a keep-alive client pays the hashing once.

use snowdrift_proto::wire::http1::Route;

use crate::auth::{Remembered, Role, Target};
use crate::error::Error;
use crate::http::auth::snowflake_name;
use crate::state::AppState;

/// One connection's auth state.
#[derive(Default)]
pub(crate) struct Gate {
    remembered: Remembered,
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
        if !state.auth.is_enabled() {
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
        self.remembered
            .check(&state.auth, authorization, target, Role::Read)
    }
}
