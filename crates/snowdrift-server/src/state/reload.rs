//! Reloading a running server's tokens: a new config's `[auth]` replaces the tokens in force
//! for HTTP, gRPC and RESP at once; every other section only takes effect at a restart, so
//! its changes are reported, never applied half-way.
//!
//! A config that does not validate changes nothing, and neither does one that would turn auth
//! off on a listener reachable from other machines without `server.insecure_bind`: the same
//! rule as at start, judged against the listeners the server runs with, so a typo never
//! leaves a server open.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::AppState;
use crate::config::{AuthConfig, Config};
use crate::error::ConfigError;
use crate::plan::check_exposure;

/// Reloads the tokens of a running server; from [`crate::Server::reloader`]. Clones share
/// the server, and reloads through any of them run one at a time.
#[derive(Debug, Clone)]
pub struct Reloader {
    state: Arc<AppState>,
    /// The config the server runs with: as started, with the tokens of the last reload.
    running: Arc<Mutex<Config>>,
}

/// What a reload changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// How many tokens are in force now.
    pub tokens: usize,
    /// Names of the tokens that are new.
    pub added: Vec<String>,
    /// Names of the tokens that are gone.
    pub removed: Vec<String>,
    /// Names of the tokens whose hash, generators, role or limit changed.
    pub changed: Vec<String>,
    /// Whether auth went on or off.
    pub switch: AuthSwitch,
    /// Config sections (`server`, `store`, `worker`, `limits`, `generator`, ...) that differ
    /// from the ones the server runs with: not applied, they need a restart.
    pub needs_restart: Vec<String>,
}

/// Whether a reload turned auth on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthSwitch {
    /// On before and after, or off before and after.
    Unchanged,
    /// The old config had no tokens and the new one has some: every request needs one now.
    TurnedOn,
    /// The new config has no tokens: requests need none now.
    TurnedOff,
}

impl Reloader {
    /// A reloader for the server whose shared state is `state`, started with `config`.
    pub(crate) fn new(state: Arc<AppState>, config: &Config) -> Self {
        Self {
            state,
            running: Arc::new(Mutex::new(config.clone())),
        }
    }

    /// Puts the tokens of `config` in force, or changes nothing and says why not.
    ///
    /// `config` is validated whole (a reload is refused for an error in any section, as a
    /// start would be). Requests already let in finish; each later request is judged by the
    /// new tokens. A token whose hash, rate and burst stay the same keeps what it has spent
    /// of its rate limit.
    pub fn reload(&self, config: &Config) -> Result<Reloaded, ConfigError> {
        let plan = config.plan()?;
        // A poisoned lock only means a reload panicked before storing; the config it guards
        // is still the one in force.
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        // The server as it would run: its listeners as started, the new tokens.
        check_exposure(&running.server, plan.tokens.is_enabled()).map_err(|e| {
            ConfigError::new(format!(
                "the new [auth] cannot apply to the running server: {e} (a listener's \
                 address changes only at a restart)"
            ))
        })?;
        let needs_restart = sections_that_differ(&running, config)?;
        let [added, removed, changed] = token_changes(&running.auth, &config.auth)?;
        let was_on = !running.auth.tokens.is_empty();
        let tokens = self.state.auth.replace(plan.tokens);
        running.auth = config.auth.clone();
        let switch = match (was_on, tokens > 0) {
            (false, true) => AuthSwitch::TurnedOn,
            (true, false) => AuthSwitch::TurnedOff,
            _ => AuthSwitch::Unchanged,
        };
        Ok(Reloaded {
            tokens,
            added,
            removed,
            changed,
            switch,
            needs_restart,
        })
    }
}

impl fmt::Display for Reloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.tokens == 1 { "" } else { "s" };
        write!(f, "{} token{plural} in force", self.tokens)?;
        for (what, names) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("changed", &self.changed),
        ] {
            if !names.is_empty() {
                write!(f, "; {what}: {}", names.join(", "))?;
            }
        }
        match self.switch {
            AuthSwitch::Unchanged => Ok(()),
            AuthSwitch::TurnedOn => f.write_str("; auth is now on: every request needs a token"),
            AuthSwitch::TurnedOff => f.write_str("; auth is now off: requests need no token"),
        }
    }
}

