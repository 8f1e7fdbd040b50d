//! A timestamp oracle's (`kind = "tso"`) election and saved window on etcd, and the leader
//! task that serves it.
//!
//! [`snowdrift_core::tso::TimestampOracle`] is the oracle's pure state; this module is what
//! it asks of the outside world, as TiKV PD keeps it in etcd:
//!
//! - [`EtcdTso::campaign`]: one node at a time holds the leader key under a lease, and
//!   learns in the same transaction the window end the previous leaders saved, which the
//!   oracle's new term starts above
//!   ([`start_term`](snowdrift_core::tso::TimestampOracle::start_term));
//! - [`Leadership::save_window`]: raises the saved window end in a transaction conditioned
//!   on still holding the leader key, so a deposed leader can never save again;
//! - [`Leadership::renew`] and [`Leadership::is_valid`]: the leader stops issuing at `last
//!   renewal sent + ttl - margin` on its monotonic clock, before etcd can expire its lease
//!   and let another node lead (the same fencing as the worker leases);
//! - [`EtcdTso::wait_for_change`]: a follower watches the leader key and campaigns again as
//!   soon as etcd deletes or rewrites it, rather than polling;
//! - what a campaign finds is checked: a leader key is a leader's only when it is bound to a
//!   live lease that its value names ([`LeaderKey::term`], which the leader names in its
//!   answers too); otherwise [`Campaign::NotALeader`] says what is wrong with it, and a key
//!   bound to no lease is taken over ([`EtcdTso::campaign_replacing`]) once it has stayed
//!   a whole lease. Anyone who can write the key can still name a leader that passes these
//!   checks: etcd is the trust root, and the server checks what the named leader answers.
//!
//! Around them, [`OracleNode`] is what a server runs for each oracle (as PD keeps its
//! allocator in its own package): the leader task (`leader.rs`, beside the worker lease
//! keeper `worker/keeper.rs`) that campaigns, starts the oracle's terms, serves merged
//! groups of requests (PD's batching), saves the window ahead of need, renews the lease and
//! stops issuing before it could lapse; [`OracleConfig`] sets it up, [`Role`] says what the
//! node is, [`OracleError`] why a request got no IDs, [`OracleReport`] its counters.
//!
//! A follower's checks of what the leader answers are here too ([`check_answer`], with
//! [`Served`] and [`Refusal`]), so the server and the simulator run the same ones. What is
//! not here: forwarding a follower's requests to the leader (the server does that, over
//! gRPC).

#[cfg(feature = "etcd")]
mod config;
#[cfg(feature = "etcd")]
mod error;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "etcd")]
mod leader;
#[cfg(feature = "etcd")]
mod node;
mod trust;

#[cfg(feature = "etcd")]
pub use config::{DEFAULT_TTL, GroupObserver, OracleConfig};
#[cfg(feature = "etcd")]
pub use error::OracleError;
#[cfg(feature = "etcd")]
pub use etcd::{Campaign, EtcdTso, ForgedKey, KeyFault, LeaderKey, Leadership};
#[cfg(feature = "etcd")]
pub use node::{OracleNode, OracleReport, Role};
pub use trust::{
    AnsweredRun, Asked, LeaderAnswer, MAX_AHEAD_MS, Refusal, Refused, Served, ServedMark,
    check_answer,
};
