//! Text IDs made in the application instead of fetched, for the kinds whose uniqueness is in
//! their random bits and so need no coordination (UUID v4 and v7, ULID, TypeID, KSUID), when
//! [`crate::ClientBuilder::generate_locally`] says so. The strings are the servers' forms.

use snowdrift_core::clock::MonotonicClock;
use snowdrift_core::kinds::ulid::UlidGenerator;
use snowdrift_core::kinds::uuid::{self, UuidV7Generator};
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
}

impl Local {
    /// The generator for `kind`, if it is one that needs no coordination
    /// ([`Kind::needs_no_coordination`]). `first` is an ID the server issued: a TypeID
    /// generator takes its prefix from it (none when it is no TypeID: the IDs are fetched).
    pub(crate) fn for_kind(kind: Kind, first: Option<&str>) -> Option<Self> {
        match kind {
            Kind::Uuid4 => Some(Local::Uuid4),
            Kind::Uuid7 => Some(Local::Uuid7(UuidV7Generator::new(MonotonicClock::new()))),
            Kind::Ulid => Some(Local::Ulid(UlidGenerator::new(MonotonicClock::new()))),
            Kind::Typeid => {
                let id: TypeId = first?.parse().ok()?;
                TypeIdGenerator::new(id.prefix(), MonotonicClock::new())
                    .ok()
                    .map(Local::Typeid)
            }
            Kind::Ksuid => Some(Local::Ksuid(KsuidGenerator::new(MonotonicClock::new()))),
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
        };
        made.map_err(|e| Error::new(ErrorKind::Unavailable, format!("a local ID: {e}")))
    }
}
