//! Environment variables: `SNOWDRIFT_<SECTION>__<KEY>` names a config key, and the few
//! `SNOWDRIFT_` variables that are read for other purposes are listed here, in one place.
//! Any other `SNOWDRIFT_` variable is refused by the loader, so a misspelt or misshapen one
//! (`SNOWDRIFT_LISTEN`, `SNOWDRIFT_SERVER_LISTEN`) is not silently ignored.

use std::fmt;

/// Prefix of the environment variables that override the file.
pub const ENV_PREFIX: &str = "SNOWDRIFT_";

/// The `SNOWDRIFT_` variables that are not config keys, each with who reads it. The config
/// loader passes over exactly these. A test in this module finds every `SNOWDRIFT_` name the
/// repository uses and fails when one is neither a config key nor listed here.
pub const OTHER_VARIABLES: &[(&str, &str)] = &[
    (
        "SNOWDRIFT_CONFIG",
        "`snowdrift serve --config`: the config file itself",
    ),
    (
        "SNOWDRIFT_LOG",
        "the log filter of `snowdrift serve` and `snowdrift next`",
    ),
    (
        "SNOWDRIFT_TOKEN",
        "the bearer token the CLI's client commands send (`next --server`, `tags`, `bench`)",
    ),
    (
        "SNOWDRIFT_OBFUSCATE_KEY",
        "`snowdrift next` and `snowdrift decode`: --obfuscate-key",
    ),
    ("SNOWDRIFT_SERVER_URL", "`snowdrift tags`: --server"),
    (
        "SNOWDRIFT_MASTODON_SECRET",
        "`snowdrift next --layout mastodon`: --mastodon-secret",
    ),
    (
        "SNOWDRIFT_BIN",
        "tests only: the `snowdrift` binary the clients' tests, the conformance suite and \
         scripts/deploy-test start",
    ),
    (
        "SNOWDRIFT_ENDPOINTS",
        "README's Java example: the servers an application lists (the application's own)",
    ),
    (
        "SNOWDRIFT_URL",
        "README's Go example: the server an application asks (the application's own)",
    ),
    (
        "SNOWDRIFT_PY_ASYNC",
        "tests only: the Python client's conformance program drives its AsyncClient",
    ),
    (
        "SNOWDRIFT_TEST_CLOCK_OFFSET_MS",
        "tests only: shifts the clock of the server and of `snowdrift next` (clock-step tests)",
    ),
    (
        "SNOWDRIFT_TEST_POSTGRES",
        "tests only: the PostgreSQL to test against",
    ),
    (
        "SNOWDRIFT_TEST_MYSQL",
        "tests only: the MySQL/MariaDB to test against",
    ),
    (
        "SNOWDRIFT_TEST_REDIS",
        "tests only: the Redis to test against",
    ),
    (
        "SNOWDRIFT_TEST_ZOOKEEPER",
        "tests only: the ZooKeeper to test against",
    ),
    (
        "SNOWDRIFT_TEST_ETCD",
        "tests only: the etcd to test against",
    ),
    (
        "SNOWDRIFT_TEST_ETCD_BIN",
        "tests only: the etcd binary the TLS tests start",
    ),
    (
        "SNOWDRIFT_TEST_JOBS",
        "scripts/test and scripts/schemathesis: parallel jobs",
    ),
    (
        "SNOWDRIFT_BUILD_COMMIT",
        "building only: the commit `snowdrift --version`, `/healthz` and snowdrift_build_info \
         name, for a build without .git (cargo also sets it when it runs the tests)",
    ),
    (
        "SNOWDRIFT_BUILD_DIRTY",
        "building only: `true` when the tree the build comes from had changes",
    ),
    (
        "SNOWDRIFT_FIXTURE_VERSION",
        "scripts/write-fixtures: the version whose compatibility fixtures are written",
    ),
    (
        "SNOWDRIFT_FIXTURE_ONLY",
        "scripts/write-fixtures: the parts of the compatibility fixtures to write",
    ),
    (
        "SNOWDRIFT_TOOLS_DIR",
        "scripts/test: where cargo-nextest and cargo-fuzz are installed (default \
         ~/.cache/snowdrift-tools)",
    ),
    (
        "SNOWDRIFT_FUZZ_SECONDS",
        "scripts/test: time per fuzz target",
    ),
    (
        "SNOWDRIFT_SCHEMATHESIS_SEED",
        "scripts/schemathesis: the seed of its requests",
    ),
    (
        "SNOWDRIFT_SCHEMATHESIS_EXAMPLES",
        "scripts/schemathesis: examples per operation",
    ),
    (
        "SNOWDRIFT_SCHEMATHESIS_TINYID_EXAMPLES",
        "scripts/schemathesis: examples per operation of Tinyid's routes",
    ),
    (
        "SNOWDRIFT_CHROMIUM",
        "tests only: the Chromium the web UI test drives",
    ),
    (
        "SNOWDRIFT_CHAOS_APP",
        "tests only: makes the client chaos test's child process the app under test",
    ),
];

/// One step of a key's path: a table's key or a list's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// `server`, `listen`.
    Key(String),
    /// `0` in `generator[0]`.
    Index(usize),
}

