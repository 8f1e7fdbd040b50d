//! What a token may do: a role (`read` or `admin`) over a set of generator names (or `*`).

use std::collections::BTreeSet;
use std::fmt;

use crate::error::ConfigError;

/// What a request touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// One generator or tag, by name.
    Name(&'a str),
    /// Every name at once (listing or creating tags): only a `*` token covers it.
    All,
    /// No particular name: any token with the role will do.
    Any,
}

/// The generator names a token covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    /// `*`: every generator and tag, present and future.
    All,
    /// Just these.
    Only(BTreeSet<String>),
}

impl Names {
    /// The set a config list stands for; `*` must stand alone, so a list never looks
    /// narrower than it is.
    pub fn from_list(list: &[String]) -> Result<Self, ConfigError> {
        if list.is_empty() {
            return Err(ConfigError::new(
                "generators is empty, so the token could do nothing; list names, or [\"*\"] \
                 for all"
                    .into(),
            ));
        }
        if list.iter().any(|n| n == "*") {
            if list.len() > 1 {
                return Err(ConfigError::new(
                    "\"*\" already means every generator; give it alone".into(),
                ));
            }
            return Ok(Names::All);
        }
        let mut names = BTreeSet::new();
        for name in list {
            snowdrift_store::segment::validate_tag(name)
                .map_err(|e| ConfigError::new(format!("generators: {name:?}: {e}")))?;
            names.insert(name.clone());
        }
        Ok(Names::Only(names))
    }

    /// Whether `target` is within these names.
    pub fn covers(&self, target: Target<'_>) -> bool {
        match (self, target) {
            (Names::All, _) | (_, Target::Any) => true,
            (Names::Only(names), Target::Name(name)) => names.contains(name),
            (Names::Only(_), Target::All) => false,
        }
    }
}

impl fmt::Display for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Names::All => f.write_str("*"),
            Names::Only(names) => {
                let list: Vec<&str> = names.iter().map(String::as_str).collect();
                f.write_str(&list.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Role;

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn admin_includes_read() {
        assert!(Role::Admin >= Role::Read);
        assert!(Role::Read < Role::Admin);
    }

    #[test]
    fn names_cover_only_what_they_list() {
        let some = Names::from_list(&list(&["orders", "users"])).unwrap();
        assert!(some.covers(Target::Name("orders")));
        assert!(!some.covers(Target::Name("order")));
        assert!(!some.covers(Target::Name("ordersx")));
        assert!(!some.covers(Target::All));
        assert!(some.covers(Target::Any));
        assert_eq!(some.to_string(), "orders, users");
        let all = Names::from_list(&list(&["*"])).unwrap();
        assert!(all.covers(Target::Name("anything")));
        assert!(all.covers(Target::All));
    }

    #[test]
    fn bad_lists_are_refused() {
        assert!(
            Names::from_list(&[])
                .unwrap_err()
                .message()
                .contains("empty")
        );
        assert!(
            Names::from_list(&list(&["*", "a"]))
                .unwrap_err()
                .message()
                .contains("alone")
        );
        assert!(
            Names::from_list(&list(&["bad name"]))
                .unwrap_err()
                .message()
                .contains("bad name")
        );
    }
}
