//! The one way this crate opens ZooKeeper: the cluster and credentials from a `zookeeper://`
//! URL, the ACL of every znode it creates, and a session that is opened again once ZooKeeper
//! expired it.
//!
//! `zookeeper://USER:PASSWORD@HOST:PORT[,...]` authenticates every session with ZooKeeper's
//! digest scheme (`addauth digest USER:PASSWORD`) and gives each znode snowdrift creates the
//! ACL "this user may do everything, anyone may read": a client without the password cannot
//! change, delete or add a znode under snowdrift's (it gets `NoAuth`). Without a user the
//! znodes are open to every client, as before, and the network is the only protection.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use zookeeper_client as zk;
use zookeeper_client::{Acl, Acls, Permission};

use crate::coordinator_url::CoordinatorUrl;
use crate::error::{Error, Result};
use crate::mask_url;

/// The form a ZooKeeper URL takes, for errors.
const USAGE: &str = "zookeeper://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]";

/// The ACL of a znode created with a user: all to that user (ZooKeeper writes the
/// session's digest for `auth`), read to anyone (marks and tags are not secrets; reading
/// them helps operators).
static USER_ALL_ANYONE_READ: [Acl; 2] = [
    Acl::new_const(Permission::ALL, "auth", ""),
    Acl::new_const(Permission::READ, "world", "anyone"),
];

