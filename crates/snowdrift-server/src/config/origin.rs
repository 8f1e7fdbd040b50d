//! Where each key of a loaded config was set: a line of the file, an environment variable
//! or a flag. The loader records it; the plan's errors, found after serde is done, use it
//! to say where to look.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::error::ConfigError;

/// Where one value or table was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A line of the config file.
    File {
        /// The file, as it was named.
        path: Arc<str>,
        /// 1-based.
        line: usize,
    },
    /// An environment variable.
    Env(String),
    /// A command-line flag (`--listen`).
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path} line {line}"),
            Origin::Env(name) => write!(f, "environment variable {name}"),
            Origin::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    origin: Origin,
    /// A value (scalar or list of values), not a table or a list of tables.
    value: bool,
}

/// The origin of every key a loaded config set, by path (`generator[0].layout`, `server`).
/// Keys left at their defaults have none.
#[derive(Debug, Clone, Default)]
pub(crate) struct Origins {
    keys: BTreeMap<String, Entry>,
}

impl Origins {
    /// Records that `path` was set at `origin`; `value` for a value, not a table.
    pub(crate) fn insert(&mut self, path: String, origin: Origin, value: bool) {
        self.keys.insert(path, Entry { origin, value });
    }

    /// Whether the user set `path` (in the file, the environment or a flag).
    pub(crate) fn is_set(&self, path: &str) -> bool {
        self.keys.contains_key(path)
    }

    /// Where `path` was set.
    pub(crate) fn of(&self, path: &str) -> Option<&Origin> {
        self.keys.get(path).map(|e| &e.origin)
    }

    /// `error` with where its key was set, when it does not say yet: the key it names
    /// (its own, else the first key the message mentions that was set), else the nearest
    /// table around that key that the file opened.
    pub(crate) fn locate(&self, error: ConfigError) -> ConfigError {
        if error.place().is_some() {
            return error;
        }
        let key = match error.key() {
            Some(key) => Some(key.to_string()),
            None => self.mentioned(error.message()),
        };
        let Some(key) = key else {
            return error;
        };
        let mut path = key.as_str();
        loop {
            if let Some(origin) = self.of(path) {
                let origin = origin.to_string();
                return error.placed(origin);
            }
            match parent(path) {
                Some(up) => path = up,
                None => return error,
            }
        }
    }

    /// The key a message is about: the first it names that was set to a value, else the
    /// first it names that was set at all, else the first path it names. A generator's
    /// message (`generator[0] ("a"): key "node" does not apply ...`, `generator[0] ("a"):
    /// tag: ...`) is about the key it names after the generator.
    fn mentioned(&self, message: &str) -> Option<String> {
        let paths = paths_in(message);
        if let Some(first) = paths.first()
            && first.starts_with("generator[")
            && !first.contains('.')
            && let Some(rest) = message.split_once("): ").map(|(_, rest)| rest)
        {
            let word_after = |prefix: &str| {
                rest.find(prefix).map(|at| {
                    rest[at + prefix.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
            };
            let candidates = [
                word_after("key \""),
                Some(word_after("").unwrap_or_default()),
            ];
            for word in candidates.into_iter().flatten() {
                let path = format!("{first}.{word}");
                if !word.is_empty() && self.keys.get(&path).is_some_and(|e| e.value) {
                    return Some(path);
                }
            }
        }
        let set = |value: bool| {
            paths
                .iter()
                .find(|p| self.keys.get(*p).is_some_and(|e| e.value || !value))
                .cloned()
        };
        set(true).or_else(|| set(false)).or_else(|| {
            paths
                .iter()
                .find(|p| {
                    let mut up = parent(p);
                    while let Some(path) = up {
                        if self.keys.contains_key(path) {
                            return true;
                        }
                        up = parent(path);
                    }
                    false
                })
                .cloned()
        })
    }
}

/// The path one step up: `generator[0]` for `generator[0].layout`, `generator` for
/// `generator[0]`.
fn parent(path: &str) -> Option<&str> {
    let cut = path.rfind(['.', '['])?;
    Some(&path[..cut])
}

/// The key paths a message names, in order: `limits.max_count`, `generator[0].tag`,
/// `generator[0]`, and sections written `[worker]`.
fn paths_in(message: &str) -> Vec<String> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']');
    let mut paths = Vec::new();
    let mut rest = message;
    while let Some(start) = rest.find(is_path_char) {
        let tail = &rest[start..];
        let end = tail.find(|c| !is_path_char(c)).unwrap_or(tail.len());
        let token = tail[..end].trim_end_matches('.');
        rest = &tail[end..];
        // `[worker]`, `[[auth.token]]`: a section.
        let section = token.trim_start_matches('[').trim_end_matches(']');
        if token.starts_with('[') && !section.contains(['[', ']']) && !section.is_empty() {
            paths.push(section.to_string());
            continue;
        }
        // `limits.max_count`, `generator[0]`, `auth.token[1].rate`: a path with a step.
        let word_start = token.starts_with(|c: char| c.is_ascii_lowercase());
        let indexed = token.contains('[') && token.ends_with(']');
        let dotted = token.contains('.') && !token.contains("..");
        if word_start
            && (indexed || dotted)
            && token.matches('[').count() == token.matches(']').count()
        {
            paths.push(token.to_string());
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins() -> Origins {
        let mut o = Origins::default();
        let at = |line| Origin::File {
            path: "c.toml".into(),
            line,
        };
        o.insert("limits".into(), at(1), false);
        o.insert("limits.max_count".into(), at(2), true);
        o.insert("worker".into(), at(3), false);
        o.insert("worker.id".into(), at(4), true);
        o.insert("generator[0]".into(), at(5), false);
        o.insert("generator[0].node".into(), at(7), true);
        o.insert("generator[0].tag".into(), at(8), true);
        o
    }

    fn place(message: &str) -> Option<String> {
        origins()
            .locate(ConfigError::new(message.into()))
            .place()
            .map(str::to_string)
    }

    #[test]
    fn an_error_is_placed_at_the_key_it_is_about() {
        assert_eq!(
            place("limits.max_count: 0 is below 1").as_deref(),
            Some("c.toml line 2")
        );
        // A value named after a table: the value.
        assert_eq!(
            place("generator[0] (\"g\"): worker.id 5000 does not fit").as_deref(),
            Some("c.toml line 4")
        );
        assert_eq!(
            place("generator[0] (\"g\"): key \"node\" does not apply to kind uuid4").as_deref(),
            Some("c.toml line 7")
        );
        assert_eq!(
            place("generator[0] (\"g\"): tag: not a tag").as_deref(),
            Some("c.toml line 8")
        );
        // A key left at its default: the table around it.
        assert_eq!(
            place("[worker]: ttl too short").as_deref(),
            Some("c.toml line 3")
        );
        assert_eq!(
            place("worker.url is missing").as_deref(),
            Some("c.toml line 3")
        );
        assert_eq!(place("store.url: bad"), None);
        assert_eq!(place("nothing named"), None);
        let keyed = ConfigError::new("says nothing".into()).with_key("limits.max_count");
        assert_eq!(origins().locate(keyed).place(), Some("c.toml line 2"));
    }
}
