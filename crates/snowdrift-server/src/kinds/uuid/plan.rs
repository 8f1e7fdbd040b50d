//! The keys and plan of the configured UUID versions.

use snowdrift_core::kinds::uuid::{self as uuid_kind, Uuid, v2::Domain};

use crate::config::{Config, GeneratorConfig, Kind};
use crate::error::core_reason;
use crate::kinds::{KindPlan, PlanError, StartContext};

use super::UuidSource;

/// The UUID versions a `[[generator]]` configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UuidPlan {
    /// `uuid1` or `uuid6` (`kind` says which).
    Gregorian {
        /// [`Kind::Uuid1`] or [`Kind::Uuid6`].
        kind: Kind,
        /// The configured node ID; a random multicast one when `None`.
        node: Option<[u8; 6]>,
    },
    /// `uuid2`.
    Dce {
        /// The configured node ID; a random multicast one when `None`.
        node: Option<[u8; 6]>,
        /// The local domain.
        domain: Domain,
        /// The local ID.
        local_id: u32,
    },
    /// `uuid3` or `uuid5` (`kind` says which): one UUID per name a request brings.
    Named {
        /// [`Kind::Uuid3`] or [`Kind::Uuid5`].
        kind: Kind,
        /// The namespace names are hashed under.
        namespace: Uuid,
    },
}

impl KindPlan for UuidPlan {
    type Source = UuidSource;
    const KINDS: &'static [Kind] = &[
        Kind::Uuid1,
        Kind::Uuid2,
        Kind::Uuid3,
        Kind::Uuid5,
        Kind::Uuid6,
    ];

    fn keys(kind: Kind) -> &'static [&'static str] {
        match kind {
            Kind::Uuid2 => &["node", "domain", "local_id"],
            Kind::Uuid3 | Kind::Uuid5 => &["namespace"],
            _ => &["node"],
        }
    }

    fn plan(_config: &Config, g: &GeneratorConfig) -> Result<Self, PlanError> {
        let node = g
            .node
            .as_deref()
            .map(uuid_kind::parse_node)
            .transpose()
            .map_err(|e| PlanError::Key("node", core_reason(e)))?;
        Ok(match g.kind {
            Kind::Uuid3 | Kind::Uuid5 => {
                let Some(text) = g.namespace.as_deref() else {
                    return Err(PlanError::Whole(format!(
                        "kind {} needs namespace = \"dns\", \"url\", \"oid\", \"x500\" or a \
                         UUID: the namespace each request's name is hashed under",
                        g.kind.as_str()
                    )));
                };
                let namespace = uuid_kind::namespace(text)
                    .map_err(|e| PlanError::Key("namespace", core_reason(e)))?;
                UuidPlan::Named {
                    kind: g.kind,
                    namespace,
                }
            }
            Kind::Uuid2 => {
                let domain = match g.domain.as_deref() {
                    Some(text) => text
                        .parse::<Domain>()
                        .map_err(|e| PlanError::Key("domain", core_reason(e)))?,
                    None => Domain::Person,
                };
                let local_id = match (g.local_id, default_local_id(domain)) {
                    (Some(id), _) | (None, Some(id)) => id,
                    (None, None) => {
                        return Err(PlanError::Key(
                            "local_id",
                            format!(
                                "domain {domain} has no local ID this process can take for \
                                 itself; give local_id (the {domain}'s number, 0 to 4294967295)"
                            ),
                        ));
                    }
                };
                UuidPlan::Dce {
                    node,
                    domain,
                    local_id,
                }
            }
            kind => UuidPlan::Gregorian { kind, node },
        })
    }

    fn kind(&self) -> Kind {
        match self {
            UuidPlan::Gregorian { kind, .. } | UuidPlan::Named { kind, .. } => *kind,
            UuidPlan::Dce { .. } => Kind::Uuid2,
        }
    }

    async fn start(
        &self,
        _name: &str,
        _cx: &StartContext,
    ) -> Result<UuidSource, snowdrift_store::Error> {
        UuidSource::new(self).ok_or_else(|| {
            snowdrift_store::Error::Unavailable(
                "the operating system gave no randomness for the UUID node ID and clock \
                 sequence"
                    .into(),
            )
        })
    }
}

/// The local ID of `domain` when the config gives none: DCE 1.1 puts the user's UID in the
/// person domain and the group's GID in the group domain, so the server's own effective
/// IDs are what a v2 UUID made by this process would carry. An organisation's number has
/// no such source.
pub fn default_local_id(domain: Domain) -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: geteuid and getegid take no arguments, cannot fail and touch no memory
        // of ours (POSIX: "shall always be successful").
        match domain {
            Domain::Person => Some(unsafe { libc::geteuid() }),
            Domain::Group => Some(unsafe { libc::getegid() }),
            Domain::Org => None,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = domain;
        None
    }
}
