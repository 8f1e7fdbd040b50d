//! Reading a config: the TOML file, then the `SNOWDRIFT_<SECTION>__<KEY>` environment
//! variables over it (the command line's flags come in as such variables, the highest
//! layer), read into the [`Config`] schema. Unknown keys and values of the wrong shape are
//! refused here, naming the key's path; what the values mean together is the
//! [`Plan`](crate::plan::Plan)'s to check.

use std::path::Path;

use super::Config;
use crate::error::ConfigError;

/// Prefix of the environment variables that override the file.
pub const ENV_PREFIX: &str = "SNOWDRIFT_";

impl Config {
    /// Reads `file` (if any) and the `SNOWDRIFT_<SECTION>__<KEY>` variables of `env` over
    /// it. [`Config::plan`] then checks what the values mean.
    ///
    /// Environment keys are the config's path in upper case with `__` between levels;
    /// generators are addressed by index: `SNOWDRIFT_GENERATOR__0__LAYOUT=sonyflake`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder();
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError::new(format!(
                    "config file {} does not exist",
                    path.display()
                )));
            }
            builder = builder.add_source(
                config::File::from(path)
                    .format(config::FileFormat::Toml)
                    .required(true),
            );
        }
        for (key, value) in env {
            let Some(path) = env_key_path(&key) else {
                continue;
            };
            builder = builder
                .set_override(path, value)
                .map_err(|e| ConfigError::new(format!("{key}: {e}")))?;
        }
        let merged = builder
            .build()
            .map_err(|e| ConfigError::new(e.to_string()))?;
        serde_path_to_error::deserialize(merged).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::new(format!("{path}: {}", e.into_inner()))
        })
    }
}

/// `SNOWDRIFT_STORE__URL` -> `store.url`; `SNOWDRIFT_GENERATOR__0__LAYOUT` ->
/// `generator[0].layout`. Variables without `__` (such as test-only settings) are not
/// config keys.
fn env_key_path(key: &str) -> Option<String> {
    let rest = key.strip_prefix(ENV_PREFIX)?;
    if !rest.contains("__") {
        return None;
    }
    let mut path = String::new();
    for part in rest.split("__") {
        let part = part.to_ascii_lowercase();
        if part.bytes().all(|b| b.is_ascii_digit()) && !part.is_empty() {
            path.push_str(&format!("[{part}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&part);
        }
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_keys_become_config_paths() {
        assert_eq!(
            env_key_path("SNOWDRIFT_STORE__URL").as_deref(),
            Some("store.url")
        );
        assert_eq!(
            env_key_path("SNOWDRIFT_GENERATOR__0__LAYOUT").as_deref(),
            Some("generator[0].layout")
        );
        assert_eq!(
            env_key_path("SNOWDRIFT_AUTH__TOKEN__1__RATE").as_deref(),
            Some("auth.token[1].rate")
        );
        assert_eq!(env_key_path("SNOWDRIFT_TEST_CLOCK_OFFSET_MS"), None);
        assert_eq!(env_key_path("HOME"), None);
    }
}
