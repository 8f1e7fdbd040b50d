//! The coordinator side of a timestamp oracle (`kind = "tso"`): who leads, and the saved
//! window, on etcd.
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
//! What is not here: the task that runs campaigns, renewals and window saves around the
//! oracle, batching, and forwarding from followers (the server does those).

#[cfg(feature = "etcd")]
mod etcd;

#[cfg(feature = "etcd")]
pub use etcd::{Campaign, EtcdTso, ForgedKey, KeyFault, LeaderKey, Leadership};
