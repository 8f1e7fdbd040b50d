//! Worker IDs under leases: which node may issue snowflake IDs with which worker ID, until
//! when (fencing), and from which time on (high-water marks), for invariants 2 and 3 of the
//! design.
//!
//! Every coordinator backend ([`etcd`], [`zookeeper`], [`sql`], [`redis`]) offers the same
//! operations, as inherent `async fn`s on its own type (see [`PeerTime`] for the shape of the
//! clock reports):
//!
//! - `claim_free(space, holder, ttl, now_ms: Option<u64>) -> u64`: the lowest worker ID in
//!   `0..space` that no live lease holds, now leased to `holder`; [`Error::WorkersExhausted`]
//!   when none is free. On SQL, etcd and ZooKeeper this is one scan-and-race loop, written
//!   once (`worker/claim.rs`) over each backend's conditional claim of one ID; Redis finds
//!   and takes in one script. With `now_ms`, the lowest free ID whose high-water mark is at
//!   or before `now_ms` comes first, else the one whose mark passes soonest, so a restarted
//!   node skips the wait for the ID a killed one just left. The marks only order the tries
//!   (the claim is the same conditional write); the mark of the ID claimed is read again
//!   and waited out as always. [`WorkerRegistry`] names the two uses `claim_lowest` and
//!   `claim_ready`.
//! - `claim(worker_id, holder, ttl)`: exactly that ID (static and derived sources);
//!   [`Error::WorkerTaken`] when another live holder has it.
//! - `renew(worker_id, holder, ttl)`: extends the lease; [`Error::LeaseLost`] when it
//!   expired or someone else holds it now.
//! - `release(worker_id, holder)`: gives the ID back at once (shutdown); a no-op when the
//!   holder no longer holds it.
//! - `holders() -> Vec<(u64, String)>`: the live leases, for status pages and error messages.
//! - `read_mark(worker_id) -> Option<u64>` and `write_mark(worker_id, holder, mark_ms)`: the
//!   durable high-water mark of a worker ID (milliseconds since the Unix epoch up to which IDs
//!   may have been issued). It outlives the lease; a write is refused with
//!   [`Error::LeaseLost`] unless `holder` holds the ID, and never lowers the mark.
//! - `publish_time(worker_id, holder, now_ms)` and `peer_times() -> Vec<PeerTime>`: each live
//!   node's latest clock reading; `peer_clocks(holder) -> PeerClocks`: only the highest and
//!   lowest of the others', for the clock check across nodes (etcd and SQL read just those,
//!   the others read all and pick).
//! - `read_layout(worker_id)` and `write_layout(worker_id, holder, layout)`: the layout
//!   issued under up to the mark ([`record`](snowdrift_core::layout::migrate::record)), so a
//!   start under another layout is checked against it; written only by the holder.
//! - `list() -> WorkerList`: every held worker ID with its holder, claim time, lease left,
//!   mark and layout, for `snowdrift workers list`; what cannot be read is flagged on its
//!   entry (or listed as unreadable), never an error for the whole listing.
//!
//! On top of them, [`WorkerNode`] is what a server runs: it claims a worker ID from a
//! [`WorkerSource`] on a [`WorkerRegistry`] (any backend above, or lock files on one
//! machine: [`FileRegistry`]), waits out the ID's high-water mark, and keeps the lease, the
//! mark and the clock checks going in a background task while a fenced
//! [`SnowflakeGenerator`] issues IDs; [`WorkerNode::status`] says where it stands.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use snowdrift_core::{clock::MonotonicClock, generator::SnowflakeGenerator, layout::Layout};
//! use snowdrift_store::worker::{LeaseConfig, WorkerNode, WorkerSource};
//! let config = LeaseConfig::new("postgres://root@127.0.0.1/test", WorkerSource::Lowest);
//! let builder = SnowflakeGenerator::builder(Layout::preset("twitter")?);
//! let node = WorkerNode::start(config, builder, MonotonicClock::new()).await?;
//! let ids = node.next_block(100)?;
//! println!("worker {:?}: {} IDs", node.status().worker_id, ids.len());
//! node.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! [`SnowflakeGenerator`]: snowdrift_core::generator::SnowflakeGenerator
//! [`Error::WorkersExhausted`]: crate::Error::WorkersExhausted
//! [`Error::WorkerTaken`]: crate::Error::WorkerTaken
//! [`Error::LeaseLost`]: crate::Error::LeaseLost

mod claim;
mod config;
pub mod file;
mod keeper;
mod mark;
pub(crate) mod mistakes;
mod node;
mod raise;
mod registry;
mod source;
mod status;

pub use config::{
    DEFAULT_CLOCK_BOUND, DEFAULT_MAX_MARK_WAIT, DEFAULT_PUBLISH_EVERY, DEFAULT_TTL, DEFAULT_WINDOW,
    LeaseConfig,
};
pub use file::FileRegistry;
pub use mark::{MAX_EXTENSION, Mark};
pub use node::{Epoch, WorkerNode};
pub use raise::{MarkChange, MarkFloor};
pub use registry::{
    REGISTRY_SCHEMES, UnreadableEntry, WorkerEntry, WorkerList, WorkerRegistry, duration_text,
};
pub use source::{BitsFrom, NodeSplit, WorkerSource, hostname};
pub use sql::validate_namespace;
pub use status::{PeerOffset, WorkerState, WorkerStatus};

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sim")]
pub mod sim;
pub mod sql;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

/// One live node's clock as it last published it.
///
/// A reading is at most one publish interval old, so a peer's clock now is at least
/// `time_ms`: a node whose clock is below `time_ms - bound` is behind for certain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerTime {
    /// The worker ID the peer holds.
    pub worker_id: u64,
    /// Who holds it (host, process, start nonce).
    pub holder: String,
    /// The peer's clock when it published, in milliseconds since the Unix epoch.
    pub time_ms: u64,
}

/// The two clock reports of a node's peers that its clock check needs: the highest (the
/// furthest ahead, which this node must not be behind) and the lowest (for the warning and
/// the offset metric). Registries that can sort (etcd, SQL) read only these, so a check
/// costs the same at 1,000 nodes as at 2.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerClocks {
    /// The highest report of a live holder other than this node, if any.
    pub ahead: Option<PeerTime>,
    /// The lowest one, if any (the same report as `ahead` when there is one peer).
    pub behind: Option<PeerTime>,
}

impl PeerClocks {
    /// The extremes among `peers`, leaving out `holder`'s own reports.
    pub fn among(peers: impl IntoIterator<Item = PeerTime>, holder: &str) -> Self {
        let mut out = Self::default();
        for p in peers.into_iter().filter(|p| p.holder != holder) {
            if out.ahead.as_ref().is_none_or(|a| p.time_ms > a.time_ms) {
                out.ahead = Some(p.clone());
            }
            if out.behind.as_ref().is_none_or(|b| p.time_ms < b.time_ms) {
                out.behind = Some(p);
            }
        }
        out
    }

    /// The reports, the one ahead first, each once.
    pub fn into_vec(self) -> Vec<PeerTime> {
        let mut out: Vec<PeerTime> = self.ahead.into_iter().collect();
        if let Some(b) = self.behind
            && out.first() != Some(&b)
        {
            out.push(b);
        }
        out
    }
}
