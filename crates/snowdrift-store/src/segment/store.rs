//! One type over every segment backend, chosen by the URL's scheme.

#[cfg(feature = "redis")]
use super::RedisSegmentStore;
use std::sync::Arc;

#[cfg(feature = "zookeeper")]
use super::ZkSegmentStore;
use super::floor::{TagChange, TagFloor};
use super::tag::{Claim, DatedClaim, NewTag, Tag, TagUpdate};
use super::{SqlSegmentStore, StripedStore};
use crate::error::{Error, Result};

/// Where a node's segment tags live: a SQL database, Redis or ZooKeeper.
///
/// Every backend keeps the same data per tag (Leaf's `max_id`, `step`, `description`) and
/// claims a segment in one atomic step, durable before it returns; they differ only in how
/// (a transaction, a Lua script around `HINCRBY`, a versioned `setData`).
///
/// ```no_run
/// # async fn demo() -> snowdrift_store::Result<()> {
/// use snowdrift_store::segment::{NewTag, SegmentStore};
/// let store = SegmentStore::connect("sqlite://snowdrift.db", "leaf_alloc").await?;
/// store
///     .create_tag(&NewTag { tag: "order".into(), step: 1000, description: None, template: None })
///     .await?;
/// let claim = store.claim("order", None).await?;
/// assert_eq!(claim.ids.len(), 1000);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SegmentStore {
    /// SQLite, PostgreSQL or MySQL/MariaDB.
    Sql(SqlSegmentStore),
    /// Redis: a hash per tag.
    #[cfg(feature = "redis")]
    Redis(RedisSegmentStore),
    /// ZooKeeper: a znode per tag.
    #[cfg(feature = "zookeeper")]
    ZooKeeper(ZkSegmentStore),
    /// Several stores, each serving its own residue class (Tinyid's delta/remainder).
    Striped(Arc<StripedStore>),
}

/// A store that is not striped: what a [`StripedStore`] is made of. Keeping it apart keeps
/// the futures of a striped store from containing themselves.
#[derive(Debug, Clone, Copy)]
pub(super) enum Leaf<'a> {
    Sql(&'a SqlSegmentStore),
    #[cfg(feature = "redis")]
    Redis(&'a RedisSegmentStore),
    #[cfg(feature = "zookeeper")]
    ZooKeeper(&'a ZkSegmentStore),
}

/// Calls the same method on whichever backend this is.
macro_rules! each_leaf {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            Leaf::Sql($store) => $call,
            #[cfg(feature = "redis")]
            Leaf::Redis($store) => $call,
            #[cfg(feature = "zookeeper")]
            Leaf::ZooKeeper($store) => $call,
        }
    };
}

impl Leaf<'_> {
    pub(super) async fn create_tag(self, new: &NewTag) -> Result<Tag> {
        each_leaf!(self, s => s.create_tag(new).await)
    }
    pub(super) async fn list_tags(self) -> Result<Vec<Tag>> {
        each_leaf!(self, s => s.list_tags().await)
    }
    pub(super) async fn get_tag(self, tag: &str) -> Result<Tag> {
        each_leaf!(self, s => s.get_tag(tag).await)
    }
    pub(super) async fn update_tag(self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        each_leaf!(self, s => s.update_tag(tag, update).await)
    }
    pub(super) async fn claim(self, tag: &str, step: Option<i64>) -> Result<Claim> {
        each_leaf!(self, s => s.claim(tag, step).await)
    }
}

/// Calls a method on the striped store, or on the single backend.
macro_rules! each_backend {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            SegmentStore::Striped($store) => $call,
            _ => {
                let $store = $self.leaf()?;
                $call
            }
        }
    };
}

