//! The effective config as TOML, for `--check-config`: every section with its defaults
//! filled in and the default generators spelled out, written by the `toml` crate, with every
//! secret masked (passwords in URLs and in their query parameters, obfuscation keys, Mastodon secrets). Token hashes stay: they are not
//! secrets, and the output parses back as a config. Keys whose defaults have no effect
//! where they are (`store.url` beside `store.urls`, ...) are left out, since the plan
//! refuses them when they are set.

use super::{Config, Registry};

impl Config {
    /// The effective configuration as TOML, with passwords and keys masked.
    pub fn to_masked_toml(&self) -> String {
        let mut shown = self.clone();
        shown.generators = self.effective_generators();
        shown.store.url = mask_url(&shown.store.url);
        shown.store.urls = shown.store.urls.iter().map(|u| mask_url(u)).collect();
        shown.worker.url = shown.worker.url.as_deref().map(mask_url);
        shown.worker.verify_with = shown.worker.verify_with.as_deref().map(mask_url);
        for g in &mut shown.generators {
            g.url = g.url.as_deref().map(mask_url);
            g.servers = g.servers.iter().map(|u| mask_url(u)).collect();
            g.obfuscate_key = g.obfuscate_key.as_ref().map(|_| "***".into());
            g.forward_token = g.forward_token.as_ref().map(|_| "***".into());
            g.secret = g.secret.as_ref().map(|_| "***".into());
        }
        // The schema is plain tables, strings, numbers and lists, so it always serializes;
        // say so in the output rather than print nothing if that ever changes.
        let cannot =
            |e: &dyn std::fmt::Display| format!("# the effective config could not be shown: {e}\n");
        let mut table = match toml::Table::try_from(&shown) {
            Ok(table) => table,
            Err(e) => return cannot(&e),
        };
        let mut drop = |section: &str, key: &str| {
            if let Some(toml::Value::Table(keys)) = table.get_mut(section) {
                keys.remove(key);
            }
        };
        if shown.server.resp_listen.is_none() {
            drop("limits", "resp_max_frame");
        }
        if !shown.store.urls.is_empty() {
            drop("store", "url");
        }
        if shown.worker.registry != Registry::Derived {
            drop("worker", "derive");
        }
        toml::to_string(&table).unwrap_or_else(|e| cannot(&e))
    }
}

/// The store's one masking policy (see [`snowdrift_store::mask_url`]): the password of
/// the user part and the values of password-like query parameters become `***`.
pub use snowdrift_store::mask_url;
