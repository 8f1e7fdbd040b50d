//! Ticket mode (Flickr's ticket servers): interleaved `auto_increment` or sequences on
//! several databases.
//!
//! Each ticket server is one database that counts in its own residue class: with N servers,
//! server k (1 to N) hands out only IDs ≡ k (mod N), so no two servers ever return the same
//! ID and none of them is a single point of failure.
//!
//! - MySQL/MariaDB: Flickr's `tickets64 (id BIGINT AUTO_INCREMENT, stub CHAR(1) UNIQUE)`
//!   table and `REPLACE INTO tickets64 (stub) VALUES ('a'); SELECT LAST_INSERT_ID()` on one
//!   connection with `auto_increment_increment = N`, `auto_increment_offset = k`.
//! - PostgreSQL: a sequence `INCREMENT BY N START WITH k`.
//!
//! [`TicketServer`] is one database; [`TicketPool`] takes turns among several, skips the
//! ones that are down and re-probes them with backoff. [`Grow`] moves a pool of N servers
//! to M > N (new starts above every ticket issued, in the classes of M) without new tables
//! or sequences.
//!
//! Cost: on MySQL every ticket is one `REPLACE` (a delete and an insert, committed on its
//! own), so a server issues about as many tickets per second as it commits transactions;
//! snowdrift sends up to 1,000 of them per round trip, which saves network time, not
//! commits. A PostgreSQL `nextval` is not transactional and serves a whole batch in one
//! statement. For high rates put segment mode or the client's range cache in front.
//!
//! What can still repeat an ID, as with Flickr's design: restoring a ticket database from a
//! backup, or dropping and recreating its table or sequence (the counter restarts). A
//! server refuses to recreate a table or sequence that vanished while it was connected;
//! a process that starts later creates a missing one afresh.

mod config;
mod grow;
mod pool;
mod server;

pub use config::{
    DEFAULT_NAME, DEFAULT_TIMEOUT, MAX_INCREMENT, MAX_TICKETS_PER_CALL, TicketConfig, validate_name,
};
pub use grow::{DEFAULT_GAP, DEFAULT_GROW_TIMEOUT, Grow, GrowPlan, GrowServer, ServerState};
pub use pool::{
    DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MAX, ServerStatus, TicketPool, TicketPoolBuilder,
};
pub use server::TicketServer;