impl SegmentStore {
    /// Connects to the store at `url` and prepares it:
    /// - `sqlite://FILE`, `postgres://...`, `mysql://...` (or `mariadb://`): the table
    ///   `table` in Leaf's layout, created if missing;
    /// - `redis://HOST[:PORT][/DB]`: one hash per tag under the key prefix `table:`;
    /// - `zookeeper://HOST:PORT[,HOST:PORT...]`: one znode per tag under `/table`.
    pub async fn connect(url: &str, table: &str) -> Result<Self> {
        let scheme = url.split(':').next().unwrap_or_default();
        match scheme {
            "redis" | "rediss" => Self::connect_redis(url, table).await,
            "zookeeper" | "zk" => Self::connect_zookeeper(url, table).await,
            _ => Ok(Self::Sql(SqlSegmentStore::connect(url, table).await?)),
        }
    }

    /// Checks `url` and `table` as [`connect`](Self::connect) would, without connecting: a
    /// scheme this build serves and a valid table (key prefix, root znode) name. What only a
    /// connection can tell (the host, the credentials) is left to `connect`.
    pub fn check(url: &str, table: &str) -> Result<()> {
        super::tag::validate_table(table)?;
        let scheme = url.split(':').next().unwrap_or_default();
        let served = match scheme {
            "sqlite" => cfg!(feature = "sqlite"),
            "postgres" | "postgresql" => cfg!(feature = "postgres"),
            "mysql" | "mariadb" => cfg!(feature = "mysql"),
            "redis" | "rediss" => cfg!(feature = "redis"),
            "zookeeper" | "zk" => cfg!(feature = "zookeeper"),
            _ => {
                return Err(Error::InvalidUrl {
                    url: format!("{scheme}://…"),
                    reason: "use sqlite://FILE, postgres://USER@HOST/DB, mysql://USER@HOST/DB, \
                             redis://HOST:PORT or zookeeper://HOST:PORT"
                        .into(),
                });
            }
        };
        if !served {
            return Err(Error::InvalidUrl {
                url: format!("{scheme}://…"),
                reason: format!("this build has no {scheme} support (cargo feature)"),
            });
        }
        Ok(())
    }

    /// Stripes `stores` (see [`StripedStore`]): the `k`-th serves the IDs `≡ k` modulo
    /// their number, and a tag stays available while any of them is up.
    pub fn striped(stores: Vec<SegmentStore>) -> Result<Self> {
        Ok(Self::Striped(Arc::new(StripedStore::new(stores)?)))
    }

    #[cfg(feature = "redis")]
    async fn connect_redis(url: &str, table: &str) -> Result<Self> {
        Ok(Self::Redis(RedisSegmentStore::connect(url, table).await?))
    }

    #[cfg(not(feature = "redis"))]
    async fn connect_redis(url: &str, _table: &str) -> Result<Self> {
        Err(missing_feature(url, "redis"))
    }

    #[cfg(feature = "zookeeper")]
    async fn connect_zookeeper(url: &str, table: &str) -> Result<Self> {
        Ok(Self::ZooKeeper(ZkSegmentStore::connect(url, table).await?))
    }

    #[cfg(not(feature = "zookeeper"))]
    async fn connect_zookeeper(url: &str, _table: &str) -> Result<Self> {
        Err(missing_feature(url, "zookeeper"))
    }

