//! The config file's shape: serde types for every section, a file each, with an enum for
//! every mode, so a value that is not one of a key's choices is refused while reading,
//! naming the key. What the values mean together (layouts, leases, tokens, stores, the
//! range of every limit) is the [`Plan`](crate::plan::Plan)'s to check.

use serde::{Deserialize, Serialize};

use super::origin::Origins;

/// A word that is none of a mode's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{word:?} is not one of {}", allowed.join(", "))]
pub struct UnknownWord {
    /// What was given.
    pub word: String,
    /// What is allowed.
    pub allowed: Vec<&'static str>,
}

/// Enums read from and written as one of a fixed set of words, with a message that lists
/// them all when a value is not one of them.
macro_rules! word_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in the order the messages list them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word used in config and messages.
            pub const fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $word),+
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::config::UnknownWord;

            fn from_str(text: &str) -> Result<Self, $crate::config::UnknownWord> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == text)
                    .ok_or_else(|| $crate::config::UnknownWord {
                        word: text.to_string(),
                        allowed: Self::ALL.iter().map(|v| v.name()).collect(),
                    })
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Words;

                impl ::serde::de::Visitor<'_> for Words {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        let words: Vec<String> =
                            $name::ALL.iter().map(|v| format!("{:?}", v.name())).collect();
                        write!(f, "one of {}", words.join(", "))
                    }

                    fn visit_str<E: ::serde::de::Error>(self, text: &str) -> Result<$name, E> {
                        text.parse::<$name>().map_err(E::custom)
                    }
                }

                d.deserialize_str(Words)
            }
        }
    };
}

mod auth;
mod duration;
#[cfg(test)]
mod fields;
mod generator;
mod limits;
mod server;
mod store;
mod worker;

#[cfg(test)]
pub(crate) use fields::serde_fields;

pub use auth::{AuthConfig, Role, TokenConfig};
pub(crate) use duration::duration_text;
pub use generator::{GeneratorConfig, Kind, OnBackwardPolicy, Output};
pub use limits::LimitsConfig;
pub use server::{LeafConfig, LeafErrors, ServerConfig, TinyidConfig};
pub use store::StoreConfig;
pub use worker::{BitsFrom, Derive, Registry, WorkerConfig, machine_state_dir};

/// Everything the server needs to start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where to listen and how.
    pub server: ServerConfig,
    /// Where segment tags live.
    pub store: StoreConfig,
    /// How this node gets its worker ID.
    pub worker: WorkerConfig,
    /// Request limits.
    pub limits: LimitsConfig,
    /// Bearer tokens; none means auth is off.
    pub auth: AuthConfig,
    /// How Leaf's routes answer.
    pub leaf: LeafConfig,
    /// Whether Tinyid's routes are served.
    pub tinyid: TinyidConfig,
    /// The generators, by name. Empty means the defaults: `snowflake` (Twitter layout),
    /// `uuid7`, `ulid` and `objectid`.
    #[serde(rename = "generator")]
    pub generators: Vec<GeneratorConfig>,
    /// Where each key was set (a line of the file, an environment variable, a flag), so
    /// that the plan's errors can say where to look. Empty for a config built in code.
    #[serde(skip)]
    pub(crate) origins: Origins,
}

impl Config {
    /// The generators to serve: the configured ones, or the defaults when none are.
    pub fn effective_generators(&self) -> Vec<GeneratorConfig> {
        if !self.generators.is_empty() {
            return self.generators.clone();
        }
        let simple = |name: &str, kind| GeneratorConfig::new(name, kind);
        let mut snowflake = simple("snowflake", Kind::Snowflake);
        snowflake.layout = Some("twitter".into());
        vec![
            snowflake,
            simple("uuid7", Kind::Uuid7),
            simple("ulid", Kind::Ulid),
            simple("objectid", Kind::Objectid),
        ]
    }
}
