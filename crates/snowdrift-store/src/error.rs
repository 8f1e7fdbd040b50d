//! The error type of `snowdrift-store`.

/// Everything a store can fail with. `#[non_exhaustive]`: keep a catch-all arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The tag does not exist.
    #[error("tag {0:?} does not exist; create it first (snowdrift tags create {0})")]
    TagNotFound(String),
    /// A tag with this name exists already.
    #[error("tag {0:?} already exists")]
    TagExists(String),
    /// Bad input: what was wrong and what is allowed. Nothing was written.
    #[error("{0}")]
    InvalidInput(String),
    /// Claiming one more step would push `max_id` past `i64::MAX`.
    #[error(
        "tag {tag:?} is exhausted: max_id {max_id} + step {step} would pass {max} (i64::MAX); nothing was claimed. Move its IDs to a new tag"
    , max = i64::MAX)]
    Overflow {
        /// The tag.
        tag: String,
        /// Its current `max_id`.
        max_id: i64,
        /// The step that did not fit.
        step: i64,
    },
    /// A tag with a template has moved on to a later period (another node's clock reached
    /// it first) than the one this node claimed for: this node's clock is behind. Nothing
    /// was claimed.
    #[error(
        "tag {tag:?} has moved on to period {stored} (another node's clock reached it) while this node's clock still reads period {period}; a period that is over is never claimed again, so this node serves the tag once its clock reaches {stored}: check its clock"
    )]
    PeriodAhead {
        /// The tag.
        tag: String,
        /// The period this node asked for.
        period: i64,
        /// The period the store holds.
        stored: i64,
    },
    /// A tag with a template has issued every number its `{seq}` field holds in this
    /// period. Nothing was served twice, nothing was claimed.
    #[error(
        "tag {tag:?} has issued every number of period {period} its template holds (up to {max}); nothing was served twice. It issues again from the next period on; widen the template's {{seq:0N}} for more per period"
    )]
    PeriodFull {
        /// The tag.
        tag: String,
        /// The period.
        period: i64,
        /// The largest number the template shows.
        max: u64,
    },
    /// A tag with a template was claimed as a plain tag: its numbers count per period and
    /// are rendered as text, so it is served through its template. Nothing was claimed.
    #[error(
        "tag {tag:?} has a template ({template}): its numbers count per period and are rendered as text; nothing was claimed as a plain number"
    )]
    TagTemplated {
        /// The tag.
        tag: String,
        /// Its template.
        template: Box<snowdrift_core::counter::CounterTemplate>,
    },
    /// Every buffered ID of a tag is used up and no refill came within the wait bound.
    #[error("no IDs left for tag {tag:?} after waiting {waited:?}: {cause}")]
    Exhausted {
        /// The tag.
        tag: String,
        /// How long the caller waited.
        waited: std::time::Duration,
        /// Why the refill did not come (the store's last error).
        cause: String,
    },
    /// A `zk-version` znode's data version reached 2^31 - 1, the most ZooKeeper's signed
    /// 32-bit version holds; the next write would wrap it.
    #[error(
        "znode {path:?} has given every ID its 32-bit version holds (2147483647); nothing was served twice. Point the generator at a new znode"
    )]
    VersionOverflow {
        /// The znode.
        path: String,
    },
    /// The store URL is not one this build understands.
    #[error("store url {url:?}: {reason}")]
    InvalidUrl {
        /// The URL, without its password.
        url: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A ticket server's sequence or table is configured differently from this server (or
    /// it returned an ID outside this server's class): issuing from it could collide with
    /// another ticket server's IDs, so it is not used.
    #[error("ticket server {server}: {reason}")]
    TicketServerRefused {
        /// The server (URL without its password, table or sequence, class).
        server: String,
        /// What disagrees and how to fix it.
        reason: String,
    },
    /// Every ticket server of a pool is down or busy; nothing was issued.
    #[error("every ticket server is down: {}", .servers.join("; "))]
    TicketServersDown {
        /// Each server with its last error and when it is probed next.
        servers: Vec<String>,
    },
    /// A counter has no value left for its period: the next one would not fit its
    /// template's `{seq}` field (or an `i64`). Nothing was served twice; the counter keeps
    /// refusing until its period ends.
    #[error(
        "counter {counter:?} is full (key {key:?}): its values go up to {max}, the most its {field} holds, and the next would pass it; nothing was served twice. Widen the template's {{seq:0N}} or move to a new counter name"
    )]
    CounterOverflow {
        /// The counter's name.
        counter: String,
        /// Its Redis key for the current period.
        key: String,
        /// The largest value the counter may serve.
        max: u64,
        /// What limits it, e.g. `{seq:08} field`.
        field: String,
    },
    /// A counter's Redis key holds a value no counter reaches by counting up from 0.
    #[error(
        "counter key {key:?} holds {value}, below 0, so it was set by hand; set it to the last value issued (or delete it if none was) and retry"
    )]
    CounterCorrupt {
        /// The Redis key.
        key: String,
        /// What `INCRBY` left in it, minus what was added.
        value: i64,
    },
    /// A counter's template could not be evaluated at the current time (a clock past the
    /// year 9999).
    #[error("counter {counter:?}: {source}")]
    CounterTemplate {
        /// The counter's name.
        counter: String,
        /// What the template reported.
        #[source]
        source: snowdrift_core::Error,
    },
    /// Every worker ID of the layout's node space is held by a live lease.
    #[error(
        "all {space} worker IDs are held ({}); wait for one to expire, stop a node, or use a layout with more node bits",
        holders_summary(.holders)
    )]
    WorkersExhausted {
        /// How many worker IDs the layout has.
        space: u64,
        /// The live leases: worker ID and holder.
        holders: Vec<(u64, String)>,
    },
    /// The worker ID this node was told to use is leased to another live node.
    #[error(
        "worker ID {worker_id} is held by {holder:?}, a live node; give this node another ID or stop that one"
    )]
    WorkerTaken {
        /// The worker ID asked for.
        worker_id: u64,
        /// Who holds it.
        holder: String,
    },
    /// The worker ID this node was configured with or derived (static, host name, address,
    /// ordinal) is held by another live node: two nodes were given the same ID.
    #[error(
        "worker ID {worker_id} is held by {holder:?}, a live node, and this node, {this:?}, was given the same ID ({source_desc}); give one of them another ID, or use the 'lowest' source, which never collides"
    )]
    WorkerCollision {
        /// The worker ID both nodes were given.
        worker_id: u64,
        /// The live node that holds it.
        holder: String,
        /// This node's name on the registry.
        this: String,
        /// Where this node's ID came from (`static ID 7`, `derived from IP 10.1.3.7`).
        source_desc: String,
    },
    /// This node's lease on a worker ID expired or passed to another holder: it must stop
    /// issuing with that ID.
    #[error("the lease on worker ID {worker_id} held by {holder:?} is lost: {reason}")]
    LeaseLost {
        /// The worker ID.
        worker_id: u64,
        /// The holder that lost it (this node).
        holder: String,
        /// What the coordinator said.
        reason: String,
    },
    /// The worker ID's high-water mark lies further ahead of this node's clock than the
    /// node may wait: IDs up to the mark may exist already (a clock set back since the last
    /// run, or another node with a clock ahead).
    #[error(
        "worker ID {worker_id}'s high-water mark is {gap:?} ahead of this node's clock (mark {mark_ms} ms, clock {now_ms} ms since 1970), more than the {bound:?} this node may wait; IDs up to the mark may exist; {advice}"
    )]
    MarkAhead {
        /// The worker ID.
        worker_id: u64,
        /// The mark, ms since 1970.
        mark_ms: u64,
        /// This node's clock, ms since 1970.
        now_ms: u64,
        /// How far the mark is ahead.
        gap: std::time::Duration,
        /// The longest wait allowed.
        bound: std::time::Duration,
        /// What to do about it, given the clock policy and the layout.
        advice: String,
    },
    /// The generator's layout changed since the worker ID's high-water mark was written, and
    /// the new layout's first IDs would not be above IDs the old one may have issued.
    #[error("{0}")]
    LayoutSwitchUnsafe(Box<LayoutSwitch>),
    /// A live peer issues under another layout whose IDs this node's could meet while both
    /// run (a rolling restart that a layout switch does not allow).
    #[error("{0}")]
    LayoutPeerUnsafe(Box<LayoutPeer>),
    /// This node's clock is behind a live peer's published clock by more than the bound.
    #[error(
        "this node's clock is at least {behind:?} behind {peer:?}'s (worker ID {peer_worker_id}), more than the {bound:?} allowed; fix the clock (NTP) before starting"
    )]
    ClockBehindPeers {
        /// The peer furthest ahead.
        peer: String,
        /// Its worker ID.
        peer_worker_id: u64,
        /// How far behind this node is, at least.
        behind: std::time::Duration,
        /// The allowed bound.
        bound: std::time::Duration,
    },
    /// This node no longer leads a timestamp oracle (its lease expired, was revoked, or
    /// the leader key is another node's): it must stop issuing at once.
    #[error("not leading the timestamp oracle {name:?} any more ({holder:?}): {reason}")]
    LeadershipLost {
        /// The oracle's name.
        name: String,
        /// The holder that lost it (this node).
        holder: String,
        /// What the coordinator said.
        reason: String,
    },
    /// A coordinator refused this node's credentials or rights: a wrong password, a user
    /// without a role on snowdrift's keys, a znode whose ACL is another user's. Retrying
    /// does not help; the message says what to check.
    #[error("{0}")]
    AccessDenied(String),
    /// A coordinator takes requests from anyone who can reach it, and what runs on it needs
    /// it not to (a tso election): refused unless the config accepts it; the message says
    /// how to turn authentication on.
    #[error("{0}")]
    InsecureCoordinator(String),
    /// The store could not be reached or failed; the operation may be retried.
    #[error("store unavailable: {0}")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// The first holders of a full node space, enough to find the culprits without a page of text.