/// The top-level sections other than `auth` that differ between `running` and `new`, by
/// their names in the config file. Compared as serialized, so a section added to [`Config`]
/// is compared without a change here.
fn sections_that_differ(running: &Config, new: &Config) -> Result<Vec<String>, ConfigError> {
    let (running, new) = (as_object(running)?, as_object(new)?);
    let mut differ: Vec<String> = running
        .keys()
        .chain(new.keys())
        .filter(|key| *key != "auth" && running.get(*key) != new.get(*key))
        .cloned()
        .collect();
    differ.sort();
    differ.dedup();
    Ok(differ)
}

/// The names of the tokens added, removed and changed from `running` to `new`, each in
/// config order.
fn token_changes(running: &AuthConfig, new: &AuthConfig) -> Result<[Vec<String>; 3], ConfigError> {
    let named = |auth: &AuthConfig| -> Result<Vec<(String, Value)>, ConfigError> {
        auth.tokens
            .iter()
            .map(|t| Ok((t.name.clone(), to_value(t)?)))
            .collect()
    };
    let (running, new) = (named(running)?, named(new)?);
    let find = |list: &[(String, Value)], name: &str| {
        list.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    };
    let mut changes: [Vec<String>; 3] = Default::default();
    for (name, value) in &new {
        match find(&running, name) {
            None => changes[0].push(name.clone()),
            Some(old) if old != *value => changes[2].push(name.clone()),
            Some(_) => {}
        }
    }
    for (name, _) in &running {
        if find(&new, name).is_none() {
            changes[1].push(name.clone());
        }
    }
    Ok(changes)
}

fn as_object(config: &Config) -> Result<serde_json::Map<String, Value>, ConfigError> {
    match to_value(config)? {
        Value::Object(map) => Ok(map),
        other => Err(ConfigError::new(format!(
            "the config serialized as {other}, not as a table of sections"
        ))),
    }
}

fn to_value(v: &impl serde::Serialize) -> Result<Value, ConfigError> {
    serde_json::to_value(v)
        .map_err(|e| ConfigError::new(format!("cannot compare the reloaded config: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::TokenHash;
    use crate::config::Role;
    use crate::config::TokenConfig;

    fn token(name: &str, secret: &str) -> TokenConfig {
        TokenConfig {
            name: name.into(),
            hash: TokenHash::of(secret).to_string(),
            generators: vec!["*".into()],
            role: Role::Read,
            rate: None,
            burst: None,
        }
    }

    #[test]
    fn only_sections_other_than_auth_that_differ_are_named() {
        let running = Config::default();
        let mut new = Config::default();
        new.auth.tokens.push(token("a", "sd_a"));
        assert_eq!(
            sections_that_differ(&running, &new).unwrap(),
            Vec::<String>::new()
        );
        new.limits.max_count += 1;
        new.store.url = "sqlite://other.db".into();
        new.server.insecure_bind = true;
        assert_eq!(
            sections_that_differ(&running, &new).unwrap(),
            ["limits", "server", "store"]
        );
    }

    #[test]
    fn tokens_are_told_apart_by_name() {
        let running = AuthConfig {
            tokens: vec![
                token("kept", "sd_k"),
                token("gone", "sd_g"),
                token("moved", "sd_m"),
            ],
        };
        let mut moved = token("moved", "sd_m");
        moved.rate = Some(5);
        let new = AuthConfig {
            tokens: vec![token("new", "sd_n"), moved, token("kept", "sd_k")],
        };
        let [added, removed, changed] = token_changes(&running, &new).unwrap();
        assert_eq!(
            (added, removed, changed),
            (
                vec!["new".to_string()],
                vec!["gone".to_string()],
                vec!["moved".to_string()]
            )
        );
    }

    #[test]
    fn the_summary_counts_in_words() {
        let mut r = Reloaded {
            tokens: 1,
            added: vec![],
            removed: vec!["a".into()],
            changed: vec![],
            switch: AuthSwitch::Unchanged,
            needs_restart: vec![],
        };
        assert_eq!(r.to_string(), "1 token in force; removed: a");
        r.tokens = 0;
        r.switch = AuthSwitch::TurnedOff;
        assert_eq!(
            r.to_string(),
            "0 tokens in force; removed: a; auth is now off: requests need no token"
        );
    }

    #[test]
    fn the_summary_names_what_changed() {
        let r = Reloaded {
            tokens: 2,
            added: vec!["b".into()],
            removed: vec![],
            changed: vec!["a".into(), "c".into()],
            switch: AuthSwitch::TurnedOn,
            needs_restart: vec!["store".into()],
        };
        assert_eq!(
            r.to_string(),
            "2 tokens in force; added: b; changed: a, c; auth is now on: every request needs a token"
        );
    }
}