    /// Creates a tag whose first segment starts at 1 (as Leaf's do). A tag with a template
    /// needs a SQL store: its claims move a period and `max_id` in one transaction.
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        if let Some(template) = &new.template
            && !matches!(self, SegmentStore::Sql(_))
        {
            return Err(Error::InvalidInput(format!(
                "tag {:?} has a template ({template}), and segment tags with a template need \
                 a SQL store (postgres, mysql/mariadb or sqlite), not {}; on Redis, a \
                 [[generator]] of kind \"counter\" takes the same template",
                new.tag,
                self.backend()
            )));
        }
        each_backend!(self, s => s.create_tag(new).await)
    }

    /// All tags, by name.
    pub async fn list_tags(&self) -> Result<Vec<Tag>> {
        each_backend!(self, s => s.list_tags().await)
    }

    /// One tag.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        each_backend!(self, s => s.get_tag(tag).await)
    }

    /// Changes a tag's step and/or description.
    pub async fn update_tag(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        each_backend!(self, s => s.update_tag(tag, update).await)
    }

    /// Claims the next segment of `tag` (its stored step, or `step`), durably.
    pub async fn claim(&self, tag: &str, step: Option<i64>) -> Result<Claim> {
        each_backend!(self, s => s.claim(tag, step).await)
    }

    /// Claims the next segment of `tag`, a tag with a template, for `period`: see
    /// [`SqlSegmentStore::claim_dated`]. Only SQL stores hold such tags.
    pub async fn claim_dated(
        &self,
        tag: &str,
        step: Option<i64>,
        period: i64,
    ) -> Result<DatedClaim> {
        match self {
            SegmentStore::Sql(s) => s.claim_dated(tag, step, period).await,
            other => Err(Error::InvalidInput(format!(
                "tag {tag:?}: segment tags with a template live in SQL stores, not {}",
                other.backend()
            ))),
        }
    }

    /// Raises every tag of `floors` to its floor (see [`TagFloor`]): created where missing,
    /// moved up where below, never lowered. On a SQL store in one transaction and in Redis
    /// in one script (all or nothing); in ZooKeeper tag by tag. A striped store raises each
    /// of its stores to the same floors in turn (each store's IDs of a range are a subset of
    /// the range, so the same floor keeps every store above it); a failure there leaves the
    /// stores before it raised, which is safe, and running it again completes it.
    pub async fn raise_to(&self, floors: &[TagFloor]) -> Result<Vec<TagChange>> {
        match self {
            SegmentStore::Sql(s) => s.raise_to(floors).await,
            #[cfg(feature = "redis")]
            SegmentStore::Redis(s) => s.raise_to(floors).await,
            #[cfg(feature = "zookeeper")]
            SegmentStore::ZooKeeper(s) => s.raise_to(floors).await,
            SegmentStore::Striped(s) => {
                let mut all = Vec::new();
                for store in s.stores() {
                    all.extend(Box::pin(store.raise_to(floors)).await?);
                }
                Ok(all)
            }
        }
    }

    /// This store as a single backend; a striped store is not one.
    pub(super) fn leaf(&self) -> Result<Leaf<'_>> {
        Ok(match self {
            SegmentStore::Sql(s) => Leaf::Sql(s),
            #[cfg(feature = "redis")]
            SegmentStore::Redis(s) => Leaf::Redis(s),
            #[cfg(feature = "zookeeper")]
            SegmentStore::ZooKeeper(s) => Leaf::ZooKeeper(s),
            SegmentStore::Striped(_) => {
                return Err(crate::Error::InvalidInput(
                    "a striped store cannot contain another striped store".into(),
                ));
            }
        })
    }

    /// The backend's name, for logs and status pages.
    pub fn backend(&self) -> &'static str {
        match self {
            SegmentStore::Sql(s) => s.backend(),
            #[cfg(feature = "redis")]
            SegmentStore::Redis(_) => "redis",
            #[cfg(feature = "zookeeper")]
            SegmentStore::ZooKeeper(_) => "zookeeper",
            SegmentStore::Striped(_) => "striped",
        }
    }
}

#[cfg(any(not(feature = "redis"), not(feature = "zookeeper")))]
fn missing_feature(url: &str, feature: &str) -> crate::Error {
    let scheme = url.split(':').next().unwrap_or_default();
    crate::Error::InvalidUrl {
        url: format!("{scheme}://…"),
        reason: format!("this build has no {feature} support (cargo feature {feature:?})"),
    }
}

impl From<SqlSegmentStore> for SegmentStore {
    fn from(store: SqlSegmentStore) -> Self {
        Self::Sql(store)
    }
}

#[cfg(feature = "redis")]
impl From<RedisSegmentStore> for SegmentStore {
    fn from(store: RedisSegmentStore) -> Self {
        Self::Redis(store)
    }
}

#[cfg(feature = "zookeeper")]
impl From<ZkSegmentStore> for SegmentStore {
    fn from(store: ZkSegmentStore) -> Self {
        Self::ZooKeeper(store)
    }
}
