//! The effective config as TOML, for `--check-config`: every section with its defaults
//! filled in and the default generators spelled out, written by the `toml` crate, with every
//! secret masked (passwords in URLs and in their query parameters, obfuscation keys). Token hashes stay: they are not
//! secrets, and the output parses back as a config.

use super::Config;

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
        }
        // The schema is plain tables, strings, numbers and lists, so it always serializes;
        // say so in the output rather than print nothing if that ever changes.
        toml::to_string(&shown)
            .unwrap_or_else(|e| format!("# the effective config could not be shown: {e}\n"))
    }
}

/// The store's one masking policy (see [`snowdrift_store::mask_url`]): the password of
/// the user part and the values of password-like query parameters become `***`.
pub use snowdrift_store::mask_url;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_password_is_masked() {
        assert_eq!(
            mask_url("postgres://app:hunter2@db:5432/ids"),
            "postgres://app:***@db:5432/ids"
        );
        assert_eq!(mask_url("redis://db:6379"), "redis://db:6379");
        assert_eq!(mask_url("mysql://root@db/test"), "mysql://root@db/test");
        assert_eq!(mask_url("sqlite://ids.db"), "sqlite://ids.db");
        assert_eq!(
            mask_url("https://sd:pw@a:2379,b:2379?ca=/etc/ca.pem&key=/k@x"),
            "https://sd:***@a:2379,b:2379?ca=/etc/ca.pem&key=/k@x"
        );
        assert_eq!(
            mask_url("zookeeper://sd:pw@a:2181,b:2181"),
            "zookeeper://sd:***@a:2181,b:2181"
        );
        assert_eq!(mask_url("etcd://a:2379?key=k@x"), "etcd://a:2379?key=k@x");
        assert_eq!(
            mask_url("postgres://h/db?password=secret"),
            "postgres://h/db?password=***"
        );
    }
}
