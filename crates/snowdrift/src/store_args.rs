//! The store options shared by `tags` and `next --kind segment`.

use anyhow::{Context, Result, bail};
use snowdrift_store::segment::SegmentStore;

/// Which segment store to use, directly (without a server).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The segment store: sqlite://FILE, postgres://USER@HOST/DB, mysql://USER@HOST/DB,
    /// redis://HOST:PORT or zookeeper://[USER:PASSWORD@]HOST:PORT. Same as `[store] url` in
    /// the config.
    #[arg(long = "store", value_name = "URL", env = "SNOWDRIFT_STORE__URL")]
    pub url: Option<String>,
    /// The table of tags (Leaf's `leaf_alloc`); for Redis the key prefix, for ZooKeeper
    /// the root znode.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "leaf_alloc",
        env = "SNOWDRIFT_STORE__TABLE"
    )]
    pub table: String,
}

impl StoreArgs {
    /// Connects to the store (creating its table if missing).
    pub async fn connect(&self) -> Result<SegmentStore> {
        let Some(url) = &self.url else {
            bail!("no store given: pass --store URL (or set SNOWDRIFT_STORE__URL)");
        };
        SegmentStore::connect(url, &self.table)
            .await
            .with_context(|| format!("opening the store (table {:?})", self.table))
    }
}

/// A runtime for the commands that talk to a store.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}
