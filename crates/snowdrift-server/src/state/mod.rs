//! The one state every transport serves from, passed down as an `Arc` (mini-redis's `Db`):
//! the generators and tags, the request limits, the tokens; and [`issue`], the one way any
//! transport takes IDs, so every ID is counted the same.
//!
//! Imports run one way: transports (`http`, `fast`, `grpc`, `resp`) → `state` → `kinds` →
//! core and store.

pub mod generators;
pub mod readiness;
pub mod reload;

pub use generators::Generators;
pub use reload::{AuthSwitch, Reloaded, Reloader};

use crate::auth::Auth;
use crate::error::Error;
use crate::kinds::{IdSource, Ids, Source};

/// What every transport shares.
#[derive(Debug)]
pub struct AppState {
    /// The generators and tags.
    pub generators: Generators,
    /// Most IDs one request may ask for.
    pub max_count: u64,
    /// Who may call what; off without configured tokens.
    pub auth: Auth,
    /// The client connections of every listener, under `[limits]`'s cap and timeouts.
    pub conns: crate::conn::Admission,
    /// How Leaf's routes answer errors (`leaf.errors`, read at start).
    pub leaf_errors: crate::config::LeafErrors,
    /// Whether Tinyid's routes are served (`tinyid.enabled`, read at start).
    pub tinyid: bool,
}

/// Takes `count` IDs of generator or tag `name` from `source` and counts them in the
/// metrics. `input` is the name a uuid3 or uuid5 generator makes the UUID of; the other
/// kinds take none, and refuse one.
pub async fn issue(
    name: &str,
    source: &Source,
    count: u64,
    input: Option<&str>,
) -> Result<Ids, Error> {
    let ids = source.issue(name, count, input).await?;
    crate::metrics::issued(name, source.kind(), ids.len());
    Ok(ids)
}