fn holders_summary(holders: &[(u64, String)]) -> String {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = holders
        .iter()
        .take(SHOWN)
        .map(|(id, holder)| format!("{id} by {holder}"))
        .collect();
    if holders.len() > SHOWN {
        parts.push(format!("and {} more", holders.len() - SHOWN));
    }
    parts.join(", ")
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Unavailable(Box::new(e))
    }
}

#[cfg(feature = "redis")]
impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        Error::Unavailable(Box::new(e))
    }
}

#[cfg(feature = "zookeeper")]
impl From<zookeeper_client::Error> for Error {
    fn from(e: zookeeper_client::Error) -> Self {
        match e {
            zookeeper_client::Error::NoAuth => Error::AccessDenied(
                "ZooKeeper refused the request (NoAuth): the znode's ACL does not let this client write it; give the user and password that created snowdrift's znodes in the URL (zookeeper://USER:PASSWORD@HOST:PORT)".into(),
            ),
            zookeeper_client::Error::AuthFailed => Error::AccessDenied(
                "ZooKeeper refused the URL's credentials (AuthFailed): check the user and password in the zookeeper URL".into(),
            ),
            e => Error::Unavailable(Box::new(e)),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What [`Error::LayoutPeerUnsafe`] found.
#[derive(Debug, thiserror::Error)]
#[error(
    "worker ID {peer_worker_id} is held by {peer:?}, which issues under layout {peer_layout}, and this node (worker ID {worker_id}) is configured with layout {layout}: {why}, so while both issue they could issue the same IDs (node and sequence bits sit in other places, so other worker IDs make the same 64 bits). Refused: configure the peer's layout again, or stop every node of the old layout before starting one under the new layout; `{command}` says when a switch is safe for a rolling restart"
)]
pub struct LayoutPeer {
    /// This node's worker ID.
    pub worker_id: u64,
    /// The peer's worker ID.
    pub peer_worker_id: u64,
    /// Who holds it.
    pub peer: String,
    /// The layout the peer recorded (`FIELDS/UNIT_MS/EPOCH_MS`).
    pub peer_layout: String,
    /// This node's layout, the same way.
    pub layout: String,
    /// Why the two cannot run side by side.
    pub why: String,
    /// The `snowdrift layout migrate` command that checks the switch from the peer's layout.
    pub command: String,
}

/// What [`Error::LayoutSwitchUnsafe`] found (boxed: it is the largest error).
#[derive(Debug, thiserror::Error)]
#[error(
    "worker ID {worker_id}'s high-water mark ({mark}) was written under layout {old}, and this node is configured with layout {new}: its first ID now would be {new_first}, not above {old_last}, the largest ID the old layout can have issued up to the mark (every worker, every sequence), so it could repeat or go below IDs already issued. Refused: configure the old layout again, or see when and how the switch is safe with `{command}`"
)]
pub struct LayoutSwitch {
    /// The worker ID.
    pub worker_id: u64,
    /// The mark, as a time.
    pub mark: String,
    /// The layout recorded with the mark (`FIELDS/UNIT_MS/EPOCH_MS`).
    pub old: String,
    /// The configured layout.
    pub new: String,
    /// The smallest ID the configured layout would issue now (`none` if it cannot).
    pub new_first: String,
    /// The largest ID the old layout can have issued up to the mark.
    pub old_last: String,
    /// The `snowdrift layout migrate` command that checks this switch.
    pub command: String,
}
