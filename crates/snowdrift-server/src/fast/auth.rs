//! Auth on the fast path: what a route needs is `crate::answer::access`'s one decision, as
//! for the router's layer, judged from the request head the fast path read, so that
//! authenticated single-ID requests stay off hyper and axum too.
//!
//! A connection remembers which token its `Authorization` value named
//! ([`Remembered`]), so a keep-alive client pays the hashing once.

use snowdrift_proto::wire::http1::Route;

use crate::answer::access;
use crate::auth::Remembered;
use crate::error::Error;
use crate::state::AppState;

/// One connection's auth state.
#[derive(Default)]
pub(crate) struct Gate {
    remembered: Remembered,
}

impl Gate {
    /// `Ok` when the request may go on (always, with auth off), else the refusal the
    /// router's layer would give: 401, 403 or 429. `name` is the route's one parameter,
    /// the one its pattern ends with (the parameter a fast route's need names: a test of
    /// `access` keeps it so).
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
        let Some(need) = access::need(route) else {
            return Ok(());
        };
        let touched = need.touches(state, Some(|_: &str| Some(name)));
        self.remembered
            .check(&state.auth, authorization, touched.target(), need.role)
    }
}
