//! The options of `next` for the UUID versions that take more than a clock: the node of
//! v1, v2 and v6, the domain and local ID of v2, the namespace and name of v3 and v5. Read
//! with the server's own parsers, so the CLI and a `[[generator]]` accept the same text.

use anyhow::{Result, bail};
use snowdrift_core::kinds::uuid::v2::{Domain, PER_WINDOW};
use snowdrift_core::kinds::uuid::{self, Uuid};

use snowdrift_proto::Kind;

/// UUID options of `next`.
#[derive(Debug, Clone, clap::Args)]
pub struct UuidArgs {
    /// --kind uuid1, uuid2, uuid6: the node ID, 12 hex digits (01:23:45:67:89:ab also
    /// reads). Default: a random value with the multicast bit set, so no MAC address leaks.
    #[arg(long, value_name = "HEX")]
    pub node: Option<String>,
    /// --kind uuid3, uuid5: the name whose UUID to print (its UTF-8 bytes are hashed).
    #[arg(long, value_name = "NAME")]
    pub input: Option<String>,
    /// --kind uuid2: the local domain, person (default), group or org.
    #[arg(long, value_name = "DOMAIN")]
    pub domain: Option<String>,
    /// --kind uuid2: the local ID. Default: this process's effective UID (person) or GID
    /// (group); org needs it.
    #[arg(long, value_name = "ID")]
    pub local_id: Option<u32>,
}

/// What the options say for one kind.
pub enum UuidChoice {
    /// v1, v2 or v6: the node ID when given.
    Node(Option<[u8; 6]>),
    /// v2 as well: the domain and local ID.
    Dce(Option<[u8; 6]>, Domain, u32),
    /// v3 or v5: the namespace and the name.
    Named(Uuid, String),
    /// Every other kind: none of these options.
    None,
}

impl UuidArgs {
    /// The options of `kind`, checked; an option given for a kind that ignores it is an
    /// error, so a mistyped --kind does not pass unnoticed.
    /// `namespace` is `--namespace`, which `next` shares with the registry options: under
    /// --registry it names the registry's table, with --kind uuid3 or uuid5 the UUID namespace.
    pub fn resolve(&self, kind: Kind, count: u64, namespace: Option<&str>) -> Result<UuidChoice> {
        let node_kinds = [Kind::Uuid1, Kind::Uuid2, Kind::Uuid6];
        let named = [Kind::Uuid3, Kind::Uuid5];
        let given = [
            ("--node", self.node.is_some(), &node_kinds[..]),
            ("--namespace", namespace.is_some(), &named[..]),
            ("--input", self.input.is_some(), &named[..]),
            ("--domain", self.domain.is_some(), &[Kind::Uuid2][..]),
            ("--local-id", self.local_id.is_some(), &[Kind::Uuid2][..]),
        ];
        for (flag, present, kinds) in given {
            if present && !kinds.contains(&kind) {
                let names: Vec<_> = kinds.iter().map(|k| k.as_str()).collect();
                bail!(
                    "{flag} applies to --kind {}, not {}",
                    names.join(", "),
                    kind.as_str()
                );
            }
        }
        let node = self
            .node
            .as_deref()
            .map(uuid::parse_node)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--node: {}", reason(e)))?;
        Ok(match kind {
            Kind::Uuid1 | Kind::Uuid6 => UuidChoice::Node(node),
            Kind::Uuid2 => {
                if count > PER_WINDOW {
                    bail!(
                        "--kind uuid2 gives at most {PER_WINDOW} UUIDs per 7 min 9.5 s window \
                         for one domain, local ID and node (DCE 1.1 keeps 6 bits of clock \
                         sequence), so -n must be {PER_WINDOW} or less"
                    );
                }
                let domain = match &self.domain {
                    Some(text) => text
                        .parse::<Domain>()
                        .map_err(|e| anyhow::anyhow!("--domain: {}", reason(e)))?,
                    None => Domain::Person,
                };
                let local_id = match self.local_id {
                    Some(id) => id,
                    None => match snowdrift_server::plan::generator::default_local_id(domain) {
                        Some(id) => id,
                        None => bail!("--kind uuid2 with --domain {domain} needs --local-id N"),
                    },
                };
                UuidChoice::Dce(node, domain, local_id)
            }
            Kind::Uuid3 | Kind::Uuid5 => {
                let (Some(namespace), Some(input)) = (namespace, &self.input) else {
                    bail!(
                        "--kind {} makes the UUID of a name: give --namespace (dns, url, oid, \
                         x500 or a UUID) and --input NAME",
                        kind.as_str()
                    );
                };
                if count != 1 {
                    bail!(
                        "--kind {} gives the one UUID of a name (the same name always gives \
                         the same UUID), so -n must be 1",
                        kind.as_str()
                    );
                }
                let namespace = uuid::namespace(namespace)
                    .map_err(|e| anyhow::anyhow!("--namespace: {}", reason(e)))?;
                UuidChoice::Named(namespace, input.clone())
            }
            _ => UuidChoice::None,
        })
    }
}

/// A core error's message without the "invalid configuration" in front.
pub(crate) fn reason(e: snowdrift_core::Error) -> String {
    match e {
        snowdrift_core::Error::InvalidConfig(message) => message,
        other => other.to_string(),
    }
}
