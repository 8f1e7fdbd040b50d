//! The server's configuration as the user writes it: one TOML file, overridden by
//! `SNOWDRIFT_<SECTION>__<KEY>` environment variables and flags.
//!
//! ```toml
//! [server]
//! listen = "127.0.0.1:8080"
//!
//! [store]
//! url = "sqlite://snowdrift.db"
//!
//! [[generator]]
//! name = "snowflake"
//! kind = "snowflake"
//! layout = "twitter"
//! ```
//!
//! Three jobs, a file each: [`schema`] (the serde types, an enum for every mode), `load`
//! (file and environment) and `show` (the effective config printed back, secrets masked).
//! Unknown keys are errors naming the key's path, so a typo never silently falls back to a
//! default. What the values mean together is checked once, by [`Config::plan`].

mod load;
pub mod schema;
mod show;

pub use load::ENV_PREFIX;
pub use schema::*;
pub use show::mask_url;
