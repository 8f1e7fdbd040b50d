//! `[auth]`: bearer tokens.

use serde::{Deserialize, Serialize};

/// `[auth]`: bearer tokens. Auth is on exactly when at least one `[[auth.token]]` is
/// configured (there is no separate switch that could leave tokens configured but unused).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// The tokens, as `snowdrift token create` prints them.
    #[serde(rename = "token")]
    pub tokens: Vec<TokenConfig>,
}

/// One `[[auth.token]]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Shown in messages and logs, never used to authenticate.
    pub name: String,
    /// `sha256:<hex>` of the token; the token itself is never stored.
    pub hash: String,
    /// The generator and tag names it may use, or `["*"]` for all.
    pub generators: Vec<String>,
    /// `read` (issue and decode IDs) or `admin` (also tag admin).
    pub role: Role,
    /// Requests per second on average; no limit when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u32>,
    /// Requests at once before `rate` applies (default: `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

word_enum!(
    /// What a token may do. `admin` includes everything `read` may.
    Role {
        /// Issue and decode IDs.
        Read = "read",
        /// Also administer segment tags: create, update and read them.
        Admin = "admin",
    }
);
