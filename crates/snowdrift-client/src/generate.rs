//! Text IDs made in the application instead of fetched, for the kinds whose uniqueness is in
//! their random bits or in the maker's own host and process, and so need no coordination
//! (UUID v4 and v7, ULID, TypeID, KSUID, xid, cuid2), when
//! [`crate::ClientBuilder::generate_locally`] says so. The strings are the servers' forms: a
//! TypeID with the prefix of those fetched, a cuid2 of the length the servers' batch had, an
//! xid with this host's machine ID and this process's ID (rs/xid's rules). Nano IDs are
//! always fetched: their alphabet is the server's configuration, which a batch does not
//! carry.

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::kinds::cuid2::{self, Cuid2Generator};
use snowdrift_core::kinds::os_random;
use snowdrift_core::kinds::ulid::UlidGenerator;
use snowdrift_core::kinds::uuid::{self, UuidV7Generator};
use snowdrift_core::kinds::xid::XidGenerator;
use snowdrift_core::kinds::{KsuidGenerator, TypeId, TypeIdGenerator};
use snowdrift_proto::Kind;

use crate::error::{Error, ErrorKind};

/// A local generator of one kind.
#[derive(Debug)]
pub(crate) enum Local {
    Uuid4,
    Uuid7(UuidV7Generator<MonotonicClock>),
    Ulid(UlidGenerator<MonotonicClock>),
    Typeid(TypeIdGenerator<MonotonicClock>),
    Ksuid(KsuidGenerator<MonotonicClock>),
    Xid(XidGenerator<MonotonicClock>),
    Cuid2(Cuid2Generator<MonotonicClock>),
}

impl Local {
    /// The generator for `kind`, whose batch from the servers was `ids`, if it is one that
    /// needs no coordination ([`Kind::needs_no_coordination`]) and the batch tells all it
    /// needs (a TypeID's prefix: the first ID's; a cuid2's length: every ID of the batch
    /// has it). None otherwise: the IDs are fetched.
    pub(crate) fn for_batch(kind: Kind, ids: &[String]) -> Option<Self> {
        match kind {
            Kind::Uuid4 => Some(Local::Uuid4),
            Kind::Uuid7 => Some(Local::Uuid7(UuidV7Generator::new(MonotonicClock::new()))),
            Kind::Ulid => Some(Local::Ulid(UlidGenerator::new(MonotonicClock::new()))),
            Kind::Typeid => {
                let id: TypeId = ids.first()?.parse().ok()?;
                TypeIdGenerator::new(id.prefix(), MonotonicClock::new())
                    .ok()
                    .map(Local::Typeid)
            }
            Kind::Ksuid => Some(Local::Ksuid(KsuidGenerator::new(MonotonicClock::new()))),
            Kind::Xid => XidGenerator::for_this_process(MonotonicClock::new(), None)
                .ok()
                .map(Local::Xid),
            Kind::Cuid2 => {
                let length = ids.first()?.len();
                if ids.iter().any(|id| cuid2::check(id, length).is_err()) {
                    return None;
                }
                Cuid2Generator::for_this_process(MonotonicClock::new(), length)
                    .ok()
                    .map(Local::Cuid2)
            }
            _ => None,
        }
    }

    pub(crate) fn next(&self) -> Result<String, Error> {
        let made = match self {
            Local::Uuid4 => Ok(uuid::v4().to_string()),
            Local::Uuid7(g) => g.next().map(|u| u.to_string()),
            Local::Ulid(g) => g.next().map(|u| u.to_string()),
            Local::Typeid(g) => g.next(),
            Local::Ksuid(g) => g.next().map(|k| k.to_string()),
            Local::Xid(g) => g.next().map(|x| x.to_string()),
            Local::Cuid2(g) => g.next_with(&mut os_random::u32),
        };
        made.map_err(|e| Error::new(ErrorKind::Unavailable, format!("a local ID: {e}")))
    }
}
