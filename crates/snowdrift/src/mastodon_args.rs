//! The keys of `next --layout mastodon`: the secret and table name a server generator's
//! `secret` and `table` set, so that the command issues IDs hashed as the server's are.

use anyhow::{Context, Result, bail};
use snowdrift_core::generator::{MastodonTail, mastodon};
use snowdrift_core::layout::Layout;

/// The hash on the low bits of `--layout mastodon` IDs.
#[derive(Debug, Clone, clap::Args)]
pub struct MastodonArgs {
    /// --layout mastodon: the secret the hash of the low bits is keyed with, the
    /// generator's secret (at least 16 bytes). The environment variable keeps it out of
    /// the process list and the shell's history.
    #[arg(
        long,
        value_name = "SECRET",
        env = "SNOWDRIFT_MASTODON_SECRET",
        hide_env_values = true
    )]
    pub mastodon_secret: Option<String>,
    /// --layout mastodon: the table name hashed in, the generator's table (a server
    /// generator's default is its name).
    #[arg(long, value_name = "NAME")]
    pub mastodon_table: Option<String>,
}

impl MastodonArgs {
    /// The hash for IDs of `layout` (named `name`): `Some` under the `mastodon` preset, which
    /// needs both options; `None` for any other layout, which takes no table.
    pub fn tail(&self, name: &str, layout: &Layout) -> Result<Option<MastodonTail>> {
        if name != mastodon::PRESET {
            if self.mastodon_table.is_some() {
                bail!("--mastodon-table applies to --layout mastodon, not to layout {name}");
            }
            return Ok(None);
        }
        let Some(secret) = &self.mastodon_secret else {
            bail!(
                "--layout mastodon hashes each ID's low bits with a secret: give \
                 --mastodon-secret (or SNOWDRIFT_MASTODON_SECRET), at least 16 bytes, the \
                 generator's secret"
            );
        };
        let Some(table) = &self.mastodon_table else {
            bail!(
                "--layout mastodon hashes a table name into each ID's low bits: give \
                 --mastodon-table NAME (a server generator's table, by default its name)"
            );
        };
        MastodonTail::new(layout, table, secret)
            .map(Some)
            .context("--layout mastodon")
    }
}