/// A key's path as the messages write it: `generator[0].layout`.
pub(crate) struct Shown<'a>(pub &'a [Step]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                Step::Key(key) if i == 0 => f.write_str(key)?,
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// What the loader makes of one environment variable.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Variable {
    /// Not ours: no `SNOWDRIFT_` prefix, or one of [`OTHER_VARIABLES`].
    Other,
    /// The config key at this path.
    Key(Vec<Step>),
}

/// `SNOWDRIFT_STORE__URL` -> `store.url`; `SNOWDRIFT_GENERATOR__0__LAYOUT` ->
/// `generator[0].layout`; `SNOWDRIFT_LISTEN` -> `listen` (which the schema then refuses as
/// no key, naming the variable). Errs for a name no key can have (an empty step).
pub(crate) fn variable(name: &str) -> Result<Variable, String> {
    let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
        return Ok(Variable::Other);
    };
    if OTHER_VARIABLES.iter().any(|(other, _)| *other == name) {
        return Ok(Variable::Other);
    }
    let mut path = Vec::new();
    for part in rest.split("__") {
        if part.is_empty() {
            return Err(format!(
                "{name} is not a config key: write SNOWDRIFT_<SECTION>__<KEY> with one `__` \
                 between the steps of the key's path (SNOWDRIFT_SERVER__LISTEN, \
                 SNOWDRIFT_GENERATOR__0__LAYOUT)"
            ));
        }
        path.push(match part.parse::<usize>() {
            Ok(index) if part.bytes().all(|b| b.is_ascii_digit()) => Step::Index(index),
            _ => Step::Key(part.to_ascii_lowercase()),
        });
    }
    Ok(Variable::Key(path))
}

/// The hint added to the error of a variable that names no key.
pub(crate) fn unknown_variable_hint(name: &str) -> String {
    let others: Vec<&str> = OTHER_VARIABLES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| !n.starts_with("SNOWDRIFT_TEST_"))
        .take(5)
        .collect();
    format!(
        "{name} is not a config key, and not one of the variables snowdrift reads for other \
         purposes ({}, and test-only SNOWDRIFT_TEST_*): config keys are \
         SNOWDRIFT_<SECTION>__<KEY>, such as SNOWDRIFT_SERVER__LISTEN",
        others.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(name: &str) -> String {
        match variable(name) {
            Ok(Variable::Key(steps)) => Shown(&steps).to_string(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn environment_keys_become_config_paths() {
        assert_eq!(path("SNOWDRIFT_STORE__URL"), "store.url");
        assert_eq!(
            path("SNOWDRIFT_GENERATOR__0__LAYOUT"),
            "generator[0].layout"
        );
        assert_eq!(path("SNOWDRIFT_AUTH__TOKEN__1__RATE"), "auth.token[1].rate");
        assert_eq!(path("SNOWDRIFT_SERVER__RESP_LISTEN"), "server.resp_listen");
        // Without `__` it is still read as a key, so that the schema refuses it by name.
        assert_eq!(path("SNOWDRIFT_LISTEN"), "listen");
        assert_eq!(path("SNOWDRIFT_TEST_CLOCK_OFFSET_MS"), "Ok(Other)");
        assert_eq!(path("HOME"), "Ok(Other)");
        assert!(variable("SNOWDRIFT_SERVER__").is_err());
        assert!(variable("SNOWDRIFT_SERVER____LISTEN").is_err());
    }

    /// Every `SNOWDRIFT_` name the repository's code, scripts and documents use is a config
    /// key (it has `__`) or listed in [`OTHER_VARIABLES`], and every listed one is used: a
    /// new variable a test or command reads must be listed, or every server started with
    /// it set would refuse to start.
    #[test]
    fn every_snowdrift_variable_in_the_repository_is_a_key_or_listed() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        // Only in the repository: a packaged crate has none of it to read.
        if !root.join("crates/snowdrift-server").is_dir() {
            return;
        }
        let mut found = std::collections::BTreeSet::new();
        let mut dirs = ["crates", "scripts", "bench-peers", "docs"]
            .map(|d| root.join(d))
            .to_vec();
        let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() && !path.ends_with("target") {
                    dirs.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        // Files that name refused variables on purpose.
        let examples = [
            "crates/snowdrift-server/src/config/env.rs",
            "crates/snowdrift-server/tests/it/strict_config.rs",
            "crates/snowdrift/tests/it/check_config.rs",
        ];
        for file in files {
            if examples.iter().any(|e| file.ends_with(e)) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let mut rest = text.as_str();
            while let Some(at) = rest.find(ENV_PREFIX) {
                let tail = &rest[at..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(tail.len());
                let name = &tail[..end];
                // A prefix written out (`SNOWDRIFT_`, `SNOWDRIFT_TEST_<BACKEND>`), not a name.
                if !name.ends_with('_') {
                    found.insert(name.to_string());
                }
                rest = &tail[ENV_PREFIX.len()..];
            }
        }
        let listed: Vec<&str> = OTHER_VARIABLES.iter().map(|(n, _)| *n).collect();
        // Named in the docs (docs/src/server/configuration.md) as what is refused.
        let refused = ["SNOWDRIFT_LISTEN"];
        for name in &found {
            assert!(
                name.contains("__")
                    || listed.contains(&name.as_str())
                    || refused.contains(&name.as_str()),
                "{name} is used in the repository but is neither a config key nor in \
                 OTHER_VARIABLES"
            );
        }
        for name in listed {
            assert!(found.contains(name), "{name} is listed but nothing uses it");
        }
    }
}
