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
//! [`schema`] holds the serde types, a file per section, with an enum for every mode;
//! `load` reads the file, the environment (`env`: which variables are keys, and the list of
//! those read for other purposes) and the flags into one tree (`tree`) that serde reads
//! without coercing a value to its key's type; `origin` keeps where each key was set;
//! `show` prints the effective config back, secrets masked. Unknown keys and values of the
//! wrong type are errors naming the key's path and where it was set, so a typo never
//! silently falls back to a default. What the values mean together, and the range of each,
//! is checked once, by [`Config::plan`].

mod env;
mod load;
pub(crate) mod origin;
mod read;
pub mod schema;
mod show;
mod tree;

pub use env::{ENV_PREFIX, OTHER_VARIABLES};
pub use load::Flag;
pub use schema::*;
pub use show::mask_url;