/// How to reach a ZooKeeper cluster, and as whom.
#[derive(Clone)]
pub(crate) struct Target {
    cluster: String,
    /// `USER:PASSWORD`, the digest scheme's credentials.
    digest: Option<String>,
    user: Option<String>,
    shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// Reads `zookeeper://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]`.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let parts = CoordinatorUrl::parse(url, USAGE, &[])?;
        if parts.scheme != "zookeeper" {
            return Err(Error::InvalidUrl {
                url: mask_url(url),
                reason: format!("use {USAGE}"),
            });
        }
        if let Some((user, _)) = &parts.user
            && user.contains(':')
        {
            return Err(Error::InvalidUrl {
                url: mask_url(url),
                reason: "a ZooKeeper digest user cannot hold ':' (its password can)".into(),
            });
        }
        Ok(Self {
            cluster: parts.hosts.join(","),
            digest: parts.user.as_ref().map(|(u, p)| format!("{u}:{p}")),
            user: parts.user.map(|(u, _)| u),
            shown: mask_url(url),
        })
    }

    /// A connector to the cluster that authenticates the session, if a user is given.
    pub(crate) fn connector(&self) -> zk::Connector {
        let connector = zk::Client::connector();
        match &self.digest {
            Some(digest) => connector.with_auth("digest", digest.as_bytes()),
            None => connector,
        }
    }

    /// A refusal of a request on `path` said with who was refused; other errors as they are.
    pub(crate) fn refused(&self, path: &str, e: zk::Error) -> Error {
        if e != zk::Error::NoAuth {
            return e.into();
        }
        let who = match &self.user {
            Some(user) => format!("user {user:?}"),
            None => "a client without a user".to_string(),
        };
        Error::AccessDenied(format!(
            "ZooKeeper at {} refused {who} on znode {path} (NoAuth): its ACL is another user's; check the user and password in the zookeeper URL (zookeeper://USER:PASSWORD@HOST:PORT)",
            self.shown
        ))
    }

    /// Whether sessions authenticate with a user.
    pub(crate) fn has_user(&self) -> bool {
        self.digest.is_some()
    }

    /// The cluster's `HOST:PORT[,HOST:PORT...]`.
    pub(crate) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The ACL of every znode this crate creates.
    fn acls(&self) -> Acls<'static> {
        match self.digest {
            Some(_) => Acls::new(&USER_ALL_ANYONE_READ),
            None => Acls::anyone_all(),
        }
    }

    /// Options for a persistent znode.
    pub(crate) fn persistent(&self) -> zk::CreateOptions<'static> {
        zk::CreateMode::Persistent.with_acls(self.acls())
    }

    /// Options for an ephemeral znode.
    pub(crate) fn ephemeral(&self) -> zk::CreateOptions<'static> {
        zk::CreateMode::Ephemeral.with_acls(self.acls())
    }

    /// With a user, gives `path` (which exists) this crate's ACL if anyone may write,
    /// delete under, add under or re-ACL it: a znode an earlier run created without a user,
    /// or one an attacker planted open. Does nothing without a user, or for a znode whose
    /// ACL already keeps unauthenticated clients to reading.
    pub(crate) async fn secure(&self, client: &zk::Client, path: &str) -> Result<()> {
        if self.digest.is_none() {
            return Ok(());
        }
        let (acls, stat) = match client.get_acl(path).await {
            Ok(found) => found,
            Err(zk::Error::NoNode) => return Ok(()),
            Err(e) => return Err(self.refused(path, e)),
        };
        if !acls.iter().any(open_to_anyone) {
            return Ok(());
        }
        match client
            .set_acl(path, &USER_ALL_ANYONE_READ, Some(stat.aversion))
            .await
        {
            Ok(_) => {
                tracing::warn!(
                    znode = path,
                    user = self.user.as_deref().unwrap_or(""),
                    "znode was writable by any ZooKeeper client; its ACL now lets only this user write it (anyone may read)"
                );
                Ok(())
            }
            Err(zk::Error::NoAuth) => Err(Error::AccessDenied(format!(
                "znode {path} on {} lets any client write it, and user {:?} may not change its ACL: set it by hand (setAcl {path} auth:USER:cdrwa,world:anyone:r, with addauth digest USER:PASSWORD) or delete it",
                self.shown,
                self.user.as_deref().unwrap_or("")
            ))),
            Err(zk::Error::BadVersion) => Err(Error::Unavailable(
                format!("the ACL of znode {path} changed while snowdrift set it; retry").into(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// [`secure`](Self::secure) on `dir` and each of its children.
    pub(crate) async fn secure_tree(&self, client: &zk::Client, dir: &str) -> Result<()> {
        if self.digest.is_none() {
            return Ok(());
        }
        self.secure(client, dir).await?;
        let children = match client.list_children(dir).await {
            Ok(children) => children,
            Err(zk::Error::NoNode) => return Ok(()),
            Err(e) => return Err(self.refused(dir, e)),
        };
        for child in children {
            self.secure(client, &format!("{dir}/{child}")).await?;
        }
        Ok(())
    }
}

/// Whether `acl` lets unauthenticated clients do more than read.
fn open_to_anyone(acl: &Acl) -> bool {
    let beyond_read =
        Permission::WRITE | Permission::CREATE | Permission::DELETE | Permission::ADMIN;
    acl.scheme() == "world"
        && acl.id() == "anyone"
        && acl.permission() & beyond_read != Permission::NONE
}

/// A session for reads and writes that hold nothing (no ephemeral znodes), so replacing it
/// loses nothing: an expired client stays dead, and the next call opens a new one.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    target: Target,
    client: Arc<Mutex<Option<zk::Client>>>,
}

impl Session {
    /// A session to `target`, opened on first use.
    pub(crate) fn new(target: Target) -> Self {
        Self {
            target,
            client: Arc::default(),
        }
    }

    /// Where and as whom it connects.
    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// The live client, or a new one if there is none or it expired.
    pub(crate) async fn client(&self) -> Result<zk::Client> {
        let mut slot = self.client.lock().await;
        if let Some(client) = slot.as_ref().filter(|c| !c.state().is_terminated()) {
            return Ok(client.clone());
        }
        let client = self
            .target
            .connector()
            .with_session_timeout(Duration::from_secs(10))
            .with_connection_timeout(Duration::from_secs(5))
            .connect(&self.target.cluster)
            .await?;
        *slot = Some(client.clone());
        Ok(client)
    }

    /// Turns a ZooKeeper error into ours, dropping the session if it cannot recover.
    pub(crate) async fn failed(&self, e: zk::Error) -> Error {
        if terminal(&e) {
            *self.client.lock().await = None;
        }
        e.into()
    }

    /// [`failed`](Self::failed) for a request on `path`: a refusal names the user and path.
    pub(crate) async fn failed_on(&self, path: &str, e: zk::Error) -> Error {
        match e {
            zk::Error::NoAuth => self.target.refused(path, e),
            e => self.failed(e).await,
        }
    }
}

/// Whether the session is gone for good (the client then fails every request).
pub(crate) fn terminal(e: &zk::Error) -> bool {
    matches!(
        e,
        zk::Error::NoHosts
            | zk::Error::SessionExpired
            | zk::Error::AuthFailed
            | zk::Error::ClientClosed
    )
}
