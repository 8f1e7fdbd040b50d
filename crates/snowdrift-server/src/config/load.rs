//! Reading a config: the TOML file, then the `SNOWDRIFT_<SECTION>__<KEY>` environment
//! variables over it, then the command line's flags, read into the [`Config`] schema
//! without coercion (see `tree`). A value of the wrong type, an unknown key and a
//! `SNOWDRIFT_` variable that names no key are refused here, naming the key's path and
//! where it was set (the file and line, the variable, the flag); what the values mean
//! together is the [`Plan`](crate::plan::Plan)'s to check, and its errors are placed the
//! same way from what the loader recorded.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::Config;
use super::env::{self, Variable};
use super::origin::{Origin, Origins};
use super::read::{ReadError, Reader};
use super::tree::{File, Node, Value};
use crate::error::ConfigError;

/// A command-line flag that sets a config key: the highest layer, over the file and the
/// environment. Its value is read as the key's type, as an environment variable's is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flag {
    /// The flag as the user wrote it, for messages: `--listen`.
    pub name: String,
    /// The key it sets: `server.listen`.
    pub key: String,
    /// Its value, as text.
    pub value: String,
}

impl Flag {
    /// `name` setting `key` to `value`.
    pub fn new(name: &str, key: &str, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            key: key.into(),
            value: value.into(),
        }
    }
}

impl Config {
    /// Reads `file` (if any) and the `SNOWDRIFT_<SECTION>__<KEY>` variables of `env` over
    /// it. [`Config::plan`] then checks what the values mean.
    ///
    /// Environment keys are the config's path in upper case with `__` between levels;
    /// generators are addressed by index: `SNOWDRIFT_GENERATOR__0__LAYOUT=sonyflake`. A
    /// list is written as in TOML (`SNOWDRIFT_STORE__PRELOAD=["a", "b"]`) or entry by
    /// entry (`SNOWDRIFT_STORE__PRELOAD__0=a`). Any other `SNOWDRIFT_` variable is refused,
    /// except those snowdrift reads for other purposes ([`OTHER_VARIABLES`](super::OTHER_VARIABLES)).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        Self::load_with_flags(file, env, Vec::new())
    }

    /// [`load`](Self::load), with `flags` over the file and the environment.
    pub fn load_with_flags(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        flags: impl IntoIterator<Item = Flag>,
    ) -> Result<Self, ConfigError> {
        let mut root = match file {
            Some(path) => read_file(path)?,
            None => Node::root(),
        };
        // Sorted, so that the first error is the same whatever order the process had them in.
        let mut variables: Vec<(String, String)> = env
            .into_iter()
            .filter(|(name, _)| name.starts_with(env::ENV_PREFIX))
            .collect();
        variables.sort();
        for (name, value) in variables {
            let path = match env::variable(&name) {
                Ok(Variable::Other) => continue,
                Ok(Variable::Key(path)) => path,
                Err(message) => {
                    return Err(ConfigError::new(message).placed(Origin::Env(name).to_string()));
                }
            };
            let origin = Origin::Env(name);
            root.set(&path, text(value, origin.clone()))
                .map_err(|m| ConfigError::new(m).placed(origin.to_string()))?;
        }
        for flag in flags {
            let origin = Origin::Flag(flag.name.clone());
            let path = key_path(&flag.key)
                .ok_or_else(|| ConfigError::new(format!("{} is not a key path", flag.key)))?;
            root.set(&path, text(flag.value, origin.clone()))
                .map_err(|m| ConfigError::new(m).placed(origin.to_string()))?;
        }
        root.check_gaps(&mut Vec::new())
            .map_err(|(message, later)| match later {
                Some(origin) => ConfigError::new(message).placed(origin.to_string()),
                None => ConfigError::new(message),
            })?;
        let mut origins = Origins::default();
        root.record(&mut Vec::new(), &mut origins);
        let mut config = Config::deserialize(Reader::new(root)).map_err(read_error)?;
        config.origins = origins;
        Ok(config)
    }
}

/// A variable's or flag's text at `origin`.
fn text(value: String, origin: Origin) -> Node {
    Node {
        value: Value::Text(value),
        origin: Some(origin),
    }
}

/// `server.listen` -> its steps; `generator[0].layout` too.
fn key_path(key: &str) -> Option<Vec<env::Step>> {
    let mut steps = Vec::new();
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((name, rest)) => (name, Some(rest.strip_suffix(']')?.parse().ok()?)),
            None => (part, None),
        };
        if name.is_empty() {
            return None;
        }
        steps.push(env::Step::Key(name.to_string()));
        steps.extend(index.map(env::Step::Index));
    }
    Some(steps)
}

/// The file's tree, or the error naming the file and the line of its syntax error.
fn read_file(path: &Path) -> Result<Node, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(match e.kind() {
            std::io::ErrorKind::NotFound => format!("config file {shown} does not exist"),
            _ => format!("config file {shown} cannot be read: {e}"),
        })
    })?;
    let file = File {
        path: Arc::from(shown.as_str()),
        text: &text,
    };
    let table = toml::de::DeTable::parse(&text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let at = file.at(span.start);
        let written = text.get(span).unwrap_or_default();
        let message = e.message().trim_end();
        let message = match message {
            "duplicate key" => format!(
                "{written} is given twice; each key is given once (and each [section] once)"
            ),
            _ if !written.is_empty() && written.len() <= 40 && !written.contains('\n') => {
                format!("not valid TOML: {message} (at `{written}`)")
            }
            _ => format!("not valid TOML: {message}"),
        };
        ConfigError::new(message).placed(at.to_string())
    })?;
    Ok(Node::from_file(table.get_ref(), &file))
}

/// A read error as a config error naming the key and where it was set.
fn read_error(e: ReadError) -> ConfigError {
    let Some((path, origin)) = e.at else {
        return ConfigError::new(e.message);
    };
    let mut message = format!("{path}: {}", e.message);
    if e.unknown_key
        && let Some(Origin::Env(name)) = &origin
    {
        message = format!("{message}. {}", env::unknown_variable_hint(name));
    }
    let error = ConfigError::at(&path, message);
    match origin {
        Some(origin) => error.placed(origin.to_string()),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::super::env::Shown;
    use super::*;

    #[test]
    fn flag_keys_become_paths() {
        let shown = |k: &str| key_path(k).map(|p| Shown(&p).to_string());
        assert_eq!(shown("server.listen").as_deref(), Some("server.listen"));
        assert_eq!(
            shown("generator[0].layout").as_deref(),
            Some("generator[0].layout")
        );
        assert_eq!(shown("server..x"), None);
    }
}
