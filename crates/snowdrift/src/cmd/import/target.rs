//! The snowdrift side of an import, from `--config FILE` or from flags: the segment stores
//! tags go to, the snowflake generator whose registry takes the marks, and the config file
//! tokens are appended to.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use snowdrift_core::layout::Layout;
use snowdrift_server::config::{Config, Kind, TokenConfig};

/// The server config the import reads (and appends tokens to).
#[derive(Debug, Clone, clap::Args)]
pub struct ConfigArgs {
    /// The snowdrift server's config file: its [store] takes the tags, its snowflake
    /// generator's [worker] registry the marks, and with --apply the [[auth.token]] lines
    /// are appended to it. Read as `snowdrift serve --config` reads it (SNOWDRIFT_*
    /// variables included).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write the plan. Without it nothing is written.
    #[arg(long)]
    pub apply: bool,
}

impl ConfigArgs {
    /// The config, when one is given.
    pub fn load(&self) -> Result<Option<Config>> {
        let Some(path) = &self.config else {
            return Ok(None);
        };
        let config = Config::load(Some(path.as_path()), std::env::vars())
            .with_context(|| format!("reading the config {}", path.display()))?;
        Ok(Some(config))
    }
}

/// The store options of the imports that write tags.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreFlags {
    /// snowdrift's segment store, as [store] url (sqlite://, postgres://, mysql://,
    /// redis://, zookeeper://); given several times (or comma-separated), stores striped
    /// as [store] urls, in that order. Instead of --config.
    #[arg(
        long = "store",
        value_name = "URL",
        value_delimiter = ',',
        conflicts_with = "config"
    )]
    pub stores: Vec<String>,
    /// The table of tags in the store ([store] table; with --config, the config's).
    #[arg(long, value_name = "NAME")]
    pub table: Option<String>,
}

/// Where tags are written: one store, or several striped.
#[derive(Debug, Clone)]
pub struct Stores {
    /// The stores' URLs; several are striped, each holding every tag.
    pub urls: Vec<String>,
    /// The table (key prefix, root znode).
    pub table: String,
}

/// The stores `flags` or `config` name; `None` when neither does.
pub fn stores(flags: &StoreFlags, config: Option<&Config>) -> Result<Option<Stores>> {
    if let Some(config) = config {
        let urls = if config.store.urls.is_empty() {
            vec![config.store.url.clone()]
        } else {
            config.store.urls.clone()
        };
        let table = flags.table.clone().unwrap_or(config.store.table.clone());
        return Ok(Some(Stores { urls, table }));
    }
    if flags.stores.is_empty() {
        return Ok(None);
    }
    Ok(Some(Stores {
        urls: flags.stores.clone(),
        table: flags.table.clone().unwrap_or_else(|| "leaf_alloc".into()),
    }))
}

/// Which registry and generator take worker marks, without a config.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryFlags {
    /// The worker registry snowdrift's servers lease under (worker.url: etcd://,
    /// zookeeper://, postgres://, mysql://, sqlite://, redis://, file://DIR). Instead of
    /// --config.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "config",
        requires = "generator"
    )]
    pub registry: Option<String>,
    /// The snowflake generator that takes over the peer's IDs (its [[generator]] name: it
    /// leases under {namespace}_{NAME}). With --config, needed when it has several.
    #[arg(long, value_name = "NAME")]
    pub generator: Option<String>,
    /// worker.namespace, with --registry.
    #[arg(long, value_name = "NS", default_value = "snowdrift_workers")]
    pub namespace: String,
}

/// The snowflake generator that takes over a peer's worker IDs, and where it leases.
#[derive(Debug, Clone)]
pub struct Snowflake {
    /// Its name.
    pub generator: String,
    /// Its layout: the config's, or the peer's when given by flags.
    pub layout: Layout,
    /// Whether the layout is the config's (else it is the peer's, to be configured).
    pub configured: bool,
    /// The registry URL.
    pub registry: String,
    /// The lease namespace on it.
    pub namespace: String,
}

/// The snowflake generator `flags` or `config` name, `peer` being the peer's layout (the
/// generator's when it is given by flags); `None` when neither names a registry.
pub fn snowflake(
    flags: &RegistryFlags,
    config: Option<&Config>,
    peer: &Layout,
) -> Result<Option<Snowflake>> {
    if let Some(config) = config {
        let plan = config
            .plan()
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("checking the config as `snowdrift serve` would")?;
        let snowflakes: Vec<_> = config
            .effective_generators()
            .into_iter()
            .filter(|g| g.kind == Kind::Snowflake)
            .map(|g| g.name)
            .collect();
        let name = match (&flags.generator, snowflakes.as_slice()) {
            (Some(name), _) if snowflakes.contains(name) => name.clone(),
            (Some(name), _) => bail!(
                "the config has no snowflake generator {name:?} (it has {}): add it, or name one of those with --generator",
                list(&snowflakes)
            ),
            (None, [one]) => one.clone(),
            (None, []) => bail!(
                "the config has no snowflake generator to take over the peer's worker IDs: add a [[generator]] with kind = \"snowflake\" (the plan says which layout)"
            ),
            (None, many) => bail!(
                "the config has {} snowflake generators ({}): name the one that takes over with --generator",
                many.len(),
                list(many)
            ),
        };
        let Some(g) = plan.generators().iter().find(|g| g.name == name) else {
            bail!("the config's generator {name:?} has no plan");
        };
        let (Some(layout), Some(lease)) = (g.source.layout(), g.source.lease()) else {
            bail!("the config's generator {name:?} has no layout and worker lease");
        };
        return Ok(Some(Snowflake {
            generator: name,
            layout: layout.clone(),
            configured: true,
            registry: lease.registry_url.clone(),
            namespace: lease.namespace.clone(),
        }));
    }
    let Some(registry) = &flags.registry else {
        return Ok(None);
    };
    let Some(generator) = &flags.generator else {
        bail!("--registry needs --generator NAME: the snowflake generator that takes over");
    };
    Ok(Some(Snowflake {
        generator: generator.clone(),
        layout: peer.clone(),
        configured: false,
        registry: registry.clone(),
        namespace: snowdrift_server::kinds::snowflake::lease::namespace(
            &flags.namespace,
            generator,
        ),
    }))
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who the import is on a registry while it holds worker IDs to raise their marks.
pub fn holder() -> String {
    format!(
        "snowdrift-import/{}/{}",
        snowdrift_store::worker::hostname(),
        std::process::id()
    )
}

/// A string as a TOML basic string.
pub fn quote(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// `[[auth.token]]` lines for `t`, as `snowdrift token create` prints them.
pub fn token_toml(t: &TokenConfig) -> String {
    let generators: Vec<String> = t.generators.iter().map(|g| quote(g)).collect();
    format!(
        "[[auth.token]]\nname = {}\nhash = {}\ngenerators = [{}]\nrole = {}\n",
        quote(&t.name),
        quote(&t.hash),
        generators.join(", "),
        quote(t.role.name())
    )
}

/// Appends `text` to the config at `path`, first checking that the config with it still
/// reads as a server config: written beside it and renamed over it, so the file is never
/// half written, and a config that would not load is left as it was.
pub fn append_to_config(path: &Path, text: &str) -> Result<()> {
    let before = std::fs::read_to_string(path)
        .with_context(|| format!("reading the config {}", path.display()))?;
    let mut after = before.clone();
    if !after.is_empty() && !after.ends_with('\n') {
        after.push('\n');
    }
    after.push('\n');
    after.push_str(text);
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let temp = path.with_file_name(format!(".{file_name}.import-{}", std::process::id()));
    std::fs::write(&temp, &after).with_context(|| format!("writing {}", temp.display()))?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(&temp, meta.permissions()).ok();
    }
    if let Err(e) = Config::load(Some(temp.as_path()), std::env::vars()) {
        std::fs::remove_file(&temp).ok();
        bail!(
            "the config with the new lines would not load ({e}); nothing was appended to {}",
            path.display()
        );
    }
    std::fs::rename(&temp, path).with_context(|| format!("replacing {}", path.display()))
}

/// The `[worker]` lines that lease on `registry` under namespace `namespace` (the
/// `--namespace` given), for a config that has none yet.
pub fn worker_lines(registry: &str, namespace: &str) -> String {
    let scheme = registry.split("://").next().unwrap_or_default();
    let kind = match scheme {
        "etcd" | "http" | "https" => "etcd",
        "zookeeper" | "zk" => "zookeeper",
        "redis" | "rediss" => "redis",
        "file" => "file",
        _ => "sql",
    };
    let mut lines = format!("[worker]\nregistry = {}\n", quote(kind));
    match registry.strip_prefix("file://") {
        Some(dir) => lines.push_str(&format!("path = {}\n", quote(dir))),
        None => lines.push_str(&format!("url = {}\n", quote(registry))),
    }
    if namespace != "snowdrift_workers" {
        lines.push_str(&format!("namespace = {}\n", quote(namespace)));
    }
    lines
}

/// The `[[generator]]` lines of a snowflake generator `name` with `layout`: a preset's
/// name when one makes the same IDs (with its epoch moved if need be), else bits, unit and
/// epoch.
pub fn generator_lines(name: &str, layout: &Layout) -> String {
    use snowdrift_core::layout::{format_ms, migrate, preset};
    let mut lines = format!(
        "[[generator]]\nname = {}\nkind = \"snowflake\"\n",
        quote(name)
    );
    let found = preset::NAMES.iter().find_map(|p| {
        let l = Layout::preset(p).ok()?;
        let moved = Layout::new(l.fields().to_vec(), l.unit_ms(), layout.epoch_ms()).ok()?;
        (p != &"mastodon" && super::marks::same_bits(&moved, layout)).then_some((p, l))
    });
    match found {
        Some((p, l)) => {
            lines.push_str(&format!("layout = {}\n", quote(p)));
            if l.epoch_ms() != layout.epoch_ms() {
                lines.push_str(&format!(
                    "epoch = {}\n",
                    quote(&format_ms(layout.epoch_ms()))
                ));
            }
        }
        None => {
            let unit = layout.unit_ms();
            let unit = if unit.is_multiple_of(1000) {
                format!("{}s", unit / 1000)
            } else {
                format!("{unit}ms")
            };
            lines.push_str(&format!(
                "bits = {}\nunit = {}\nepoch = {}\n",
                quote(&migrate::spec(layout)),
                quote(&unit),
                quote(&format_ms(layout.epoch_ms()))
            ));
        }
    }
    lines
}
